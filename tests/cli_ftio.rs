//! End-to-end tests of `piotwin run ftio`.
//!
//! Which back end each group needs:
//! * bad input, dry run: none beyond this crate (checks before anything runs; null back end);
//! * `twin_*`: the twin (`backend::sim`, a scenario in `scenarios/`);
//! * `real_*`: the real back end and `mpiexec` (or `PIOTWIN_MPIEXEC`, split on spaces).

use std::path::Path;
use std::process::Output;

mod common;
use common::*;

/// Exit code 2, `expect` in the message, nothing on stdout, nothing written in `dir`.
fn assert_bad_input(o: &Output, dir: &Path, what: &str, expect: &str) {
    assert_eq!(o.status.code(), Some(2), "{what}: stderr {}", stderr(o));
    assert_refused(o, dir, &[expect]);
}

fn bad_input(args: &[&str], env: &[(&str, &str)], expect: &str) {
    let dir = tempfile::tempdir().unwrap();
    let o = piotwin_env(dir.path(), args, env);
    assert_bad_input(&o, dir.path(), &format!("{args:?} {env:?}"), expect);
}

#[test]
fn invalid_i_exits_2_with_the_smallest_valid_i_and_writes_nothing() {
    let dry = |i: &'static str, ranks: &'static str| -> Vec<&'static str> {
        vec![
            "run",
            "ftio",
            "-i",
            i,
            "--dry-run",
            "--ranks",
            ranks,
            "-p",
            ".",
        ]
    };
    bad_input(
        &dry("3", "4"),
        &[],
        "the smallest valid I for 4 processes is 2",
    );
    bad_input(
        &dry("6", "8"),
        &[],
        "the smallest valid I for 8 processes is 4",
    );
    bad_input(
        &dry("4", "3"),
        &[],
        "the smallest valid I for 3 processes is 3",
    );
    bad_input(&dry("1", "1"), &[], "I must be at least 2");
    bad_input(&dry("0", "4"), &[], "I must be at least 2");
    bad_input(&dry("-2", "4"), &[], "-2");
    bad_input(
        &["run", "ftio", "--dry-run", "--ranks", "4"],
        &[],
        "--mini-side",
    );
    bad_input(&dry("5000000000", "1"), &[], "too large");
    // Real mode: the size comes from the launcher's environment and is checked
    // before MPI starts (here without a launcher: nothing runs).
    let real = ["run", "ftio", "-i", "3", "-p", ".", "--json", "r.json"];
    bad_input(
        &real,
        &[("PMI_SIZE", "4")],
        "the smallest valid I for 4 processes is 2",
    );
    bad_input(
        &["run", "ftio", "-i", "4", "-p", "."],
        &[("OMPI_COMM_WORLD_SIZE", "9")],
        "-i 4 is not valid for 9 processes",
    );
    bad_input(
        &["run", "ftio", "-i", "2", "-p", "no/such/dir"],
        &[("PMI_SIZE", "4")],
        "-p `no/such/dir`",
    );
    bad_input(
        &[
            "run",
            "ftio",
            "-i",
            "2",
            "--sim",
            "missing.toml",
            "--ranks",
            "4",
        ],
        &[],
        "missing.toml",
    );
}

