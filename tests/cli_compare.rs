//! `piotwin compare`: a real run (mpiexec, 2 ranks) against the twin end to end,
//! the failure of one side, and refusal of bad input with nothing written.

mod common;

use std::path::Path;

use common::{assert_refused, bad_input, files_in, piotwin, read_json, scenario, stderr, stdout};

fn default_scenario() -> String {
    scenario("default.toml").display().to_string()
}

/// The launcher as one `--mpiexec` word list; `None` without one.
fn launcher_line() -> Option<String> {
    common::mpiexec().map(|w| w.join(" "))
}

/// `piotwin compare ior` in `dir` of 2 ranks writing and reading 1 MiB in
/// 64 KiB transfers of `ior.dat`, launched by `launcher`, into `dir/c`, with
/// compare's further `options`.
fn compare_small_ior(
    dir: &Path,
    scenario: &str,
    launcher: &str,
    options: &[&str],
) -> std::process::Output {
    let mut args = vec![
        "compare",
        "ior",
        "--scenario",
        scenario,
        "--ranks",
        "2",
        "--mpiexec",
        launcher,
        "--out",
        "c",
    ];
    args.extend(options);
    args.extend(["-b", "1m", "-t", "64k", "-o", "ior.dat"]);
    piotwin(dir, &args)
}

/// b_eff_io without `-MB`: the memory per process defaults from the machine, so
/// compare resolves it once (this host's, as the real run takes it) and both runs
/// get that value: one workload on both sides, printed and recorded.
#[test]
fn b_eff_io_without_mb_runs_the_same_workload_on_both_sides() {
    let Some(launcher) = launcher_line() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let sc = default_scenario();
    let o = piotwin(
        dir.path(),
        &[
            "compare",
            "b_eff_io",
            "--scenario",
            &sc,
            "--ranks",
            "1",
            "--mpiexec",
            &launcher,
            "--out",
            "c",
            "-T",
            "2",
        ],
    );
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{}", stderr(&o));
    let c = read_json(&dir.path().join("c/compare.json"));
    let resolved = c["resolved"].as_array().unwrap();
    assert_eq!(resolved.len(), 1, "{resolved:?}");
    assert_eq!(resolved[0]["flag"], "-MB");
    let mb: u64 = resolved[0]["value"].as_str().unwrap().parse().unwrap();
    assert!(
        out.contains(&format!("resolved for both runs: -MB {mb} (")),
        "{out}"
    );
    for side in ["measured", "predicted"] {
        let r = read_json(&dir.path().join(format!("c/{side}.json")));
        assert_eq!(r["params"]["mb"], mb, "{side}: {}", r["params"]);
    }
    assert!(
        c["warnings"].as_array().unwrap().is_empty(),
        "{}",
        c["warnings"]
    );
}

