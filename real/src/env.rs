//! The MPI environment of this process: initialisation (once), finalisation,
//! the library's identity, the launcher check and `mpiexec` command lines.

use std::os::raw::{c_char, c_int};
use std::process::Command;
use std::sync::Mutex;

use mpi::ffi;
use mpi::topology::Communicator;

use crate::error::{RealError, RealResult};

/// Facts about the MPI job this process belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    /// This process's rank in `MPI_COMM_WORLD`.
    pub rank: usize,
    /// Size of `MPI_COMM_WORLD`.
    pub size: usize,
    /// First line of `MPI_Get_library_version` (library and version).
    pub library: String,
}

/// Which MPI implementation this binary is linked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavour {
    /// MPICH or a derivative (ROMIO for MPI-IO; hydra's `mpiexec`).
    Mpich,
    /// Open MPI (OMPIO by default; `mpiexec` needs `--oversubscribe` on few cores).
    OpenMpi,
    /// Anything else.
    Other,
}

enum State {
    NotStarted,
    /// The universe is held only for its drop, which calls `MPI_Finalize`.
    Running {
        _universe: mpi::environment::Universe,
        job: Job,
    },
    Finalized,
}

// MPI is initialised at most once per process (rsmpi's `initialize` works once,
// and MPI cannot be re-initialised after `MPI_Finalize`); this is that one state.
static STATE: Mutex<State> = Mutex::new(State::NotStarted);

unsafe extern "C" {
    fn atexit(callback: extern "C" fn()) -> c_int;
}

extern "C" fn finalize_at_exit() {
    finalize();
}

/// Initialises MPI (thread level funneled) on the first call and returns the job's
/// facts; later calls return the same facts.
///
/// Refuses ([`RealError::LauncherMismatch`]) a job where the launcher's
/// environment says N > 1 processes (`PMI_SIZE` for MPICH's hydra,
/// `OMPI_COMM_WORLD_SIZE` for Open MPI, `PMIX_SIZE`) but `MPI_COMM_WORLD` has one
/// process: a binary built for one MPI started by another MPI's `mpiexec` runs as
/// N unrelated one-rank jobs, which would silently overwrite each other's files.
///
/// MPI is finalised by [`finalize`], or at process exit if nothing called it.
pub fn init() -> RealResult<Job> {
    let mut state = STATE.lock().unwrap_or_else(|e| e.into_inner());
    match &*state {
        // The launcher check is repeated: a refused job stays refused.
        State::Running { job, .. } => {
            return match launcher_mismatch(job) {
                Some(e) => Err(e),
                None => Ok(job.clone()),
            };
        }
        State::Finalized => return Err(RealError::Finalized),
        State::NotStarted => {}
    }
    // Funneled: only the main thread calls MPI, but others may exist (a
    // sweep's worker threads, which run the twin).
    let (universe, _) =
        mpi::initialize_with_threading(mpi::Threading::Funneled).ok_or(RealError::Finalized)?;
    let world = universe.world();
    let job = Job {
        rank: world.rank() as usize,
        size: world.size() as usize,
        library: library_version(),
    };
    // SAFETY: registering a plain `extern "C" fn` with the C runtime.
    unsafe { atexit(finalize_at_exit) };
    let mismatch = launcher_mismatch(&job);
    *state = State::Running {
        _universe: universe,
        job: job.clone(),
    };
    match mismatch {
        Some(e) => Err(e),
        None => Ok(job),
    }
}

fn launcher_mismatch(job: &Job) -> Option<RealError> {
    const VARS: [&str; 3] = ["PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE"];
    if job.size != 1 {
        return None;
    }
    VARS.iter().find_map(|&variable| {
        let n: usize = std::env::var(variable).ok()?.trim().parse().ok()?;
        (n > 1).then(|| RealError::LauncherMismatch {
            variable,
            launcher_size: n,
            world_size: job.size,
            library: job.library.clone(),
        })
    })
}

/// Finalises MPI (`MPI_Finalize`) if it is running; afterwards [`init`] fails.
/// Every rank must call it (it is collective). Registered to run at process exit.
pub fn finalize() {
    let mut state = STATE.lock().unwrap_or_else(|e| e.into_inner());
    if let State::Running { .. } = &*state {
        // Dropping the universe calls MPI_Finalize.
        *state = State::Finalized;
    }
}

