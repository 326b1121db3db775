//! BTIO, the BTIO kernel, FTIO and IOzone on a file system too small for their
//! files (a tmpfs; root only, required under `make test`): each fails with exit
//! status 1 naming the error, keeps its report, and leaves none of its files in
//! the scratch directory. (b_eff_io's and IOR's are in their own test files.)
#![cfg(feature = "mpi")]

mod common;

use std::path::Path;

use common::*;

/// Runs `piotwin ARGS` (under the launcher with `ranks` > 1) in `dir` and checks
/// the failure: exit 1, "No space left on device", the JSON report written.
fn fails_cleanly(dir: &Path, ranks: usize, args: &[&str]) {
    let o = if ranks > 1 {
        let Some(o) = mpirun(dir, ranks, args) else {
            return;
        };
        o
    } else {
        piotwin(dir, args)
    };
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
    assert!(err.contains("No space left on device"), "{args:?}: {err}");
    let j = read_json(&dir.join("r.json"));
    assert!(!j["errors"].as_array().unwrap().is_empty(), "{args:?}: {j}");
}

#[test]
fn btio_kernel_ftio_and_iozone_fail_cleanly_on_a_full_disk() {
    let dir = tempfile::tempdir().unwrap();
    let full = dir.path().join("full");
    let Some(_fs) = Tmpfs::mount(&full, "2m") else {
        return;
    };
    let p = full.to_str().unwrap();
    let cases: [(usize, Vec<&str>); 5] = [
        (
            4,
            vec!["run", "btio", "--class", "W", "--subtype", "full", "-p", p],
        ),
        (
            4,
            vec!["run", "btio", "--class", "W", "--subtype", "epio", "-p", p],
        ),
        (
            4,
            vec![
                "run",
                "btio-kernel",
                "--mode",
                "w",
                "--records",
                "4",
                "--grid",
                "64,64,64",
                "-p",
                p,
            ],
        ),
        (2, vec!["run", "ftio", "-i", "64", "-p", p]),
        (
            1,
            vec!["run", "iozone", "-i", "0", "-s", "8m", "-r", "64k", "-f"],
        ),
    ];
    for (ranks, mut args) in cases {
        let file = format!("{p}/ioz.tmp");
        if args[1] == "iozone" {
            args.push(&file);
        }
        args.extend(["--json", "r.json"]);
        fails_cleanly(dir.path(), ranks, &args);
        assert_eq!(
            files_in(&full),
            Vec::<String>::new(),
            "{args:?} left files behind"
        );
    }
}
