//! The storage-system model seen through the IOR probe (`piotwin run ior --sim`):
//! the effects the model exists to show, on the shipped scenarios.
//!
//! * striping: a shared file striped over 8 servers of `lustre-hdd` takes at
//!   least twice the write bandwidth of one striped over 1 (64 ranks);
//! * file per process vs one shared file on `lustre-hdd` (stripe count 1: the
//!   shared file sits on one server, the 16 files spread over 16 servers);
//! * the client page cache of `default`: reading back what was just written
//!   runs at memory speed, well above the device's read bandwidth.
//!
//! These compare two model outputs (or one with a scenario figure), never a
//! result with a stored number; sizes are small so a debug build runs them in seconds.

use piotwin_sim::Scenario;
use piotwin_sim::scenario::Device;

mod common;
use common::*;

/// Runs the twin IOR with `args` on scenario `name` at `ranks`; returns the report's metrics.
fn twin_ior(name: &str, ranks: usize, args: &[&str]) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let sc = scenario(name);
    let ranks = ranks.to_string();
    let mut all = vec!["run", "ior"];
    all.extend(args);
    all.extend([
        "--sim",
        sc.to_str().unwrap(),
        "--ranks",
        &ranks,
        "--json",
        "r.json",
    ]);
    let o = piotwin(dir.path(), &all);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{args:?} on {name}: {}",
        stderr(&o)
    );
    let r = read_json(&dir.path().join("r.json"));
    assert_eq!(r["mode"], "sim");
    r["metrics"].clone()
}

fn metric(m: &serde_json::Value, key: &str) -> f64 {
    let x = m[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key}: {}", m[key]));
    assert!(x.is_finite() && x > 0.0, "{key} = {x}");
    x
}

/// Shared file, 4 MiB per rank in 1 MiB transfers, fsync inside the timed write.
const WRITE: [&str; 8] = ["-a", "MPIIO", "-b", "4m", "-t", "1m", "-e", "-w"];

#[test]
fn striping_over_8_servers_at_least_doubles_write_bandwidth() {
    let bw = |count: &str| {
        let set = format!("filesystem.stripe_count={count}");
        let args: Vec<&str> = WRITE.iter().copied().chain(["--set", &set]).collect();
        metric(&twin_ior("lustre-hdd.toml", 64, &args), "write_mib_s")
    };
    let (one, eight) = (bw("1"), bw("8"));
    assert!(
        eight >= 2.0 * one,
        "stripe count 8: {eight:.0} MiB/s, stripe count 1: {one:.0} MiB/s"
    );
}

#[test]
fn file_per_process_beats_one_shared_file_on_lustre_hdd() {
    let shared = metric(&twin_ior("lustre-hdd.toml", 16, &WRITE), "write_mib_s");
    let args: Vec<&str> = WRITE.iter().copied().chain(["-F"]).collect();
    let fpp = metric(&twin_ior("lustre-hdd.toml", 16, &args), "write_mib_s");
    assert!(
        fpp >= 2.0 * shared,
        "file per process: {fpp:.0} MiB/s, shared file: {shared:.0} MiB/s"
    );
}

#[test]
fn page_cache_reads_beat_the_device_on_default() {
    let scn = Scenario::load(&scenario("default.toml")).unwrap();
    let Device::Ssd(ssd) = &scn.server.device else {
        panic!("default.toml's device is an SSD")
    };
    let device_mib_s = ssd.read_bw / (1u64 << 20) as f64;
    // Write then read back 16 MiB per rank: the reads find the page cache.
    let m = twin_ior("default.toml", 2, &["-a", "POSIX", "-b", "16m", "-t", "1m"]);
    let read = metric(&m, "read_mib_s");
    assert!(
        read >= 2.0 * device_mib_s,
        "read {read:.0} MiB/s, device read bandwidth {device_mib_s:.0} MiB/s"
    );
}
