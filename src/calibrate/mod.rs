//! `piotwin calibrate`'s logic: which probes to run ([`plan`]), their raw
//! results and how they are read from the probes' JSON reports ([`probes`]),
//! the in-process memcpy probe ([`memcpy`]), the fits that turn results into
//! model parameters ([`fits`]) and the scenario file they are written into
//! ([`writer`]).
//!
//! What it is for: calibrating the twin from measurements of *this* machine.
//! The probes are ordinary benchmarks run for real (`mpiexec -n k piotwin run
//! <probe> … --json F`, launched by the CLI); this module never runs MPI
//! itself. The statistics are in the `piotwin-calibration` crate.
//!
//! Held-out discipline: calibration never runs b_eff_io, and every IOR shape it
//! runs is listed in the output's `[source]`, so `compare` can judge the twin
//! on shapes calibration did not see.
//!
//! What it is not: a tuner that searches model parameters to match benchmark
//! results — every parameter comes from one probe by one stated fit.

pub mod discrepancy;
pub mod fits;
pub mod freshness;
pub mod memcpy;
pub mod plan;
pub mod probes;
pub mod refresh;
pub mod writer;

use serde::{Deserialize, Serialize};

/// The confidence level of every interval calibration writes.
pub const LEVEL: f64 = 0.95;

/// What calibration needs to know about the machine it runs on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// Host name (`/proc/sys/kernel/hostname`).
    pub host: String,
    /// Cores available to this process (`std::thread::available_parallelism`).
    pub cores: usize,
    /// `MemTotal` of `/proc/meminfo`, bytes: the page cache may grow to (almost) all of it.
    pub mem_total_bytes: u64,
    /// The largest CPU cache, bytes (`/sys/devices/system/cpu/cpu0/cache/index*/size`;
    /// 32 MiB where unreadable). Bandwidth fits use only transfers of files and
    /// buffers at least twice this size, so they measure memory, not the CPU cache.
    pub cpu_cache_bytes: u64,
    /// The read-ahead of the block device holding the scratch directory, bytes
    /// (`/sys/dev/block/MAJ:MIN/queue/read_ahead_kb`, the whole disk's for a
    /// partition); `None` where unreadable (a network or virtual file system).
    #[serde(default)]
    pub readahead_bytes: Option<u64>,
    /// The UTC date the facts were read, `YYYY-MM-DD` (the calibration's date;
    /// `None` in probes files written before it was recorded).
    #[serde(default)]
    pub date: Option<String>,
    /// The processor (`model name` of `/proc/cpuinfo`); `None` where unreadable
    /// or in probes files written before it was recorded. Virtual machines of
    /// one name may run on different hosts.
    #[serde(default)]
    pub cpu: Option<String>,
    /// Free memory in blocks smaller than free page reporting hands back,
    /// bytes, when calibration started (`/proc/buddyinfo`, blocks of order
    /// below `/sys/module/page_reporting/parameters/page_reporting_order`):
    /// memory that stays backed however long it is free. `None` without free
    /// page reporting or in probes files written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreported_free_bytes: Option<u64>,
    /// The largest data cache private to cpu0, bytes (a level under
    /// `/sys/devices/system/cpu/cpu0/cache/` shared with no other cpu): where
    /// a buffer just read or written stays. `None` where unreadable or in
    /// probes files written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub private_cache_bytes: Option<u64>,
}

impl Machine {
    /// Reads the machine's host name, cores and memory.
    pub fn detect() -> Result<Machine, String> {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .map_err(|e| format!("/proc/sys/kernel/hostname: cannot read it: {e}"))?;
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .map_err(|e| format!("cannot count the cores: {e}"))?;
        let meminfo = std::fs::read_to_string("/proc/meminfo")
            .map_err(|e| format!("/proc/meminfo: cannot read it: {e}"))?;
        let mem_total_bytes = parse_mem_total(&meminfo)?;
        let cpu_cache_bytes = (0..8)
            .filter_map(|i| {
                let p = format!("/sys/devices/system/cpu/cpu0/cache/index{i}/size");
                parse_cache_size(&std::fs::read_to_string(p).ok()?)
            })
            .max()
            .unwrap_or(32 << 20);
        Ok(Machine {
            host,
            cores,
            mem_total_bytes,
            cpu_cache_bytes,
            readahead_bytes: None,
            date: Some(freshness::today()),
            cpu: std::fs::read_to_string("/proc/cpuinfo")
                .ok()
                .as_deref()
                .and_then(cpu_model),
            unreported_free_bytes: unreported_free(),
            private_cache_bytes: private_cache(),
        })
    }

    /// Reads the read-ahead of the block device that holds `dir` into
    /// [`Machine::readahead_bytes`].
    pub fn detect_readahead(&mut self, dir: &std::path::Path) {
        use std::os::unix::fs::MetadataExt;
        self.readahead_bytes = std::fs::metadata(dir).ok().and_then(|m| {
            let (major, minor) = (libc::major(m.dev()), libc::minor(m.dev()));
            let block = format!("/sys/dev/block/{major}:{minor}");
            ["queue/read_ahead_kb", "../queue/read_ahead_kb"]
                .iter()
                .find_map(|q| std::fs::read_to_string(format!("{block}/{q}")).ok())
                .and_then(|kb| kb.trim().parse::<u64>().ok())
                .map(|kb| kb << 10)
        });
    }
}

