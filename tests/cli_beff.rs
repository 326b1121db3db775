//! End-to-end tests of `piotwin run b_eff`: refusals; the twin on a case computed
//! by hand (max–min shares of NICs and memory); the dry run; real runs at 2 and
//! 4 ranks that check every message received.

use std::path::Path;
use std::process::Output;

mod common;
use common::*;

#[test]
fn bad_inputs_exit_2_naming_the_input() {
    let scenario = common::scenario("default.toml");
    let s = scenario.to_str().unwrap();
    bad_input(
        &["run", "b_eff", "--sim", s, "--ranks", "1"],
        &["--ranks", "at least 2"],
    );
    bad_input(
        &["run", "b_eff", "--sim", s, "--ranks", "2", "--mb", "1"],
        &["--mb", "Lmax"],
    );
    bad_input(
        &[
            "run",
            "b_eff",
            "--sim",
            s,
            "--ranks",
            "2",
            "--repetitions",
            "0",
        ],
        &["--repetitions"],
    );
}

/// `piotwin run b_eff` in the twin of `default.toml` with `extra` options, small
/// and quick (Lmax 16 KiB, one repetition, loops of 3), its report in `b.json`.
fn twin(dir: &Path, ranks: &str, extra: &[&str]) -> Output {
    let scenario = common::scenario("default.toml");
    let mut args = vec![
        "run",
        "b_eff",
        "--sim",
        scenario.to_str().unwrap(),
        "--ranks",
        ranks,
        "--mb",
        "2",
        "--repetitions",
        "1",
        "--first-loop",
        "3",
        "--json",
        "b.json",
    ];
    args.extend_from_slice(extra);
    piotwin(dir, &args)
}

/// The best bandwidth (MB/s) of `pattern` at `bytes` in a report.
fn best(report: &serde_json::Value, pattern: &str, bytes: u64) -> f64 {
    let t = &report["tables"]["best"];
    let (p, b, v) = (column(t, "pattern"), column(t, "bytes"), column(t, "mb_s"));
    t["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r[p] == pattern && r[b].as_u64() == Some(bytes))
        .unwrap_or_else(|| panic!("no row {pattern} {bytes}"))[v]
        .as_f64()
        .unwrap()
}

/// Two nodes of two cores, NICs of 1 GB/s, memory 10 GB/s, no latency; ranks
/// 0, 1 on the first node, 2, 3 on the second. At Lmax = 16 KiB:
/// * `ring-2*2fix` (pairs 0–1, 2–3) stays on the nodes: each node's memory
///   carries the pair's two messages at once, 5 GB/s each, so an iteration (two
///   exchanges) takes 2L / 5 GB/s and b = L·2·4 / (2L / 5e9) = 20 000 MB/s;
/// * `ring-1*4fix` sends 1→2 and 3→0 across: one message per NIC direction at
///   1 GB/s, 2L / 1e9 per iteration, b = 4 000 MB/s — by every method (the
///   nonblocking one puts two messages on each NIC direction, at half the rate
///   each, in the same time).
#[test]
fn twin_ring_bandwidths_are_the_max_min_shares() {
    let dir = tempfile::tempdir().unwrap();
    let o = twin(
        dir.path(),
        "4",
        &[
            "--set",
            "nodes[0].count=2",
            "--set",
            "nodes[0].nic_bw=1GB/s",
            "--set",
            "nodes[0].nic_latency=0s",
            "--set",
            "network.latency=0s",
            "--plot",
            "b",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let r = read_json(&dir.path().join("b.json"));
    assert_eq!(r["benchmark"], "b_eff");
    let lmax = 16 << 10;
    let pairs = best(&r, "ring-2*2fix", lmax);
    let ring = best(&r, "ring-1*4fix", lmax);
    assert!((pairs / 20_000.0 - 1.0).abs() < 1e-3, "pairs {pairs}");
    assert!((ring / 4_000.0 - 1.0).abs() < 1e-3, "ring of 4 {ring}");
    let t = &r["tables"]["samples"];
    let (p, b, m, v) = (
        column(t, "pattern"),
        column(t, "bytes"),
        column(t, "method"),
        column(t, "mb_s"),
    );
    for row in t["rows"].as_array().unwrap() {
        if row[p] == "ring-1*4fix" && row[b].as_u64() == Some(lmax) {
            let got = row[v].as_f64().unwrap();
            assert!((got / 4_000.0 - 1.0).abs() < 1e-3, "{}: {got}", row[m]);
        }
    }
    let metrics = &r["metrics"];
    for k in [
        "b_eff_mb_s",
        "b_eff_per_process_mb_s",
        "b_eff_lmax_mb_s",
        "rings_lmax_mb_s",
        "pingpong_latency_us",
        "pingpong_bandwidth_mb_s",
    ] {
        assert!(metrics[k].as_f64().unwrap() > 0.0, "{k}");
    }
    let out = stdout(&o);
    assert!(
        out.contains("b_eff = ") && out.contains("pattern random-"),
        "{out}"
    );
    assert!(dir.path().join("b.svg").exists() && dir.path().join("b.png").exists());
}

#[test]
fn twin_is_deterministic_and_the_dry_run_completes() {
    let run = |dir: &Path| twin(dir, "5", &[]);
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    assert!(run(a.path()).status.success());
    assert!(run(b.path()).status.success());
    let (x, y) = (
        std::fs::read(a.path().join("b.json")).unwrap(),
        std::fs::read(b.path().join("b.json")).unwrap(),
    );
    assert_eq!(x, y);
    let dir = tempfile::tempdir().unwrap();
    let o = piotwin(
        dir.path(),
        &[
            "run",
            "b_eff",
            "--dry-run",
            "--ranks",
            "7",
            "--mb",
            "2",
            "--repetitions",
            "1",
            "--first-loop",
            "2",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
}

#[cfg(feature = "mpi")]
#[test]
fn real_runs_check_every_message() {
    for n in [2, 4] {
        let dir = tempfile::tempdir().unwrap();
        let Some(o) = mpirun(
            dir.path(),
            n,
            &[
                "run",
                "b_eff",
                "--mb",
                "2",
                "--repetitions",
                "1",
                "--first-loop",
                "2",
                "--json",
                "b.json",
            ],
        ) else {
            return;
        };
        assert!(o.status.success(), "{n} ranks: {}", stderr(&o));
        let r = read_json(&dir.path().join("b.json"));
        assert_eq!(r["mode"], "real");
        assert!(
            r["errors"].as_array().unwrap().is_empty(),
            "{}",
            r["errors"]
        );
        assert!(r["metrics"]["b_eff_mb_s"].as_f64().unwrap() > 0.0);
        let samples = r["tables"]["samples"]["rows"].as_array().unwrap().len();
        assert_eq!(samples, 21 * 12 * 3, "{n} ranks");
    }
}
