//! End-to-end tests of `piotwin run madbench2`.
//!
//! Which back end each group needs:
//! * bad input: none (checks before anything runs);
//! * `twin_*`: the twin (a scenario in `scenarios/`);
//! * `real_*`: the real back end and `mpiexec` (or `PIOTWIN_MPIEXEC`, split on spaces).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::*;

fn refused(args: &[&str], env: &[(&str, &str)], expect: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let o = piotwin_env(dir.path(), args, env);
    assert_refused(&o, dir.path(), expect);
}

#[test]
fn the_originals_checks_exit_2_naming_the_input() {
    let dry = |w: &[&'static str], ranks: &'static str| -> Vec<&'static str> {
        let mut v = vec!["run", "madbench2"];
        v.extend_from_slice(w);
        v.extend(["--dry-run", "--ranks", ranks]);
        v
    };
    let ok = ["256", "8", "1", "8", "1024", "1", "1"];
    refused(&dry(&ok, "8"), &[], &["P = 8 is not a perfect square"]);
    refused(
        &dry(&["256", "8", "2", "8", "1024", "1", "1"], "4"),
        &[],
        &["NO_GANG = 2 is not a perfect square"],
    );
    refused(
        &dry(&["256", "6", "4", "8", "1024", "1", "1"], "16"),
        &[],
        &["NO_GANG = 4 does not divide NO_BIN = 6"],
    );
    refused(
        &dry(&["256", "8", "1", "8", "1020", "1", "1"], "4"),
        &[],
        &["FBLOCKSIZE = 1020 is not a whole number of doubles"],
    );
    refused(
        &dry(&["256", "8", "1", "8", "1024", "3", "1"], "4"),
        &[],
        &["RMOD = 3 does not divide the gang size"],
    );
    refused(
        &dry(&["256", "8", "1", "8", "1024", "1", "1"], "4"),
        &[("IOMODE", "ASYNC")],
        &["--iomode ASYNC needs --iomethod MPI"],
    );
    refused(
        &dry(&ok, "4"),
        &[("IOMETHOD", "HDF5")],
        &["invalid value 'HDF5'", "--iomethod"],
    );
    refused(
        &dry(&["99999999999", "8", "1", "8", "1024", "1", "1"], "4"),
        &[],
        &["overflows 64 bits"],
    );
    refused(&dry(&["256", "8", "1"], "4"), &[], &["SBLOCKSIZE"]);
    // Real mode: the process count comes from the launcher's environment.
    refused(
        &["run", "madbench2", "256", "8", "1", "8", "1024", "1", "1"],
        &[("PMI_SIZE", "2")],
        &["P = 2 is not a perfect square"],
    );
}