#[test]
fn dry_run_prints_the_nas_block() {
    let dir = tempfile::tempdir().unwrap();
    let o = piotwin_env(
        dir.path(),
        &[
            "run",
            "ftio",
            "-i",
            "4",
            "--dry-run",
            "--ranks",
            "16",
            "-p",
            ".",
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("FTIO Benchmark Completed."), "{out}");
    assert!(
        out.contains("256 x 256") && out.contains("dry run"),
        "{out}"
    );
    assert_eq!(files_in(dir.path()), Vec::<String>::new());
}

// ---------------------------------------------------------------- twin

#[test]
fn twin_ftio_writes_a_report_and_is_deterministic() {
    let dir = tempfile::tempdir().unwrap();
    let sc = scenario("default.toml");
    for name in ["a.json", "b.json"] {
        let o = piotwin_env(
            dir.path(),
            &[
                "run",
                "ftio",
                "-i",
                "4",
                "--shared-file",
                "--sim",
                sc.to_str().unwrap(),
                "--ranks",
                "16",
                "--seed",
                "3",
                "--json",
                name,
                "--csv",
                &format!("{name}.csv"),
            ],
            &[],
        );
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        assert!(stdout(&o).contains("twin (predicted)"));
    }
    let a = std::fs::read(dir.path().join("a.json")).unwrap();
    let b = std::fs::read(dir.path().join("b.json")).unwrap();
    assert!(a == b, "same scenario and seed gave different reports");
    let r = read_json(&dir.path().join("a.json"));
    assert_eq!(r["benchmark"], "ftio");
    assert_eq!(r["mode"], "sim");
    assert_eq!(r["ranks"], 16);
    assert_eq!(r["params"]["n"], 256);
    let m = &r["metrics"];
    let f = |k: &str| m[k].as_f64().unwrap_or_else(|| panic!("{k}: {}", m[k]));
    assert!(f("io_fraction") > 0.0 && f("io_fraction") < 1.0);
    assert!(f("mflops") > 0.0 && f("compute_time_s") > 0.0 && f("comm_time_s") > 0.0);
    let parts = f("io_time_s") + f("compute_time_s") + f("comm_time_s") + f("other_time_s");
    assert!((parts - f("total_time_s")).abs() <= 1e-9 * f("total_time_s"));
    // Every element is written by init and each phase but the exchange rewrites it.
    let bytes = 256.0 * 256.0 * 16.0;
    assert!(f("bytes_written") >= 4.0 * bytes, "{}", f("bytes_written"));
    assert_eq!(
        f("verified_elements"),
        0.0,
        "the twin has no data to verify"
    );
    assert_eq!(r["tables"]["phases"]["rows"].as_array().unwrap().len(), 5);
    assert_eq!(r["errors"].as_array().unwrap().len(), 0);
    let csv = std::fs::read_to_string(dir.path().join("a.json.csv")).unwrap();
    assert!(csv.contains("io_fraction,"), "{csv}");
}

/// The input FTIO computes before it writes is charged at `compute.signal`,
/// bytes of output per second. By hand, I = 4 on 2 ranks (c = 2, a core each):
/// a band is I³ = 64 elements of 16 bytes, and each rank computes c·I = 8 of
/// them, 8192 bytes: 8.192 ms at 1 MB/s, 4.096 ms at 2 MB/s, and nothing else
/// is computed in init.
#[test]
fn twin_ftio_computes_its_input_at_the_signal_rate() {
    let dir = tempfile::tempdir().unwrap();
    let sc = scenario("default.toml");
    for (rate, want) in [("1MB/s", 8.192e-3), ("2MB/s", 4.096e-3)] {
        let o = piotwin_env(
            dir.path(),
            &[
                "run",
                "ftio",
                "-i",
                "4",
                "--sim",
                sc.to_str().unwrap(),
                "--ranks",
                "2",
                "--set",
                &format!("nodes[0].compute.signal={rate}"),
                "--json",
                "r.json",
            ],
            &[],
        );
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let r = read_json(&dir.path().join("r.json"));
        let init = &r["tables"]["phases"]["rows"][0];
        assert_eq!(init[0], "init");
        let compute = init[3].as_f64().unwrap();
        assert!(
            (compute - want).abs() <= 1e-9 * want,
            "{rate}: init computed {compute} s"
        );
    }
}

// ---------------------------------------------------------------- real

#[cfg(feature = "mpi")]
#[test]
fn real_ftio_verifies_every_element() {
    // (ranks, I, shared file): N = I²·c = 8, 27, 64, 16.
    for (n_ranks, i, shared) in [(2, 2, false), (3, 3, true), (4, 4, false), (4, 2, true)] {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap();
        let i_text = i.to_string();
        let mut args = vec![
            "run", "ftio", "-i", &i_text, "-p", "data", "--json", "r.json",
        ];
        if shared {
            args.push("--shared-file");
        }
        let Some(o) = mpirun(dir.path(), n_ranks, &args) else {
            return;
        };
        let what = format!("-n {n_ranks} {args:?}");
        assert_eq!(o.status.code(), Some(0), "{what}: {}", stderr(&o));
        let out = stdout(&o);
        assert!(
            out.contains("Verification            =                   SUCCESSFUL"),
            "{what}: {out}"
        );
        let r = read_json(&dir.path().join("r.json"));
        let n = (i * i * n_ranks) as f64;
        assert_eq!(r["mode"], "real");
        assert_eq!(r["ranks"], n_ranks);
        assert_eq!(r["metrics"]["verified_elements"], n * n, "{what}");
        assert_eq!(r["metrics"]["verification_failures"], 0.0, "{what}");
        let err = r["metrics"]["max_rel_error"]
            .as_f64()
            .expect("max error reported");
        assert!((0.0..1e-9).contains(&err), "{what}: {err}");
        assert!(r["metrics"]["io_fraction"].as_f64().unwrap() > 0.0);
        assert_eq!(
            r["metrics"]["bytes_written"],
            4.0 * n * n * 16.0 + r["metrics"]["comm_bytes"].as_f64().unwrap()
        );
        assert_eq!(r["errors"].as_array().unwrap().len(), 0);
        assert_eq!(
            files_in(&data),
            Vec::<String>::new(),
            "{what}: files not removed"
        );
    }
}

#[cfg(feature = "mpi")]
#[test]
fn real_ftio_keeps_the_transformed_files_on_request() {
    let dir = tempfile::tempdir().unwrap();
    let Some(o) = mpirun(
        dir.path(),
        2,
        &["run", "ftio", "-i", "2", "-p", ".", "--keep"],
    ) else {
        return;
    };
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // N = 8: each rank's region is a Square column of 8·4 elements of 16 bytes.
    assert_eq!(files_in(dir.path()), ["ftio.0000", "ftio.0001"]);
    for f in ["ftio.0000", "ftio.0001"] {
        assert_eq!(
            std::fs::metadata(dir.path().join(f)).unwrap().len(),
            8 * 4 * 16
        );
    }
}

#[cfg(feature = "mpi")]
#[test]
fn real_ftio_refuses_an_invalid_i_on_every_rank_before_touching_files() {
    for (n_ranks, i, expect) in [
        (4, "3", "smallest valid I for 4 processes is 2"),
        (3, "2", "smallest valid I for 3 processes is 3"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let Some(o) = mpirun(
            dir.path(),
            n_ranks,
            &["run", "ftio", "-i", i, "-p", ".", "--json", "r.json"],
        ) else {
            return;
        };
        assert_bad_input(&o, dir.path(), &format!("-n {n_ranks} -i {i}"), expect);
    }
}
