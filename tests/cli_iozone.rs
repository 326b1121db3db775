//! End-to-end tests of `piotwin run iozone`.
//!
//! Which back end each group needs:
//! * bad input, dry run: none beyond this crate (null back end);
//! * `twin_*`: the twin and `scenarios/default.toml`;
//! * `real_*`: the real back end and `mpiexec` (or `PIOTWIN_MPIEXEC`).

mod common;
use common::*;

/// The passes of `-i 0 -i 1 -i 2 -i 5`, in the report's order.
const ALL_PASSES: [&str; 7] = [
    "write",
    "rewrite",
    "read",
    "reread",
    "random-read",
    "random-write",
    "stride-read",
];

#[test]
fn bad_options_exit_2_and_write_nothing() {
    let dry = ["run", "iozone", "--dry-run", "--ranks", "2"];
    let with = |extra: &[&'static str]| -> Vec<&'static str> {
        dry.iter().chain(extra).copied().collect()
    };
    bad_input(
        &with(&["-i", "3"]),
        &["-i", "no test 3", "5 (strided read)"],
    );
    bad_input(&with(&["-i", "x"]), &["-i", "not a test number"]);
    bad_input(&with(&["-s", "0"]), &["-s", "at least 1 byte"]);
    bad_input(&with(&["-r", "4x"]), &["-r", "unknown unit `x`"]);
    bad_input(
        &with(&["-s", "64k", "-r", "3k"]),
        &["-r `3 KiB`: the record size must divide the file size (-s 64 KiB)"],
    );
    bad_input(
        &with(&["-s", "4k", "-r", "64k"]),
        &["-r `64 KiB`: every record size exceeds every file size"],
    );
    bad_input(
        &with(&["-s", "1000b", "-r", "1000b"]),
        &["-s `1000 bytes`", "whole kB"],
    );
    bad_input(&with(&["-j", "0"]), &["-j"]);
    bad_input(&with(&["-a", "HDF5"]), &["-a `HDF5`: not an API"]);
    bad_input(
        &with(&["-a", "MPIIO", "--api", "posix"]),
        &["-a `MPIIO`", "contradicts"],
    );
    bad_input(
        &with(&["-g", "64m"]),
        &["-g: sets a bound of auto mode; it needs -a"],
    );
    bad_input(
        &with(&["-a", "-n", "1m", "-g", "64k"]),
        &["-n `1 MiB`: the smallest file exceeds the largest (-g 64 KiB)"],
    );
    bad_input(&with(&["-r", "2g"]), &["-r `2 GiB`", "at most 1 GiB"]);
    bad_input(&with(&["--hint", "cb_nodes=2"]), &["--hint", "--api MPIIO"]);
    bad_input(&with(&["-f", ""]), &["-f", "empty"]);
    bad_input(
        &["run", "iozone", "--sim", "s.toml"],
        &["--sim needs --ranks"],
    );
}

#[cfg(feature = "mpi")]
#[test]
fn real_run_refuses_a_missing_directory_before_anything_runs() {
    bad_input(
        &["run", "iozone", "-f", "no/such/dir/io.tmp"],
        &["-f `no/such/dir/io.tmp`: the directory `no/such/dir` does not exist"],
    );
}

#[test]
fn dry_run_prints_the_iozone_table_for_every_combination() {
    let dir = tempfile::tempdir().unwrap();
    let o = piotwin(
        dir.path(),
        &[
            "run",
            "iozone",
            "-a",
            "-g",
            "256k",
            "-q",
            "64k",
            "-i",
            "0",
            "-i",
            "5",
            "--dry-run",
            "--ranks",
            "3",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("Auto Mode"), "{out}");
    assert!(out.contains("Throughput test with 3 processes"), "{out}");
    // Files 64k, 128k, 256k with records 4k..min(file, 64k): 5 + 5 + 5 lines.
    let table_lines = out
        .lines()
        .filter(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            w.len() == 5 && w.iter().all(|x| x.parse::<f64>().is_ok())
        })
        .count();
    assert_eq!(table_lines, 15, "{out}");
    // One progress line per file x record size on stderr.
    assert_eq!(stderr(&o).matches("iozone [").count(), 15, "{}", stderr(&o));
    assert_eq!(files_in(dir.path()), Vec::<String>::new());
}

// ---------------------------------------------------------------- twin

fn twin(dir: &std::path::Path, extra: &[&str], json: &str) -> serde_json::Value {
    let sc = scenario("default.toml");
    let mut args = vec![
        "run",
        "iozone",
        "--sim",
        sc.to_str().unwrap(),
        "--ranks",
        "1",
        "--json",
        json,
    ];
    args.extend_from_slice(extra);
    let o = piotwin(dir, &args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    read_json(&dir.join(json))
}

/// kB/s of `test` in the report's `rows` table.
fn kb_s(report: &serde_json::Value, test: &str) -> f64 {
    let t = &report["tables"]["rows"];
    let cols: Vec<&str> = t["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    let (ti, ki) = (
        cols.iter().position(|&c| c == "test").unwrap(),
        cols.iter().position(|&c| c == "kb_s").unwrap(),
    );
    t["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r[ti] == test)
        .unwrap_or_else(|| panic!("no row {test}"))[ki]
        .as_f64()
        .unwrap()
}

#[test]
fn twin_iozone_is_deterministic_and_reports_rows() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "-s", "4m", "-r", "64k", "-r", "1m", "-i", "0", "-i", "1", "-i", "2", "-i", "5", "-e",
    ];
    let a = twin(dir.path(), &args, "a.json");
    let b = twin(dir.path(), &args, "b.json");
    assert_eq!(
        std::fs::read(dir.path().join("a.json")).unwrap(),
        std::fs::read(dir.path().join("b.json")).unwrap(),
        "same scenario and seed: bit-identical reports"
    );
    assert_eq!(a, b);
    assert_eq!(a["benchmark"], "iozone");
    assert_eq!(a["mode"], "sim");
    let rows = a["tables"]["rows"]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2 * 7);
    let tests: Vec<&str> = rows[..7].iter().map(|r| r[0].as_str().unwrap()).collect();
    assert_eq!(tests, ALL_PASSES);
    // Write passes carry the fsync time and the bytes dirtied; -e puts it in the time.
    let write = &rows[0];
    assert_eq!(write[1], 4 << 20);
    assert_eq!(write[2], 64 << 10);
    let (seconds, fsync) = (write[3].as_f64().unwrap(), write[7].as_f64().unwrap());
    assert!(fsync > 0.0 && seconds > fsync, "{write:?}");
    assert_eq!(write[8], 4 << 20);
    assert!(rows[2][7].is_null(), "reads have no fsync");
    assert!(
        a["metrics"]["write_kb_s@s=4194304,r=65536"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    assert!(
        a["metrics"]["rewrite_fsync_s@s=4194304,r=1048576"]
            .as_f64()
            .unwrap()
            > 0.0
    );
}

#[test]
fn twin_cold_reads_are_slower_than_cached_rereads() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["-s", "64m", "-r", "1m", "-i", "0", "-i", "1"];
    let warm = twin(dir.path(), &args, "warm.json");
    let mut cold_args = args.to_vec();
    cold_args.push("-I");
    let cold = twin(dir.path(), &cold_args, "cold.json");
    let (cold_read, cold_reread) = (kb_s(&cold, "read"), kb_s(&cold, "reread"));
    let (warm_read, warm_reread) = (kb_s(&warm, "read"), kb_s(&warm, "reread"));
    // Without -I the file written is still in the page cache: both reads are
    // memory copies. With -I every read pass starts cold: the device serves it.
    assert!(
        cold_read < warm_reread && cold_reread < warm_reread,
        "cold {cold_read} / {cold_reread}, warm {warm_read} / {warm_reread}"
    );
    assert!(cold_read < warm_read);
    // Dropping the cache costs no time inside the pass: writes are the same.
    assert_eq!(kb_s(&cold, "write"), kb_s(&warm, "write"));
}

// ---------------------------------------------------------------- real

#[cfg(feature = "mpi")]
fn real_rows(dir: &std::path::Path) -> Vec<serde_json::Value> {
    let r = read_json(&dir.join("r.json"));
    assert_eq!(r["mode"], "real");
    assert_eq!(r["errors"].as_array().unwrap().len(), 0, "{}", r["errors"]);
    assert_eq!(r["metrics"]["verify_errors"], 0.0);
    r["tables"]["rows"]["rows"].as_array().unwrap().clone()
}

#[cfg(feature = "mpi")]
#[test]
fn real_single_process_verifies_every_pass_and_cleans_up() {
    let dir = tempfile::tempdir().unwrap();
    let scratch = dir.path().join("scratch");
    std::fs::create_dir(&scratch).unwrap();
    let o = piotwin(
        dir.path(),
        &[
            "run",
            "iozone",
            "-s",
            "256k",
            "-r",
            "4k",
            "-r",
            "64k",
            "-i",
            "0",
            "-i",
            "1",
            "-i",
            "2",
            "-i",
            "5",
            "-j",
            "3",
            "-I",
            "-f",
            scratch.to_str().unwrap(),
            "--json",
            "r.json",
            "--csv",
            "r.csv",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("piotwin iozone test complete."));
    let rows = real_rows(dir.path());
    assert_eq!(rows.len(), 14);
    for row in &rows {
        assert_eq!(row[4], 256 << 10, "{row:?}: bytes");
        assert!(row[6].as_f64().unwrap() > 0.0, "{row:?}: kB/s");
    }
    let csv = std::fs::read_to_string(dir.path().join("r.csv")).unwrap();
    assert!(
        csv.contains(
            "table,test,file_bytes,record_bytes,seconds,bytes,ops,kb_s,fsync_s,dirty_bytes"
        )
    );
    assert_eq!(csv.matches("\nrows,").count(), 14);
    // The scratch file is gone; only the reports remain.
    assert_eq!(files_in(&scratch), Vec::<String>::new());
    assert_eq!(files_in(dir.path()), vec!["r.csv", "r.json", "scratch"]);
    // -w keeps it, at the full size.
    let o = piotwin(
        dir.path(),
        &[
            "run", "iozone", "-s", "128k", "-i", "0", "-w", "-f", "keep.tmp",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        std::fs::metadata(dir.path().join("keep.tmp"))
            .unwrap()
            .len(),
        128 << 10
    );
}

#[cfg(feature = "mpi")]
#[test]
fn real_throughput_mode_two_ranks_verifies_data() {
    for api in ["POSIX", "MPIIO"] {
        let dir = tempfile::tempdir().unwrap();
        let Some(o) = mpirun(
            dir.path(),
            2,
            &[
                "run", "iozone", "-s", "512k", "-r", "16k", "-i", "0", "-i", "1", "-i", "2", "-i",
                "5", "-I", "-e", "-a", api, "--json", "r.json",
            ],
        ) else {
            return;
        };
        assert_eq!(o.status.code(), Some(0), "{api}: {}", stderr(&o));
        let out = stdout(&o);
        assert_eq!(
            out.matches("Output is in kBytes/sec").count(),
            1,
            "only rank 0 prints"
        );
        assert!(out.contains("Throughput test with 2 processes"));
        let rows = real_rows(dir.path());
        assert_eq!(rows.len(), 7);
        for row in &rows {
            assert_eq!(row[4], 2 * (512 << 10), "{api} {row:?}: both ranks' bytes");
            assert_eq!(row[5], 2 * 32, "{api} {row:?}: both ranks' records");
        }
        assert_eq!(files_in(dir.path()), vec!["r.json"], "{api}");
    }
}
