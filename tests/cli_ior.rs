//! End-to-end tests of `piotwin run ior` and `piotwin scenario check`.
//!
//! Which back end each group needs:
//! * bad input, dry run (`--dry-run`): none beyond this crate (null back end);
//! * `twin_*`, `scenario_*`: the twin (`backend::sim`, `Scenario::load`, a file in `scenarios/`);
//! * `real_*`: the real back end (`backend::real`) and `mpiexec` (or `PIOTWIN_MPIEXEC`).

use std::path::{Path, PathBuf};

mod common;
use common::*;

/// Runs `args` in an empty temp dir: refused, `expect` in the message, nothing written.
fn bad_input(args: &[&str], expect: &str) {
    common::bad_input(args, &[expect]);
}

#[test]
fn bad_options_exit_2_and_write_nothing() {
    let dry = ["run", "ior", "--dry-run", "--ranks", "4"];
    let with = |extra: &[&'static str]| -> Vec<&'static str> {
        dry.iter().chain(extra).copied().collect()
    };
    bad_input(&with(&["--bogus"]), "--bogus");
    bad_input(&with(&["-b", "0"]), "at least 1 byte");
    bad_input(&with(&["-b", "-4k"]), "positive");
    bad_input(&with(&["-t", "0"]), "at least 1 byte");
    bad_input(&with(&["-b", "4x"]), "unknown unit `x`");
    bad_input(
        &with(&["-b", "4k", "-t", "3k"]),
        "-t `3072`: the transfer size must divide the block size",
    );
    bad_input(&with(&["-s", "0"]), "-s");
    bad_input(&with(&["-a", "HDF5"]), "HDF5");
    bad_input(&with(&["-a", "POSIX", "-c"]), "-c");
    bad_input(&with(&["--hint", "cb_nodes"]), "expected key=value");
    bad_input(
        &with(&["--hints-file", "missing.txt"]),
        "--hints-file `missing.txt`",
    );
    bad_input(&["run", "ior", "--dry-run", "--ranks", "0"], "--ranks");
    bad_input(&["run", "ior", "--dry-run", "--ranks", "-3"], "--ranks");
    bad_input(&["run", "ior", "--dry-run"], "--dry-run needs --ranks");
    bad_input(
        &["run", "ior", "--ranks", "4"],
        "--ranks applies to --sim and --dry-run",
    );
    bad_input(
        &[
            "run",
            "ior",
            "--dry-run",
            "--ranks",
            "2",
            "--json",
            "x.json",
        ],
        "writes no --json",
    );
    bad_input(&["run", "ior", "--sim", "s.toml"], "--sim needs --ranks");
}

#[cfg(feature = "mpi")]
#[test]
fn unwritable_outputs_exit_2_before_anything_runs() {
    // Real mode outside mpiexec: the checks come before MPI starts.
    bad_input(
        &["run", "ior", "--json", "no/such/dir/r.json"],
        "--json `no/such/dir/r.json`: the directory `no/such/dir` does not exist",
    );
    bad_input(&["run", "ior", "--csv", "."], "--csv `.`: is a directory");
    bad_input(
        &["run", "ior", "--csv", "/proc/piotwin.csv"],
        "--csv `/proc/piotwin.csv`: cannot create files in `/proc`",
    );
    bad_input(
        &["run", "ior", "-o", "no/dir/testFile"],
        "-o `no/dir/testFile`: the directory `no/dir` does not exist",
    );
    // A regular file where a directory should be.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("plain"), b"x").unwrap();
    let o = piotwin(dir.path(), &["run", "ior", "--json", "plain/r.json"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("`plain` does not exist (or is not a directory)"));
    assert_eq!(files_in(dir.path()), vec!["plain".to_string()]);
}

#[cfg(not(feature = "mpi"))]
#[test]
fn a_build_without_mpi_says_so() {
    bad_input(&["run", "ior", "-b", "4k", "-t", "1k"], "built without MPI");
}

#[test]
fn dry_run_prints_ior_output_for_many_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let o = piotwin(
        dir.path(),
        &[
            "run",
            "ior",
            "-a",
            "MPIIO",
            "-c",
            "-F",
            "-z",
            "-C",
            "-b",
            "64k",
            "-t",
            "4k",
            "-s",
            "2",
            "-i",
            "2",
            "--tasks-per-node",
            "8",
            "--hint",
            "cb_nodes=4",
            "--dry-run",
            "--ranks",
            "4096",
        ],
    );
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(out.contains("access              : file-per-process"));
    assert!(out.contains("ordering inter file : constant task offset 8"));
    assert!(out.contains("hints in effect     : cb_nodes=4"));
    assert!(out.contains("Summary of all tests:"));
    assert_eq!(
        out.lines().filter(|l| l.starts_with("write ")).count(),
        2 + 1
    );
    assert_eq!(
        out.lines().filter(|l| l.starts_with("read ")).count(),
        2 + 1
    );
    assert_eq!(files_in(dir.path()), Vec::<String>::new());
}

#[test]
fn reading_a_file_never_written_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let o = piotwin(
        dir.path(),
        &["run", "ior", "-r", "--dry-run", "--ranks", "3"],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("repetition 0, read: rank 0: open on `testFile`"),
        "{}",
        stderr(&o)
    );
}

