//! The two back ends: the only places where the benchmark world meets an engine.
//!
//! * [`sim`] — every rank is a task of the twin's virtual-time engine (`piotwin-sim`);
//! * `real` (cargo feature `mpi`) — one MPI process per rank over MPI-IO (`piotwin-real`).

#[cfg(feature = "mpi")]
pub mod real;
pub mod sim;
