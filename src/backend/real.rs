//! The real back end: `IoCtx` over `piotwin-real` (MPI-IO through rsmpi's raw ffi).

use crate::ctx::RankProgram;
use piotwin_real::RealError;

/// Facts about the MPI job this process belongs to.
#[derive(Debug, Clone)]
pub struct JobInfo {
    /// This process's rank in `MPI_COMM_WORLD`.
    pub rank: usize,
    /// Size of `MPI_COMM_WORLD`.
    pub size: usize,
    /// `MPI_Get_library_version`'s first line (MPICH or Open MPI, and its version).
    pub library: String,
}

/// Initialise MPI (once per process), run `program` on this rank with a context
/// over `MPI_COMM_WORLD`, and return this rank's output. Refuses a job where the
/// launcher asked for N > 1 processes but MPI sees a world of 1 (a binary built
/// for one MPI started by another MPI's launcher).
pub fn launch<P: RankProgram>(program: &P) -> Result<(JobInfo, P::Output), RealError> {
    let _ = program;
    todo!("backend::real::launch")
}
