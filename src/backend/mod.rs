//! The two back ends: the only places where the benchmark world meets an engine.
//!
//! * [`sim`] — every rank is a task of the twin's virtual-time engine (`piotwin-sim`);
//! * `real` (cargo feature `mpi`) — one MPI process per rank over MPI-IO (`piotwin-real`);
//! * [`null`] — zero-cost I/O on N ranks, for checking a benchmark's logic (`--dry-run`).
//!
//! [`trace`] wraps any of them and records every call a rank makes.

#[cfg(test)]
pub(crate) mod fault;
#[cfg(test)]
pub(crate) mod mem;
pub mod null;
#[cfg(feature = "mpi")]
pub mod real;
pub mod sim;
pub mod trace;