#[test]
fn twin_run_prints_the_originals_block_and_writes_report_csv_and_plot() {
    let dir = tempfile::tempdir().unwrap();
    let scn = scenario("nfs-raid5.toml");
    let args = [
        "run",
        "madbench2",
        "2048",
        "8",
        "1",
        "32",
        "1024",
        "1",
        "1",
        "--filetype",
        "shared",
        "--sim",
        scn.to_str().unwrap(),
        "--ranks",
        "16",
        "--json",
        "t.json",
        "--csv",
        "t.csv",
        "--plot",
        "t.svg",
    ];
    let o = piotwin(dir.path(), &args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    for line in [
        "MADbench 2.0 IO-mode",
        "no_pe = 16  no_pix = 2048  no_bin = 8  no_gang = 1  sblocksize = 32  fblocksize = 1024  r_mod = 1  w_mod = 1",
        "IOMETHOD = POSIX  IOMODE = SYNC  FILETYPE = SHARED  REMAP = CUSTOM",
        "S_w ",
        "W_r ",
        "C_total",
        "dC[0] = 0.00000e+00",
        "Verification: NOT PERFORMED (no data)",
    ] {
        assert!(out.contains(line), "`{line}` missing in:\n{out}");
    }
    let r = read_json(&dir.path().join("t.json"));
    assert_eq!(r["benchmark"], "madbench2");
    // 16 ranks × 8 slots × (2048/4)² doubles: 32 MiB each way per function.
    let per_function = 16.0 * 8.0 * 512.0 * 512.0 * 8.0;
    assert_eq!(r["metrics"]["s_bytes_written"], per_function);
    assert_eq!(r["metrics"]["w_bytes_read"], per_function);
    assert_eq!(r["metrics"]["w_bytes_written"], per_function);
    assert_eq!(r["metrics"]["c_bytes_read"], per_function);
    assert_eq!(r["metrics"]["verified_bytes"], 0.0);
    assert_eq!(r["headline"][0], "total_time_s");
    assert!(r["metrics"]["w_read_mib_s"].as_f64().unwrap() > 0.0);
    let csv = std::fs::read_to_string(dir.path().join("t.csv")).unwrap();
    assert!(csv.contains("w_read_mib_s"), "{csv}");
    let svg = std::fs::read_to_string(dir.path().join("t.svg")).unwrap();
    assert!(
        svg.contains("W busy-work") && svg.contains("C read"),
        "{svg}"
    );
    // The same scenario and seed: the same report, bit for bit.
    let again = piotwin(dir.path(), &args);
    assert_eq!(again.status.code(), Some(0));
    assert_eq!(
        read_json(&dir.path().join("t.json"))["metrics"],
        r["metrics"]
    );
}

/// `nodes.compute.flops_all_cores = k`: the busy-work of ranks that take
/// every core of their node runs at k of `flops`; with b of c cores taken,
/// at 1 / (1 + (1/k − 1)(b − 1)/(c − 1)) of it. MADbench2 on 4 ranks of one
/// node, k = 0.5: on 4 cores its loops' time C doubles (the busy-work time,
/// C plus the barrier after it, grows by C), on 7 cores (3 of the 6 beyond
/// the first taken) it grows by C / 2; with the key left out, or 1, the
/// busy-work is as long.
#[test]
fn twin_busy_work_keeps_the_part_of_flops_all_cores_set() {
    let dir = tempfile::tempdir().unwrap();
    let scn = scenario("nfs-raid5.toml");
    let args = |sets: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = ["run", "madbench2", "256", "8", "1", "8", "1024", "1", "1"]
            .map(String::from)
            .to_vec();
        v.extend([
            "--sim".into(),
            scn.display().to_string(),
            "--ranks".into(),
            "4".into(),
        ]);
        for s in ["nodes[0].count=1"].iter().chain(sets) {
            v.extend(["--set".into(), s.to_string()]);
        }
        v
    };
    let busy = |sets: &[&str]| -> f64 {
        let mut a = args(sets);
        a.extend(["--json".into(), "busy.json".into()]);
        let o = piotwin(dir.path(), &a);
        assert!(o.status.success(), "{a:?}\n{}", stderr(&o));
        read_json(&dir.path().join("busy.json"))["metrics"]["busy_work_s"]
            .as_f64()
            .unwrap()
    };
    let (four, seven) = ("nodes[0].cores=4", "nodes[0].cores=7");
    let half = "nodes[0].compute.flops_all_cores=0.5";
    let alone = busy(&[four]);
    assert!(alone > 0.0, "{alone}");
    assert_eq!(busy(&[four, "nodes[0].compute.flops_all_cores=1"]), alone);
    let loops = busy(&[four, half]) - alone;
    assert!(
        loops > 0.9 * alone,
        "the loops {loops} s of the busy-work {alone} s"
    );
    let on_seven = busy(&[seven]);
    assert_eq!(on_seven, alone, "4 ranks on 7 cores, at k = 1, as on 4");
    let grown = busy(&[seven, half]) - on_seven;
    assert!(
        (grown / (loops / 2.0) - 1.0).abs() < 1e-9,
        "{grown} against {loops} / 2"
    );
    // Other kernels keep their rates: BT's key does not touch the busy-work.
    assert_eq!(busy(&[four, "nodes[0].compute.bt_all_cores=0.5"]), alone);
    let zero = args(&["nodes[0].compute.flops_all_cores=0"]);
    let zero: Vec<&str> = zero.iter().map(String::as_str).collect();
    refused(&zero, &[], &["flops_all_cores", "must be above 0"]);
}

