//! End-to-end tests of `piotwin run b_eff_io`.
//!
//! Which back end each group needs:
//! * bad input: none (options are checked before anything runs);
//! * `twin_*`: the twin (`backend::sim`, a file in `scenarios/`);
//! * `real_*`: the real back end (`backend::real`) and `mpiexec` (or `PIOTWIN_MPIEXEC`).

use std::path::{Path, PathBuf};

mod common;
use common::*;

/// The default scenario.
fn default_scenario() -> PathBuf {
    scenario("default.toml")
}

/// Runs `args` in an empty temp dir: exit code 2, `expect` in the message, nothing written.
fn bad_input<S: AsRef<std::ffi::OsStr> + std::fmt::Debug>(args: &[S], expect: &str) {
    common::bad_input(args, &[expect]);
}

#[test]
fn bad_options_exit_2_and_write_nothing() {
    let sc = default_scenario();
    let sc = sc.to_str().unwrap();
    let twin = ["run", "b_eff_io", "--sim", sc, "--ranks", "4"];
    let with = |extra: &[&str]| -> Vec<String> {
        twin.iter().chain(extra).map(|s| s.to_string()).collect()
    };
    bad_input(&with(&["-N", "2,9"]), "partition size 9");
    bad_input(&with(&["-N", "2,2"]), "once");
    bad_input(&with(&["-T", "0"]), "-T");
    bad_input(&with(&["-T", "2", "-N", "1,2,4"]), "at least 1 second");
    bad_input(&with(&["-MB", "0"]), "-MB");
    bad_input(&with(&["-MB", "lots"]), "lots");
    bad_input(&with(&["--hint", "novalue"]), "expected key=value");
    bad_input(&with(&["-i", "missing-hints"]), "missing-hints");
    bad_input(&with(&["-f", "no/such/dir/run"]), "-f");
    bad_input(
        &["run", "b_eff_io", "--sim", "missing.toml", "--ranks", "4"],
        "missing.toml",
    );
    // A hints-file line naming an unknown access method, with its line number.
    let dir = tempfile::tempdir().unwrap();
    let hints = dir.path().join("hints");
    std::fs::write(
        &hints,
        "# per-pattern hints\nall scribble all 1024 cb_nodes 2\n",
    )
    .unwrap();
    let o = piotwin(
        dir.path(),
        &with(&["-i", hints.to_str().unwrap(), "-f", "out"]),
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains(":2:"), "{}", stderr(&o));
    assert_eq!(files_in(dir.path()), vec!["hints"]);
}

