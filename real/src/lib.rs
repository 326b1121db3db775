//! piotwin's real back end: a small **safe** layer over rsmpi's raw `mpi::ffi`
//! for MPI-IO, which rsmpi itself does not wrap.
//!
//! What it is for: running piotwin's benchmarks for real, one MPI process per
//! rank. It offers
//!
//! * the MPI environment ([`init`] once per process, [`finalize`], [`abort`],
//!   [`wtime`], the library's identity and [`mpiexec_command`]), with a check that
//!   refuses a binary started by another MPI's launcher ([`RealError::LauncherMismatch`]);
//! * [`Comm`]: world, self and split communicators with the collectives a driver
//!   needs (barrier, broadcast, allreduce, allgather, sendrecv-replace);
//! * [`Info`]: `MPI_Info` from and back to [`piotwin_types::Hints`];
//! * [`MpiType`]: MPI derived datatypes built from [`piotwin_types::Datatype`]
//!   (contiguous, vector, hvector, hindexed, subarray, darray, struct, resized),
//!   every handle freed;
//! * [`File`]: `MPI_File` with views, the explicit-offset, shared-pointer and
//!   ordered read/write families, nonblocking requests ([`Request`], [`wait_all`])
//!   and one aggregated collective access over explicit extents
//!   ([`File::xfer_extents_all`], PnetCDF's `ncmpi_wait_all` idea);
//! * [`PosixFile`]: `pwrite`/`pread`/`fsync` for POSIX-API runs;
//! * [`FortranUnit`]: unformatted direct and sequential Fortran I/O through the
//!   Fortran runtime (statements of ours in `fortran/units.f90`, built with `$FC`).
//!
//! Every failure is a [`RealError`] naming the call, the file and MPI's
//! (`MPI_Error_string`) or the OS's message.
//!
//! What it is not: it knows nothing of benchmarks, of the twin or of timing
//! policy, and it covers only the MPI subset piotwin uses. MPI is used at thread
//! level single: call it from the thread that called [`init`]. Data buffers are
//! bytes (`MPI_UINT8_T`); counts above `i32::MAX` are errors, not wraps.
//!
//! Works with MPICH (ROMIO) and Open MPI (OMPIO by default; `romio_*` hints are then
//! only echoed back by `MPI_File_get_info`).
#![warn(missing_docs, unreachable_pub)]

mod comm;
mod datatype;
mod env;
mod error;
mod file;
mod fortran;
mod info;
mod posix;

pub use comm::Comm;
pub use datatype::MpiType;
pub use env::{
    Flavour, Job, abort, finalize, flavour, init, library_version, mpiexec_command,
    nonblocking_collective_io_supported, under_launcher, wtime,
};
pub use error::{RealError, RealResult};
pub use file::{File, Request, wait_all};
pub use fortran::FortranUnit;
pub use info::Info;
pub use posix::{PosixFile, drop_cache};
