//! What-if studies end to end: `piotwin sweep` (checked before it runs, the
//! same results on 1 and 2 threads and under mpiexec, resumed after a crash),
//! `piotwin plan` (the first value meeting the target, in few runs), and
//! `--samples` (seeded intervals; compare says whether the measured value lies
//! inside).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{BIN, files_in, mpirun, piotwin, read_json, scenario, stderr, stdout};

/// A sweep of 24 IOR points on the Lustre scenario: 2 rank counts x 3
/// server counts x 2 stripe counts x 2 devices (one an alternative block).
fn sweep_text() -> String {
    sweep_at("[8, 16]")
}

/// [`sweep_text`] at other rank counts (`"[512, 1024]"`: slower points).
fn sweep_at(ranks: &str) -> String {
    format!(
        r#"# a test sweep
scenario  = "{}"
benchmark = "ior"
options   = "-a MPIIO -b 4m -t 1m -e"
ranks     = {}

[vary]
"server.count"            = [2, 4, 8]
"filesystem.stripe_count" = [1, 2]
device                    = ["hdd", "ssd"]

[alternatives.device.hdd]
"server.device.member.rpm" = 7200

[alternatives.device.ssd]
"server.device" = {{ kind = "ssd", read_bw = "3GB/s", write_bw = "2GB/s", read_latency = "80us", write_latency = "20us" }}
"#,
        scenario("lustre-hdd.toml").display(),
        ranks
    )
}

fn write_sweep(dir: &Path, text: &str) -> PathBuf {
    let f = dir.join("study.toml");
    std::fs::write(&f, text).unwrap();
    f
}

fn lines(path: &Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |t| t.lines().count())
}

#[test]
fn sweep_results_are_the_same_on_one_and_two_threads_and_under_mpiexec() {
    let dir = tempfile::tempdir().unwrap();
    let f = write_sweep(dir.path(), &sweep_text());
    let f = f.to_str().unwrap();
    let mut outs = Vec::new();
    for jobs in ["1", "2"] {
        let out = dir.path().join(format!("jobs{jobs}"));
        let o = piotwin(
            dir.path(),
            &["sweep", f, "--jobs", jobs, "--out", out.to_str().unwrap()],
        );
        assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
        assert!(
            stdout(&o).contains("24 of 24 points finished"),
            "{}",
            stdout(&o)
        );
        outs.push(out);
    }
    let mpi_out = dir.path().join("mpi");
    if let Some(o) = mpirun(
        dir.path(),
        2,
        &[
            "sweep",
            f,
            "--jobs",
            "1",
            "--out",
            mpi_out.to_str().unwrap(),
        ],
    ) {
        assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
        assert!(stdout(&o).contains("2 ranks"), "{}", stdout(&o));
        outs.push(mpi_out);
    }
    let csv = std::fs::read_to_string(outs[0].join("sweep.csv")).unwrap();
    let json = std::fs::read_to_string(outs[0].join("sweep.json")).unwrap();
    for o in &outs[1..] {
        assert_eq!(
            std::fs::read_to_string(o.join("sweep.csv")).unwrap(),
            csv,
            "{}",
            o.display()
        );
        assert_eq!(
            std::fs::read_to_string(o.join("sweep.json")).unwrap(),
            json,
            "{}",
            o.display()
        );
    }
    // The table: a header and 24 points, parameters in the file's order, the headline metrics.
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows.len(), 25, "{csv}");
    assert_eq!(
        rows[0],
        "point,ranks,server.count,filesystem.stripe_count,device,write_mib_s,read_mib_s,failure"
    );
    // More stripes over more servers never write slower here; the SSD never slower than the disks.
    let v = read_json(&outs[0].join("sweep.json"));
    let bw = |ranks: &str, servers: &str, stripes: &str, device: &str| -> f64 {
        let p = v["points"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| {
                let params: Vec<(String, String)> =
                    serde_json::from_value(p["params"].clone()).unwrap();
                params
                    == [
                        ("ranks", ranks),
                        ("server.count", servers),
                        ("filesystem.stripe_count", stripes),
                        ("device", device),
                    ]
                    .map(|(k, x)| (k.to_string(), x.to_string()))
            })
            .unwrap();
        p["metrics"]["write_mib_s"].as_f64().unwrap()
    };
    assert!(bw("16", "8", "2", "hdd") > bw("16", "8", "1", "hdd"));
    assert!(bw("16", "8", "2", "ssd") > bw("16", "8", "2", "hdd"));
    // Plots: each headline metric over each varied key, SVG and PNG; the page links them.
    let plots = files_in(&outs[0].join("plots"));
    assert_eq!(plots.len(), 2 * 4 * 2, "{plots:?}");
    let html = std::fs::read_to_string(outs[0].join("index.html")).unwrap();
    assert!(
        html.contains("plots/write_mib_s--server.count.svg"),
        "{html}"
    );
    assert!(html.contains("24 finished of 24"));
}

