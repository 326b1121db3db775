//! [`RealError`]: every failure of the real back end, with the call, the file and
//! MPI's (or the OS's) own words.

use std::os::raw::{c_char, c_int};

use mpi::ffi;
use piotwin_types::IoError;

/// An error from MPI or the OS, carrying the call that failed, the file it was
/// applied to (where there is one) and `MPI_Error_string`'s text.
#[derive(Debug, thiserror::Error)]
pub enum RealError {
    /// An MPI call returned an error code.
    #[error("{call}{}: {message} (MPI error code {code})", on_path(path))]
    Mpi {
        /// The MPI routine, e.g. `MPI_File_open`.
        call: &'static str,
        /// The file it was applied to; `None` for calls on no file.
        path: Option<String>,
        /// The error code MPI returned.
        code: i32,
        /// `MPI_Error_string` of `code`.
        message: String,
    },
    /// An OS call failed (POSIX files).
    #[error("{call} on `{path}`: {source}")]
    Os {
        /// The call, e.g. `pwrite`.
        call: &'static str,
        /// The file it was applied to.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// A Fortran I/O statement ended with a nonzero `IOSTAT` (Fortran units).
    #[error("{call} on `{path}`: {message} (Fortran IOSTAT {iostat})")]
    Fortran {
        /// The statement, e.g. `WRITE(REC=)`.
        call: &'static str,
        /// The file of the unit.
        path: String,
        /// The statement's `IOSTAT`.
        iostat: i32,
        /// The runtime's `IOMSG`.
        message: String,
    },
    /// A request that MPI cannot express, e.g. a count above `i32::MAX`.
    #[error("{call}{}: {reason}", on_path(path))]
    Invalid {
        /// The call that could not be made.
        call: &'static str,
        /// The file it concerned, if any.
        path: Option<String>,
        /// What is wrong and what is allowed.
        reason: String,
    },
    /// The launcher started N > 1 processes but MPI sees a world of one: the
    /// binary's MPI library and the `mpiexec` that started it differ.
    #[error(
        "the launcher started {launcher_size} processes ({variable}={launcher_size}) but \
         MPI_COMM_WORLD has size {world_size}: this binary's MPI ({library}) differs from the \
         MPI of the mpiexec that launched it; use the mpiexec of {library} \
         (or rebuild against the launcher's MPI)"
    )]
    LauncherMismatch {
        /// The environment variable that gave the launcher's process count.
        variable: &'static str,
        /// Processes the launcher started.
        launcher_size: usize,
        /// Size of `MPI_COMM_WORLD` as this process sees it.
        world_size: usize,
        /// First line of `MPI_Get_library_version`.
        library: String,
    },
    /// MPI was already finalised in this process; it cannot be started again.
    #[error("MPI was already finalised in this process and cannot be initialised again")]
    Finalized,
}

fn on_path(path: &Option<String>) -> String {
    match path {
        Some(p) => format!(" on `{p}`"),
        None => String::new(),
    }
}

/// Result of a call of this crate.
pub type RealResult<T> = Result<T, RealError>;

/// `MPI_Error_string` of `code`.
pub(crate) fn error_string(code: c_int) -> String {
    let mut buf = vec![0 as c_char; ffi::MPI_MAX_ERROR_STRING as usize + 1];
    let mut len: c_int = 0;
    // SAFETY: the buffer holds MPI_MAX_ERROR_STRING characters as the standard requires.
    let rc = unsafe { ffi::MPI_Error_string(code, buf.as_mut_ptr(), &mut len) };
    if rc != ffi::MPI_SUCCESS as c_int {
        return format!("unknown MPI error {code}");
    }
    let bytes: Vec<u8> = buf[..len.max(0) as usize]
        .iter()
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).trim_end().to_string()
}

/// `MPI_Error_class` of `code`, or `code` itself where MPI cannot classify it.
pub(crate) fn error_class(code: c_int) -> c_int {
    let mut class: c_int = code;
    // SAFETY: plain out-parameter.
    unsafe { ffi::MPI_Error_class(code, &mut class) };
    class
}

/// Turns an MPI return code into a `Result`.
pub(crate) fn check(rc: c_int, call: &'static str, path: Option<&str>) -> RealResult<()> {
    if rc == ffi::MPI_SUCCESS as c_int {
        Ok(())
    } else {
        Err(mpi_error(rc, call, path))
    }
}

/// The error for MPI return code `code` of `call` on `path`.
pub(crate) fn mpi_error(code: c_int, call: &'static str, path: Option<&str>) -> RealError {
    RealError::Mpi {
        call,
        path: path.map(str::to_string),
        code,
        message: error_string(code),
    }
}

/// A count or length as MPI's `int`, or an error naming the call (never a wrap).
pub(crate) fn to_int(
    value: u64,
    what: &str,
    call: &'static str,
    path: Option<&str>,
) -> RealResult<c_int> {
    c_int::try_from(value).map_err(|_| RealError::Invalid {
        call,
        path: path.map(str::to_string),
        reason: format!(
            "{what} = {value} exceeds MPI's int range (at most {})",
            c_int::MAX
        ),
    })
}

/// A signed value as MPI's `int`, or an error naming the call.
pub(crate) fn to_int_signed(value: i64, what: &str, call: &'static str) -> RealResult<c_int> {
    c_int::try_from(value).map_err(|_| RealError::Invalid {
        call,
        path: None,
        reason: format!(
            "{what} = {value} is outside MPI's int range ({}..={})",
            c_int::MIN,
            c_int::MAX
        ),
    })
}

/// What a benchmark sees of a real-mode failure: the call, the file, the words.
impl From<RealError> for IoError {
    fn from(e: RealError) -> IoError {
        match e {
            RealError::Mpi {
                call,
                path,
                message,
                ..
            } => IoError::Call {
                op: call.to_string(),
                path: path.unwrap_or_default(),
                message,
            },
            RealError::Os { call, path, source } => IoError::Call {
                op: call.to_string(),
                path,
                message: source.to_string(),
            },
            RealError::Fortran {
                call,
                path,
                iostat,
                message,
            } => IoError::Call {
                op: call.to_string(),
                path,
                message: format!("{message} (IOSTAT {iostat})"),
            },
            RealError::Invalid { call, path, reason } => IoError::Call {
                op: call.to_string(),
                path: path.unwrap_or_default(),
                message: reason,
            },
            other => IoError::Invalid(other.to_string()),
        }
    }
}
