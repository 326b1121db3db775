//! What-if studies over the twin: many runs of one benchmark on variations of
//! one scenario, and what a planner does with them.
//!
//! * [`samples`] — prediction intervals: the calibrated parameters drawn from
//!   their intervals, the twin run on each draw, the median and 95 % interval;
//! * [`sweep`] — sweep files: a base scenario, a benchmark, what varies; the
//!   points checked before any runs, run in parallel threads (and one per MPI
//!   rank under `mpiexec`), kept as they finish, resumed after a stop;
//! * [`plan`] — goal-seek: the cheapest configuration meeting a target on a
//!   metric, by monotone search checked on the way;
//! * [`output`] — a sweep's table (CSV, JSON), its plots and its HTML page.
//!
//! What it is not: a model. Every number here is a twin run's; this module
//! only chooses which runs to make and summarises them.

pub mod output;
pub mod plan;
pub mod runner;
pub mod samples;
pub mod sweep;