/// 4 real ranks, small matrices: every word read back checked, the files removed.
#[cfg(feature = "mpi")]
#[test]
fn real_runs_verify_every_word_in_all_four_ways() {
    for (method, filetype, mode, gang, mods) in [
        ("posix", "unique", "sync", "1", ["1", "1"]),
        ("posix", "shared", "sync", "4", ["1", "1"]),
        ("mpi", "unique", "async", "1", ["2", "4"]),
        ("mpi", "shared", "async", "4", ["1", "1"]),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let args = [
            "run",
            "madbench2",
            "512",
            "4",
            gang,
            "16",
            "4096",
            mods[0],
            mods[1],
            "--iomethod",
            method,
            "--filetype",
            filetype,
            "--iomode",
            mode,
            "--json",
            "r.json",
        ];
        let Some(o) = mpirun(dir.path(), 4, &args) else {
            return;
        };
        let what = format!("{method} {filetype} {mode} G={gang}");
        assert_eq!(o.status.code(), Some(0), "{what}: {}", stderr(&o));
        assert!(stdout(&o).contains("Verification: SUCCESSFUL"), "{what}");
        let r = read_json(&dir.path().join("r.json"));
        // W reads B slots of M1 = (512/2)² doubles per rank, C the same bytes as B/G slots of M2.
        let read = 4.0 * 4.0 * 256.0 * 256.0 * 8.0;
        assert_eq!(r["metrics"]["w_bytes_read"], read, "{what}");
        assert_eq!(r["metrics"]["c_bytes_read"], read, "{what}");
        assert_eq!(r["metrics"]["verified_bytes"], 2.0 * read, "{what}");
        assert_eq!(r["metrics"]["verification_failures"], 0.0, "{what}");
        assert_eq!(files_in(dir.path()), vec!["r.json".to_string()], "{what}");
    }
}

/// A byte of rank 0's slot 0 flipped between S's write of it and W's read of
/// it (the busy-work before S's second write keeps the window open for
/// seconds) is found, named by its place, and the run exits 1: POSIX with a
/// file per rank, and MPI-IO with the shared file.
#[cfg(feature = "mpi")]
#[test]
fn real_run_catches_a_byte_flipped_in_the_file() {
    // Slots of (256/2)² doubles = 131072 bytes, NO_BIN 2: in the shared file
    // rank 3's slot 0 ends at 3·2·131072 + 131072, after every rank wrote its slot 0.
    let slot = 128 * 128 * 8u64;
    for (method, filetype, file, written) in [
        ("posix", "unique", "madbench2.data_0", slot),
        ("mpi", "shared", "madbench2.data", 3 * 2 * slot + slot),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let Some(launcher) = mpiexec() else {
            return;
        };
        // Each busy-work: (256²)^1.87 / (4·2·8) ≈ 1.6e7 loops of 8 multiply-adds: a second or
        // two in a debug build with 4 ranks on 2 cores, a tenth of that in a release build.
        let child = Command::new(&launcher[0])
            .args(&launcher[1..])
            .args(["-n", "4", env!("CARGO_BIN_EXE_piotwin")])
            .args([
                "run",
                "madbench2",
                "256",
                "2",
                "1",
                "8",
                "1024",
                "1",
                "1",
                "--bwexp",
                "1.87",
                "--iomethod",
                method,
                "--filetype",
                filetype,
                "--json",
                "r.json",
            ])
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let file = dir.path().join(file);
        let start = Instant::now();
        while std::fs::metadata(&file).map_or(0, |m| m.len()) < written {
            assert!(
                start.elapsed() < Duration::from_secs(120),
                "{method} {filetype}: slot 0 never written"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(20));
        flip(&file, 1001);
        let o = child.wait_with_output().unwrap();
        let what = format!("{method} {filetype}");
        assert_eq!(o.status.code(), Some(1), "{what}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(
            err.contains("1 of") && err.contains("words read back differ"),
            "{what}: {err}"
        );
        let r = read_json(&dir.path().join("r.json"));
        assert_eq!(r["metrics"]["verification_failures"], 1.0, "{what}");
        let e = r["errors"][0].as_str().unwrap();
        assert!(
            e.contains("first: rank 0's file at byte 1000"),
            "{what}: {e}"
        );
    }
}

#[cfg(feature = "mpi")]
fn flip(path: &Path, at: u64) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap();
    let mut b = [0u8; 1];
    f.read_exact_at(&mut b, at).unwrap();
    f.write_all_at(&[b[0] ^ 0x10], at).unwrap();
}