#[test]
fn a_sweep_resumes_after_being_killed_midway_without_redoing_finished_points() {
    let dir = tempfile::tempdir().unwrap();
    // Points of a second or so each (debug build): time to kill it midway.
    let f = write_sweep(dir.path(), &sweep_at("[1024, 2048]"));
    let out = dir.path().join("out");
    let store = out.join("points.jsonl");
    let mut child = Command::new(BIN)
        .args([
            "sweep",
            f.to_str().unwrap(),
            "--jobs",
            "1",
            "--out",
            out.to_str().unwrap(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while lines(&store) < 3 {
        assert!(
            start.elapsed() < Duration::from_secs(300),
            "no 3 points in 300 s"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap(); // SIGKILL: a crash, nothing can be tidied up
    child.wait().unwrap();
    let kept = lines(&store);
    assert!((3..24).contains(&kept), "{kept} points stored when killed");
    // A crash in the middle of an append leaves a cut-short line: not a result.
    std::fs::OpenOptions::new()
        .append(true)
        .open(&store)
        .and_then(|mut w| std::io::Write::write_all(&mut w, b"{\"index\":7,\"ident"))
        .unwrap();
    let o = piotwin(
        dir.path(),
        &[
            "sweep",
            f.to_str().unwrap(),
            "--jobs",
            "2",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stderr(&o).contains(&format!(
            "{} point(s) to run ({kept} already stored, not run again)",
            24 - kept
        )),
        "{}",
        stderr(&o)
    );
    assert!(
        stdout(&o).contains(&format!("({} run now", 24 - kept)),
        "{}",
        stdout(&o)
    );
    // Every point stored once, and the results those of a sweep never stopped.
    assert_eq!(lines(&store), 24);
    let fresh = dir.path().join("fresh");
    let o = piotwin(
        dir.path(),
        &[
            "sweep",
            f.to_str().unwrap(),
            "--out",
            fresh.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(out.join("sweep.csv")).unwrap(),
        std::fs::read_to_string(fresh.join("sweep.csv")).unwrap()
    );
    // Run again: nothing left to do.
    let o = piotwin(
        dir.path(),
        &["sweep", f.to_str().unwrap(), "--out", out.to_str().unwrap()],
    );
    assert!(
        stderr(&o).contains("0 point(s) to run (24 already stored"),
        "{}",
        stderr(&o)
    );
    assert_eq!(lines(&store), 24);
}

#[test]
fn bad_sweep_files_exit_2_naming_file_line_key_and_value_and_write_nothing() {
    let base = sweep_text();
    let cases: Vec<(String, Vec<&str>)> = vec![
        (
            base.replace(
                "\"server.count\"            = [2, 4, 8]",
                "\"server.cuont\" = [2, 4]",
            ),
            vec![
                "study.toml",
                "line 8",
                "point 1 of",
                "server.cuont = 2",
                "unknown key",
            ],
        ),
        (
            base.replace("[2, 4, 8]", "[2, 0, 8]"),
            vec![
                "study.toml",
                "line 8",
                "server.count = 0: expected a whole number ≥ 1",
                "point 5 of 24",
            ],
        ),
        (
            base.replace("[\"hdd\", \"ssd\"]", "[\"hdd\", \"nvme\"]"),
            vec![
                "study.toml`, line 10",
                "device = \"nvme\"",
                "no alternative of that name",
                "hdd, ssd",
            ],
        ),
        (
            base.replace("[vary]", "[vary]\n\"-t\" = [\"1m\", \"3x\"]"),
            vec!["study.toml`, line 8", "-t", "3x"],
        ),
        (
            base.replace("benchmark = \"ior\"", "benchmark = \"ior\"\nrepeat = 2"),
            vec!["study.toml`, line 4", "repeat", "unknown key"],
        ),
        (
            base.replace("ranks     = [8, 16]", "ranks     = [8, -1]"),
            vec!["study.toml`, line 5", "ranks = -1", "rank count"],
        ),
        (
            base.replace("[vary]", "[vary"),
            vec!["study.toml`, line 7", "not valid TOML"],
        ),
    ];
    for (text, expect) in cases {
        let dir = tempfile::tempdir().unwrap();
        let f = write_sweep(dir.path(), &text);
        let out = dir.path().join("out");
        let o = piotwin(
            dir.path(),
            &["sweep", f.to_str().unwrap(), "--out", out.to_str().unwrap()],
        );
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{expect:?}: {err}");
        for e in &expect {
            assert!(err.contains(e), "expected `{e}` in: {err}");
        }
        assert!(stdout(&o).is_empty());
        assert_eq!(
            files_in(dir.path()),
            vec!["study.toml"],
            "{expect:?}: something was written"
        );
    }
}

#[test]
fn plan_finds_the_fewest_servers_meeting_the_target_in_few_runs() {
    let dir = tempfile::tempdir().unwrap();
    let lustre = scenario("lustre-hdd.toml");
    let ior = ["-a", "MPIIO", "-b", "4m", "-t", "1m", "-e", "-F"];
    let write_bw = |servers: u64| -> f64 {
        let json = dir.path().join(format!("s{servers}.json"));
        let mut args = vec!["run", "ior"];
        args.extend(ior);
        let set = format!("server.count={servers}");
        args.extend([
            "--sim",
            lustre.to_str().unwrap(),
            "--ranks",
            "32",
            "--set",
            &set,
            "--json",
            json.to_str().unwrap(),
        ]);
        let o = piotwin(dir.path(), &args);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        read_json(&json)["metrics"]["write_mib_s"].as_f64().unwrap()
    };
    // The target: halfway between what 5 and 6 servers write, so 6 is the answer.
    let (five, six) = (write_bw(5), write_bw(6));
    assert!(six > five, "{five} {six}");
    let target = format!("write_mib_s >= {}", (five + six) / 2.0);
    let out = dir.path().join("plan");
    let plan = |target: &str, range: &str| {
        let mut args = vec![
            "plan",
            "ior",
            "--scenario",
            lustre.to_str().unwrap(),
            "--ranks",
            "32",
            "--target",
            target,
            "--range",
            range,
            "--out",
            out.to_str().unwrap(),
            "--",
        ];
        args.extend(ior);
        piotwin(dir.path(), &args)
    };
    let o = plan(&target, "server.count=1..16");
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("chosen: server.count=6"),
        "{}",
        stdout(&o)
    );
    let chosen = read_json(&out.join("plan.json"));
    assert_eq!(chosen["chosen"]["server.count"], "6");
    let runs = chosen["evaluations"].as_u64().unwrap();
    assert!(
        runs <= 6,
        "{runs} evaluations for 16 values: both ends and a binary search"
    );
    assert!(chosen["violations"].as_array().unwrap().is_empty());
    assert!(chosen["margin_pct"].as_f64().unwrap() > 0.0);
    // The chosen scenario is written and reads back with the chosen value.
    let o = piotwin(
        dir.path(),
        &[
            "scenario",
            "check",
            out.join("scenario.toml").to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("servers: 6 ×"), "{}", stdout(&o));
    // A target out of reach chooses nothing and says so: exit 1.
    let o = plan("write_mib_s >= 1e12", "server.count=1..4");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stdout(&o).contains("no configuration in the ranges meets the target"));
}

#[test]
fn samples_give_a_seeded_interval_and_need_calibrated_intervals() {
    let dir = tempfile::tempdir().unwrap();
    let vm = Path::new(env!("CARGO_MANIFEST_DIR")).join("validation/vm/scenario.toml");
    let run = |seed: &str, json: &str| {
        let o = piotwin(
            dir.path(),
            &[
                "run",
                "ior",
                "-a",
                "MPIIO",
                "-b",
                "16m",
                "-t",
                "1m",
                "--sim",
                vm.to_str().unwrap(),
                "--ranks",
                "2",
                "--samples",
                "12",
                "--seed",
                seed,
                "--json",
                json,
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        assert!(
            stdout(&o).contains("Prediction intervals (12 twin runs"),
            "{}",
            stdout(&o)
        );
        read_json(&dir.path().join(json))
    };
    let a = run("3", "a.json");
    let b = run("3", "b.json");
    let c = run("4", "c.json");
    assert_eq!(a["intervals"], b["intervals"], "same seed, same interval");
    assert_ne!(
        a["intervals"], c["intervals"],
        "another seed draws other parameters"
    );
    let i = &a["intervals"]["write_mib_s"];
    let (lo, med, hi) = (
        i["low"].as_f64().unwrap(),
        i["median"].as_f64().unwrap(),
        i["high"].as_f64().unwrap(),
    );
    assert!(lo < med && med < hi, "{i}");
    assert_eq!(i["samples"], 12);
    // A datasheet scenario has nothing to draw from: refused before anything runs.
    common::bad_input(
        &[
            "run",
            "ior",
            "--sim",
            scenario("lustre-hdd.toml").to_str().unwrap(),
            "--ranks",
            "4",
            "--samples",
            "8",
        ],
        &[
            "--samples",
            "lustre-hdd.toml",
            "no fitted value with an interval",
        ],
    );
}

#[test]
fn compare_with_samples_says_whether_the_measured_value_lies_inside() {
    let dir = tempfile::tempdir().unwrap();
    let vm = Path::new(env!("CARGO_MANIFEST_DIR")).join("validation/vm/scenario.toml");
    let out = dir.path().join("cmp");
    let Some(launcher) = common::mpiexec() else {
        return;
    };
    let o = piotwin(
        dir.path(),
        &[
            "compare",
            "ior",
            "--scenario",
            vm.to_str().unwrap(),
            "--ranks",
            "2",
            "--samples",
            "8",
            "--mpiexec",
            &launcher.join(" "),
            "--out",
            out.to_str().unwrap(),
            "-a",
            "MPIIO",
            "-b",
            "4m",
            "-t",
            "1m",
            "-i",
            "2",
            "-o",
            "ior.dat",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("measured inside the predicted 95 % interval"),
        "{}",
        stdout(&o)
    );
    let c = read_json(&out.join("compare.json"));
    assert_eq!(c["samples"], 8);
    let w = &c["metrics"]["write_mib_s"];
    let (lo, hi, m) = (
        w["interval"]["low"].as_f64().unwrap(),
        w["interval"]["high"].as_f64().unwrap(),
        w["measured"].as_f64().unwrap(),
    );
    assert_eq!(w["inside"].as_bool().unwrap(), lo <= m && m <= hi, "{w}");
    // One chart with both sides and their spreads.
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("plots/bandwidth_mib_s.svg"), "{html}");
    let svg = std::fs::read_to_string(out.join("plots/bandwidth_mib_s.svg")).unwrap();
    for bar in [
        "write_mib_s measured",
        "write_mib_s predicted",
        "read_mib_s predicted",
    ] {
        assert!(svg.contains(bar), "no `{bar}` in the chart");
    }
    // The measured repetitions' spread and the predicted interval: 2 whiskers per metric.
    assert_eq!(svg.matches("<circle").count(), 2 * 2 * 2, "{svg}");
    // report validation gives the coverage over the runs it finds.
    let o = piotwin(
        dir.path(),
        &[
            "report",
            "validation",
            dir.path().to_str().unwrap(),
            "--limit",
            "1e9",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("measured inside the predicted 95 % interval: "),
        "{}",
        stdout(&o)
    );
}

#[test]
fn a_sampled_sweep_carries_each_points_interval_into_its_table_and_plots() {
    let dir = tempfile::tempdir().unwrap();
    let vm = Path::new(env!("CARGO_MANIFEST_DIR")).join("validation/vm/scenario.toml");
    let f = write_sweep(
        dir.path(),
        &format!(
            "scenario = \"{}\"\nbenchmark = \"ior\"\noptions = \"-a MPIIO -b 16m -t 1m\"\nranks = [1, 2]\nsamples = 8\n[vary]\n\"-t\" = [\"64k\", \"1m\"]\n",
            vm.display()
        ),
    );
    let out = dir.path().join("out");
    let o = piotwin(
        dir.path(),
        &["sweep", f.to_str().unwrap(), "--out", out.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let csv = std::fs::read_to_string(out.join("sweep.csv")).unwrap();
    let mut rows = csv.lines();
    let header: Vec<&str> = rows.next().unwrap().split(',').collect();
    let col = |name: &str| {
        header
            .iter()
            .position(|c| *c == name)
            .unwrap_or_else(|| panic!("no `{name}` in {header:?}"))
    };
    let (lo, med, hi) = (
        col("write_mib_s.low"),
        col("write_mib_s.median"),
        col("write_mib_s.high"),
    );
    for row in rows {
        let v: Vec<f64> = row
            .split(',')
            .map(|x| x.parse().unwrap_or(f64::NAN))
            .collect();
        assert!(v[lo] < v[med] && v[med] < v[hi], "{row}");
    }
    let svg = std::fs::read_to_string(out.join("plots/write_mib_s--ranks.svg")).unwrap();
    assert!(svg.contains("(95 % low)") && svg.contains("(95 % high)"));
    // The samples are part of a point's identity: without them, every point runs again.
    let o = piotwin(
        dir.path(),
        &[
            "sweep",
            f.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--samples",
            "4",
        ],
    );
    assert!(
        stderr(&o).contains("piotwin sweep: 4 point(s) to run\n"),
        "{}",
        stderr(&o)
    );
}