/// Free memory in blocks below free page reporting's order, bytes: `None`
/// where the kernel does not report free pages (no `page_reporting` module).
/// The page cache's small pages take it without faulting memory in again:
/// the twin's `nodes.cache.warm`.
pub fn unreported_free() -> Option<u64> {
    let order: u32 =
        std::fs::read_to_string("/sys/module/page_reporting/parameters/page_reporting_order")
            .ok()?
            .trim()
            .parse()
            .ok()?;
    let buddy = std::fs::read_to_string("/proc/buddyinfo").ok()?;
    Some(free_below_order(&buddy, order, 4096))
}

/// Bytes in the free blocks of order below `order` that `/proc/buddyinfo`'s
/// text lists (counts of free blocks of order 0, 1, … per zone), pages of
/// `page` bytes.
fn free_below_order(buddyinfo: &str, order: u32, page: u64) -> u64 {
    buddyinfo
        .lines()
        .filter_map(|l| l.split_once("zone").map(|(_, rest)| rest))
        .flat_map(|rest| {
            rest.split_whitespace()
                .skip(1)
                .filter_map(|c| c.parse::<u64>().ok())
                .take(order as usize)
                .enumerate()
                .map(|(o, n)| n * (page << o))
                .collect::<Vec<_>>()
        })
        .sum()
}

/// The first `model name` of the text of `/proc/cpuinfo`.
fn cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
}

/// A sysfs cache size (`32768K`, `2M`), bytes.
/// The largest data or unified cache of cpu0 that no other cpu shares, bytes.
fn private_cache() -> Option<u64> {
    (0..8)
        .filter_map(|i| {
            let read = |f: &str| {
                std::fs::read_to_string(format!("/sys/devices/system/cpu/cpu0/cache/index{i}/{f}"))
                    .ok()
            };
            let kind = read("type")?;
            let shared = read("shared_cpu_list")?;
            let private = shared.trim().parse::<u32>().is_ok();
            (private && kind.trim() != "Instruction").then_some(())?;
            parse_cache_size(&read("size")?)
        })
        .max()
}

fn parse_cache_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let (digits, unit) = t.split_at(t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len()));
    let n: u64 = digits.parse().ok()?;
    Some(match unit {
        "" => n,
        "K" => n << 10,
        "M" => n << 20,
        "G" => n << 30,
        _ => return None,
    })
}

/// `MemTotal` from the text of `/proc/meminfo`, bytes (the file's `kB` is KiB).
pub fn parse_mem_total(meminfo: &str) -> Result<u64, String> {
    meminfo_bytes(meminfo, "MemTotal")
}

/// A `field` of the text of `/proc/meminfo` (`MemTotal`, `MemFree`, …), bytes.
pub fn meminfo_bytes(meminfo: &str, field: &str) -> Result<u64, String> {
    let key = format!("{field}:");
    let line = meminfo
        .lines()
        .find(|l| l.starts_with(&key))
        .ok_or(format!("/proc/meminfo: no {field} line"))?;
    let kib: u64 = line
        .trim_start_matches(&key)
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .map_err(|_| format!("/proc/meminfo: cannot read `{line}` (expected `{field}: N kB`)"))?;
    Ok(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// By hand: order 0 and 1 counts below order 2, 4 KiB pages: zone DMA
    /// 1 × 4 KiB + 2 × 8 KiB, zone Normal 3 × 4 KiB + 0; the orders from 2 on
    /// are left out.
    #[test]
    fn unreported_free_memory_sums_the_blocks_below_the_order() {
        let text = "Node 0, zone      DMA      1      2      5      7\n\
                    Node 0, zone   Normal      3      0      9      1\n";
        assert_eq!(free_below_order(text, 2, 4096), (1 + 2 * 2 + 3) * 4096);
        assert_eq!(free_below_order(text, 0, 4096), 0);
    }

    #[test]
    fn the_cpu_model_is_the_first_model_name() {
        let text = "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Processor\nprocessor\t: 1\nmodel name\t: other\n";
        assert_eq!(
            cpu_model(text).as_deref(),
            Some("Intel(R) Xeon(R) Processor")
        );
        assert_eq!(cpu_model("flags: fpu"), None);
    }

    #[test]
    fn mem_total_is_kib() {
        let text = "MemTotal:       24684092 kB\nMemFree:  1 kB\n";
        assert_eq!(parse_mem_total(text).unwrap(), 24684092 * 1024);
        assert!(
            parse_mem_total("MemFree: 1 kB")
                .unwrap_err()
                .contains("MemTotal")
        );
        assert!(parse_mem_total("MemTotal: lots").is_err());
    }
}
