//! A spot check of this host's in-process rates, for `compare --rates-now`:
//! the kernels calibration times in process (memcpy, IOR's data pattern
//! filled and checked, MADbench2's busy-work, NPB BT's step, FTIO's FFT) at
//! one size each, and the page cache's rewrite and re-read of a file, in about
//! a second. On a machine whose speed drifts (a virtual machine sharing its
//! host), the rates when a run starts can differ from calibration's by tens of
//! per cent; the twin then starts from these, as it starts from the free
//! memory the run found.
//!
//! What it is not: a calibration. Each rate is one size's median, not a fit,
//! and what calibration fits from MPI probes (messages, wake-ups, MPI-IO call
//! costs) is not checked.

use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::Instant;

use super::fits::Unit;
use super::memcpy::{measure, measure_bt, measure_busy_work, measure_fft, measure_pattern};

/// Bytes of the copies, fills and checks, and of the page-cache file.
const BYTES: u64 = 64 << 20;
/// Repetitions of each timed kernel (the median is taken).
const REPS: usize = 5;

/// One rate measured now: its scenario key under a node group (`compute.memcpy`),
/// the value and its unit.
#[derive(Debug, Clone, PartialEq)]
pub struct SpotRate {
    /// The key below `nodes[i].`.
    pub key: &'static str,
    /// The rate, bytes/s or flop/s.
    pub value: f64,
    /// Its unit.
    pub unit: Unit,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The rates now; the page-cache file is written, read and removed in `dir`.
pub fn rates(dir: &Path) -> Result<Vec<SpotRate>, String> {
    let rate = |key, samples: Vec<f64>, unit| SpotRate {
        key,
        value: median(samples),
        unit,
    };
    let per_byte = |s: &[super::memcpy::CopySample]| -> Vec<f64> {
        s.iter().map(|s| s.bytes as f64 / s.seconds).collect()
    };
    let per_flop = |s: &[super::memcpy::FlopSample]| -> Vec<f64> {
        s.iter().map(|s| s.flops / s.seconds).collect()
    };
    let (fills, checks) = measure_pattern(&[BYTES], REPS);
    let mut out = vec![
        rate(
            "compute.memcpy",
            per_byte(&measure(&[BYTES], REPS)),
            Unit::Rate,
        ),
        rate("compute.pattern", per_byte(&fills), Unit::Rate),
        rate("compute.pattern_check", per_byte(&checks), Unit::Rate),
        // The sizes of calibration's quick plan: 1e6 loops, a class-A-like
        // step on 4 ranks, FTIO at I = 16.
        rate(
            "compute.flops",
            per_flop(&measure_busy_work(&[1_000_000], REPS)),
            Unit::FlopRate,
        ),
        rate(
            "compute.bt",
            per_flop(&measure_bt(&[(36, 4)], REPS)),
            Unit::FlopRate,
        ),
        rate(
            "compute.fft",
            per_flop(&measure_fft(&[16], REPS)),
            Unit::FlopRate,
        ),
    ];
    let (write, read) = page_cache(dir)?;
    out.push(rate("cache.write_bw", write, Unit::Rate));
    out.push(rate("cache.read_bw", read, Unit::Rate));
    Ok(out)
}

/// Writes of a new `BYTES` file in 1 MiB records (the page cache allocates
/// its pages: calibration's IOzone write of cached files) and its re-read,
/// the file removed after each: bytes/s of each pass. The pages each delete
/// frees are taken again by the next write, so none of it is fresh memory.
fn page_cache(dir: &Path) -> Result<(Vec<f64>, Vec<f64>), String> {
    const RECORD: usize = 1 << 20;
    let path = dir.join(format!("piotwin-rates-{}.tmp", std::process::id()));
    let run = || -> std::io::Result<(Vec<f64>, Vec<f64>)> {
        let mut buf = vec![0x5au8; RECORD];
        let (mut writes, mut reads) = (Vec::new(), Vec::new());
        // One more than timed: the first allocates the memory the others reuse.
        for rep in 0..=REPS {
            let f = std::fs::OpenOptions::new()
                .create_new(true)
                .read(true)
                .write(true)
                .open(&path)?;
            let t0 = Instant::now();
            for off in (0..BYTES).step_by(RECORD) {
                f.write_all_at(&buf, off)?;
            }
            let written = t0.elapsed().as_secs_f64();
            let t0 = Instant::now();
            for off in (0..BYTES).step_by(RECORD) {
                f.read_exact_at(&mut buf, off)?;
            }
            let read = t0.elapsed().as_secs_f64();
            drop(f);
            std::fs::remove_file(&path)?;
            if rep > 0 {
                writes.push(BYTES as f64 / written);
                reads.push(BYTES as f64 / read);
            }
        }
        Ok((writes, reads))
    };
    let out = run().map_err(|e| format!("`{}`: {e}", path.display()));
    let _ = std::fs::remove_file(&path);
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_rate_is_measured_and_the_file_removed() {
        let dir = tempfile::tempdir().unwrap();
        let rates = super::rates(dir.path()).unwrap();
        let keys: Vec<&str> = rates.iter().map(|r| r.key).collect();
        assert_eq!(
            keys,
            [
                "compute.memcpy",
                "compute.pattern",
                "compute.pattern_check",
                "compute.flops",
                "compute.bt",
                "compute.fft",
                "cache.write_bw",
                "cache.read_bw"
            ]
        );
        assert!(rates.iter().all(|r| r.value.is_finite() && r.value > 0.0));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
