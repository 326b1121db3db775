//! `piotwin calibrate` end to end (a tiny real run under mpiexec with 2 ranks in a
//! temp dir) and its refusals, and `piotwin run pingpong` for real.

mod common;

use common::{bad_input, files_in, mpiexec, mpirun, piotwin, read_json, scenario, stderr, stdout};

#[test]
fn tiny_real_calibration_writes_a_scenario_the_twin_reads() {
    let Some(launcher) = mpiexec() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = piotwin(
        d,
        &[
            "calibrate",
            "--dir",
            ".",
            "--out",
            "cal.toml",
            "--ranks",
            "2",
            "--probe-scale",
            "tiny",
            "--mpiexec",
            &launcher.join(" "),
        ],
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    // One progress line per step; the scratch directory is gone.
    assert!(err.contains("calibrate [1/"), "{err}");
    assert!(err.contains("memcpy"), "{err}");
    assert_eq!(files_in(d), ["cal.toml", "cal.toml.probes.json"]);
    assert!(stdout(&o).contains("nodes.compute.memcpy"));

    let raw = read_json(&d.join("cal.toml.probes.json"));
    let res = &raw["results"];
    assert!(!res["memcpy"].as_array().unwrap().is_empty());
    let beff = res["beff"].as_array().unwrap();
    assert_eq!(beff.len(), 21 * 12 * 3, "b_eff at 2 ranks, one repetition");
    assert!(beff.iter().all(|r| r["ranks"] == 2));
    let ior = res["ior"].as_array().unwrap();
    assert!(
        ior.iter()
            .any(|r| r["ranks"] == 2 && r["shape"] == "shared-collective")
    );
    assert!(ior.iter().all(|r| r["latency_s"].as_f64().unwrap() > 0.0));

    let text = std::fs::read_to_string(d.join("cal.toml")).unwrap();
    assert!(
        text.contains("[calibration.\"nodes[0].compute.memcpy\"]"),
        "{text}"
    );
    assert!(text.contains("calibration.ior_shapes"));
    assert!(
        text.contains("[calibration.\"nodes[0].nic_latency\"]") && text.contains("measured: b_eff"),
        "{text}"
    );
    assert!(
        !text.contains("b_eff_io\""),
        "calibration must not run b_eff_io"
    );
    let check = piotwin(d, &["scenario", "check", "cal.toml"]);
    assert!(check.status.success(), "{}\n{text}", stderr(&check));

    // The twin runs the calibrated scenario.
    let run = piotwin(
        d,
        &[
            "run", "pingpong", "--sizes", "1,1m", "--sim", "cal.toml", "--ranks", "2",
        ],
    );
    assert!(run.status.success(), "{}", stderr(&run));

    // `--check`: fresh on this machine today (without the quick memcpy, whose
    // tiny sizes are too noisy here); stale once its facts name another host.
    let probes = d.join("cal.toml.probes.json");
    let mut raw = read_json(&probes);
    assert!(
        raw["results"]["machine"]["date"].is_string(),
        "{}",
        raw["results"]["machine"]
    );
    raw["results"]["memcpy"] = serde_json::json!([]);
    std::fs::write(&probes, raw.to_string()).unwrap();
    let o = piotwin(d, &["calibrate", "--check", "cal.toml"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("calibration `cal.toml`: fresh"),
        "{}",
        stdout(&o)
    );
    raw["results"]["machine"]["host"] = "elsewhere".into();
    std::fs::write(&probes, raw.to_string()).unwrap();
    let o = piotwin(d, &["calibrate", "--check", "cal.toml"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("is stale: calibrated on host `elsewhere`"),
        "{}",
        stderr(&o)
    );
}

/// `--refit`: a stored calibration's probes fitted again, without probing: the
/// committed workstation calibration gives back its values, the fills and
/// checks of its older pattern probe apart (there stored in one list).
#[test]
fn refit_fits_stored_probes_again() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let stored = scenario("calibrated/vm.toml.probes.json");
    std::fs::copy(&stored, d.join("old.probes.json")).unwrap();
    let o = piotwin(
        d,
        &[
            "calibrate",
            "--refit",
            "old.probes.json",
            "--out",
            "new.toml",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        files_in(d),
        ["new.toml", "new.toml.probes.json", "old.probes.json"]
    );
    let new = std::fs::read_to_string(d.join("new.toml")).unwrap();
    let old = std::fs::read_to_string(scenario("calibrated/vm.toml")).unwrap();
    let line = |text: &str, key: &str| {
        text.lines()
            .find(|l| l.starts_with(&format!("\"{key}\" = ")))
            .unwrap_or_else(|| panic!("{key} in {text}"))
            .to_string()
    };
    for key in [
        "nodes.compute.memcpy",
        "nodes.cache.release_time",
        "nodes.compute.fft",
    ] {
        assert_eq!(line(&new, key), line(&old, key));
    }
    assert!(
        line(&new, "nodes.compute.pattern_check").contains("checked in process"),
        "{new}"
    );
    let check = piotwin(d, &["scenario", "check", "new.toml"]);
    assert!(check.status.success(), "{}", stderr(&check));
    // The raw results are written again as they were read.
    let (a, b) = (
        read_json(&d.join("old.probes.json")),
        read_json(&d.join("new.toml.probes.json")),
    );
    assert_eq!(a["results"], b["results"]);
}

#[test]
fn bad_input_is_refused_before_anything_runs() {
    bad_input(
        &["calibrate", "--check", "no/such.toml"],
        &["--check `no/such.toml`"],
    );
    bad_input(
        &["calibrate", "--refit", "no/such.json", "--out", "x.toml"],
        &["--refit `no/such.json`", "cannot read it"],
    );
    bad_input(
        &["calibrate", "--refit", "x.json", "--dir", "."],
        &["--refit", "--dir"],
    );
    bad_input(
        &["calibrate", "--dir", "no/such/dir", "--out", "x.toml"],
        &["--dir", "no/such/dir", "not an existing directory"],
    );
    bad_input(
        &["calibrate", "--dir", ".", "--out", "missing/x.toml"],
        &["--out", "missing", "does not exist"],
    );
    bad_input(
        &[
            "calibrate",
            "--dir",
            ".",
            "--out",
            "x.toml",
            "--mpiexec",
            "no-such-launcher-xyz",
        ],
        &["--mpiexec", "no-such-launcher-xyz", "cannot start"],
    );
    bad_input(
        &["calibrate", "--dir", ".", "--out", "x.toml", "--ranks", "1"],
        &["--ranks"],
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("base.toml"), "name = 1\n").unwrap();
    let o = piotwin(
        dir.path(),
        &[
            "calibrate",
            "--dir",
            ".",
            "--out",
            "x.toml",
            "--base",
            "base.toml",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--base `base.toml`"), "{}", stderr(&o));
    assert_eq!(files_in(dir.path()), ["base.toml"]);
}

#[test]
fn pingpong_runs_for_real_and_checks_its_data() {
    let dir = tempfile::tempdir().unwrap();
    let Some(o) = mpirun(
        dir.path(),
        3,
        &[
            "run",
            "pingpong",
            "--sizes",
            "1,4k,1m",
            "--barriers",
            "10",
            "--polled",
            "2",
            "--polled-copies",
            "4k,1m",
            "--json",
            "pp.json",
        ],
    ) else {
        return;
    };
    assert!(o.status.success(), "{}", stderr(&o));
    let r = read_json(&dir.path().join("pp.json"));
    assert_eq!(r["benchmark"], "pingpong");
    assert_eq!(r["mode"], "real");
    let rows = r["tables"]["pingpong"]["rows"].as_array().unwrap();
    // 3 sizes, the barrier, when the second and third ranks left the barriers,
    // the all-reduces (each sum checked), a copy and a step row per polled
    // copy size (2 ranks of 3)
    assert_eq!(rows.len(), 11);
    let allreduce: Vec<_> = rows.iter().filter(|r| r[0] == "allreduce").collect();
    assert!(
        allreduce.len() == 1 && allreduce[0][3] == 10 && allreduce[0][4].as_f64().unwrap() > 0.0,
        "{allreduce:?}"
    );
    let exits: Vec<f64> = rows
        .iter()
        .filter(|r| r[0] == "barrier_exit")
        .map(|r| r[4].as_f64().unwrap())
        .collect();
    assert!(
        exits.len() == 2 && 0.0 <= exits[0] && exits[0] <= exits[1],
        "{rows:?}"
    );
    let polled: Vec<_> = rows.iter().filter(|r| r[0] == "polled_step").collect();
    assert_eq!(polled.len(), 2);
    assert!(
        polled
            .iter()
            .all(|r| r[5] == 2 && r[4].as_f64().unwrap() > 0.0),
        "{polled:?}"
    );
    assert!(r["errors"].as_array().unwrap().is_empty());
    assert!(r["metrics"]["bandwidth_mb_s"].as_f64().unwrap() > 0.0);
    // The files the polled test's ranks synced before each episode are gone.
    let files = files_in(dir.path());
    assert!(!files.iter().any(|f| f.contains(".polled")), "{files:?}");
}

/// The two-phase test for real on 4 ranks and in the twin: a write and a read
/// row per size (bytes over all ranks), the data read back checked (no errors),
/// the file deleted; a size that is not a multiple of the block is refused.
#[test]
fn pingpong_two_phase_test_runs_in_both_modes() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "run",
        "pingpong",
        "--sizes",
        "1",
        "--barriers",
        "2",
        "--two-phase",
        "128k,256k",
        "-o",
        "tp.dat",
    ];
    let Some(o) = mpirun(
        dir.path(),
        4,
        &[&args[..], &["--json", "real.json"]].concat(),
    ) else {
        panic!("no MPI launcher: real-mode tests need mpiexec");
    };
    assert!(o.status.success(), "{}", stderr(&o));
    let scenario = common::scenario("default.toml");
    let sc = scenario.to_str().unwrap();
    let o = piotwin(
        dir.path(),
        &[
            &args[..],
            &["--sim", sc, "--ranks", "4", "--json", "twin.json"],
        ]
        .concat(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(files_in(dir.path()), ["real.json", "twin.json"]);
    for side in ["real", "twin"] {
        let r = read_json(&dir.path().join(format!("{side}.json")));
        assert!(
            r["errors"].as_array().unwrap().is_empty(),
            "{side}: {}",
            r["errors"]
        );
        let rows = r["tables"]["pingpong"]["rows"].as_array().unwrap();
        let two: Vec<(String, u64)> = rows
            .iter()
            .filter(|row| row[0].as_str().unwrap().starts_with("twophase"))
            .map(|row| {
                (
                    row[0].as_str().unwrap().to_string(),
                    row[2].as_u64().unwrap(),
                )
            })
            .collect();
        let want: Vec<(String, u64)> = [
            ("twophase_write", 4 * 131072),
            ("twophase_read", 4 * 131072),
            ("twophase_write", 4 * 262144),
            ("twophase_read", 4 * 262144),
        ]
        .iter()
        .map(|(t, b)| (t.to_string(), *b))
        .collect();
        assert_eq!(two, want, "{side}");
        // Times are positive; ranks may leave a barrier together (0 after the first).
        assert!(
            rows.iter()
                .all(|row| row[4].as_f64().unwrap() > 0.0 || row[0] == "barrier_exit"),
            "{side}"
        );
    }
    bad_input(
        &[
            "run",
            "pingpong",
            "--sim",
            sc,
            "--ranks",
            "4",
            "--two-phase",
            "100k",
        ],
        &["--two-phase `102400`", "multiple of --two-phase-block"],
    );
}

/// The polled test in the twin, 4 ranks on 2 cores, 2 taking part: a 1 MB
/// copy at 1 GB/s takes 1 ms while the waiting ranks idle, 2 ms while they
/// poll (each rank holds half a core); a step adds the barrier's one message
/// step: the wake-up of 4 ranks' steps (5 ms) idle, the polled one (1 ms)
/// polling. With `release_stagger` 4 ms the third and fourth ranks leave the
/// barriers 4 ms after the first two where the ranks poll, with them where
/// they idle.
#[test]
fn pingpong_polled_test_in_the_twin() {
    let dir = tempfile::tempdir().unwrap();
    let run = |json: &str, waiting: &str| {
        let sc = scenario("default.toml");
        let o = piotwin(
            dir.path(),
            &[
                "run",
                "pingpong",
                "--sim",
                sc.to_str().unwrap(),
                "--ranks",
                "4",
                "--sizes",
                "1",
                "--barriers",
                "1",
                "--polled",
                "2",
                "--polled-copies",
                "1000000",
                "--set",
                "nodes[0].cores=2",
                "--set",
                "nodes[0].compute.memcpy=1GB/s",
                "--set",
                "nodes[0].nic_latency=0s",
                "--set",
                "nodes[0].oversubscribed_wakeup=5ms",
                "--set",
                "nodes[0].polled_wakeup=1ms",
                "--set",
                "nodes[0].release_stagger=4ms",
                "--set",
                &format!("nodes[0].waiting_ranks={waiting}"),
                "--json",
                json,
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let r = read_json(&dir.path().join(json));
        let rows = r["tables"]["pingpong"]["rows"].as_array().unwrap().clone();
        let time = |test: &str| {
            rows.iter()
                .find(|r| r[0] == test)
                .unwrap_or_else(|| panic!("{test} in {rows:?}"))[4]
                .as_f64()
                .unwrap()
        };
        let exits: Vec<f64> = rows
            .iter()
            .filter(|r| r[0] == "barrier_exit")
            .map(|r| r[4].as_f64().unwrap())
            .collect();
        (time("polled_copy"), time("polled_step"), exits)
    };
    let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
    let (copy, step, exits) = run("idle.json", "idle");
    assert!(close(copy, 1e-3) && close(step, 6e-3), "{copy} {step}");
    assert_eq!(exits, [0.0; 3]);
    let (copy, step, exits) = run("poll.json", "poll");
    assert!(close(copy, 2e-3) && close(step, 3e-3), "{copy} {step}");
    assert!(
        exits.len() == 3 && exits[0] == 0.0 && exits[1..].iter().all(|&e| close(e, 4e-3)),
        "{exits:?}"
    );
}

/// The locked-write test, 4 ranks on 2 cores writing 1 MB each to one file
/// at a 1 GB/s per-core rewrite rate: for real, a row of all 4 MB and the
/// data read back checked, the file deleted; in the twin, with the inode lock
/// and polling ranks, the writers copy one at a time, each woken writer on a
/// whole core (1 ms each: 4 ms) where sleeping ranks yield, at half a core
/// (8 ms) where they hold; without the lock all 4 copy together at half a
/// core (2 ms). The timed writes rewrite cached pages: at 2 GB/s for
/// rewrites (the untimed first write still at 1 GB/s), 2 ms with the lock.
/// With `wake_slice`, a woken writer shares the cores once its slice ends.
#[test]
fn pingpong_locked_writes_in_both_modes() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "run",
        "pingpong",
        "--sizes",
        "1",
        "--barriers",
        "1",
        "--locked-writes",
        "1000000",
        "-o",
        "lw.dat",
    ];
    let Some(o) = mpirun(
        dir.path(),
        4,
        &[&args[..], &["--json", "real.json"]].concat(),
    ) else {
        panic!("no MPI launcher: real-mode tests need mpiexec");
    };
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(files_in(dir.path()), ["real.json"]);
    let row = |json: &str| {
        let r = read_json(&dir.path().join(json));
        assert!(
            r["errors"].as_array().unwrap().is_empty(),
            "{}",
            r["errors"]
        );
        let rows = r["tables"]["pingpong"]["rows"].as_array().unwrap().clone();
        let row = rows
            .iter()
            .find(|r| r[0] == "locked_write")
            .unwrap_or_else(|| panic!("locked_write in {rows:?}"))
            .clone();
        assert_eq!(row[2].as_u64(), Some(4_000_000), "{row:?}");
        row[4].as_f64().unwrap()
    };
    assert!(row("real.json") > 0.0);
    let sc = scenario("default.toml");
    let twin = |json: &str, lock: &str, sleeping: &str, rewrite: &str, extra: &[&str]| {
        let o = piotwin(
            dir.path(),
            &[
                &args[..],
                &[
                    "--sim",
                    sc.to_str().unwrap(),
                    "--ranks",
                    "4",
                    "--set",
                    "nodes[0].compute.memcpy=100GB/s",
                    "--set",
                    "nodes[0].cache.write_bw=1GB/s",
                    "--set",
                    &format!("nodes[0].cache.rewrite_bw={rewrite}"),
                    "--set",
                    "nodes[0].waiting_ranks=poll",
                    "--set",
                    &format!("nodes[0].sleeping_ranks={sleeping}"),
                    "--set",
                    &format!("filesystem.write_lock={lock}"),
                    "--json",
                    json,
                ],
                extra,
            ]
            .concat(),
        );
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        row(json)
    };
    let near = |a: f64, b: f64| (a / b - 1.0).abs() < 0.01;
    let t = twin("yield.json", "inode", "yield", "1GB/s", &[]);
    assert!(near(t, 4e-3), "{t}");
    let t = twin("hold.json", "inode", "hold", "1GB/s", &[]);
    assert!(near(t, 8e-3), "{t}");
    let t = twin("free.json", "none", "yield", "1GB/s", &[]);
    assert!(near(t, 2e-3), "{t}");
    let t = twin("rewrite.json", "inode", "yield", "2GB/s", &[]);
    assert!(near(t, 2e-3), "{t}");
    // A woken writer on a whole core for 0.5 ms only: the second (2 awake)
    // still 1 ms; the third (3 awake) 0.5 ms + 0.5 ms at 2/3 of a core, the
    // last (4 awake) 0.5 ms + 0.5 ms at half a core: 1 + 1 + 1.25 + 1.5 ms.
    let slice = ["--set", "nodes[0].wake_slice=0.5ms"];
    let t = twin("slice.json", "inode", "yield", "1GB/s", &slice);
    assert!(near(t, 4.75e-3), "{t}");
    // A slice longer than every copy changes nothing.
    let long = ["--set", "nodes[0].wake_slice=5ms"];
    let t = twin("long.json", "inode", "yield", "1GB/s", &long);
    assert!(near(t, 4e-3), "{t}");
}

#[test]
fn pingpong_refuses_a_single_rank() {
    bad_input(
        &["run", "pingpong", "--sim", "x.toml", "--ranks", "1"],
        &["--sim `x.toml`"],
    );
    let scenario = common::scenario("default.toml");
    let refused = |options: &[&str], expect: &[&str]| {
        let mut args = vec!["run", "pingpong", "--sim", scenario.to_str().unwrap()];
        args.extend(options);
        bad_input(&args, expect);
    };
    refused(&["--ranks", "1"], &["at least 2 ranks"]);
    refused(
        &["--ranks", "2", "--polled", "2", "--polled-copies", "1m"],
        &["--polled", "2", "leave some of the 2 to wait"],
    );
}
