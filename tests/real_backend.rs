//! The real back end (`backend::real`) on 4 ranks: started by `cargo test`, this
//! program re-executes itself under `mpiexec -n 4` (the launcher matching the
//! binary's MPI, or `PIOTWIN_MPIEXEC`) in a temporary directory; under the
//! launcher every rank runs the back-end checks (`backend_checks/`, run on the
//! twin too by `sim_backend.rs`) through `launch`, i.e. through `IoCtx` only,
//! and aborts the job on the first failure. All data is read back and
//! verified byte by byte.

use std::process::ExitCode;

mod backend_checks;

use backend_checks::{Checks, NPROCS};
use piotwin::backend::real::launch;

fn main() -> ExitCode {
    if piotwin_real::under_launcher() {
        return rank_main();
    }
    let dir = tempfile::tempdir().expect("temporary directory");
    let mut cmd = piotwin_real::mpiexec_command(NPROCS);
    cmd.arg(std::env::current_exe().expect("own executable"))
        .arg(dir.path());
    eprintln!("running: {cmd:?}");
    let out = cmd.output().expect("start mpiexec");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    print!("{stdout}");
    eprint!("{stderr}");
    let all_passed = (0..NPROCS).all(|r| stdout.contains(&format!("rank {r}: all checks passed")));
    if out.status.success() && all_passed && !stderr.contains("leaked") {
        ExitCode::SUCCESS
    } else {
        eprintln!(
            "FAILED: status {}, all ranks passed: {all_passed}",
            out.status
        );
        ExitCode::FAILURE
    }
}

fn rank_main() -> ExitCode {
    let dir = std::env::args()
        .nth(1)
        .expect("the test directory as first argument");
    match launch(&Checks { dir }) {
        Ok((job, Ok(()))) => {
            println!(
                "rank {}: all checks passed ({} ranks, {})",
                job.rank, job.size, job.library
            );
            ExitCode::SUCCESS
        }
        Ok((job, Err(msg))) => {
            eprintln!("rank {}: FAILED {msg}", job.rank);
            piotwin_real::abort(1)
        }
        Err(e) => {
            eprintln!("launch failed: {e}");
            piotwin_real::abort(2)
        }
    }
}
