//! piotwin: classic parallel I/O benchmarks written once, run for real over MPI-IO
//! or in a discrete-event twin of the storage system.
//!
//! * [`ctx`] — the one interface benchmarks use ([`ctx::IoCtx`]);
//! * [`bench`] — the benchmarks, one file each, written against `IoCtx` only;
//! * [`backend`] — the two places where benchmarks meet an engine: `real` (MPI-IO)
//!   and `sim` (the twin);
//! * [`report`] — run reports (JSON, CSV) and human tables;
//! * [`calibrate`] — `piotwin calibrate`: probe plan, raw results, fits, the calibrated scenario;
//! * [`phases`] — the I/O-phase model: traces (`run --trace`, Darshan DXT) to phases;
//! * [`run`] — running a benchmark from its command line (common options, execute);
//! * [`whatif`] — sweeps, goal-seek and prediction intervals over many twin runs.
#![warn(missing_docs)]

pub mod backend;
pub mod bench;
pub mod calibrate;
pub mod ctx;
pub mod phases;
pub mod report;
pub mod run;
pub mod whatif;