/// A twin run of 4 ranks: the summary on stdout, a progress line per pattern on
/// stderr, every result file; the same seed twice gives the same report.
#[test]
fn twin_b_eff_io_is_deterministic_and_writes_every_file() {
    let dir = tempfile::tempdir().unwrap();
    let other = tempfile::tempdir().unwrap();
    let sc = default_scenario();
    let run = |dir: &Path| {
        let args = [
            "run",
            "b_eff_io",
            "--sim",
            sc.to_str().unwrap(),
            "--ranks",
            "4",
            "-T",
            "6",
            "-MB",
            "64",
            "-f",
            "a",
        ];
        let o = piotwin(dir, &args);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        o
    };
    let a = run(dir.path());
    let b = run(other.path());
    let out = stdout(&a);
    // Default partitions of 4 processes: 2, 3, 4 (release 2.1's rule).
    for n in [2, 3, 4] {
        assert!(
            out.contains(&format!(
                "accumulated on {n:3} processes with   64 MByte/PE"
            )),
            "{out}"
        );
    }
    assert!(
        out.contains(" b_eff_io = ") && out.contains("paper definition"),
        "{out}"
    );
    assert!(out.contains("predicted by the twin"), "{out}");
    // 3 partitions × (43 write + 9 rewrite + 43 read) patterns.
    let progress = stderr(&a)
        .lines()
        .filter(|l| l.starts_with("b_eff_io ["))
        .count();
    assert_eq!(progress, 3 * 95, "{}", stderr(&a));
    let read = |d: &Path, name: &str| std::fs::read_to_string(d.join(name)).unwrap();
    let ja = read(dir.path(), "a.json");
    for f in ["a.json", "a.sum", "a.prot", "a.csv", "a_n004.svg"] {
        assert!(
            read(dir.path(), f) == read(other.path(), f),
            "{f}: two runs of the same scenario and seed differ"
        );
    }
    let files = files_in(dir.path());
    for f in [
        "a.sum",
        "a.prot",
        "a.json",
        "a.csv",
        "a_n002.png",
        "a_n002.svg",
        "a_n003.png",
        "a_n004.svg",
    ] {
        assert!(files.contains(&f.to_string()), "{f} missing from {files:?}");
    }
    let j: serde_json::Value = serde_json::from_str(&ja).unwrap();
    assert_eq!(j["benchmark"], "b_eff_io");
    assert_eq!(j["mode"], "sim");
    let b_eff = j["metrics"]["b_eff_io_mb_s"].as_f64().unwrap();
    assert!(b_eff > 0.0);
    // The twin holds no data: criterion 3 is not claimed as reached, nor is validity.
    assert!(
        out.contains("criterion 3: error count (0) == 0 -- not checked (twin: no data)")
            && !out.contains("criterion 3: error count (0) == 0 -- reached"),
        "{out}"
    );
    // Not valid anyway (T < 30 min): that much is known without data.
    assert_eq!(j["metrics"]["valid"], 0.0, "{}", j["metrics"]);
    let partitions = &j["tables"]["partitions"];
    let col = |name: &str| column(partitions, name);
    for row in partitions["rows"].as_array().unwrap() {
        assert!(
            row[col("valid")] == false && row[col("errors_ok")].is_null(),
            "{row}"
        );
    }
    assert_eq!(stdout(&b), out);
}

// ---------------------------------------------------------------- real (needs backend::real + mpiexec)

/// A real run on 2 processes: every chunk read back verified (zero errors), the
/// summary table printed, the report's metrics present, scratch files removed.
#[cfg(feature = "mpi")]
#[test]
fn real_b_eff_io_verifies_every_chunk_and_reports() {
    let dir = tempfile::tempdir().unwrap();
    let scratch = dir.path().join("scratch");
    std::fs::create_dir(&scratch).unwrap();
    let args = [
        "run",
        "b_eff_io",
        "-MB",
        "64",
        "-MT",
        "128",
        "-T",
        "6",
        "-p",
        scratch.to_str().unwrap(),
        "-f",
        "r",
    ];
    let Some(o) = mpirun(dir.path(), 2, &args) else {
        return;
    };
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{}", stderr(&o));
    for n in [1, 2] {
        assert!(
            out.contains(&format!(
                "accumulated on {n:3} processes with   64 MByte/PE"
            )),
            "{out}"
        );
    }
    assert!(
        out.contains("total-write") && out.contains("total-read"),
        "{out}"
    );
    assert!(
        out.contains("criterion 3: error count (0) == 0 -- reached"),
        "{out}"
    );
    let progress = stderr(&o)
        .lines()
        .filter(|l| l.starts_with("b_eff_io ["))
        .count();
    assert_eq!(progress, 2 * 95, "{}", stderr(&o));
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("r.json")).unwrap()).unwrap();
    assert_eq!(j["benchmark"], "b_eff_io");
    assert_eq!(j["mode"], "real");
    assert_eq!(j["ranks"], 2);
    let m = &j["metrics"];
    for k in [
        "b_eff_io_mb_s",
        "b_eff_io_paper_mb_s",
        "write_mb_s",
        "rewrite_mb_s",
        "read_mb_s",
        "n2_write_type0_mb_s",
        "n2_read_type4_mb_s",
        "n1_rewrite_type0_mb_s",
    ] {
        assert!(m[k].as_f64().is_some_and(|v| v > 0.0), "{k}: {}", m[k]);
    }
    assert_eq!(m["errors"].as_f64(), Some(0.0));
    // Every pattern of every pass read back or wrote at least one call; none failed.
    let rows = j["tables"]["patterns"]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2 * 95);
    assert!(rows.iter().all(|r| r[7].as_u64() >= Some(1) && r[11] == 0));
    let files = files_in(dir.path());
    for f in ["r.sum", "r.prot", "r.csv", "r_n001.png", "r_n002.svg"] {
        assert!(files.contains(&f.to_string()), "{f} missing from {files:?}");
    }
    assert_eq!(
        files_in(&scratch),
        Vec::<String>::new(),
        "scratch files left (no -keep)"
    );
}

