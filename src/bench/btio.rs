//! BTIO: the NAS BT I/O benchmark (NPB-IO 2.4 / NPB 3.x BT-IO) and the PnetCDF
//! BTIO kernel, written once against [`crate::ctx::IoCtx`].
//!
//! **NPB BT-IO** (`piotwin run btio`): BT's solution field, 5 doubles per mesh
//! point, is written every `wr_interval` time steps (and after the last) to a
//! shared file in canonical order, from BT's diagonal multi-partition
//! decomposition ([`decomp`]). Subtypes: `full` (one collective write per dump
//! through NPB's struct-of-subarrays view), `simple` (one independent write per
//! cell row), `fortran` (a Fortran direct-access `WRITE` per point at the same
//! offsets), `epio` (a file per process, a Fortran sequential record per cell),
//! `none` (compute only). Between dumps every rank runs NPB's BT time step on
//! its cells ([`bt`], through `IoCtx` in [`step`]: the twin charges each part
//! by its counted flops) and the dumps hold BT's solution. After the timed
//! region the whole field is read back the same way and verified as NPB
//! verifies BT-IO (the mean error norm over the dumps and the final residual
//! norm against the class's reference values), and the last dump bit for bit
//! against the final solution. Result: NPB's statistics, Mop/s and the
//! effective output bandwidth (bytes written / wall time from the first step
//! to the end of verification).
//!
//! **PnetCDF BTIO kernel** (`piotwin run btio-kernel`): no time stepping; writes
//! or reads `records` global arrays with method 0 (MPI collective), 1 (MPI
//! independent), 2 (one blocking collective per cell, p per record) or 3 (p
//! nonblocking per-cell requests completed by one `wait_all`: one aggregated
//! collective per record, as PnetCDF's `ncmpi_wait_all` does). The file is
//! `btio.mpi` for every method: the same canonical array PnetCDF writes as the
//! record variable `var(NUM_DUMPS, Z, Y, X, FIVE_DBL)`, without the netCDF header.
//!
//! References: Bailey et al., "The NAS Parallel Benchmarks", RNR-94-007, and
//! NPB 3.3's BT (the solver, its verification values); Wong & der Wijngaart, "NAS Parallel Benchmarks I/O Version 2.4",
//! NAS-03-002 (2003); Liao, "Design and Evaluation of MPI File Domain Partitioning
//! Methods under Extent-Based File Locking Protocol", IEEE TPDS 22(2), 2011 (the
//! PnetCDF kernel). Spec: `spec/btio.md`.
//!
//! Not for: the solver's arithmetic ([`bt`]) or the twin's models.

pub mod bt;
pub mod cli;
pub mod decomp;
pub mod input;
pub mod layout;
pub mod output;
pub mod params;
pub mod program;
pub mod step;
#[cfg(test)]
mod tests;

pub use input::{Class, InputError};
pub use output::{btio_report, kernel_block, kernel_report, npb_block};
pub use params::{BtioArgs, BtioConfig, BtioKernelArgs, KernelConfig, Subtype};
pub use program::{BtioOutcome, BtioProgram, KernelOutcome, KernelProgram, Verification};
