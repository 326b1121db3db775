//! Shared driver of the multi-rank test targets: started by `cargo test` it
//! re-executes itself under `mpiexec -n N` (the launcher matching the binary's MPI,
//! or `PIOTWIN_MPIEXEC`) in a fresh temporary directory, prints what the ranks
//! printed, and fails unless every rank passed and MPI reported no leaked handles.
//! Started by the launcher it runs the checks on every rank and aborts the job on
//! the first failure.

use std::path::Path;
use std::process::ExitCode;

use piotwin_types::{DARG_DEFAULT, Datatype, Distrib, Order};

/// One named check; `Err` says what was wrong.
pub type Check = (&'static str, fn(&Path) -> Result<(), String>);

/// Fails a check with a message unless `cond` holds.
#[macro_export]
macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err(format!($($fmt)+));
        }
    };
}

/// Runs `checks` on `nprocs` ranks as described in the module docs.
pub fn main(nprocs: usize, checks: &[Check]) -> ExitCode {
    if piotwin_real::under_launcher() {
        rank_main(checks)
    } else {
        parent_main(nprocs, checks.len())
    }
}

fn parent_main(nprocs: usize, nchecks: usize) -> ExitCode {
    let dir = tempfile::tempdir().expect("temporary directory");
    let exe = std::env::current_exe().expect("own executable");
    let mut cmd = piotwin_real::mpiexec_command(nprocs);
    cmd.arg(&exe).arg(dir.path());
    eprintln!("running: {cmd:?}");
    let out = match cmd.output() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("FAILED: cannot start {cmd:?}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    print!("{stdout}");
    eprint!("{stderr}");
    let mut ok = true;
    if !out.status.success() {
        eprintln!("FAILED: the MPI job exited with {}", out.status);
        ok = false;
    }
    if stderr.contains("leaked") || stderr.to_lowercase().contains("yaksa") {
        eprintln!("FAILED: MPI reported leaked handles at finalize");
        ok = false;
    }
    for rank in 0..nprocs {
        let line = format!("rank {rank}: all {nchecks} checks passed");
        if !stdout.contains(&line) {
            eprintln!("FAILED: missing `{line}`");
            ok = false;
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn rank_main(checks: &[Check]) -> ExitCode {
    let dir = std::env::args()
        .nth(1)
        .expect("the test directory as first argument");
    let job = match piotwin_real::init() {
        Ok(j) => j,
        Err(e) => {
            eprintln!("init failed: {e}");
            piotwin_real::abort(2);
        }
    };
    for (name, check) in checks {
        let result = std::panic::catch_unwind(|| check(Path::new(&dir)))
            .unwrap_or_else(|p| Err(format!("panicked: {}", panic_text(&p))));
        if let Err(msg) = result {
            eprintln!("rank {}: FAILED {name}: {msg}", job.rank);
            piotwin_real::abort(1);
        }
        println!("rank {}: ok {name}", job.rank);
    }
    println!("rank {}: all {} checks passed", job.rank, checks.len());
    piotwin_real::finalize();
    ExitCode::SUCCESS
}

fn panic_text(p: &Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic".to_string())
}

fn dt(inner: Datatype) -> Box<Datatype> {
    Box::new(inner)
}

/// Every variant with its `MPI_Type_size` and extent, worked out by hand.
pub fn datatype_cases(rank: u64) -> Vec<(&'static str, Datatype, u64, u64)> {
    use Datatype::*;
    vec![
        ("byte", Byte, 1, 1),
        ("double", Double, 8, 8),
        (
            "contiguous",
            Contiguous {
                count: 5,
                inner: dt(Double),
            },
            40,
            40,
        ),
        (
            "vector",
            Vector {
                count: 3,
                blocklen: 2,
                stride: 5,
                inner: dt(Double),
            },
            48,
            (2 * 5 + 2) * 8,
        ),
        (
            "hvector",
            Hvector {
                count: 4,
                blocklen: 3,
                stride_bytes: 10,
                inner: dt(Byte),
            },
            12,
            33,
        ),
        // The last block ends on an 8-byte boundary: MPICH does not pad an hindexed
        // extent to its element type's alignment, Open MPI does (124 vs 128 bytes
        // for a block at 100).
        (
            "hindexed",
            Hindexed {
                blocks: vec![(0, 2), (96, 3)],
                inner: dt(Double),
            },
            40,
            120,
        ),
        (
            "subarray",
            Subarray {
                sizes: vec![8, 12],
                subsizes: vec![4, 6],
                starts: vec![4, 6],
                order: Order::C,
                inner: dt(Double),
            },
            24 * 8,
            96 * 8,
        ),
        (
            "darray",
            Darray {
                size: 4,
                rank,
                gsizes: vec![8, 12],
                distribs: vec![Distrib::Block, Distrib::Cyclic],
                dargs: vec![DARG_DEFAULT, 2],
                psizes: vec![2, 2],
                order: Order::Fortran,
                inner: dt(Byte),
            },
            24,
            96,
        ),
        (
            "struct",
            Struct {
                fields: vec![
                    (0, 1, Double),
                    (16, 3, Byte),
                    (
                        24,
                        1,
                        Contiguous {
                            count: 2,
                            inner: dt(Double),
                        },
                    ),
                ],
            },
            8 + 3 + 16,
            40,
        ),
        (
            "resized",
            Resized {
                lb: -8,
                extent: 64,
                inner: dt(Double),
            },
            8,
            64,
        ),
    ]
}