/// The other switches on real MPI-IO: explicit offsets for type 1, no unique
/// open, rewrite of every type, one partition, files kept.
#[cfg(feature = "mpi")]
#[test]
fn real_b_eff_io_with_rewrite_noshared_nounique_keep() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "run",
        "b_eff_io",
        "-MB",
        "64",
        "-T",
        "3",
        "-N",
        "2",
        "-rewrite",
        "-noshared",
        "-nounique",
        "-keep",
        "-p",
        ".",
        "-f",
        "k",
    ];
    let Some(o) = mpirun(dir.path(), 2, &args) else {
        return;
    };
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{}", stderr(&o));
    assert!(
        out.contains("criterion 3: error count (0) == 0 -- reached"),
        "{out}"
    );
    assert!(
        out.contains("shared file pointers must be used for pattern type 1 -- NOT reached"),
        "{out}"
    );
    // With -rewrite, every type has a rewrite row.
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("k.json")).unwrap()).unwrap();
    for t in 0..5 {
        let k = format!("n2_rewrite_type{t}_mb_s");
        assert!(j["metrics"][&k].as_f64().is_some_and(|v| v > 0.0), "{k}");
    }
    // -keep: the five types' files stay (type 2: one per process).
    let data: Vec<String> = files_in(dir.path())
        .into_iter()
        .filter(|f| f.starts_with("b_eff_io_data_"))
        .collect();
    assert_eq!(data.len(), 6, "{data:?}");
}

/// b_eff_io on a file system that is full from the start: every failed pattern is
/// reported as failed (no bandwidth), the shared-pointer type is skipped before MPI
/// could abort on its hidden file, the run ends (no hang) with exit status 1 and
/// its report, and it leaves none of its scratch files behind.
#[cfg(feature = "mpi")]
#[test]
fn real_b_eff_io_on_a_full_disk_fails_cleanly_and_reports() {
    let dir = tempfile::tempdir().unwrap();
    let full = dir.path().join("full");
    let Some(_fs) = Tmpfs::mount(&full, "8m") else {
        return;
    };
    // Fill it to the last block.
    let fill = full.join("fill");
    let _ = std::fs::write(&fill, vec![7u8; 8 << 20]);
    let args = [
        "run",
        "b_eff_io",
        "-MB",
        "16",
        "-T",
        "4",
        "-N",
        "2",
        "-p",
        full.to_str().unwrap(),
        "-f",
        "r",
        "--json",
        "r.json",
    ];
    let Some(o) = mpirun(dir.path(), 2, &args) else {
        return;
    };
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("No space left on device"), "{err}");
    assert!(err.contains("FAILED"), "{err}");
    assert!(err.contains("shared file pointer not usable"), "{err}");
    let j = read_json(&dir.path().join("r.json"));
    assert!(!j["errors"].as_array().unwrap().is_empty());
    let patterns = &j["tables"]["patterns"];
    let col = |name: &str| column(patterns, name);
    for row in patterns["rows"].as_array().unwrap() {
        if row[col("errors")].as_u64().unwrap() > 0 {
            assert!(
                row[col("bw_mb_s")].is_null(),
                "a failed pattern with a bandwidth: {row}"
            );
        }
    }
    for f in ["r.sum", "r.prot"] {
        assert!(dir.path().join(f).is_file(), "{f} not written");
    }
    assert_eq!(files_in(&full), ["fill"], "scratch files left behind");
}