/// Aborts every process of the job with `code` (`MPI_Abort` on `MPI_COMM_WORLD`);
/// exits the process with `code` where MPI is not running.
pub fn abort(code: i32) -> ! {
    let running = matches!(
        *STATE.lock().unwrap_or_else(|e| e.into_inner()),
        State::Running { .. }
    );
    if running {
        // SAFETY: MPI is initialised; MPI_Abort does not return.
        unsafe { ffi::MPI_Abort(ffi::RSMPI_COMM_WORLD, code) };
    }
    std::process::exit(code)
}

/// `MPI_Wtime`: seconds since an arbitrary origin in the past.
pub fn wtime() -> f64 {
    mpi::time()
}

/// The first line of `MPI_Get_library_version` (callable before [`init`]).
pub fn library_version() -> String {
    let mut buf = vec![0 as c_char; ffi::MPI_MAX_LIBRARY_VERSION_STRING as usize + 1];
    let mut len: c_int = 0;
    // SAFETY: the buffer holds MPI_MAX_LIBRARY_VERSION_STRING characters.
    unsafe { ffi::MPI_Get_library_version(buf.as_mut_ptr(), &mut len) };
    // Open MPI counts the terminating NUL in `len`; stop at the first NUL.
    let bytes: Vec<u8> = buf[..len.max(0) as usize]
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    let text = String::from_utf8_lossy(&bytes);
    let line = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("unknown MPI");
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The MPI implementation this binary is linked against, from [`library_version`].
pub fn flavour() -> Flavour {
    let v = library_version();
    if v.contains("Open MPI") {
        Flavour::OpenMpi
    } else if v.contains("MPICH") {
        Flavour::Mpich
    } else {
        Flavour::Other
    }
}

/// False where MPI's nonblocking collective file I/O (`MPI_File_iwrite_at_all`,
/// `MPI_File_iread_at_all`) is known to crash: Open MPI 4.1 with its `romio321`
/// component (`--mca io romio321`, seen as `OMPI_MCA_io` in the environment),
/// whose file driver lacks those functions (a call jumps to address 0).
pub fn nonblocking_collective_io_supported() -> bool {
    let romio_in_ompi = std::env::var("OMPI_MCA_io")
        .map(|v| v.contains("romio"))
        .unwrap_or(false);
    !(flavour() == Flavour::OpenMpi && romio_in_ompi)
}

/// True when this process was started by an MPI launcher (`PMI_RANK`,
/// `OMPI_COMM_WORLD_RANK` or `PMIX_RANK` is set).
pub fn under_launcher() -> bool {
    ["PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK"]
        .iter()
        .any(|v| std::env::var_os(v).is_some())
}

/// A command that starts `nprocs` processes with the `mpiexec` matching this
/// binary's MPI; append the program and its arguments.
///
/// `PIOTWIN_MPIEXEC` overrides the launcher (e.g. `mpiexec.openmpi`). Without it,
/// `mpiexec.mpich` or `mpiexec.openmpi` is used where it exists on `PATH`, else
/// `mpiexec`. For Open MPI `--oversubscribe --allow-run-as-root` are added (it
/// refuses more processes than cores, and root, otherwise; MPICH rejects both flags).
pub fn mpiexec_command(nprocs: usize) -> Command {
    let flavour = flavour();
    let launcher = std::env::var("PIOTWIN_MPIEXEC")
        .ok()
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| {
            let specific = match flavour {
                Flavour::Mpich => Some("mpiexec.mpich"),
                Flavour::OpenMpi => Some("mpiexec.openmpi"),
                Flavour::Other => None,
            };
            specific
                .filter(|name| on_path(name))
                .unwrap_or("mpiexec")
                .to_string()
        });
    let mut cmd = Command::new(launcher);
    if flavour == Flavour::OpenMpi {
        cmd.args(["--oversubscribe", "--allow-run-as-root"]);
    }
    cmd.arg("-n").arg(nprocs.to_string());
    cmd
}

fn on_path(name: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|dir| dir.join(name).is_file()))
        .unwrap_or(false)
}