#[test]
fn ior_real_against_twin_end_to_end() {
    if launcher_line().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let sc = default_scenario();
    let o = piotwin(
        dir.path(),
        &[
            "compare",
            "ior",
            "--scenario",
            &sc,
            "--ranks",
            "2",
            "-b",
            "1m",
            "-t",
            "64k",
        ],
    );
    let out = stdout(&o);
    assert_eq!(
        o.status.code(),
        Some(0),
        "stdout: {out}\nstderr: {}",
        stderr(&o)
    );
    // Only the default output directory was made, and the real run removed its test file.
    assert_eq!(files_in(dir.path()), ["piotwin-compare"]);
    let cmp = dir.path().join("piotwin-compare/ior-n2");
    for f in [
        "compare.json",
        "measured.json",
        "predicted.json",
        "report.html",
        "measured.txt",
        "predicted.txt",
    ] {
        assert!(cmp.join(f).is_file(), "no {f} in {:?}", files_in(&cmp));
    }
    assert_eq!(files_in(&cmp.join("measured")), Vec::<String>::new());

    // The table: headline first, predicted before measured, a summary, the report's path last.
    let header = out.lines().nth(1).unwrap();
    assert!(
        header.starts_with("metric") && header.find("predicted") < header.find("measured"),
        "{header}"
    );
    assert!(out.contains("-- headline\nwrite_mib_s"), "{out}");
    assert!(
        out.contains("summary, all compared: median |error| "),
        "{out}"
    );
    let html = cmp.join("report.html");
    assert_eq!(
        out.lines().last().unwrap(),
        format!("report: {}", html.display())
    );

    // compare.json: the shape, and values equal to the two run reports.
    let c = read_json(&cmp.join("compare.json"));
    let measured = read_json(&cmp.join("measured.json"));
    let predicted = read_json(&cmp.join("predicted.json"));
    assert_eq!(c["benchmark"], "ior");
    assert_eq!(c["ranks"], 2);
    assert_eq!(c["scenario"], sc.as_str());
    assert_eq!(c["options"], serde_json::json!(["-b", "1m", "-t", "64k"]));
    assert_eq!(c["failed"], serde_json::json!([]));
    assert_eq!(
        c["headline"],
        serde_json::json!(["write_mib_s", "read_mib_s"])
    );
    assert_eq!(
        (measured["mode"].as_str(), measured["ranks"].as_u64()),
        (Some("real"), Some(2))
    );
    assert_eq!(
        (predicted["mode"].as_str(), predicted["ranks"].as_u64()),
        (Some("sim"), Some(2))
    );
    let metrics = c["metrics"].as_object().unwrap();
    assert_eq!(
        metrics.keys().collect::<Vec<_>>(),
        measured["metrics"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>()
    );
    for (name, v) in metrics {
        let m = &measured["metrics"][name];
        let p = &predicted["metrics"][name];
        assert_eq!(&v["measured"], m, "{name}");
        assert_eq!(&v["predicted"], p, "{name}");
        let (m, p) = (m.as_f64().unwrap(), p.as_f64().unwrap());
        if m != 0.0 {
            let e = v["error"].as_f64().unwrap();
            assert!((e - 100.0 * (p - m) / m.abs()).abs() < 1e-9, "{name}: {e}");
        } else {
            assert!(v["error"].is_null(), "{name}");
        }
    }
    assert!(measured["metrics"]["write_mib_s"].as_f64().unwrap() > 0.0);
    let summary = &c["summary"]["all"];
    assert_eq!(summary["count"], 6, "{summary}");
    let max = summary["max_abs_error"].as_f64().unwrap();
    assert!(summary["median_abs_error"].as_f64().unwrap() <= max);

    // The twin side is exactly `piotwin run … --sim` with the same options and seed.
    let seed = c["seed"].as_u64().unwrap().to_string();
    let direct = dir.path().join("direct.json");
    let o = piotwin(
        dir.path(),
        &[
            "run",
            "ior",
            "-b",
            "1m",
            "-t",
            "64k",
            "--seed",
            &seed,
            "--sim",
            &sc,
            "--ranks",
            "2",
            "--json",
            direct.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(read_json(&direct)["metrics"], predicted["metrics"]);

    // The page: the table, and per unit one chart with both sides, bar beside bar.
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<td>write_mib_s</td>"));
    for (f, metric) in [
        ("bandwidth_mib_s", "write_mib_s"),
        ("ops_s", "write_ops_s"),
        ("time_s", "write_mean_s"),
    ] {
        assert!(page.contains(&format!("plots/{f}.svg")), "{page}");
        let svg = std::fs::read_to_string(cmp.join(format!("plots/{f}.svg"))).unwrap();
        assert!(svg.starts_with("<svg"));
        for side in ["measured", "predicted"] {
            assert!(
                svg.contains(&format!("{metric} {side}")),
                "{f}: no {side} bar"
            );
        }
    }

    // The directory now holds a comparison: a second one there is refused, nothing touched.
    let before = files_in(&cmp);
    let o = piotwin(
        dir.path(),
        &["compare", "ior", "--scenario", &sc, "--ranks", "2"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("exists and is not empty"),
        "{}",
        stderr(&o)
    );
    assert_eq!(files_in(&cmp), before);
}

/// A launcher that runs the job and then fails: the real run's report is kept
/// and compared, the failed side named, exit code 1.
/// `--repeat 3`: three real runs, each with its own report and directory; the
/// measured report holds each metric's median over them with its min–max band,
/// and compare.json says whether the prediction lies inside the band.
#[test]
fn repeated_real_runs_give_the_median_and_its_band() {
    let Some(launcher) = launcher_line() else {
        panic!("no MPI launcher: real-mode tests need mpiexec");
    };
    let dir = tempfile::tempdir().unwrap();
    let sc = default_scenario();
    let o = compare_small_ior(dir.path(), &sc, &launcher, &["--repeat", "3"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{}", stderr(&o));
    let c = dir.path().join("c");
    let mut writes: Vec<f64> = (1..=3)
        .map(|i| {
            read_json(&c.join(format!("measured-{i}.json")))["metrics"]["write_mib_s"]
                .as_f64()
                .unwrap()
        })
        .collect();
    for i in 1..=3 {
        assert!(c.join(format!("measured/run-{i}")).is_dir());
    }
    writes.sort_by(f64::total_cmp);
    let m = read_json(&c.join("measured.json"));
    assert_eq!(m["metrics"]["write_mib_s"].as_f64(), Some(writes[1]));
    let band = &m["bands"]["write_mib_s"];
    assert_eq!(band["low"].as_f64(), Some(writes[0]));
    assert_eq!(band["high"].as_f64(), Some(writes[2]));
    assert_eq!(band["samples"], 3);
    let cmp = read_json(&c.join("compare.json"));
    assert_eq!(cmp["repeat"], 3);
    let w = &cmp["metrics"]["write_mib_s"];
    let p = w["predicted"].as_f64().unwrap();
    assert_eq!(
        w["in_band"].as_bool(),
        Some(writes[0] <= p && p <= writes[2])
    );
    assert!(out.contains("measured min-max band"), "{out}");
    assert!(read_json(&c.join("measured.json"))["environment"]["repeats"] == "median of 3 runs");
}

/// A scenario whose page cache pays for fresh memory that the host takes
/// back: compare waits 1.5 × release_time before the real run, reads the free
/// and warm memory it found, and starts the twin with them.
#[test]
fn the_twin_starts_from_the_free_and_warm_memory_the_real_run_found() {
    let Some(launcher) = launcher_line() else {
        panic!("no MPI launcher: real-mode tests need mpiexec");
    };
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(default_scenario())
        .unwrap()
        .replace(
            "[nodes.cache]",
            "[nodes.cache]\nfresh_bw = \"1GB/s\"\nwarm = \"64MiB\"\nrelease_time = \"0.2s\"",
        );
    std::fs::write(dir.path().join("vm.toml"), text).unwrap();
    let o = compare_small_ior(dir.path(), "vm.toml", &launcher, &[]);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    let cmp = read_json(&dir.path().join("c/compare.json"));
    assert!(
        (cmp["settle_s"].as_f64().unwrap() - 0.3).abs() < 1e-12,
        "{cmp}"
    );
    let free = cmp["mem_free_at_start"][0].as_u64().unwrap();
    assert!(free > 0);
    // The warm part: free blocks below free page reporting's order, where the
    // kernel reports free pages.
    let reporting = std::path::Path::new("/sys/module/page_reporting/parameters").exists();
    let warm = cmp["warm_at_start"].as_array().unwrap();
    assert_eq!(warm.len(), usize::from(reporting), "{cmp}");
    let mut sets = vec![format!("nodes[0].cache.free={free}B")];
    if let Some(warm) = warm.first().and_then(|w| w.as_u64()) {
        assert!(0 < warm && warm <= free, "warm {warm} of free {free}");
        sets.push(format!("nodes[0].cache.warm={warm}B"));
    }
    assert_eq!(cmp["twin_sets"], serde_json::json!(sets));
    assert!(
        stderr(&o).contains("the twin starts so (nodes.cache.free)"),
        "{}",
        stderr(&o)
    );
}

/// `--refresh-rates` on the committed calibration: its rate probes run again
/// before the real run, and the twin takes each calibrated rate moved as its
/// fit moved (value = calibrated × now / then), recorded so that a stored run
/// predicts again the same; the IOzone step's report stays, its file does not.
#[test]
fn the_twin_takes_the_rates_measured_again_before_the_real_run() {
    let Some(launcher) = launcher_line() else {
        panic!("no MPI launcher: real-mode tests need mpiexec");
    };
    let dir = tempfile::tempdir().unwrap();
    let calibrated = scenario("calibrated/vm.toml");
    std::fs::copy(&calibrated, dir.path().join("vm.toml")).unwrap();
    std::fs::copy(
        format!("{}.probes.json", calibrated.display()),
        dir.path().join("vm.toml.probes.json"),
    )
    .unwrap();
    let o = compare_small_ior(
        dir.path(),
        "vm.toml",
        &launcher,
        &["--refresh-rates", "--settle", "0s"],
    );
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    assert!(
        stderr(&o).contains("rates measured again"),
        "{}",
        stderr(&o)
    );
    let cmp = read_json(&dir.path().join("c/compare.json"));
    let refreshed = cmp["rates_refreshed"].as_array().unwrap();
    let keys: Vec<&str> = refreshed
        .iter()
        .map(|r| r["key"].as_str().unwrap())
        .collect();
    // Every rate the calibration fitted, in this order (a machine whose
    // private cache is below the pattern probe's sizes has no cached rates).
    let text = std::fs::read_to_string(&calibrated).unwrap();
    let fitted: Vec<&str> = [
        "nodes[0].compute.memcpy",
        "nodes[0].compute.pattern",
        "nodes[0].compute.pattern_check",
        "nodes[0].compute.pattern_cached",
        "nodes[0].compute.pattern_check_cached",
        "nodes[0].compute.flops",
        "nodes[0].compute.bt",
        "nodes[0].compute.error_norm",
        "nodes[0].compute.fft",
        "nodes[0].compute.signal",
        "nodes[0].compute.pattern_all_cores",
        "nodes[0].compute.flops_all_cores",
        "nodes[0].compute.bt_all_cores",
        "nodes[0].compute.error_norm_all_cores",
        "nodes[0].compute.fft_all_cores",
        "nodes[0].compute.signal_all_cores",
        "nodes[0].cache.write_bw",
        "nodes[0].cache.rewrite_bw",
        "nodes[0].cache.read_bw",
    ]
    .into_iter()
    .filter(|k| text.contains(&format!("[calibration.\"{k}\"]")))
    // where the IOzone step's writes took fresh memory (the warm floor could
    // not hold its files, or the write rate fell far below the rewrite
    // rate's move), compare says so and leaves the write rate as calibrated
    .filter(|k| {
        *k != "nodes[0].cache.write_bw"
            || !stderr(&o).contains("nodes.cache.write_bw stays as calibrated")
    })
    .collect();
    assert!(fitted.len() >= 10, "{fitted:?}");
    assert_eq!(keys, fitted);
    let sets: Vec<&str> = cmp["twin_sets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    assert!(sets[0].starts_with("nodes[0].cache.free="), "{sets:?}");
    // Then the warm memory the run found, where the kernel reports free pages.
    let start = 1 + usize::from(sets[1].starts_with("nodes[0].cache.warm="));
    assert_eq!(sets.len(), start + refreshed.len(), "{sets:?}");
    for (r, set) in refreshed.iter().zip(&sets[start..]) {
        let f = |k: &str| r[k].as_f64().unwrap();
        let (key, value) = set.split_once('=').unwrap();
        assert_eq!(key, r["key"].as_str().unwrap());
        let number: f64 = value
            .trim_matches('"')
            .trim_end_matches(r["unit"].as_str().unwrap())
            .parse()
            .unwrap();
        let expect = f("calibrated") * f("now") / f("then");
        assert!((number / expect - 1.0).abs() < 1e-9, "{set}: {expect}");
        // Fits of this machine and of the stored probes: both real rates.
        assert!(f("now") > 0.0 && f("then") > 0.0);
    }
    let measured = dir.path().join("c/measured");
    assert!(measured.join("refresh-iozone-1.json").is_file());
    assert!(!measured.join("refresh-iozone-1.tmp").exists());
}

#[test]
fn failed_real_run_keeps_what_it_finished() {
    let Some(launcher) = launcher_line() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let wrapper = format!("bash -c '{launcher} \"$@\"; exit 3' launcher");
    let o = piotwin(
        dir.path(),
        &[
            "compare",
            "ior",
            "--scenario",
            &default_scenario(),
            "--ranks",
            "2",
            "--out",
            "cmp",
            "--mpiexec",
            &wrapper,
            "-b",
            "256k",
            "-t",
            "64k",
        ],
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("the real run (measured) failed") && err.contains("is compared"),
        "{err}"
    );
    let cmp = dir.path().join("cmp");
    let c = read_json(&cmp.join("compare.json"));
    assert_eq!(c["failed"][0]["side"], "measured");
    assert_eq!(c["failed"].as_array().unwrap().len(), 1);
    let measured = read_json(&cmp.join("measured.json"));
    assert_eq!(
        c["metrics"]["write_mib_s"]["measured"],
        measured["metrics"]["write_mib_s"]
    );
    assert!(cmp.join("report.html").is_file());
    assert!(stdout(&o).contains("report: "));
}

/// A launcher that fails at once: no measured report, the twin's still there.
#[test]
fn real_run_that_never_starts_leaves_the_twin_side() {
    let dir = tempfile::tempdir().unwrap();
    let o = piotwin(
        dir.path(),
        &[
            "compare",
            "ftio",
            "--scenario",
            &default_scenario(),
            "--ranks",
            "2",
            "--out",
            "cmp",
            "--mpiexec",
            "false",
            "-i",
            "4",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("it left no report"), "{}", stderr(&o));
    let cmp = dir.path().join("cmp");
    assert!(!cmp.join("measured.json").exists());
    let c = read_json(&cmp.join("compare.json"));
    let predicted = read_json(&cmp.join("predicted.json"));
    assert_eq!(c["benchmark"], "ftio");
    assert!(c["metrics"]["io_time_s"]["measured"].is_null());
    assert_eq!(
        c["metrics"]["io_time_s"]["predicted"],
        predicted["metrics"]["io_time_s"]
    );
    assert_eq!(c["summary"]["all"]["count"], 0);
}

#[test]
fn bad_input_is_refused_before_anything_runs() {
    let sc = default_scenario();
    let with = |rest: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = vec!["compare".into()];
        v.extend(rest.iter().map(|s| s.to_string()));
        v
    };
    // `compare ior` on 2 ranks of the default scenario, then `rest`.
    let ior2 = |rest: &[&str]| with(&[&["ior", "--scenario", &sc, "--ranks", "2"], rest].concat());
    bad_input(
        &with(&["bonnie", "--scenario", &sc, "--ranks", "2"]),
        &["unknown benchmark `bonnie`", "ior", "b_eff_io"],
    );
    bad_input(
        &with(&["ior", "--scenario", &sc, "--ranks", "0"]),
        &["--ranks"],
    );
    bad_input(
        &with(&["ior", "--scenario", &sc, "--ranks", "two"]),
        &["--ranks", "two"],
    );
    bad_input(&with(&["ior", "--ranks", "2"]), &["--scenario"]);
    bad_input(
        &with(&["ior", "--scenario", "nowhere.toml", "--ranks", "2"]),
        &["--scenario `nowhere.toml`"],
    );
    bad_input(&ior2(&["-b", "1x"]), &["for the twin run", "1x"]);
    bad_input(&ior2(&["-b", "1m", "-t", "3k"]), &["benchmark's options"]);
    bad_input(
        &with(&["btio", "--scenario", &sc, "--ranks", "2", "--class", "S"]),
        &["square"],
    );
    bad_input(
        &ior2(&["--json", "x.json"]),
        &["`--json` among the benchmark's options"],
    );
    bad_input(
        &with(&[
            "b_eff_io",
            "--scenario",
            &sc,
            "--ranks",
            "2",
            "-T",
            "10",
            "-p",
            "scratch",
        ]),
        &["-p `scratch`", "relative paths"],
    );
    bad_input(
        &ior2(&["--mpiexec", "mpiexec 'open"]),
        &["--mpiexec", "single quote"],
    );
    bad_input(
        &ior2(&["--mpiexec", "no-such-launcher-x"]),
        &["--mpiexec `no-such-launcher-x`", "cannot start"],
    );
    bad_input(
        &ior2(&["--settle", "5 parsecs"]),
        &["--settle", "5 parsecs", "a time like"],
    );
    // The default scenario was not calibrated: no probes file to refresh from.
    bad_input(
        &ior2(&["--refresh-rates"]),
        &[
            "--refresh-rates `",
            "default.toml.probes.json`",
            "cannot read it",
        ],
    );
    // Under a launcher: compare must be the one that launches.
    let dir = tempfile::tempdir().unwrap();
    let o = common::piotwin_env(
        dir.path(),
        &with(&["ior", "--scenario", &sc, "--ranks", "2"]),
        &[("PMI_SIZE", "2")],
    );
    assert_refused(&o, dir.path(), &["not under mpiexec"]);
}

#[test]
fn an_existing_non_empty_out_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("mine");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("keep.txt"), "x").unwrap();
    let o = piotwin(
        dir.path(),
        &[
            "compare",
            "ior",
            "--scenario",
            &default_scenario(),
            "--ranks",
            "2",
            "--out",
            "mine",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--out `mine`: exists and is not empty"),
        "{}",
        stderr(&o)
    );
    assert!(stdout(&o).is_empty());
    assert_eq!(files_in(&out), ["keep.txt"]);
    assert_eq!(files_in(Path::new(dir.path())), ["mine"]);
}