// ---------------------------------------------------------------- twin (needs backend::sim)

/// The first scenario file of the repository's `scenarios/`.
fn a_scenario() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e} (the twin's scenarios are needed)", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    v.sort();
    v.into_iter().next().expect("a scenario in scenarios/")
}

#[test]
fn twin_ior_at_1024_ranks_writes_a_report() {
    let dir = tempfile::tempdir().unwrap();
    let sc = a_scenario();
    let o = piotwin(
        dir.path(),
        &[
            "run",
            "ior",
            "-a",
            "MPIIO",
            "-c",
            "-b",
            "1m",
            "-t",
            "256k",
            "-i",
            "2",
            "--sim",
            sc.to_str().unwrap(),
            "--ranks",
            "1024",
            "--json",
            "r.json",
            "--csv",
            "r.csv",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("Summary of all tests:"));
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("r.json")).unwrap()).unwrap();
    assert_eq!(r["benchmark"], "ior");
    assert_eq!(r["mode"], "sim");
    assert_eq!(r["ranks"], 1024);
    for m in [
        "write_mib_s",
        "read_mib_s",
        "write_mib_s_max",
        "read_mib_s_stddev",
        "write_ops_s",
    ] {
        assert!(
            r["metrics"][m]
                .as_f64()
                .is_some_and(|x| x.is_finite() && x >= 0.0),
            "{m}: {}",
            r["metrics"][m]
        );
    }
    assert!(r["metrics"]["write_mib_s"].as_f64().unwrap() > 0.0);
    assert_eq!(
        r["tables"]["repetitions"]["rows"].as_array().unwrap().len(),
        4
    );
    assert_eq!(r["errors"].as_array().unwrap().len(), 0);
    assert!(
        std::fs::read_to_string(dir.path().join("r.csv"))
            .unwrap()
            .starts_with("metric,value")
    );
}

#[test]
fn twin_ior_is_deterministic() {
    let dir = tempfile::tempdir().unwrap();
    let sc = a_scenario();
    for name in ["a.json", "b.json"] {
        let o = piotwin(
            dir.path(),
            &[
                "run",
                "ior",
                "-F",
                "-z",
                "-b",
                "256k",
                "-t",
                "16k",
                "-s",
                "2",
                "--sim",
                sc.to_str().unwrap(),
                "--ranks",
                "64",
                "--seed",
                "7",
                "--json",
                name,
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    let a = std::fs::read(dir.path().join("a.json")).unwrap();
    let b = std::fs::read(dir.path().join("b.json")).unwrap();
    assert!(a == b, "same scenario and seed gave different reports");
}

#[test]
fn scenario_check_prints_a_summary_or_exits_2() {
    let sc = a_scenario();
    let dir = tempfile::tempdir().unwrap();
    let o = piotwin(dir.path(), &["scenario", "check", sc.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stdout(&o).trim().is_empty());

    let bad = tempfile::tempdir().unwrap();
    let bad_file = bad.path().join("bad.toml");
    std::fs::write(&bad_file, "[nodes\ncount = = 3\n").unwrap();
    let o = piotwin(
        dir.path(),
        &["scenario", "check", bad_file.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("bad.toml"), "{}", stderr(&o));
    // The same scenario given to a run: exit 2, no report.
    bad_input(
        &[
            "run",
            "ior",
            "--sim",
            bad_file.to_str().unwrap(),
            "--ranks",
            "4",
            "--json",
            "r.json",
        ],
        "bad.toml",
    );
}

// ---------------------------------------------------------------- real (needs backend::real + mpiexec)

#[cfg(feature = "mpi")]
#[test]
fn real_ior_verifies_data_in_every_layout() {
    let layouts: [&[&str]; 5] = [
        &["-a", "POSIX"],
        &["-a", "POSIX", "-F", "-C", "-e"],
        &["-a", "MPIIO"],
        &[
            "-a",
            "MPIIO",
            "-c",
            "-z",
            "--hint",
            "cb_nodes=2",
            "--hint",
            "cb_config_list=*:2",
        ],
        &["-a", "MPIIO", "-c", "-F", "-C", "--tasks-per-node", "2"],
    ];
    for layout in layouts {
        let dir = tempfile::tempdir().unwrap();
        let mut args = vec![
            "run", "ior", "-b", "64k", "-t", "16k", "-s", "3", "-i", "2", "-o", "ior.dat",
            "--json", "r.json",
        ];
        args.extend_from_slice(layout);
        let Some(o) = mpirun(dir.path(), 4, &args) else {
            return;
        };
        assert_eq!(o.status.code(), Some(0), "{layout:?}: {}", stderr(&o));
        let out = stdout(&o);
        assert_eq!(
            out.matches("Summary of all tests:").count(),
            1,
            "{layout:?}: only rank 0 prints"
        );
        let r: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("r.json")).unwrap())
                .unwrap();
        assert_eq!(r["mode"], "real");
        assert_eq!(r["ranks"], 4);
        assert_eq!(
            r["errors"].as_array().unwrap().len(),
            0,
            "{layout:?}: {}",
            r["errors"]
        );
        assert!(r["metrics"]["read_mib_s"].as_f64().unwrap() > 0.0);
        assert_eq!(
            r["tables"]["repetitions"]["rows"].as_array().unwrap().len(),
            4
        );
        // The test file is removed after each repetition (no -k).
        assert_eq!(
            files_in(dir.path()),
            vec!["r.json".to_string()],
            "{layout:?}"
        );
    }
}

#[cfg(feature = "mpi")]
#[test]
fn real_ior_reports_corrupted_data() {
    let dir = tempfile::tempdir().unwrap();
    let base = [
        "run", "ior", "-a", "MPIIO", "-b", "16k", "-t", "4k", "-o", "d.dat", "-k",
    ];
    let write: Vec<&str> = base.iter().copied().chain(["-w"]).collect();
    let Some(o) = mpirun(dir.path(), 2, &write) else {
        return;
    };
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let path = dir.path().join("d.dat");
    let mut bytes = std::fs::read(&path).unwrap();
    assert_eq!(bytes.len(), 2 * 16 * 1024);
    bytes[20000] ^= 0x5a;
    std::fs::write(&path, &bytes).unwrap();
    let read: Vec<&str> = base
        .iter()
        .copied()
        .chain(["-r", "--json", "r.json"])
        .collect();
    let o = mpirun(dir.path(), 2, &read).unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("1 differing bytes; first: rank 1 reading `d.dat` at offset 20000"),
        "{err}"
    );
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("r.json")).unwrap()).unwrap();
    assert_eq!(r["errors"].as_array().unwrap().len(), 1);
}

/// IOR on a file system too small for its file: exit status 1 with the failing
/// rank, call and file named, its report kept, and its test file removed.
#[cfg(feature = "mpi")]
#[test]
fn real_ior_on_a_full_disk_fails_cleanly_and_removes_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let full = dir.path().join("full");
    let Some(_fs) = Tmpfs::mount(&full, "4m") else {
        return;
    };
    let target = full.join("ior.dat");
    let Some(o) = mpirun(
        dir.path(),
        2,
        &[
            "run",
            "ior",
            "-a",
            "MPIIO",
            "-b",
            "4m",
            "-t",
            "1m",
            "-o",
            target.to_str().unwrap(),
            "--json",
            "r.json",
        ],
    ) else {
        return;
    };
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("No space left on device") && err.contains("rank"),
        "{err}"
    );
    let j = read_json(&dir.path().join("r.json"));
    assert!(!j["errors"].as_array().unwrap().is_empty(), "{j}");
    assert_eq!(
        files_in(&full),
        Vec::<String>::new(),
        "the test file was left behind"
    );
}
