//! From probe results to model parameters: one stated fit per parameter, each
//! with its value, confidence interval (level [`LEVEL`]), the probe it came from
//! and the fit's quality.
//!
//! | parameter | probe | fit |
//! |---|---|---|
//! | `nodes.compute.memcpy` | memcpy | time = latency + bytes / bw (Huber) |
//! | `metadata.delete`, `metadata.delete_bw` | unlink of synced cached files over sizes | time = delete + bytes / delete_bw (Huber) |
//! | `nodes.compute.pattern` | IOR's data pattern, filled | time = latency + bytes / bw (Huber) |
//! | `nodes.compute.pattern_check` | IOR's data pattern, checked | time = latency + bytes / bw (Huber) |
//! | `nodes.compute.private_cache`, `pattern_cached`, `pattern_check_cached` | the machine (sysfs: cpu0's largest cache no other cpu shares); IOR's data pattern filled and checked at the sizes up to it | read; one over the mean time per byte (Student t) |
//! | `nodes.compute.flops` | MADbench2's busy-work loop over loop counts | time = latency + flops / rate (Huber) |
//! | `nodes.compute.bt` | NPB BT's step (rank 0's cells, several grids and rank counts) over its counted flops | time = latency + flops / rate (Huber) |
//! | `nodes.compute.fft` | FTIO's FFT kernel over Mini-Square sides | time = latency + flops / rate (Huber) |
//! | `nodes.compute.flops_all_cores`, `bt_all_cores`, `error_norm_all_cores`, `fft_all_cores`, `signal_all_cores`, `pattern_all_cores` | the all-cores probe: each kernel's largest case (the pattern: filled into a buffer of the smallest copy size), runs of ≥ 0.2 s alone and on as many threads at once as the runs put ranks on a node (at least the cores), in turn, 3 rounds | per round, the threads' aggregate rate / (cores × the mean rate alone before and after); the median round, the lowest and highest as the interval |
//! | `nodes.memory_bw` | the inode-lock probe's writers of a file each, at once | their aggregate page-cache copy rate (median of runs) |
//! | `nodes.memory_read_bw` | the bus-read probe: as many readers of a cached file each, at once, 1 MiB requests into buffers the private cache holds | their aggregate rate (median of runs) |
//! | `nodes.memory_write_bw` | the bus-write probe: one writer of a new file, then as many writers of a file each at once, 1 MiB requests into warm pages | k × writers × `nodes.cache.write_bw`, k what each writer at once kept of one writer's rate (medians); not fitted where the runs at once and alone overlap per writer |
//! | `nodes.compute.signal` | FTIO's input computed over Mini-Square sides | time = latency + bytes / rate (Huber) |
//! | `nodes.compute.error_norm` | BTIO's verification of rank 0's dump (bytes as doubles, NPB's error norm) over the BT probe's grids and rank counts | time = latency + bytes / rate (Huber) |
//! | `nodes.fortran_statement` | Fortran `WRITE(REC=)` of 40-byte records over statement counts | time = latency + statements · cost (Huber) |
//! | `nodes.nic_latency`, `nodes.nic_bw`, `nodes.message_bw` | b_eff, 2 ranks (on the calibrating node), its `MPI_Sendrecv` loops | exchange time (loop time / 2 loops) = latency + bytes / bw (Huber); `message_bw` the same bw (the ranks share the node) |
//! | `nodes.oversubscribed_wakeup` | b_eff's `MPI_Sendrecv` exchanges of 1 byte | mean exchange at N > cores ranks − mean at 2 ranks |
//! | `nodes.eager_limit` | b_eff's `MPI_Sendrecv` exchanges at N > cores ranks over message sizes | the largest size before the median exchange steps up to 1.5 × that at ≤ 1 KiB and stays there (the rendezvous' second wake-up) |
//! | `nodes.oversubscribed_unpack_bw`, `nodes.oversubscribed_pack_bw` | pingpong's two-phase test (`write_at_all`, `read_at_all` through an interleaved view) at N > cores ranks over call sizes | call time − the aggregator's page-cache copy = intercept + exchanged bytes / bw (Huber); exchanged: the (N − 1)/N of a call's bytes that reach the node's one aggregator |
//! | `nodes.allreduce_wake` | pingpong's barriers and one-value all-reduces at N > cores ranks, in the same jobs | per job, (all-reduce − steps · `nic_latency`) / (barrier − the same); the median job, the lowest and highest as the interval |
//! | `nodes.release_stagger` | pingpong's barriers at N > cores ranks: every rank's exit times | the mean over runs of (mean exit after the first rank out of the ranks beyond the first `cores` − that of the first `cores`) (Student t); only where waiting ranks poll |
//! | `nodes.waiting_ranks` (a choice), `nodes.polled_wakeup` | pingpong's polled test at N > cores ranks: `cores` ranks copy, then copy and meet in a barrier, while the others wait, the steps in episodes each after a sleep in a sync | `poll` where the largest copy ran below the midpoint of a whole core and cores / N of one (against `nodes.compute.memcpy`), else `idle`; with `poll`, the mean of (step − copy) / barrier steps over sizes and runs (Student t) |
//! | `nodes.syscall`, `nodes.cache.write_bw` | IOzone write, cached files | time per record = latency + record / bw (Huber); `syscall` then from IOR (below) |
//! | `nodes.syscall` | IOR MPI-IO shared file, independent writes at 1 rank, smallest `-t`, the repetitions after the first | mean of call time − `mpiio.independent_call` − `-t` / `cache.write_bw` − the `-t` bytes' pattern fill at `compute.pattern` (`pattern_cached` within `private_cache`), which IOR times with the call and the twin charges apart (Student t), combined with IOzone's write intercept by inverse variance (their intervals' half-widths) |
//! | `filesystem.write_lock_span` (a choice) | the same writes at 1 and 2 ranks, smallest `-t`, the repetitions after the first | `call` where the median call at 2 ranks is above the geometric midpoint of max(t1, 2 copies) (the lock over the copy) and max(t1, 2 (t1 − `independent_call`)) (over the whole call), else `copy`; needs `inode` chosen |
//! | `nodes.cache.rewrite_bw` | IOzone rewrite, cached files (pages already held) | as above |
//! | `nodes.read_syscall`, `nodes.cache.read_bw` | IOzone re-read | as above |
//! | `nodes.cache.aliased_bw`, `aliased_within` | the aliasing probe: a cached file read in 1 MiB requests at page-aligned offsets into a buffer placed 0 to 256 B past a page, each in turn, 3 rounds | placements below 3/4 of the rate at a page boundary alias: their median rate (the slowest and fastest as the interval); `aliased_within` the smallest placement beyond every aliasing one; neither where none aliases |
//! | `nodes.cache.aliased_all_cores` | the all-cores probe's `aliased_read`: the aliasing probe's file read into a buffer 16 B past a page, a file per thread, alone and on all threads at once, in turn, 3 rounds | as the kernels' `_all_cores` above; not where none aliases |
//! | `nodes.cache.capacity` | IOzone re-read over file sizes | cache knee (two plateaus of log bandwidth), else `MemTotal` |
//! | `server.device.read_latency`, `read_bw` | IOzone cold read (`-I`) | time per record = latency + record / bw (Huber) |
//! | `metadata.sync`, `server.device.write_bw` | IOzone `fsync_s` | fsync time = sync + dirty bytes / bw (Huber) |
//! | `server.device.overwrite_bw` | IOzone rewrite's `fsync_s` | the same line over the rewrite's fsyncs (blocks written back before), its slope |
//! | `mpiio.independent_call` | IOR MPI-IO shared file, independent reads, ranks ≤ cores | intercept of call time over `-t` (Huber) − `nodes.read_syscall` |
//! | `mpiio.collective_call` | IOR `-c` reads at `cores` ranks | intercept of call time over `-t` (Huber) − `nodes.read_syscall` |
//! | `mpiio.open`, `mpiio.close` | IOR open/close times of writes, ranks ≤ cores, repetitions after the first | mean − base `metadata.create` / `metadata.close` |
//! | `mpiio.first_open`, `mpiio.first_close` | the same, repetition 0 (each probe step is one process: its first open and close) | mean − the later repetitions' mean |
//! | `nodes.mmap_from`, `nodes.compute.first_touch` | pingpong's `MPI_Sendrecv_replace` at 2 ranks over sizes from 1 MiB | the smallest size at 2 × the time per byte of the smallest size, every larger too; one over the mean time per byte beyond the smallest size's from there (Student t) |
//! | `nodes.cache.release_time` | rewrites a wait after a delete, at two sizes | the wait until freed memory is no longer backed (`piotwin_calibration::fit_release`) |
//! | `nodes.cache.fresh_bw` | settled writes in 1 MiB and 2 MiB (and more) requests (huge pages take fresh memory), in rounds | bytes / (huge requests' time − smallest requests'), the median of the rounds, their range the interval; else the release probe's |
//! | `nodes.cache.warm` | the machine: free memory in blocks below free page reporting's order | `/proc/buddyinfo` at the start; else the release probe's |
//! | `nodes.cache.huge_from` | the same settled writes | the smallest request size at 2 × the smallest requests' time, every larger too; where the smallest ran at under half `cache.write_bw` (the warm floor used up), the smallest size that took all its memory fresh (0.9 × (bytes / `write_bw` + bytes / `fresh_bw`)), every larger too |
//! | `nodes.cache.fresh_stall` (a choice) | the settled writes' largest requests written again, settled, beside a spinning thread per core | `core` where that write took more than the geometric midpoint of t1 / s (the fresh memory stretched with the writer's share s of a core, as the copy) and c / s + t1 − c (the copy alone; c = bytes / `cache.write_bw`), else `none` |
//! | `filesystem.write_lock` (a choice) | warm rewrites in the scratch directory, 1 MiB requests: one writer; 2 writers of one file; 2 writers of a file each | `inode` where the medians' rate of one file stays below the geometric midpoint of one writer's and a file each's, else `none`; not chosen where a file each did not reach 1.25 × one writer and the runs of one file and of a file each overlap (the probe cannot tell) |
//! | `nodes.sleeping_ranks` (a choice) | pingpong's locked-write test at N > cores ranks: every rank rewrites its part of one file at once, each call after a barrier (its smallest size) | `yield` where the median call ran below the geometric midpoint of N · bytes / `rewrite_bw` (each writer woken from the inode lock on a whole core) and N / cores times that (at its share); needs `poll` and `inode` chosen |
//! | `nodes.wake_slice` | pingpong's locked-write test at its largest size (a copy of several time slices) | in lock order, writer k copies w = bytes / `rewrite_bw` on a whole core for the slice s, then at min(1, cores / (k + 1)) of one: s = (T(0) − T) / D with D = Σ (max(1, (k + 1) / cores) − 1), clamped to [0, w]; the median call, the slowest and fastest runs as the interval; at least the smallest size's w where its median call ran within N·w (its writers kept their cores); needs `yield` chosen |
//! | `nodes.cores`, `nodes.memory` | the machine | `available_parallelism`, `MemTotal` |
//! | `nodes.cache.readahead` | the machine | `read_ahead_kb` of the scratch directory's block device |
//!
//! The intercepts of the MPI-IO call fits include the POSIX call beneath, which
//! the twin charges as `nodes.read_syscall`, so that is subtracted: reads, whose
//! kernel side only copies cached pages, show the library's own cost; a
//! write's also takes fresh pages and waits for the inode's lock. A time whose fit
//! comes out negative (noise around a cost near zero) is written as 0 and its
//! quality says so. Growth of the collective call with ranks, and IOR's
//! oversubscribed collectives, are stated in the notes (`[source]`).

use std::collections::BTreeMap;

use piotwin_calibration::{
    Estimate, FitError, LinearFit, find_cache_knee, fit_latency_bandwidth_robust, mean_estimate,
};
use piotwin_sim::Scenario;
use serde::{Deserialize, Serialize};

use super::LEVEL;
use super::Machine;
use super::memcpy::HugeSample;
use super::probes::{BeffRow, IorRow, IozoneRow, ProbeResults};
use crate::bench::iozone::Pass;
use crate::bench::pingpong::PingRow;

/// What a parameter's number is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    /// Seconds.
    Time,
    /// Bytes per second.
    Rate,
    /// Floating-point operations per second.
    FlopRate,
    /// Bytes.
    Size,
    /// A count (cores).
    Count,
    /// A plain number without a unit (message steps).
    Number,
}

/// One fitted parameter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Param {
    /// Scenario key path, e.g. `nodes.compute.memcpy` (`nodes` is the first group).
    pub key: String,
    /// Its unit.
    pub unit: Unit,
    /// The value (seconds, bytes/s, bytes or a count).
    pub value: f64,
    /// Lower end of the interval.
    pub low: f64,
    /// Upper end of the interval (`f64::INFINITY` when the data cannot bound it).
    pub high: f64,
    /// The probe (and the part of it) the value came from.
    pub probe: String,
    /// The fit: method, r², n, and any adjustment made.
    pub quality: String,
}

/// The outcome of fitting.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Fitted {
    /// Parameters fitted, in a fixed order.
    pub params: Vec<Param>,
    /// Parameters not fitted: key → why (their values stay the base scenario's).
    pub skipped: BTreeMap<String, String>,
    /// Further findings for `[source]`: topic → note.
    pub notes: BTreeMap<String, String>,
    /// Keys set to one of their words (not numbers): key → (word, why).
    #[serde(default)]
    pub choices: BTreeMap<String, (String, String)>,
    /// How much repeated IOR probes differed (`[run_to_run]`), where any repeated.
    #[serde(default)]
    pub run_to_run: Option<RunToRun>,
}

/// The run-to-run spread of the IOR probes: each shape (ranks, access pattern,
/// transfer size, write or read) ran several repetitions; the standard
/// deviation of ln(bandwidth) within a shape, pooled over the shapes
/// (Σ (ln x − mean)² / Σ (n − 1)).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunToRun {
    /// The pooled standard deviation of ln(bandwidth).
    pub spread: f64,
    /// Shapes with at least two repetitions.
    pub groups: usize,
    /// Repetitions over those shapes.
    pub repetitions: usize,
}

/// The run-to-run spread of repeated IOR probe rows; `None` without repeats.
pub fn run_to_run(rows: &[IorRow]) -> Option<RunToRun> {
    let mut groups: BTreeMap<(usize, &str, u64, &str), Vec<f64>> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.bw_mib_s > 0.0) {
        groups
            .entry((r.ranks, r.shape.as_str(), r.transfer, r.access.as_str()))
            .or_default()
            .push(r.bw_mib_s.ln());
    }
    let (mut ss, mut df, mut n, mut g) = (0.0, 0usize, 0usize, 0usize);
    for xs in groups.values().filter(|xs| xs.len() >= 2) {
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        ss += xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>();
        df += xs.len() - 1;
        n += xs.len();
        g += 1;
    }
    (df > 0).then(|| RunToRun {
        spread: (ss / df as f64).sqrt(),
        groups: g,
        repetitions: n,
    })
}

impl Fitted {
    /// The fitted parameter `key`, if any.
    pub fn get(&self, key: &str) -> Option<&Param> {
        self.params.iter().find(|p| p.key == key)
    }

    fn skip(&mut self, keys: &[&str], why: String) {
        for k in keys {
            self.skipped.insert(k.to_string(), why.clone());
        }
    }

    /// Adds `est` as a time, clamping a negative value or low end at 0.
    fn time(&mut self, key: &str, est: Estimate, probe: &str, quality: String) {
        let mut q = quality;
        if est.value < 0.0 {
            q.push_str(&format!("; fit gave {:e} s, written as 0", est.value));
        }
        self.params.push(Param {
            key: key.into(),
            unit: Unit::Time,
            value: est.value.max(0.0),
            low: est.ci_low.max(0.0),
            high: est.ci_high.max(0.0),
            probe: probe.into(),
            quality: q,
        });
    }

    fn rate(&mut self, key: &str, est: Estimate, probe: &str, quality: String) {
        self.params.push(Param {
            key: key.into(),
            unit: Unit::Rate,
            value: est.value,
            low: est.ci_low,
            high: est.ci_high,
            probe: probe.into(),
            quality,
        });
    }

    /// Adds a latency/bandwidth fit as two parameters.
    fn linear(
        &mut self,
        (lat_key, bw_key): (Option<&str>, Option<&str>),
        fit: &LinearFit,
        probe: &str,
    ) {
        let q = quality(fit);
        if let Some(k) = lat_key {
            self.time(k, fit.latency_s, probe, q.clone());
        }
        if let Some(k) = bw_key {
            self.rate(k, fit.bandwidth_bytes_per_s, probe, q);
        }
    }
}

/// `method=huber r2=0.9991 n=24`.
pub fn quality(fit: &LinearFit) -> String {
    let method = match fit.method {
        piotwin_calibration::FitMethod::Huber => "huber",
        piotwin_calibration::FitMethod::LeastSquares => "least-squares",
    };
    format!("method={method} r2={:.4} n={}", fit.r_squared, fit.n)
}

/// `e` moved down by `by` (a base cost taken off a measured time), its interval with it.
fn less(e: Estimate, by: f64) -> Estimate {
    Estimate {
        value: e.value - by,
        ci_low: e.ci_low - by,
        ci_high: e.ci_high - by,
        level: e.level,
    }
}

fn why(e: &FitError) -> String {
    format!("fit failed: {e}")
}

/// Fits every parameter the results allow. `base` supplies the metadata costs
/// subtracted from IOR's open and close times.
pub fn fit_all(r: &ProbeResults, base: &Scenario) -> Fitted {
    let mut f = Fitted {
        run_to_run: run_to_run(&r.ior),
        ..Fitted::default()
    };
    let m = &r.machine;
    f.params.push(Param {
        key: "nodes.cores".into(),
        unit: Unit::Count,
        value: m.cores as f64,
        low: m.cores as f64,
        high: m.cores as f64,
        probe: "machine: std::thread::available_parallelism".into(),
        quality: "read, not fitted".into(),
    });
    f.params.push(Param {
        key: "nodes.memory".into(),
        unit: Unit::Size,
        value: m.mem_total_bytes as f64,
        low: m.mem_total_bytes as f64,
        high: m.mem_total_bytes as f64,
        probe: "machine: MemTotal of /proc/meminfo".into(),
        quality: "read, not fitted".into(),
    });
    if let Some(ra) = m.readahead_bytes {
        f.params.push(Param {
            key: "nodes.cache.readahead".into(),
            unit: Unit::Size,
            value: ra as f64,
            low: ra as f64,
            high: ra as f64,
            probe: "machine: read_ahead_kb of the scratch directory's block device (sysfs)".into(),
            quality: "read, not fitted".into(),
        });
    }
    fit_memcpy(r, &mut f);
    fit_all_cores(r, &mut f);
    fit_pingpong(r, &mut f);
    fit_iozone(r, &mut f);
    fit_two_phase(r, &mut f);
    fit_polled(r, &mut f);
    fit_release_stagger(r, &mut f);
    fit_allreduce_wake(r, &mut f);
    fit_release(r, &mut f);
    fit_huge(r, &mut f);
    fit_fresh_stall(r, &mut f);
    fit_first_touch(r, &mut f);
    fit_inode_lock(r, &mut f);
    fit_memory_bus(r, &mut f);
    fit_memory_read_bus(r, &mut f);
    fit_memory_write_bus(r, &mut f);
    fit_aliased(r, &mut f);
    // what each core keeps of an aliased rate means nothing where none aliases
    if f.get("nodes.cache.aliased_bw").is_none() {
        const KEPT: &str = "nodes.cache.aliased_all_cores";
        if f.params.iter().any(|p| p.key == KEPT) {
            f.params.retain(|p| p.key != KEPT);
            f.skip(
                &[KEPT],
                "no placement aliases (no `nodes.cache.aliased_bw`)".to_string(),
            );
        }
    }
    fit_sleeping(r, &mut f);
    fit_wake_slice(r, &mut f);
    fit_shared_pointer(r, &mut f);
    fit_cache_capacity(r, &mut f);
    fit_ior(r, base, &mut f);
    f
}

/// A compute rate from timed kernel runs: time = latency + flops / rate (Huber).
/// No samples (probes of an older calibration) leave the key to the base.
fn fit_rate(f: &mut Fitted, samples: &[super::memcpy::FlopSample], key: &str, probe: &str) {
    if samples.is_empty() {
        f.skip(&[key], "not probed (no samples)".to_string());
        return;
    }
    let points: Vec<(f64, f64)> = samples.iter().map(|s| (s.flops, s.seconds)).collect();
    match fit_latency_bandwidth_robust(&points, LEVEL) {
        Ok(fit) => f.params.push(Param {
            key: key.into(),
            unit: Unit::FlopRate,
            value: fit.bandwidth_bytes_per_s.value,
            low: fit.bandwidth_bytes_per_s.ci_low,
            high: fit.bandwidth_bytes_per_s.ci_high,
            probe: probe.into(),
            quality: quality(&fit),
        }),
        Err(e) => f.skip(&[key], why(&e)),
    }
}

fn fit_memcpy(r: &ProbeResults, f: &mut Fitted) {
    fit_in_process(
        r,
        f,
        &r.memcpy,
        "nodes.compute.memcpy",
        "memcpy: in-process copies over sizes",
    );
    fit_sized(
        f,
        &r.delete,
        (Some("metadata.delete"), Some("metadata.delete_bw")),
        "delete: unlink of synced, cached files over sizes",
    );
    let (fills, checks) = pattern_fills_and_checks(r);
    fit_in_process(
        r,
        f,
        &fills,
        "nodes.compute.pattern",
        "pattern: IOR's data pattern filled in process over sizes",
    );
    fit_in_process(
        r,
        f,
        &checks,
        "nodes.compute.pattern_check",
        "pattern: IOR's data pattern checked in process over sizes",
    );
    fit_in_cache(r, f, &fills, &checks);
    fit_rate(
        f,
        &r.busy_work,
        "nodes.compute.flops",
        &format!(
            "busy-work: MADbench2's multiply-add loop (SBLOCKSIZE {}) in process over loop counts",
            super::memcpy::BUSY_WORK_BLOCK
        ),
    );
    fit_rate(
        f,
        &r.bt,
        "nodes.compute.bt",
        "bt: NPB BT's step on rank 0's cells over grids and rank counts, in process, by counted flops",
    );
    fit_rate(
        f,
        &r.fft,
        "nodes.compute.fft",
        "fft: FTIO's FFT kernel (gather, rustfft, scatter; 4 bands) in process over Mini-Square sides",
    );
    const ERROR_NORM: &str = "nodes.compute.error_norm";
    match r.error_norm.is_empty() {
        true => f.skip(&[ERROR_NORM], "not probed (no samples)".to_string()),
        false => fit_sized(
            f,
            &r.error_norm,
            (None, Some(ERROR_NORM)),
            "error_norm: BTIO's verification of a dump (its bytes as doubles, NPB's error norm against BT's exact solution) on rank 0's cells over grids and rank counts, in process",
        ),
    }
    const SIGNAL: &str = "nodes.compute.signal";
    match r.signal.is_empty() {
        true => f.skip(&[SIGNAL], "not probed (no samples)".to_string()),
        false => fit_sized(
            f,
            &r.signal,
            (None, Some(SIGNAL)),
            "signal: FTIO's input (the closed-form signal of one band) computed in process over Mini-Square sides",
        ),
    }
    let statements: Vec<(f64, f64)> = r
        .fortran
        .iter()
        .map(|s| (s.statements as f64, s.seconds))
        .collect();
    const STATEMENT: &str = "nodes.fortran_statement";
    match fit_latency_bandwidth_robust(&statements, LEVEL) {
        // The fit's "bandwidth" is statements per second: its inverse is the cost.
        Ok(fit) => {
            let per = |rate: f64| {
                if rate > 0.0 {
                    1.0 / rate
                } else {
                    f64::INFINITY
                }
            };
            let b = &fit.bandwidth_bytes_per_s;
            f.params.push(Param {
                key: STATEMENT.into(),
                unit: Unit::Time,
                value: per(b.value),
                low: per(b.ci_high),
                high: per(b.ci_low),
                probe: format!(
                    "fortran: WRITE(REC=) statements of {}-byte records (BTIO fortran's) in process over statement counts",
                    super::memcpy::FORTRAN_PROBE_RECL
                ),
                quality: quality(&fit),
            });
        }
        Err(e) => f.skip(&[STATEMENT], why(&e)),
    }
}

/// `nodes.compute.<kernel>_all_cores` from the all-cores probe: per round,
/// the threads' aggregate rate over the cores times the kernel's rate alone
/// right before and after ([`super::memcpy::KernelRounds::kept`]); the median
/// round, the lowest and highest as the interval.
fn fit_all_cores(r: &ProbeResults, f: &mut Fitted) {
    const KERNELS: [(&str, &str, &str); 7] = [
        (
            "busy_work",
            "nodes.compute.flops_all_cores",
            "MADbench2's busy-work loop",
        ),
        ("bt", "nodes.compute.bt_all_cores", "BT's step"),
        (
            "error_norm",
            "nodes.compute.error_norm_all_cores",
            "BTIO's error norm",
        ),
        ("fft", "nodes.compute.fft_all_cores", "FTIO's FFT kernel"),
        ("signal", "nodes.compute.signal_all_cores", "FTIO's input"),
        (
            "pattern",
            "nodes.compute.pattern_all_cores",
            "IOR's data pattern filled into a transfer's buffer",
        ),
        (
            "aliased_read",
            "nodes.cache.aliased_all_cores",
            "cached reads into a buffer 16 B past a page",
        ),
    ];
    let cores = r.machine.cores.max(1);
    for (kernel, key, what) in KERNELS {
        let rounds = r
            .all_cores
            .as_ref()
            .and_then(|t| Some((t.threads, t.kernels.iter().find(|k| k.kernel == kernel)?)));
        let Some((threads, rounds)) = rounds else {
            f.skip(&[key], "not probed (no all-cores samples)".to_string());
            continue;
        };
        let mut kept = rounds.kept(cores);
        if kept.is_empty() {
            f.skip(&[key], "not probed (no complete round)".to_string());
            continue;
        }
        kept.sort_by(f64::total_cmp);
        let e = median_and_range(&kept);
        f.params.push(Param {
            key: key.into(),
            unit: Unit::Number,
            value: e.value,
            low: e.ci_low,
            high: e.ci_high,
            probe: format!(
                "all cores: {what}, {} units a run, on {threads} threads at once on {cores} cores against one thread alone, in turn",
                rounds.reps
            ),
            quality: format!("median of {} rounds, the lowest and highest as the interval", kept.len()),
        });
    }
}

/// A latency and a bandwidth (either key may be left out) from timed work
/// over sizes, every size (Huber).
fn fit_sized(
    f: &mut Fitted,
    samples: &[super::memcpy::CopySample],
    keys: (Option<&str>, Option<&str>),
    probe: &str,
) {
    let points: Vec<(f64, f64)> = samples
        .iter()
        .map(|s| (s.bytes as f64, s.seconds))
        .collect();
    match fit_latency_bandwidth_robust(&points, LEVEL) {
        Ok(fit) => f.linear(keys, &fit, probe),
        Err(e) => {
            let named: Vec<&str> = [keys.0, keys.1].into_iter().flatten().collect();
            f.skip(&named, why(&e))
        }
    }
}

/// The pattern probe's fills and checks. Probes files from before the two were
/// stored apart hold them in one list, a fill then a check per repetition.
fn pattern_fills_and_checks(
    r: &ProbeResults,
) -> (
    Vec<super::memcpy::CopySample>,
    Vec<super::memcpy::CopySample>,
) {
    if !r.pattern_check.is_empty() {
        return (r.pattern.clone(), r.pattern_check.clone());
    }
    r.pattern
        .chunks(2)
        .fold((Vec::new(), Vec::new()), |(mut fills, mut checks), pair| {
            fills.push(pair[0]);
            checks.extend(pair.get(1));
            (fills, checks)
        })
}

/// `nodes.compute.private_cache` (the machine's) and the pattern's rates over
/// buffers that fit in it, `pattern_cached` and `pattern_check_cached`: one
/// over the mean time per byte of the probe's sizes up to the private cache
/// (Student t). Not fitted where the machine's private cache is unknown or no
/// probe size fits in it.
fn fit_in_cache(
    r: &ProbeResults,
    f: &mut Fitted,
    fills: &[super::memcpy::CopySample],
    checks: &[super::memcpy::CopySample],
) {
    const KEYS: [&str; 3] = [
        "nodes.compute.private_cache",
        "nodes.compute.pattern_cached",
        "nodes.compute.pattern_check_cached",
    ];
    let Some(cache) = r.machine.private_cache_bytes else {
        f.skip(
            &KEYS,
            "the machine's private cache is unknown (sysfs unreadable, or probes from before it was recorded)".into(),
        );
        return;
    };
    let per_byte = |samples: &[super::memcpy::CopySample]| -> Vec<f64> {
        samples
            .iter()
            .filter(|s| s.bytes <= cache && s.bytes > 0 && s.seconds > 0.0)
            .map(|s| s.seconds / s.bytes as f64)
            .collect()
    };
    let (fill, check) = (per_byte(fills), per_byte(checks));
    let n = fill.len().min(check.len());
    let (Ok(fill), Ok(check)) = (mean_estimate(&fill, LEVEL), mean_estimate(&check, LEVEL)) else {
        f.skip(
            &KEYS,
            format!("fewer than 2 pattern probe samples of at most the private cache ({cache} B)"),
        );
        return;
    };
    f.params.push(Param {
        key: KEYS[0].into(),
        unit: Unit::Size,
        value: cache as f64,
        low: cache as f64,
        high: cache as f64,
        probe: "machine: the largest cache of cpu0 no other cpu shares (sysfs)".into(),
        quality: "read, not fitted".into(),
    });
    for (key, e, what) in [(KEYS[1], fill, "filled"), (KEYS[2], check, "checked")] {
        f.rate(
            key,
            e.reciprocal(),
            &format!(
                "pattern: IOR's data pattern {what} in process, sizes up to the private cache"
            ),
            format!("method=mean n={n} of the time per byte over the sizes up to {cache} B"),
        );
    }
}

/// A bandwidth from timed in-process work over sizes (beyond the CPU cache).
fn fit_in_process(
    r: &ProbeResults,
    f: &mut Fitted,
    samples: &[super::memcpy::CopySample],
    key: &str,
    probe: &str,
) {
    let samples: Vec<(f64, f64)> = samples
        .iter()
        .map(|s| (s.bytes as f64, s.seconds))
        .collect();
    let samples = beyond_cpu_cache(samples, r.machine.cpu_cache_bytes, |s| s.0 as u64);
    match fit_latency_bandwidth_robust(&samples, LEVEL) {
        Ok(fit) => f.linear((None, Some(key)), &fit, probe),
        Err(e) => f.skip(&[key], why(&e)),
    }
}

fn fit_pingpong(r: &ProbeResults, f: &mut Fitted) {
    const KEYS: [&str; 2] = ["nodes.nic_latency", "nodes.nic_bw"];
    const MESSAGE: &str = "nodes.message_bw";
    // An iteration of b_eff's Sendrecv method is two exchanges, each moving the
    // message both ways at once: one exchange costs one message time.
    let pairs: Vec<(f64, f64)> = r
        .beff
        .iter()
        .filter(|p| p.method == "Sndrcv" && p.ranks == 2)
        .map(|p| (p.bytes as f64, p.seconds / (2 * p.loops.max(1)) as f64))
        .collect();
    const PROBE: &str =
        "b_eff: MPI_Sendrecv loops of every pattern between 2 ranks over its 21 message sizes";
    match fit_latency_bandwidth_robust(&pairs, LEVEL) {
        Ok(fit) => {
            f.linear((Some(KEYS[0]), Some(KEYS[1])), &fit, PROBE);
            // calibration's ranks share one node: its messages are the node's
            f.linear(
                (None, Some(MESSAGE)),
                &fit,
                &format!("{PROBE}, both ranks on this node"),
            );
        }
        Err(e) => f.skip(&[KEYS[0], KEYS[1], MESSAGE], why(&e)),
    }
    fit_oversubscribed(r, f);
    fit_eager_limit(r, f);
}

/// `nodes.eager_limit`: b_eff's `MPI_Sendrecv` exchanges at more ranks than
/// cores over its message sizes. Up to MPI's eager limit an exchange waits for
/// one wake-up of the partner; above it the rendezvous waits for two, so the
/// exchange time steps up. The limit is the largest size before the step: the
/// largest size whose median exchange (over patterns and repetitions) stays
/// below 1.5 × the median at 1 KiB and less, every larger size being above.
fn fit_eager_limit(r: &ProbeResults, f: &mut Fitted) {
    const KEY: &str = "nodes.eager_limit";
    let cores = r.machine.cores as u64;
    let sndrcv = |p: &&BeffRow| p.method == "Sndrcv" && p.ranks > cores;
    let Some(ranks) = r.beff.iter().filter(sndrcv).map(|p| p.ranks).max() else {
        f.skip(
            &[KEY],
            format!("no b_eff run at more ranks than cores (give --ranks above {cores})"),
        );
        return;
    };
    let mut by_size: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
    for p in r.beff.iter().filter(sndrcv).filter(|p| p.ranks == ranks) {
        by_size
            .entry(p.bytes)
            .or_default()
            .push(p.seconds / (2 * p.loops.max(1)) as f64);
    }
    let medians: Vec<(u64, f64)> = by_size
        .into_iter()
        .filter_map(|(b, mut v)| Some((b, crate::report::median(&mut v)?)))
        .collect();
    let mut small: Vec<f64> = medians
        .iter()
        .filter(|m| m.0 <= 1024)
        .map(|m| m.1)
        .collect();
    let Some(&(largest, _)) = medians.last() else {
        f.skip(&[KEY], "no b_eff MPI_Sendrecv rows".into());
        return;
    };
    let Some(base) = crate::report::median(&mut small) else {
        f.skip(
            &[KEY],
            "no b_eff exchanges of 1 KiB or less to compare with".into(),
        );
        return;
    };
    let stepped = |m: &(u64, f64)| m.1 >= 1.5 * base;
    // the first size from which every exchange is stepped up
    let first = medians
        .iter()
        .rposition(|m| !stepped(m))
        .map_or(0, |i| i + 1);
    let table: Vec<String> = medians
        .iter()
        .map(|&(b, t)| format!("{b} B {t:.3e} s"))
        .collect();
    let probe = format!(
        "b_eff: MPI_Sendrecv exchanges at {ranks} ranks on {cores} cores over message sizes"
    );
    match (first, medians.get(first)) {
        (0, _) => f.skip(
            &[KEY],
            format!("every exchange at {ranks} ranks is 1.5 x the 1 KiB one (median {base:.3e} s): no eager sizes"),
        ),
        (_, None) => f.skip(
            &[KEY],
            format!(
                "no step in the exchange time up to {largest} B at {ranks} ranks (median {base:.3e} s at 1 KiB and less): the eager limit is above what the probe sent"
            ),
        ),
        (i, Some(&(above, _))) => {
            let below = medians[i - 1].0;
            f.params.push(Param {
                key: KEY.into(),
                unit: Unit::Size,
                value: below as f64,
                low: below as f64,
                high: (above - 1) as f64,
                probe,
                quality: format!(
                    "largest size below 1.5 x the median exchange at 1 KiB and less ({base:.3e} s), every larger size above; medians: {}",
                    table.join(", ")
                ),
            });
        }
    }
}

/// `nodes.oversubscribed_wakeup`: b_eff's `MPI_Sendrecv` exchanges of 1 byte, every
/// pattern, at more ranks than cores less the same at 2 ranks. Each exchange is
/// one message step to a rank that may be descheduled, which is what the twin
/// charges the wake-up on; the mean over patterns is what it charges on average.
fn fit_oversubscribed(r: &ProbeResults, f: &mut Fitted) {
    let key = "nodes.oversubscribed_wakeup";
    let cores = r.machine.cores as u64;
    let exchanges = |pred: &dyn Fn(u64) -> bool| -> (Vec<f64>, Option<u64>) {
        let rows: Vec<_> = r
            .beff
            .iter()
            .filter(|p| p.method == "Sndrcv" && p.bytes == 1 && pred(p.ranks))
            .collect();
        let ranks = rows.iter().map(|p| p.ranks).max();
        let v = rows
            .iter()
            .filter(|p| Some(p.ranks) == ranks)
            .map(|p| p.seconds / (2 * p.loops.max(1)) as f64)
            .collect();
        (v, ranks)
    };
    let (under, under_ranks) = exchanges(&|k| k <= cores);
    let (over, over_ranks) = exchanges(&|k| k > cores);
    let (Some(nu), Some(no)) = (under_ranks, over_ranks) else {
        f.skip(
            &[key],
            format!("no b_eff runs both at <= {cores} ranks and at more ranks than cores (give --ranks above {cores})"),
        );
        return;
    };
    match (mean_estimate(&under, LEVEL), mean_estimate(&over, LEVEL)) {
        (Ok(u), Ok(o)) => {
            let half = ((u.ci_high - u.value).powi(2) + (o.ci_high - o.value).powi(2)).sqrt();
            let d = o.value - u.value;
            f.time(
                key,
                Estimate {
                    value: d,
                    ci_low: d - half,
                    ci_high: d + half,
                    level: LEVEL,
                },
                &format!(
                    "b_eff: MPI_Sendrecv exchanges of 1 byte at {no} ranks against {nu} ranks on {cores} cores"
                ),
                format!(
                    "method=difference-of-means n={}+{} exchange {:.3e} s at {no} ranks, {:.3e} s at {nu}; half-widths added in quadrature",
                    over.len(),
                    under.len(),
                    o.value,
                    u.value
                ),
            );
        }
        (Err(e), _) | (_, Err(e)) => f.skip(&[key], why(&e)),
    }
}

/// `nodes.oversubscribed_unpack_bw` (writes) and `nodes.oversubscribed_pack_bw`
/// (reads): pingpong's two-phase test at more ranks than cores. ROMIO's one
/// aggregator of the node receives (writes) or sends (reads) the other ranks'
/// pieces, (N − 1)/N of a call's bytes, through derived datatypes; the call
/// also copies all its bytes through the aggregator's page cache, which the twin
/// charges itself (`nodes.cache.write_bw`, `read_bw`, fitted before), so that is
/// subtracted. The slope of what remains over the exchanged bytes is the rate;
/// the intercept (the call's synchronisation steps) is the twin's wake-ups'.
fn fit_two_phase(r: &ProbeResults, f: &mut Fitted) {
    let cores = r.machine.cores as u64;
    for (test, key, cache_key) in [
        (
            "twophase_write",
            "nodes.oversubscribed_unpack_bw",
            "nodes.cache.write_bw",
        ),
        (
            "twophase_read",
            "nodes.oversubscribed_pack_bw",
            "nodes.cache.read_bw",
        ),
    ] {
        let rows: Vec<&PingRow> = r
            .pingpong
            .iter()
            .filter(|p| p.test == test && p.ranks > cores)
            .collect();
        let Some(ranks) = rows.iter().map(|p| p.ranks).max() else {
            f.skip(
                &[key],
                format!("no pingpong --two-phase run at more ranks than cores ({cores}): give --ranks above {cores}"),
            );
            continue;
        };
        let cache = f.get(cache_key).map(|p| p.value);
        let share = (ranks - 1) as f64 / ranks as f64;
        let points: Vec<(f64, f64)> = rows
            .iter()
            .filter(|p| p.ranks == ranks)
            .map(|p| {
                let copy = cache.map_or(0.0, |bw| p.bytes as f64 / bw);
                (p.bytes as f64 * share, p.seconds - copy)
            })
            .collect();
        match fit_latency_bandwidth_robust(&points, LEVEL) {
            Ok(fit) => {
                let copy = match cache {
                    Some(bw) => format!("less the page-cache copy at {cache_key} {bw:.4e} B/s"),
                    None => format!("{cache_key} not fitted: the page-cache copy not subtracted"),
                };
                f.rate(
                    key,
                    fit.bandwidth_bytes_per_s,
                    &format!(
                        "pingpong --two-phase: {test} calls at {ranks} ranks on {cores} cores over call sizes, time over the bytes reaching or leaving the one aggregator"
                    ),
                    format!(
                        "{}; intercept {:.3e} s; call time {copy}",
                        quality(&fit),
                        fit.latency_s.value
                    ),
                );
            }
            Err(e) => f.skip(&[key], why(&e)),
        }
    }
}

/// `nodes.waiting_ranks` and `nodes.polled_wakeup` from pingpong's polled test
/// at more ranks than cores (`cores` ranks copy and synchronise while the
/// others wait). Whether waiting ranks take their share of the cores shows in
/// the largest copy (small ones finish within a time slice): at the in-process
/// `memcpy` rate alone it would take `bytes / memcpy`; sharing the cores with
/// every rank, N / cores times that. A step less a copy is the barrier's
/// ceil(log2 cores) message steps; their mean over sizes and runs is the
/// wake-up of a step while the others poll (a mean over placements: stepping
/// ranks on one core wait a time slice at each barrier, on cores of their own
/// they do not; the probe's episodes each follow a sleep in I/O, after which
/// the kernel places the ranks again).
fn fit_polled(r: &ProbeResults, f: &mut Fitted) {
    const KEYS: [&str; 1] = ["nodes.polled_wakeup"];
    let cores = r.machine.cores as u64;
    let rows = |test: &str| -> Vec<&PingRow> {
        r.pingpong
            .iter()
            .filter(|p| p.test == test && p.ranks > cores && p.active > 0 && p.active <= cores)
            .collect()
    };
    let (copies, steps) = (rows("polled_copy"), rows("polled_step"));
    let Some(memcpy) = f.get("nodes.compute.memcpy").map(|p| p.value) else {
        f.skip(&KEYS, "nodes.compute.memcpy not fitted".into());
        return;
    };
    let Some(largest) = copies.iter().map(|p| p.bytes).max() else {
        f.skip(
            &KEYS,
            format!("no pingpong --polled run at more ranks than cores ({cores}): give --ranks above {cores}"),
        );
        return;
    };
    let ranks = copies[0].ranks;
    let shares: Vec<f64> = copies
        .iter()
        .filter(|p| p.bytes == largest)
        .map(|p| p.bytes as f64 / memcpy / p.seconds)
        .collect();
    let share = shares.iter().sum::<f64>() / shares.len() as f64;
    let polled_share = cores as f64 / ranks as f64;
    let poll = share < (1.0 + polled_share) / 2.0;
    let probe = format!(
        "pingpong --polled: {} of {ranks} ranks on {cores} cores copy, then copy and meet in a barrier, while the others wait",
        copies[0].active
    );
    let found = format!(
        "{probe}: the {largest}-byte copies ran at {share:.2} of a core at nodes.compute.memcpy ({memcpy:.4e} B/s; mean of {}), against {polled_share:.2} with every rank sharing the cores",
        shares.len()
    );
    let word = if poll { "poll" } else { "idle" };
    f.choices
        .insert("nodes.waiting_ranks".into(), (word.into(), found.clone()));
    if !poll {
        f.skip(&KEYS, format!("waiting ranks idle: {found}"));
        return;
    }
    // Each step row after the copy row of its size and run.
    let extras: Vec<f64> = copies
        .iter()
        .zip(&steps)
        .filter(|(c, s)| c.bytes == s.bytes && c.active == s.active)
        .map(|(c, s)| (s.seconds - c.seconds) / piotwin_sim::collective_steps(s.active as usize))
        .collect();
    match mean_estimate(&extras, LEVEL) {
        Ok(est) => f.time(
            KEYS[0],
            est,
            &probe,
            format!(
                "method=mean n={} of (step - copy) / barrier steps over sizes and runs",
                extras.len()
            ),
        ),
        Err(e) => f.skip(&KEYS, why(&e)),
    }
}

/// `nodes.allreduce_wake` from pingpong's `barrier` and `allreduce` rows at
/// more ranks than cores, each all-reduce row with the barrier row of its
/// job: the twin takes both over the same steps, a barrier's each a message
/// latency and a wake-up, an all-reduce's the latency and this part of the
/// wake-up, so the part is the ratio of the two less their latencies
/// (`nic_latency` a step on one node). The median job, the lowest and highest as the
/// interval (the kernel places a job's ranks once; jobs differ).
fn fit_allreduce_wake(r: &ProbeResults, f: &mut Fitted) {
    const KEY: &str = "nodes.allreduce_wake";
    let cores = r.machine.cores as u64;
    let latency = f.get("nodes.nic_latency").map_or(0.0, |p| p.value);
    let mut barrier: Option<&PingRow> = None;
    let mut parts = Vec::new();
    for p in r.pingpong.iter().filter(|p| p.ranks > cores) {
        match p.test.as_str() {
            "barrier" => barrier = Some(p),
            "allreduce" => {
                if let Some(b) = barrier.take().filter(|b| b.ranks == p.ranks) {
                    let base = piotwin_sim::collective_steps(p.ranks as usize) * latency;
                    if b.seconds > base {
                        parts.push(((p.seconds - base) / (b.seconds - base)).max(0.0));
                    }
                }
            }
            _ => {}
        }
    }
    if parts.is_empty() {
        f.skip(
            &[KEY],
            format!(
                "no pingpong barriers and all-reduces at more ranks than cores ({cores}) in one job"
            ),
        );
        return;
    }
    parts.sort_by(f64::total_cmp);
    let e = median_and_range(&parts);
    f.params.push(Param {
        key: KEY.into(),
        unit: Unit::Number,
        value: e.value,
        low: e.ci_low,
        high: e.ci_high,
        probe: format!(
            "pingpong: barriers and all-reduces of one value at more ranks than cores ({cores}), in {} jobs",
            parts.len()
        ),
        quality: format!(
            "median of {} jobs' (all-reduce - steps x nic_latency) / (barrier - the same), the lowest and highest as the interval",
            parts.len()
        ),
    });
}

/// `nodes.release_stagger` from pingpong's `barrier_exit` rows at more ranks
/// than cores: in each run, the mean time after the first rank out at which
/// the ranks beyond the first `cores` left its barriers, less that of the
/// first `cores` (the first one's is 0); the mean over runs (Student t). The
/// twin lets the first `cores` ranks leave that much before the others, so
/// its own rows give the key back. Only where waiting ranks poll.
fn fit_release_stagger(r: &ProbeResults, f: &mut Fitted) {
    const KEY: &str = "nodes.release_stagger";
    let cores = r.machine.cores as u64;
    // A run's rows come together, places 1 to ranks - 1.
    let mut runs: Vec<Vec<&PingRow>> = Vec::new();
    for p in r
        .pingpong
        .iter()
        .filter(|p| p.test == "barrier_exit" && p.ranks > cores)
    {
        match runs.last_mut() {
            Some(run) if p.active > 1 => run.push(p),
            _ => runs.push(vec![p]),
        }
    }
    runs.retain(|run| run.len() as u64 + 1 == run[0].ranks);
    if runs.is_empty() {
        f.skip(
            &[KEY],
            format!("no pingpong barrier exits at more ranks than cores ({cores}): give --ranks above {cores}"),
        );
        return;
    }
    if f.choices
        .get("nodes.waiting_ranks")
        .is_none_or(|c| c.0 != "poll")
    {
        f.skip(&[KEY], "waiting ranks not chosen to poll".into());
        return;
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let staggers: Vec<f64> = runs
        .iter()
        .map(|run| {
            let after: Vec<f64> = std::iter::once(0.0)
                .chain(run.iter().map(|p| p.seconds))
                .collect();
            let (first, rest) = after.split_at(cores as usize);
            mean(rest) - mean(first)
        })
        .collect();
    match mean_estimate(&staggers, LEVEL) {
        Ok(est) => f.time(
            KEY,
            est,
            &format!(
                "pingpong: every rank's exit from barriers at {} ranks on {cores} cores",
                runs[0][0].ranks
            ),
            format!(
                "method=mean n={} runs of (mean exit after the first of the ranks beyond the first {cores} - that of the first {cores})",
                staggers.len()
            ),
        ),
        Err(e) => f.skip(&[KEY], why(&e)),
    }
}

/// `mpiio.shared_pointer`: the per-call intercept of MPI-IO calls through the
/// shared file pointer less that of the same calls at explicit offsets.
fn fit_shared_pointer(r: &ProbeResults, f: &mut Fitted) {
    const KEY: &str = "mpiio.shared_pointer";
    let intercept = |shared: bool| {
        let rows: Vec<&IozoneRow> = r
            .iozone
            .iter()
            .filter(|run| run.mpiio_shared == Some(shared))
            .flat_map(|run| &run.rows)
            .collect();
        fit_latency_bandwidth_robust(&per_record(&rows), LEVEL)
    };
    match (intercept(true), intercept(false)) {
        (Ok(sh), Ok(at)) => {
            let (a, b) = (sh.latency_s, at.latency_s);
            let half = ((a.ci_high - a.value).powi(2) + (b.ci_high - b.value).powi(2)).sqrt();
            let d = a.value - b.value;
            f.time(
                KEY,
                Estimate {
                    value: d,
                    ci_low: d - half,
                    ci_high: d + half,
                    level: LEVEL,
                },
                "iozone --api MPIIO: per-call time through the shared file pointer less at explicit offsets",
                format!(
                    "method=huber difference of intercepts {:.3e} s - {:.3e} s (n={}, {}); half-widths added in quadrature",
                    a.value, b.value, sh.n, at.n
                ),
            );
        }
        (Err(e), _) | (_, Err(e)) => f.skip(&[KEY], why(&e)),
    }
}

/// `nodes.cache.release_time`, `nodes.cache.fresh_bw` and `nodes.cache.warm`.
///
/// * `fresh_bw` from the huge-page probe where its huge requests took fresh
///   memory (bytes over their time less the smallest requests'; no
///   interval): after its settle they take nothing else, while the release
///   probe's 1 MiB rewrites first find the free memory in blocks too small
///   to be reported. Else from the release probe.
/// * `warm` is that unreported free memory when calibration started, where
///   the machine recorded it; else from the release probe.
/// * `release_time` from the release probe: rewrites a wait after a delete,
///   at two sizes.
///
/// A key nothing measured keeps the base's value (memory backed for ever,
/// no fresh cost).
fn fit_release(r: &ProbeResults, f: &mut Fitted) {
    const KEYS: [&str; 3] = [
        "nodes.cache.release_time",
        "nodes.cache.fresh_bw",
        "nodes.cache.warm",
    ];
    let huge = fresh_from_huge(r);
    let unreported = r.machine.unreported_free_bytes.map(|bytes| Param {
        key: KEYS[2].into(),
        unit: Unit::Size,
        value: bytes as f64,
        low: bytes as f64,
        high: bytes as f64,
        probe: "the machine: free memory in blocks below free page reporting's order (/proc/buddyinfo) when calibration started".into(),
        quality: "no interval".into(),
    });
    let rewrites: Vec<piotwin_calibration::Rewrite> = r
        .release
        .iter()
        .map(|s| piotwin_calibration::Rewrite {
            bytes: s.bytes as f64,
            wait_s: s.wait_s,
            seconds: s.seconds,
        })
        .collect();
    let fit = match r.release.is_empty() {
        true => Err("not probed (no samples)".to_string()),
        false => piotwin_calibration::fit_release(&rewrites, LEVEL).map_err(|e| why(&e)),
    };
    match fit {
        Ok(fit) => {
            let probe = "release: page-cache rewrites a wait after a delete, at two sizes";
            let ends: Vec<String> = fit
                .ends
                .iter()
                .map(|(b, w, fr)| format!("{b:.0} bytes {w:.4} s right after the delete, {fr:.4} s after the longest wait"))
                .collect();
            let ends = ends.join("; ");
            f.time(
                KEYS[0],
                fit.time,
                probe,
                match fit.n {
                    0 | 1 => format!(
                        "no rewrite found the memory partly handed back: the midpoint of the latest wait + rewrite/2 that found it backed ({:.3} s) and the earliest that found it gone ({:.3} s), the interval those two; {ends}",
                        fit.time.ci_low, fit.time.ci_high
                    ),
                    n => format!(
                        "method=mean n={n} of (wait + rewrite/2) / (1 - share still backed); {ends}"
                    ),
                },
            );
            match huge {
                Some(p) => f.params.push(p),
                None => f.rate(
                    KEYS[1],
                    fit.fresh_rate,
                    probe,
                    format!("difference of the sizes' bytes over that of their (longest − shortest wait) times; interval: each time off by the spread of the repeated quickest rewrites; {ends}"),
                ),
            }
            f.params.push(unreported.unwrap_or_else(|| Param {
                key: KEYS[2].into(),
                unit: Unit::Size,
                value: fit.warm,
                low: fit.warm,
                high: fit.warm,
                probe: probe.into(),
                quality: format!(
                    "smaller size less its fresh time at the fitted rate; no interval; {ends}"
                ),
            }));
        }
        Err(failed) => {
            f.skip(&KEYS[..1], failed.clone());
            match huge {
                Some(p) => f.params.push(p),
                None => f.skip(
                    &KEYS[1..2],
                    format!("{failed}; the huge-page probe shows no fresh memory either"),
                ),
            }
            match unreported {
                Some(p) => f.params.push(p),
                None => f.skip(&KEYS[2..], failed),
            }
        }
    }
}

/// The huge-page probe's writes, one per request size (smallest first), each
/// taking the median time of its rounds.
fn huge_medians(r: &ProbeResults) -> Vec<HugeSample> {
    let mut sizes: Vec<(u64, u64)> = r.huge.iter().map(|s| (s.request, s.bytes)).collect();
    sizes.sort_unstable();
    sizes.dedup();
    sizes
        .into_iter()
        .filter_map(|(request, bytes)| {
            let mut times: Vec<f64> = r
                .huge
                .iter()
                .filter(|s| s.request == request && s.bytes == bytes)
                .map(|s| s.seconds)
                .collect();
            Some(HugeSample {
                request,
                bytes,
                seconds: crate::report::median(&mut times)?,
            })
        })
        .collect()
}

/// `nodes.cache.fresh_bw` from the huge-page probe, where its largest
/// requests took at least twice the time of its quickest (their medians;
/// the quickest found the warm floor, normally the smallest requests, but on
/// 2026-12-07 at 17:40 UTC 1 MiB requests took 0.44-0.67 s in all three
/// rounds and 1920 KiB 0.08-0.14 s): in each round, the bytes over the
/// difference of their times; the median of the rounds, their range the
/// interval (none from one round).
fn fresh_from_huge(r: &ProbeResults) -> Option<Param> {
    let sizes = huge_medians(r);
    let huge = sizes.last()?;
    let small = sizes
        .iter()
        .min_by(|a, b| a.seconds.total_cmp(&b.seconds))?;
    if huge.seconds < 2.0 * small.seconds {
        return None;
    }
    let times = |of: &HugeSample| {
        r.huge
            .iter()
            .filter(|s| s.request == of.request && s.bytes == of.bytes)
            .map(|s| s.seconds)
            .collect::<Vec<f64>>()
    };
    let mut rates: Vec<f64> = times(small)
        .into_iter()
        .zip(times(huge))
        .map(|(s, h)| small.bytes as f64 / (h - s))
        .filter(|rate| rate.is_finite() && *rate > 0.0)
        .collect();
    let rate = crate::report::median(&mut rates)?;
    let (low, high) = rates.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &x| {
        (lo.min(x), hi.max(x))
    });
    Some(Param {
        key: "nodes.cache.fresh_bw".into(),
        unit: Unit::Rate,
        value: rate,
        low,
        high,
        probe: "huge: settled writes in requests of several sizes".into(),
        quality: match rates.len() {
            1 => format!(
                "bytes over the {} B requests' time less the {} B requests' ({:.4} - {:.4} s); no interval",
                huge.request, small.request, huge.seconds, small.seconds
            ),
            n => format!(
                "median over {n} rounds of the bytes over the {} B requests' time less the {} B requests' (medians {:.4} - {:.4} s); interval: the rounds' range",
                huge.request, small.request, huge.seconds, small.seconds
            ),
        },
    })
}

/// `nodes.cache.huge_from` from the huge-page probe (each size's median time
/// over the rounds): the smallest request
/// size whose settled write took at least twice as long as the quickest
/// (which found the warm floor; normally the smallest requests', but one
/// slow write of small requests is an outlier, not a huge page: at 10:25 UTC
/// on 2026-11-29 1 MiB requests took 0.389 s, 1920 KiB 0.106 s and 2 MiB
/// 0.490 s), every larger one too; the interval runs from just above the
/// next smaller size.
///
/// Where even the quickest write ran at under half the cache's write rate
/// (`nodes.cache.write_bw`), the warm floor was used up before the probe
/// (the probes before it keep files cached) and every size took fresh
/// memory; the huge sizes are then those whose write took all its memory
/// fresh: at least 0.9 × (bytes / `write_bw` + bytes / `fresh_bw`).
fn fit_huge(r: &ProbeResults, f: &mut Fitted) {
    const KEY: &str = "nodes.cache.huge_from";
    let samples = huge_medians(r);
    let Some(first) = samples.first().copied() else {
        f.skip(&[KEY], "not probed (no samples)".to_string());
        return;
    };
    let probe = format!(
        "huge: settled writes of {} bytes in requests of several sizes",
        first.bytes
    );
    let table: Vec<String> = samples
        .iter()
        .map(|s| format!("{} B requests {:.4} s", s.request, s.seconds))
        .collect();
    let quickest = samples
        .iter()
        .copied()
        .min_by(|a, b| a.seconds.total_cmp(&b.seconds))
        .expect("samples");
    let time_at = |key: &str| f.get(key).map(|p| first.bytes as f64 / p.value);
    let warm = time_at("nodes.cache.write_bw").filter(|&t| quickest.seconds >= 2.0 * t);
    let (threshold, rule) = match (warm, time_at("nodes.cache.fresh_bw")) {
        (None, _) => (
            2.0 * quickest.seconds,
            format!(
                "smallest request size taking 2 x the time of the quickest ({} B requests), every larger one too",
                quickest.request
            ),
        ),
        (Some(warm), Some(fresh)) => (
            0.9 * (warm + fresh),
            format!(
                "the quickest requests ran at under half the cache's write rate ({:.4} s against {warm:.4} s): the warm floor was used up; smallest request size taking all its memory fresh (0.9 x ({warm:.4} + {fresh:.4}) s at write_bw and fresh_bw), every larger one too",
                quickest.seconds
            ),
        ),
        (Some(warm), None) => {
            f.skip(
                &[KEY],
                format!(
                    "the quickest requests ran at under half the cache's write rate ({:.4} s against {warm:.4} s), so the warm floor was used up, and no fresh_bw tells a write that took all its memory fresh ({})",
                    quickest.seconds,
                    table.join(", ")
                ),
            );
            return;
        }
    };
    let slow = |s: &HugeSample| s.seconds >= threshold;
    let from = samples.iter().rposition(|s| !slow(s)).map_or(0, |i| i + 1);
    match (from, samples.get(from)) {
        (_, None) => f.skip(
            &[KEY],
            format!(
                "no request size up to {} B wrote at half the speed of {} B requests: huge pages find the warm floor, or the quickest requests did not ({})",
                samples[samples.len() - 1].request,
                quickest.request,
                table.join(", ")
            ),
        ),
        (0, Some(_)) => f.skip(
            &[KEY],
            format!(
                "every request size took all its memory fresh: the probe cannot tell huge pages from small ones ({rule}; {})",
                table.join(", ")
            ),
        ),
        (_, Some(s)) => f.params.push(Param {
            key: KEY.into(),
            unit: Unit::Size,
            value: s.request as f64,
            low: (samples[from - 1].request + 1) as f64,
            high: s.request as f64,
            probe,
            quality: format!("{rule}; {}", table.join(", ")),
        }),
    }
}

const FRESH_STALL: &str = "nodes.cache.fresh_stall";

/// `nodes.cache.fresh_stall` (a choice) from the fresh-stall probe: the
/// huge-page probe's largest requests written again, settled, with a spinning
/// thread per core beside the writer, which then has a share s = cores /
/// (cores + 1) of a core. Of the time alone t1, the copy is c = bytes /
/// `cache.write_bw` and the rest f the fresh memory. Holding the core, both
/// stretch with the share: t1 / s; holding none, the copy alone: c / s + f.
/// `core` where the time beside the spinners is above their geometric
/// midpoint, else `none`; not chosen where the two are within 1.25 of each
/// other (the write took little fresh memory: the probe cannot tell).
fn fit_fresh_stall(r: &ProbeResults, f: &mut Fitted) {
    let found = (|| {
        let beside = r.fresh_stall.first().ok_or("not probed (no samples)")?;
        let alone = huge_medians(r)
            .into_iter()
            .find(|s| s.request == beside.request && s.bytes == beside.bytes)
            .ok_or("no settled write alone in the same requests")?;
        let bw = f
            .get("nodes.cache.write_bw")
            .map(|p| p.value)
            .ok_or("needs nodes.cache.write_bw fitted")?;
        let cores = r.machine.cores as f64;
        let share = cores / (cores + 1.0);
        let copy = (beside.bytes as f64 / bw).min(alone.seconds);
        let none = copy / share + (alone.seconds - copy);
        let core = alone.seconds / share;
        let says = format!(
            "fresh-stall: {} bytes in {} B requests, settled, {:.4} s beside {} spinning threads ({} cores: a share of {share:.3} of one), {:.4} s alone; predicted beside them {none:.4} s with the fresh memory on the host's time alone, {core:.4} s holding the core too (copy {copy:.4} s at nodes.cache.write_bw)",
            beside.bytes,
            beside.request,
            beside.seconds,
            r.machine.cores,
            r.machine.cores,
            alone.seconds
        );
        match core > 1.25 * none {
            false => Err(format!("{says}: too close to tell")),
            true if beside.seconds > (none * core).sqrt() => Ok(("core", says)),
            true => Ok(("none", says)),
        }
    })();
    match found {
        Ok((word, says)) => {
            f.choices.insert(FRESH_STALL.into(), (word.into(), says));
        }
        Err(why) => {
            f.notes.insert(
                FRESH_STALL.into(),
                format!("not calibrated ({why}); absent: the twin's default applies"),
            );
        }
    }
}

/// `filesystem.write_lock` from the inode-lock probe: warm rewrites by one
/// writer, by 2 writers of one file, and by 2 writers of a file each (the
/// medians of their rates). Writers that copy into one file's pages one at a
/// time write it no faster than one writer; writers of a file each scale.
/// `inode` where one file's rate is below the geometric midpoint of one
/// writer's and a file each's. Where a file each did not reach 1.25 × one
/// writer and some run of one file was as fast as some run of a file each,
/// the writers barely scaled and the probe cannot tell: no choice (the twin's
/// default, `none`). Runs that do not overlap tell even a small gain apart:
/// at 17:40 UTC on 2026-12-07 a file each reached only 1.21 × one writer
/// (the memory bus busy), but every run of one file (7.9–8.6 GB/s) stayed
/// below one writer's median (8.8) and every run of a file each (10.6–14.3).
fn fit_inode_lock(r: &ProbeResults, f: &mut Fitted) {
    const KEY: &str = "filesystem.write_lock";
    let rate = |writers: usize, shared: bool| -> Option<f64> {
        let v = lock_rates(r, writers, shared);
        (!v.is_empty()).then(|| v[v.len() / 2])
    };
    let writers = r.inode_lock.iter().map(|s| s.writers).max().unwrap_or(0);
    let (Some(one), Some(shared), Some(each)) =
        (rate(1, false), rate(writers, true), rate(writers, false))
    else {
        f.notes.insert(
            KEY.into(),
            "not calibrated (no inode-lock probe samples); absent: the twin's default applies"
                .into(),
        );
        return;
    };
    let found = format!(
        "the inode-lock probe's warm rewrites (1 MiB requests, medians of {} runs each): one writer {one:.4e} B/s, {writers} writers of one file {shared:.4e} B/s, of a file each {each:.4e} B/s",
        r.inode_lock.iter().filter(|s| s.writers == 1).count()
    );
    let (shared_runs, each_runs) = (lock_rates(r, writers, true), lock_rates(r, writers, false));
    let apart = shared_runs[shared_runs.len() - 1] < each_runs[0];
    if each < 1.25 * one && !apart {
        f.notes.insert(
            KEY.into(),
            format!("not calibrated ({found}: writers of a file each did not scale, so the probe cannot tell); absent: the twin's default applies"),
        );
        return;
    }
    let word = if shared < (one * each).sqrt() {
        "inode"
    } else {
        "none"
    };
    f.choices.insert(KEY.into(), (word.into(), found));
}

/// The inode-lock probe's rates (bytes over seconds) of `writers` writers of
/// one file (`shared`) or of a file each, every run, slowest first.
fn lock_rates(r: &ProbeResults, writers: usize, shared: bool) -> Vec<f64> {
    let mut v: Vec<f64> = r
        .inode_lock
        .iter()
        .filter(|s| s.writers == writers && s.shared == shared && s.seconds > 0.0)
        .map(|s| s.bytes as f64 / s.seconds)
        .collect();
    v.sort_by(f64::total_cmp);
    v
}

/// `nodes.memory_bw` from the inode-lock probe's writers of a file each: their
/// page-cache copies run at once on as many cores and all cross the node's
/// memory bus, so it carried at least their aggregate rate. The median over
/// the probe's runs, the fastest and slowest as its interval. Not fitted
/// without those samples (the base's value, or `compute.memcpy`, stays).
fn fit_memory_bus(r: &ProbeResults, f: &mut Fitted) {
    const KEY: &str = "nodes.memory_bw";
    let writers = r.inode_lock.iter().map(|s| s.writers).max().unwrap_or(0);
    let v = match writers > 1 {
        true => lock_rates(r, writers, false),
        false => Vec::new(),
    };
    if v.is_empty() {
        f.skip(
            &[KEY],
            "not probed (no inode-lock probe's writers of a file each)".to_string(),
        );
        return;
    }
    f.rate(
        KEY,
        median_and_range(&v),
        "inode-lock probe: warm rewrites of a file each by threads at once (1 MiB requests): their aggregate rate, which the memory bus carried",
        format!(
            "median of {} runs of {writers} writers, the slowest and fastest as the interval",
            v.len()
        ),
    );
}

/// The median of sorted runs, the slowest and fastest as its interval.
fn median_and_range(sorted: &[f64]) -> Estimate {
    Estimate {
        value: sorted[sorted.len() / 2],
        ci_low: sorted[0],
        ci_high: sorted[sorted.len() - 1],
        level: LEVEL,
    }
}

/// `nodes.memory_read_bw` from the bus-read probe: readers of a cached file
/// each at once, on as many cores, into buffers their private caches hold:
/// their aggregate rate, the median over the runs, the slowest and fastest as
/// its interval. Not fitted without those samples (the twin's reads then take
/// the bus at `memory_bw`, as writes).
fn fit_memory_read_bus(r: &ProbeResults, f: &mut Fitted) {
    const KEY: &str = "nodes.memory_read_bw";
    let mut v: Vec<f64> = r
        .bus_read
        .iter()
        .filter(|s| s.seconds > 0.0)
        .map(|s| s.bytes as f64 / s.seconds)
        .collect();
    v.sort_by(f64::total_cmp);
    let Some(readers) = r
        .bus_read
        .iter()
        .map(|s| s.writers)
        .max()
        .filter(|_| !v.is_empty())
    else {
        f.skip(&[KEY], "not probed (no bus-read probe samples)".to_string());
        return;
    };
    f.rate(
        KEY,
        median_and_range(&v),
        "bus-read probe: cached reads of a file each by threads at once (1 MiB requests into buffers the private cache holds): their aggregate rate, which the memory bus carried",
        format!(
            "median of {} runs of {readers} readers, the slowest and fastest as the interval",
            v.len()
        ),
    );
}

/// `nodes.memory_write_bw` from the bus-write probe: one writer of a new
/// file, then `writers` of a file each at once, into warm pages. What the
/// writers at once kept of one writer's rate, k = their aggregate /
/// (`writers` × one) (medians), the twin keeps of `writers` ×
/// `nodes.cache.write_bw` (IOzone's, fitted apart): the probe's own ratio does
/// not depend on how fast the machine ran while it ran. So the key is
/// k × `writers` × `write_bw`, the aggregate runs' range scaled alike its
/// interval. Not fitted where some run at once kept as much a writer as some
/// run of one writer (nothing the writers share was found to bind), nor
/// without the samples or `nodes.cache.write_bw`.
fn fit_memory_write_bus(r: &ProbeResults, f: &mut Fitted) {
    const KEY: &str = "nodes.memory_write_bw";
    let writers = r.bus_write.iter().map(|s| s.writers).max().unwrap_or(0);
    let rates = |w: usize| -> Vec<f64> {
        let mut v: Vec<f64> = r
            .bus_write
            .iter()
            .filter(|s| s.writers == w && s.seconds > 0.0)
            .map(|s| s.bytes as f64 / s.seconds)
            .collect();
        v.sort_by(f64::total_cmp);
        v
    };
    let (one, all) = (rates(1), rates(writers));
    if writers < 2 || one.is_empty() || all.is_empty() {
        f.skip(
            &[KEY],
            "not probed (no bus-write probe samples)".to_string(),
        );
        return;
    }
    let Some(write_bw) = f.get("nodes.cache.write_bw").map(|p| p.value) else {
        f.skip(&[KEY], "needs nodes.cache.write_bw fitted".to_string());
        return;
    };
    let w = writers as f64;
    let (one_m, all_m) = (one[one.len() / 2], all[all.len() / 2]);
    let found = format!(
        "bus-write probe: one writer of a new file {one_m:.4e} B/s, {writers} writers of a file each at once {all_m:.4e} B/s in all (medians of {} and {} runs): each kept {:.3} of one",
        one.len(),
        all.len(),
        all_m / (w * one_m)
    );
    if all[all.len() - 1] / w >= one[0] {
        f.skip(
            &[KEY],
            format!("{found}; some run at once kept as much a writer as some run of one: nothing shared binds"),
        );
        return;
    }
    let scale = write_bw / one_m;
    f.rate(
        KEY,
        Estimate {
            value: all_m * scale,
            ci_low: all[0] * scale,
            ci_high: all[all.len() - 1] * scale,
            level: LEVEL,
        },
        "bus-write probe: writes of a new file each by threads at once, against one writer (1 MiB requests, warm pages)",
        format!("{found}; times nodes.cache.write_bw / one writer's rate ({write_bw:.4e} / {one_m:.4e}): the slowest and fastest runs at once, scaled alike, as the interval"),
    );
}

/// `nodes.cache.aliased_bw` and `nodes.cache.aliased_within` from the
/// aliasing probe: a placement aliases where its median rate is below 3/4 of
/// the rate at a page boundary. The rate is the aliasing placements' median
/// sample, the slowest and fastest as its interval; `aliased_within` the
/// smallest placement beyond every aliasing one (its interval: from the
/// largest aliasing one + 1). Neither where no placement aliases (the twin
/// then copies at one rate wherever a buffer lies).
fn fit_aliased(r: &ProbeResults, f: &mut Fitted) {
    const KEYS: [&str; 2] = ["nodes.cache.aliased_bw", "nodes.cache.aliased_within"];
    let mut by_place: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
    for s in r.aliased.iter().filter(|s| s.seconds > 0.0) {
        by_place
            .entry(s.placed % 4096)
            .or_default()
            .push(s.bytes as f64 / s.seconds);
    }
    for v in by_place.values_mut() {
        v.sort_by(f64::total_cmp);
    }
    let median = |v: &[f64]| v[v.len() / 2];
    let Some(base) = by_place.get(&0).map(|v| median(v)) else {
        f.skip(
            &KEYS,
            "not probed (no aliasing-probe samples at a page boundary)".to_string(),
        );
        return;
    };
    let rates = by_place
        .iter()
        .map(|(p, v)| format!("{p} B {:.4e} B/s", median(v)))
        .collect::<Vec<_>>()
        .join(", ");
    let aliasing: Vec<u64> = by_place
        .iter()
        .filter(|(p, v)| **p > 0 && median(v) < 0.75 * base)
        .map(|(p, _)| *p)
        .collect();
    let (Some(&last), Some(within)) = (
        aliasing.last(),
        aliasing
            .last()
            .and_then(|&l| by_place.keys().copied().find(|&p| p > l)),
    ) else {
        f.skip(
            &KEYS,
            format!(
                "no placement within the probed ones aliases up to the largest (medians: {rates})"
            ),
        );
        return;
    };
    let mut slow: Vec<f64> = aliasing
        .iter()
        .flat_map(|p| by_place[p].iter().copied())
        .collect();
    slow.sort_by(f64::total_cmp);
    let probe = "aliasing probe: a cached file read in 1 MiB requests at page-aligned offsets into a buffer placed past a page";
    f.rate(
        KEYS[0],
        median_and_range(&slow),
        probe,
        format!(
            "median of {} reads at the placements below 3/4 of the rate at a page boundary ({:?} B), the slowest and fastest as the interval; medians: {rates}",
            slow.len(),
            aliasing
        ),
    );
    f.params.push(Param {
        key: KEYS[1].into(),
        unit: Unit::Size,
        value: within as f64,
        low: (last + 1) as f64,
        high: within as f64,
        probe: probe.into(),
        quality: format!(
            "the smallest placement beyond every aliasing one ({last} B the largest of those)"
        ),
    });
}

/// `nodes.sleeping_ranks` from pingpong's locked-write test at more ranks than
/// cores: N ranks each write `b` bytes of one file at once, rewriting cached
/// pages, which the inode lock copies one at a time while the ranks done
/// poll. A writer that slept on the lock and runs on a whole core when it
/// wakes takes N · b / `rewrite_bw` in all (`yield`); at its share beside the
/// polling ranks, N / cores times that (`hold`). `yield` where the median
/// call is below their geometric midpoint. Needs `poll`, the inode lock and
/// `rewrite_bw` chosen or fitted before; else no choice and a note says why.
fn fit_sleeping(r: &ProbeResults, f: &mut Fitted) {
    let cores = r.machine.cores as u64;
    let chosen = |key: &str, word: &str| f.choices.get(key).is_some_and(|c| c.0 == word);
    let rows = locked_writes(r, cores);
    let smallest = rows.iter().map(|p| p.bytes).min();
    let mut v: Vec<&PingRow> = rows
        .into_iter()
        .filter(|p| Some(p.bytes) == smallest)
        .collect();
    let rewrite = f.get("nodes.cache.rewrite_bw").map(|p| p.value);
    let why = match rewrite {
        _ if v.is_empty() => {
            format!("no pingpong --locked-writes run at more ranks than cores ({cores})")
        }
        _ if !chosen("nodes.waiting_ranks", "poll") => "waiting ranks not found to poll".into(),
        _ if !chosen("filesystem.write_lock", "inode") => {
            "no inode lock found, so the writers do not wait on each other".into()
        }
        None => "nodes.cache.rewrite_bw not fitted".into(),
        Some(rewrite) => {
            v.sort_by(|a, b| a.seconds.total_cmp(&b.seconds));
            let median = v[v.len() / 2];
            choose_sleeping(f, median, rewrite, cores, v.len());
            return;
        }
    };
    f.notes.insert(
        SLEEPING_RANKS.into(),
        format!("not calibrated ({why}); absent: the twin's default applies"),
    );
}

const SLEEPING_RANKS: &str = "nodes.sleeping_ranks";

/// pingpong's locked-write rows at more ranks than `cores`.
fn locked_writes(r: &ProbeResults, cores: u64) -> Vec<&PingRow> {
    r.pingpong
        .iter()
        .filter(|p| p.test == "locked_write" && p.ranks > cores && p.seconds > 0.0)
        .collect()
}

/// The call times of the locked-write rows of `bytes` in all, sorted.
fn sorted_calls(rows: &[&PingRow], bytes: u64) -> Vec<f64> {
    let mut calls: Vec<f64> = rows
        .iter()
        .filter(|p| p.bytes == bytes)
        .map(|p| p.seconds)
        .collect();
    calls.sort_by(f64::total_cmp);
    calls
}

/// `nodes.wake_slice` from pingpong's locked-write test at its largest size,
/// where a writer's copy outlasts a time slice (the smallest size chose
/// `sleeping_ranks`). In lock order, writer k copies w = bytes /
/// `rewrite_bw`: the first took the lock awake, alone (the others sleep on
/// it); each later one woke with the k done polling, and runs on a whole core
/// for the slice s, then at its share min(1, cores / (k + 1)). The call of the
/// last takes T(s) = N·w + (w − s)·D for s ≤ w, D = Σ_k (max(1, (k + 1) /
/// cores) − 1), so s = (T(0) − T) / D, clamped to [0, w]: the median call
/// gives the value, the slowest and fastest runs its interval. Where the
/// smallest size's median call ran within N·w of its own, its writers kept
/// their cores throughout: the slice is at least that w, which bounds the
/// value and interval from below (here calls of 32 MiB ran slower than the
/// share alone explains, while those of 8 MiB kept a whole core). Not fitted
/// (whole core until the request is done) with one size only, without
/// `yield` chosen or `rewrite_bw`, or where the largest size's median call
/// is within N·w: the slice then outlasts the copy, which bounds it from
/// below only.
fn fit_wake_slice(r: &ProbeResults, f: &mut Fitted) {
    const KEY: &str = "nodes.wake_slice";
    let cores = r.machine.cores as u64;
    let rows = locked_writes(r, cores);
    let (smallest, largest) = (
        rows.iter().map(|p| p.bytes).min(),
        rows.iter().map(|p| p.bytes).max(),
    );
    let yield_chosen = f
        .choices
        .get(SLEEPING_RANKS)
        .is_some_and(|c| c.0 == "yield");
    let rewrite = f.get("nodes.cache.rewrite_bw").map(|p| p.value);
    let why = match (smallest, largest, rewrite) {
        (Some(a), Some(b), _) if a == b => "the locked-write test ran at one size".to_string(),
        (None, _, _) | (_, None, _) => {
            format!("no pingpong --locked-writes run at more ranks than cores ({cores})")
        }
        _ if !yield_chosen => "sleeping ranks not found to yield".into(),
        (_, _, None) => "nodes.cache.rewrite_bw not fitted".into(),
        (_, Some(largest), Some(rewrite)) => {
            let calls = sorted_calls(&rows, largest);
            let ranks = rows
                .iter()
                .find(|p| p.bytes == largest)
                .expect("a row")
                .ranks;
            let w = largest as f64 / ranks as f64 / rewrite;
            let d: f64 = (1..ranks)
                .map(|k| ((k + 1) as f64 / cores as f64).max(1.0) - 1.0)
                .sum();
            let whole = ranks as f64 * w;
            let shared = whole + w * d;
            // The smallest size's writers on a whole core bound the slice from below.
            let small = smallest.expect("rows") as f64 / ranks as f64 / rewrite;
            let small_calls = sorted_calls(&rows, smallest.expect("rows"));
            let small_median = small_calls[small_calls.len() / 2];
            let floor = match small_median <= ranks as f64 * small {
                true => small,
                false => 0.0,
            };
            let slice = |t: f64| ((shared - t) / d).clamp(0.0, w).max(floor);
            let median = calls[calls.len() / 2];
            let found = format!(
                "median call {median:.4e} s of {} runs ({} ranks on {cores} cores, {} bytes each), against {whole:.4e} s with every woken writer on a whole core and {shared:.4e} s at its share after waking (w = {w:.4e} s at nodes.cache.rewrite_bw {rewrite:.4e} B/s; D = {d})",
                calls.len(),
                ranks,
                largest / ranks
            );
            if median <= whole {
                format!("the slice outlasts the copy, which bounds it from below only: {found}")
            } else {
                f.time(
                    KEY,
                    Estimate {
                        value: slice(median),
                        ci_low: slice(calls[calls.len() - 1]),
                        ci_high: slice(calls[0]),
                        level: LEVEL,
                    },
                    "pingpong --locked-writes at its largest size: N ranks on fewer cores each rewrite their part of one file at once, each woken from the inode lock",
                    format!(
                        "(T(0) - T) / D, clamped to [0, w], at least {floor:.4e} s (the smallest size's w where its median call {small_median:.4e} s ran within N·w, else 0): {found}"
                    ),
                );
                return;
            }
        }
    };
    f.skip(&[KEY], format!("not calibrated ({why})"));
}

/// `nodes.sleeping_ranks` from the median of `runs` locked-write rows, against
/// the two predictions (see [`fit_sleeping`]).
fn choose_sleeping(f: &mut Fitted, median: &PingRow, rewrite: f64, cores: u64, runs: usize) {
    let ranks = median.ranks as f64;
    let woken = median.bytes as f64 / rewrite;
    let shared = woken * ranks / cores as f64;
    let word = if median.seconds < (woken * shared).sqrt() {
        "yield"
    } else {
        "hold"
    };
    let found = format!(
        "pingpong --locked-writes: {} ranks on {cores} cores each rewrite {} bytes of one file at once: median call {:.4e} s of {} runs, against {woken:.4e} s with each woken writer on a whole core at nodes.cache.rewrite_bw ({rewrite:.4e} B/s) and {shared:.4e} s at its share",
        median.ranks,
        median.bytes / median.ranks,
        median.seconds,
        runs
    );
    f.choices
        .insert(SLEEPING_RANKS.into(), (word.into(), found));
}

/// `nodes.mmap_from` and `nodes.compute.first_touch` from pingpong's
/// `MPI_Sendrecv_replace` exchanges between 2 ranks over sizes from 1 MiB.
/// `mmap_from` is the smallest size whose exchange takes at least 2 × the
/// time per byte of the smallest size's (whose buffer `malloc` reuses), every
/// larger one too; the interval runs from just above
/// the next smaller size. What those sizes take per byte beyond the smallest
/// size's is the fill of the freshly mapped buffer: `first_touch` is one over
/// its mean (Student t; the interval maps through).
fn fit_first_touch(r: &ProbeResults, f: &mut Fitted) {
    const KEYS: [&str; 2] = ["nodes.mmap_from", "nodes.compute.first_touch"];
    const PROBE: &str =
        "pingpong: MPI_Sendrecv_replace exchanges between 2 ranks over sizes from 1 MiB";
    let mut rows: Vec<(u64, f64)> = r
        .pingpong
        .iter()
        .filter(|p| p.test == "sendrecv" && p.ranks == 2)
        .filter(|p| p.bytes >= 1 << 20 && p.active == 0)
        .map(|p| (p.bytes, p.seconds))
        .collect();
    rows.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    rows.dedup_by_key(|p| p.0);
    if rows.len() < 2 {
        f.skip(
            &KEYS,
            "not probed (no MPI_Sendrecv_replace exchanges of 1 MiB or more at 2 ranks)".into(),
        );
        return;
    }
    let table: Vec<String> = rows
        .iter()
        .map(|(b, t)| format!("{b} B {:.3e} s", t))
        .collect();
    let per_byte = |&(b, t): &(u64, f64)| t / b as f64;
    let warm = per_byte(&rows[0]);
    let slow = |p: &(u64, f64)| per_byte(p) >= 2.0 * warm;
    let from = rows.iter().rposition(|p| !slow(p)).map_or(0, |i| i + 1);
    if from == 0 || from == rows.len() {
        f.skip(
            &KEYS,
            format!(
                "no size from which every exchange took 2 x the time per byte of {} B ones, the smallest ({})",
                rows[0].0,
                table.join(", ")
            ),
        );
        return;
    }
    let mmap_from = rows[from].0;
    f.params.push(Param {
        key: KEYS[0].into(),
        unit: Unit::Size,
        value: mmap_from as f64,
        low: (rows[from - 1].0 + 1) as f64,
        high: mmap_from as f64,
        probe: PROBE.into(),
        quality: format!(
            "smallest size at 2 x the time per byte of the smallest, every larger one too; {}",
            table.join(", ")
        ),
    });
    let extra: Vec<f64> = rows[from..].iter().map(|p| per_byte(p) - warm).collect();
    match mean_estimate(&extra, LEVEL) {
        Ok(e) => f.rate(
            KEYS[1],
            e.reciprocal(),
            PROBE,
            format!(
                "method=mean n={} of the time per byte beyond the {} B exchanges' ({warm:.3e} s/B)",
                extra.len(),
                rows[0].0
            ),
        ),
        Err(e) => f.skip(&KEYS[1..], why(&e)),
    }
}

/// The samples whose size (`size_of`) is at least twice the CPU cache, so that a
/// bandwidth fit measures memory rather than cache; all of them where fewer than
/// three distinct sizes are that large (a tiny probe scale).
fn beyond_cpu_cache<T>(samples: Vec<T>, cpu_cache: u64, size_of: impl Fn(&T) -> u64) -> Vec<T> {
    let large = |s: &T| size_of(s) >= 2 * cpu_cache;
    let sizes: std::collections::BTreeSet<u64> =
        samples.iter().filter(|s| large(s)).map(&size_of).collect();
    match sizes.len() >= 3 {
        true => samples.into_iter().filter(large).collect(),
        false => samples,
    }
}

/// Time per record of IOzone rows, excluding the `fsync`.
fn per_record(rows: &[&IozoneRow]) -> Vec<(f64, f64)> {
    rows.iter()
        .filter(|r| r.ops > 0)
        .map(|r| {
            (
                r.record_bytes as f64,
                (r.seconds - r.fsync_s.unwrap_or(0.0)).max(0.0) / r.ops as f64,
            )
        })
        .collect()
}

/// The largest IOzone file the page cache's rates are fitted from: 512 MiB
/// (and at most a quarter of memory), so that it stays in memory the node
/// keeps backed; larger files grow into fresh memory, which `fit_release`
/// fits from its own probe.
pub(crate) fn largest_cached_file(machine: &Machine) -> u64 {
    (machine.mem_total_bytes / 4).min(512 << 20)
}

fn fit_iozone(r: &ProbeResults, f: &mut Fitted) {
    const ALL: [&str; 10] = [
        "nodes.syscall",
        "nodes.read_syscall",
        "nodes.cache.write_bw",
        "nodes.cache.rewrite_bw",
        "nodes.cache.read_bw",
        "server.device.read_latency",
        "server.device.read_bw",
        "metadata.sync",
        "server.device.write_bw",
        "server.device.overwrite_bw",
    ];
    let warm: Vec<&IozoneRow> = r
        .iozone
        .iter()
        .filter(|run| !run.cold && !run.fresh && run.mpiio_shared.is_none())
        .flat_map(|run| &run.rows)
        .collect();
    let cold: Vec<&IozoneRow> = r
        .iozone
        .iter()
        .filter(|run| run.cold)
        .flat_map(|run| &run.rows)
        .collect();
    if warm.is_empty() && cold.is_empty() {
        f.skip(
            &ALL,
            "no IOzone results (the probe did not run or failed)".into(),
        );
        return;
    }
    // Cached files: at least twice the CPU cache, so the copies run at memory
    // speed, and at most `largest_cached_file`.
    let cached = |t: Pass| -> Vec<&IozoneRow> {
        let rows = warm
            .iter()
            .copied()
            .filter(|x| x.test == t && x.file_bytes <= largest_cached_file(&r.machine))
            .collect();
        beyond_cpu_cache(rows, r.machine.cpu_cache_bytes, |x| x.file_bytes)
    };
    let one =
        |f: &mut Fitted, keys: (Option<&str>, Option<&str>), rows: Vec<&IozoneRow>, probe: &str| {
            match fit_latency_bandwidth_robust(&per_record(&rows), LEVEL) {
                Ok(fit) => f.linear(keys, &fit, probe),
                Err(e) => f.skip(
                    &[keys.0, keys.1].into_iter().flatten().collect::<Vec<_>>(),
                    why(&e),
                ),
            }
        };
    one(
        f,
        (Some("nodes.syscall"), Some("nodes.cache.write_bw")),
        cached(Pass::Write),
        "iozone: write of cached files, time per record over record sizes",
    );
    one(
        f,
        (None, Some("nodes.cache.rewrite_bw")),
        cached(Pass::Rewrite),
        "iozone: rewrite of cached files (their pages held), time per record over record sizes",
    );
    one(
        f,
        (Some("nodes.read_syscall"), Some("nodes.cache.read_bw")),
        cached(Pass::Reread),
        "iozone: re-read of cached files, time per record over record sizes",
    );
    one(
        f,
        (
            Some("server.device.read_latency"),
            Some("server.device.read_bw"),
        ),
        cold.iter()
            .copied()
            .filter(|x| x.test == Pass::Read)
            .collect(),
        "iozone -I: cold read (file dropped from the page cache), time per record over record sizes",
    );
    // fsync time against dirty bytes: the write's new blocks give the commit and
    // the device's write rate; IOzone's rewrite writes back the blocks its write
    // test wrote back, so its line's slope is the rate of an overwrite (its
    // intercept, the commit again, is not kept)
    for (pass, keys, probe) in [
        (
            Pass::Write,
            (Some("metadata.sync"), Some("server.device.write_bw")),
            "iozone -e: fsync time against dirty bytes (intercept: commit, slope: 1/device write bandwidth)",
        ),
        (
            Pass::Rewrite,
            (None, Some("server.device.overwrite_bw")),
            "iozone -e: the rewrite's fsync time against dirty bytes, the blocks written back before (slope: 1/device overwrite bandwidth)",
        ),
    ] {
        let line: Vec<(f64, f64)> = warm
            .iter()
            .filter_map(|x| {
                let fsync = x.fsync_s.filter(|&t| x.test == pass && t > 0.0)?;
                Some((x.file_bytes as f64, fsync))
            })
            .collect();
        match fit_latency_bandwidth_robust(&line, LEVEL) {
            Ok(fit) => f.linear(keys, &fit, probe),
            Err(e) => {
                let skipped: Vec<&str> = [keys.0, keys.1].into_iter().flatten().collect();
                f.skip(&skipped, why(&e))
            }
        }
    }
}

/// The page cache: a knee of re-read bandwidth over file sizes where one shows,
/// `MemTotal` otherwise (also when IOzone did not run).
fn fit_cache_capacity(r: &ProbeResults, f: &mut Fitted) {
    let bw: Vec<(f64, f64)> = r
        .iozone
        .iter()
        .filter(|run| !run.cold)
        .flat_map(|run| &run.rows)
        .filter(|x| x.test == Pass::Reread && x.kb_s > 0.0)
        .map(|x| (x.file_bytes as f64, x.kb_s * 1024.0))
        .collect();
    let largest = bw.iter().map(|b| b.0).fold(0.0, f64::max);
    let mem = r.machine.mem_total_bytes as f64;
    match find_cache_knee(&bw, LEVEL) {
        Ok(k) if k.device_bandwidth_bytes_per_s.ci_high < k.cache_bandwidth_bytes_per_s.ci_low => {
            f.params.push(Param {
                key: "nodes.cache.capacity".into(),
                unit: Unit::Size,
                value: k.knee_bytes.round(),
                low: k.last_cache_size_bytes,
                high: k.first_device_size_bytes,
                probe: "iozone: re-read bandwidth over file sizes".into(),
                quality: format!(
                    "method=cache-knee r2_log={:.4} n={}+{} (interval: the sizes either side)",
                    k.r_squared_log, k.n_cache, k.n_device
                ),
            });
        }
        other => {
            let finding = match other {
                Ok(k) => format!(
                    "the best split at {:.0} bytes separates no distinct plateaus",
                    k.knee_bytes
                ),
                Err(e) => e.to_string(),
            };
            f.params.push(Param {
                key: "nodes.cache.capacity".into(),
                unit: Unit::Size,
                value: mem,
                low: mem,
                high: mem,
                probe: "machine: MemTotal of /proc/meminfo".into(),
                quality: format!(
                    "no cache knee in re-read bandwidth up to {largest:.0}-byte files ({finding}); files of 2 x RAM do not fit this disk, so the capacity is MemTotal"
                ),
            });
        }
    }
}

fn fit_ior(r: &ProbeResults, base: &Scenario, f: &mut Fitted) {
    let cores = r.machine.cores;
    // The calls' own cost shows best in reads: a read system call of cached
    // pages only copies them (`nodes.read_syscall`), where a write's also
    // allocates pages and waits for the inode's lock.
    let syscall = f.get("nodes.read_syscall").map(|p| p.value);
    let (minus, minus_note) = match syscall {
        Some(s) => (s, format!("minus nodes.read_syscall {s:.3e} s")),
        None => (
            0.0,
            "nodes.read_syscall not fitted: includes the POSIX call beneath".to_string(),
        ),
    };
    let reads = |shape: &str, pred: &dyn Fn(usize) -> bool| -> Vec<&IorRow> {
        r.ior
            .iter()
            .filter(|x| x.shape == shape && x.access == "read" && pred(x.ranks))
            .collect()
    };
    let calls = |rows: &[&IorRow]| -> Vec<(f64, f64)> {
        rows.iter()
            .map(|x| (x.transfer as f64, x.latency_s))
            .collect()
    };
    let base_ranks = r
        .ior
        .iter()
        .map(|x| x.ranks)
        .filter(|&k| k <= cores)
        .max()
        .unwrap_or(1);
    for (key, shape, pred, what) in [
        (
            "mpiio.independent_call",
            "shared-independent",
            &(|k: usize| k <= cores) as &dyn Fn(usize) -> bool,
            format!("ranks <= {cores}"),
        ),
        (
            "mpiio.collective_call",
            "shared-collective",
            &(|k: usize| k == base_ranks) as &dyn Fn(usize) -> bool,
            format!("{base_ranks} ranks"),
        ),
    ] {
        let probe = format!(
            "ior -a MPIIO {shape} reads at {what}: call time over transfer sizes, intercept"
        );
        match piotwin_calibration::fit_line_robust(&calls(&reads(shape, pred)), LEVEL) {
            Ok(line) => {
                let e = line.intercept;
                let q = format!(
                    "method=huber r2={:.4} n={} intercept {:.3e} s {minus_note}",
                    line.r_squared, line.n, e.value
                );
                f.time(key, less(e, minus), &probe, q);
            }
            Err(e) => f.skip(&[key], why(&e)),
        }
    }
    // Growth of the collective call with ranks, and oversubscription.
    let mut ks: Vec<usize> = r.ior.iter().map(|x| x.ranks).collect();
    ks.sort_unstable();
    ks.dedup();
    let mut growth = Vec::new();
    for &k in &ks {
        if let Ok(line) = piotwin_calibration::fit_line_robust(
            &calls(&reads("shared-collective", &|x| x == k)),
            LEVEL,
        ) {
            growth.push(format!("{k} ranks {:.3e} s", line.intercept.value));
        }
    }
    if !growth.is_empty() {
        f.notes.insert(
            "calibration.collective_call_by_ranks".into(),
            format!(
                "intercept of the collective read call time over transfer sizes (IOR -c), by ranks on {cores} cores: {}",
                growth.join(", ")
            ),
        );
    }
    fit_write_syscall(r, base, f);
    fit_write_lock_span(r, base, f);
    fit_open_close(r, base, f);
    fit_open_steps(r, base, f);
    fit_offsets_steps(r, base, f);
}

/// `nodes.syscall` (a write's system call): IOR's independent write calls at
/// 1 rank (no other writer to wait for) at the smallest transfer, less
/// `mpiio.independent_call` (fitted from reads), the copy at
/// `cache.write_bw` and the filling of the transfer's data pattern, which IOR
/// does inside its timed loop and the twin charges as a kernel of its own
/// (`pattern_fill_time`); the mean (Student t) over the repetitions after the
/// first (`steady_writes`). At the smallest transfer the copy
/// is least of the call, so its rate's error counts least. IOzone's write
/// intercept measures the same call (IOzone fills no pattern in its loop):
/// the two are combined by their precision (`inverse_variance`), as either
/// can be the noisy one: IOzone's is left to the noise of its largest records
/// at times (negative, r2 0.22, in one calibration of the `vm` guest), and
/// IOR's two repetitions ran at 24.3 and 11.8 us a call on 2026-12-07 at
/// 16:34 UTC, while IOR's collective writes of the same step ran at 6.7 and
/// 6.2 us (12.3 us net, interval [0, 92] us; IOzone's 2.1 us). IOzone's
/// stands alone where IOR did not run at 1 rank.
fn fit_write_syscall(r: &ProbeResults, base: &Scenario, f: &mut Fitted) {
    const KEY: &str = "nodes.syscall";
    let writes = || steady_writes(r).filter(|x| x.ranks == 1);
    let got = |key: &str| f.get(key).map(|p| p.value);
    let (Some(t), Some(call), Some(bw)) = (
        writes().map(|x| x.transfer).min(),
        got("mpiio.independent_call"),
        got("nodes.cache.write_bw"),
    ) else {
        return;
    };
    let fill = pattern_fill_time(f, base, t);
    let rest: Vec<f64> = writes()
        .filter(|x| x.transfer == t)
        .map(|x| x.latency_s - call - t as f64 / bw - fill)
        .collect();
    let Ok(ior) = mean_estimate(&rest, LEVEL) else {
        return;
    };
    let iozone = f.get(KEY).cloned();
    let (e, combined) = match &iozone {
        Some(z) => (inverse_variance(&ior, z), "inverse-variance mean of"),
        None => (ior, "the mean of"),
    };
    let iozone = iozone.map_or("none".to_string(), |z| {
        format!("{:.3e} s [{:.3e}, {:.3e}]", z.value, z.low, z.high)
    });
    f.params.retain(|p| p.key != KEY);
    f.skipped.remove(KEY);
    f.time(
        KEY,
        e,
        &format!(
            "ior -a MPIIO shared-independent writes of {t} bytes at 1 rank: call time, {}; and iozone's write intercept",
            repetitions_used(r)
        ),
        format!(
            "{combined} IOR's n={} call times minus mpiio.independent_call {call:.3e} s minus {t} bytes at nodes.cache.write_bw {bw:.4e} B/s minus their pattern's fill {fill:.3e} s ({:.3e} s [{:.3e}, {:.3e}]) and IOzone's write intercept ({iozone})",
            rest.len(),
            ior.value,
            ior.ci_low,
            ior.ci_high
        ),
    );
}

/// Two measurements of one time, IOR's (an estimate) and IOzone's (a fitted
/// parameter), as one: weighted by the inverse square of their intervals'
/// half-widths (IOzone's from its value up: a negative intercept is written
/// as 0), with the half-width 1 / sqrt(sum of the weights). Either alone
/// where the other has no finite, positive width.
fn inverse_variance(ior: &Estimate, iozone: &Param) -> Estimate {
    let half_ior = (ior.ci_high - ior.ci_low) / 2.0;
    let half_iozone = iozone.high - iozone.value;
    let usable = |h: f64| h.is_finite() && h > 0.0;
    match (usable(half_ior), usable(half_iozone)) {
        (true, true) => {
            let (w1, w2) = (half_ior.powi(-2), half_iozone.powi(-2));
            let value = (w1 * ior.value + w2 * iozone.value) / (w1 + w2);
            let half = (w1 + w2).sqrt().recip();
            Estimate {
                value,
                ci_low: value - half,
                ci_high: value + half,
                level: ior.level,
            }
        }
        (false, true) => Estimate {
            value: iozone.value,
            ci_low: iozone.low,
            ci_high: iozone.high,
            level: ior.level,
        },
        _ => *ior,
    }
}

/// The time the twin charges for filling the data pattern of a `bytes`-byte
/// transfer (`Kernel::pattern_fill`, one rank), on the rates the calibrated
/// scenario will have: the fitted ones over the base scenario's, where an
/// unset `pattern_cached` follows `pattern`.
fn pattern_fill_time(f: &Fitted, base: &Scenario, bytes: u64) -> f64 {
    let mut rates = base.nodes[0].compute.clone();
    let cached_unset = rates.pattern_cached == rates.pattern;
    let got = |key: &str| f.get(key).map(|p| p.value);
    if let Some(pattern) = got("nodes.compute.pattern") {
        rates.pattern = pattern;
        if cached_unset {
            rates.pattern_cached = pattern;
        }
    }
    if let Some(cache) = got("nodes.compute.private_cache") {
        rates.private_cache = cache as u64;
    }
    if let Some(cached) = got("nodes.compute.pattern_cached") {
        rates.pattern_cached = cached;
    }
    bytes as f64 / rates.pattern_fill_rate(bytes as f64)
}

/// IOR's independent writes of one shared file.
fn independent_writes(r: &ProbeResults) -> impl Iterator<Item = &IorRow> {
    r.ior
        .iter()
        .filter(|x| x.shape == "shared-independent" && x.access == "write")
}

/// The independent writes of the repetitions after the first, where the rows
/// say their repetition (else every one). The first is the process's first
/// writes: its calls also pay the first touch of the buffer and the file's
/// first pages, and take up to 3.4 times the later ones' time at 4 KiB (the
/// `vm` guest, 2026-11-29: 7.40 against 2.18 us), which would be charged to
/// every later system call.
fn steady_writes(r: &ProbeResults) -> impl Iterator<Item = &IorRow> {
    let known = independent_writes(r).all(|x| x.iter.is_some());
    independent_writes(r).filter(move |x| !known || x.iter != Some(0))
}

/// Which repetitions `steady_writes` took, for the quality notes.
fn repetitions_used(r: &ProbeResults) -> &'static str {
    match independent_writes(r).all(|x| x.iter.is_some()) {
        true => "repetitions after the first",
        false => "every repetition",
    }
}

const WRITE_LOCK_SPAN: &str = "filesystem.write_lock_span";

/// `filesystem.write_lock_span` (a choice), with the inode lock found: IOR's
/// independent writes of one file at the smallest transfer, the median call
/// at 2 ranks (t2) against two predictions from the call the twin charges at
/// 1 rank (t1 = `mpiio.independent_call` + `nodes.syscall` + the copy at
/// `cache.write_bw` + the pattern's fill): with the lock over the copy only,
/// the calls overlap and the copies take turns, max(t1, 2 copies); over the
/// whole call, each waits for the other's call, max(t1, 2 (t1 −
/// `mpiio.independent_call`)). `call` where t2 is above their geometric
/// midpoint, else `copy`; not chosen where the two are within 1.25 of each
/// other (the probe cannot tell). t1 is the twin's, not the 1-rank step's
/// median: that step can run slow as a whole (14.2, 24.3 and 11.8 us a call
/// on 2026-12-07 at 16:34 UTC, against 10.3 us at 2 ranks on one locked
/// file), and `nodes.syscall` weighs it by its precision.
fn fit_write_lock_span(r: &ProbeResults, base: &Scenario, f: &mut Fitted) {
    let inode = f
        .choices
        .get("filesystem.write_lock")
        .is_some_and(|c| c.0 == "inode");
    let got = |key: &str| f.get(key).map(|p| p.value);
    let median_call = |ranks: usize, t: u64| -> Option<f64> {
        let mut v: Vec<f64> = steady_writes(r)
            .filter(|x| x.ranks == ranks && x.transfer == t)
            .map(|x| x.latency_s)
            .collect();
        crate::report::median(&mut v)
    };
    let smallest = independent_writes(r).map(|x| x.transfer).min();
    let found = match (
        inode,
        smallest,
        got("nodes.cache.write_bw"),
        got("mpiio.independent_call"),
        got("nodes.syscall"),
    ) {
        (false, ..) => {
            Err("no inode lock found, so writers of one file do not wait on each other".to_string())
        }
        (_, None, ..) => Err("no IOR independent writes".into()),
        (_, _, None, ..) | (_, _, _, None, _) | (.., None) => Err(
            "needs nodes.cache.write_bw, mpiio.independent_call and nodes.syscall fitted".into(),
        ),
        (true, Some(t), Some(bw), Some(call), Some(syscall)) => {
            match (median_call(1, t), median_call(2, t)) {
                (Some(measured_t1), Some(t2)) => {
                    let copy_s = t as f64 / bw;
                    let t1 = call + syscall + copy_s + pattern_fill_time(f, base, t);
                    let copy = t1.max(2.0 * copy_s);
                    let whole = t1.max(2.0 * (t1 - call));
                    let says = format!(
                        "ior -a MPIIO shared-independent writes of {t} bytes, {}: median call {t2:.4e} s at 2 ranks ({measured_t1:.4e} s at 1), the twin's call at 1 rank {t1:.4e} s; predicted at 2 ranks {copy:.4e} s with the lock over the copy, {whole:.4e} s over the whole call",
                        repetitions_used(r)
                    );
                    match whole > 1.25 * copy {
                        false => Err(format!("{says}: too close to tell")),
                        true if t2 > (copy * whole).sqrt() => Ok(("call", says)),
                        true => Ok(("copy", says)),
                    }
                }
                _ => Err("no IOR independent writes at both 1 and 2 ranks".into()),
            }
        }
    };
    match found {
        Ok((word, says)) => {
            f.choices
                .insert(WRITE_LOCK_SPAN.into(), (word.into(), says));
        }
        Err(why) => {
            f.notes.insert(
                WRITE_LOCK_SPAN.into(),
                format!("not calibrated ({why}); absent: the twin's default applies"),
            );
        }
    }
}

/// `mpiio.open`, `mpiio.close`: IOR's open and close times of shared-file
/// writes at ranks <= cores, less the base metadata costs. Each probe step is
/// one process, so repetition 0's write makes its first MPI-IO open and close:
/// where the rows say their repetition, `open` and `close` come from the later
/// ones and `mpiio.first_open`, `first_close` are what repetition 0's take
/// beyond them; probes that do not say fit every row, with no first-call terms.
fn fit_open_close(r: &ProbeResults, base: &Scenario, f: &mut Fitted) {
    let cores = r.machine.cores;
    let rows: Vec<&IorRow> = r
        .ior
        .iter()
        .filter(|x| x.shape != "file-per-process" && x.access == "write" && x.ranks <= cores)
        .collect();
    let known = rows.iter().all(|x| x.iter.is_some());
    let probe = format!(
        "ior -a MPIIO shared-file writes at ranks <= {cores}: max-over-ranks time of the call"
    );
    for (key, first_key, time, meta, meta_key) in [
        (
            "mpiio.open",
            "mpiio.first_open",
            (|x: &IorRow| x.open_s) as fn(&IorRow) -> f64,
            base.metadata.create,
            "metadata.create",
        ),
        (
            "mpiio.close",
            "mpiio.first_close",
            |x: &IorRow| x.close_s,
            base.metadata.close,
            "metadata.close",
        ),
    ] {
        let times = |first: Option<bool>| -> Vec<f64> {
            rows.iter()
                .filter(|x| first.is_none_or(|fst| (x.iter == Some(0)) == fst))
                .map(|x| time(x))
                .collect()
        };
        let (later, which) = match known {
            true => (times(Some(false)), "repetitions after the first"),
            false => (times(None), "every repetition"),
        };
        let steady = match mean_estimate(&later, LEVEL) {
            Ok(e) => {
                f.time(
                    key,
                    less(e, meta),
                    &format!("{probe}, {which}"),
                    format!(
                        "method=mean n={} mean {:.3e} s minus base {meta_key} {meta:.3e} s",
                        later.len(),
                        e.value
                    ),
                );
                e.value
            }
            Err(e) => {
                f.skip(&[key, first_key], why(&e));
                continue;
            }
        };
        if !known {
            f.skip(
                &[first_key],
                "older probes do not record IOR's repetitions".into(),
            );
            continue;
        }
        let first = times(Some(true));
        match mean_estimate(&first, LEVEL) {
            Ok(e) => f.time(
                first_key,
                less(e, steady),
                &format!("{probe}, the first repetition (the process's first)"),
                format!(
                    "method=mean n={} mean {:.3e} s minus the later repetitions' mean {steady:.3e} s",
                    first.len(),
                    e.value
                ),
            ),
            Err(e) => f.skip(&[first_key], why(&e)),
        }
    }
}

/// `mpiio.open_steps`: IOR's open times of shared-file writes at more ranks
/// than cores, whose message steps each wait for a descheduled rank. The twin
/// charges an open `mpiio.open` + `metadata.create` + ceil(log2 N) message
/// steps (its one synchronisation) at the step cost `nic_latency` +
/// `oversubscribed_wakeup` (fitted before); the mean measured open beyond
/// that, over the step cost, is the number of further steps.
fn fit_open_steps(r: &ProbeResults, base: &Scenario, f: &mut Fitted) {
    const KEY: &str = "mpiio.open_steps";
    let cores = r.machine.cores;
    let rows = |k: usize| -> Vec<&IorRow> {
        r.ior
            .iter()
            .filter(|x| x.shape != "file-per-process" && x.access == "write" && x.ranks == k)
            .collect()
    };
    let opens = |k: usize| -> Vec<f64> { rows(k).iter().map(|x| x.open_s).collect() };
    let Some(ranks) = r.ior.iter().map(|x| x.ranks).filter(|&k| k > cores).max() else {
        f.skip(
            &[KEY],
            format!("no IOR run at more ranks than cores ({cores})"),
        );
        return;
    };
    let got = |key: &str| f.get(key).map(|p| p.value);
    let (Some(open), Some(wakeup)) = (got("mpiio.open"), got("nodes.oversubscribed_wakeup")) else {
        f.skip(
            &[KEY],
            "needs mpiio.open and nodes.oversubscribed_wakeup fitted".into(),
        );
        return;
    };
    let latency = got("nodes.nic_latency").unwrap_or(base.nodes[0].nic_latency);
    let step = latency + wakeup;
    let sync = piotwin_sim::collective_steps(ranks);
    // The processes' first opens among them take `first_open` more.
    let first = got("mpiio.first_open").unwrap_or(0.0);
    let first_share = match rows(ranks).len() {
        0 => 0.0,
        n => rows(ranks).iter().filter(|x| x.iter == Some(0)).count() as f64 / n as f64,
    };
    let modelled = open + first_share * first + base.metadata.create + sync * step;
    match mean_estimate(&opens(ranks), LEVEL) {
        Ok(e) => {
            let per = |t: f64| (t - modelled) / step;
            f.params.push(Param {
                key: KEY.into(),
                unit: Unit::Number,
                value: per(e.value).max(0.0),
                low: per(e.ci_low).max(0.0),
                high: per(e.ci_high).max(0.0),
                probe: format!(
                    "ior -a MPIIO shared-file writes at {ranks} ranks on {cores} cores: max-over-ranks time of the open"
                ),
                quality: format!(
                    "method=mean n={} mean {:.3e} s, less the modelled open {modelled:.3e} s (mpiio.open + {first_share:.2} of mpiio.first_open + base metadata.create + {sync} steps), over the step {step:.3e} s (nic_latency + oversubscribed_wakeup)",
                    opens(ranks).len(),
                    e.value
                ),
            });
        }
        Err(e) => f.skip(&[KEY], why(&e)),
    }
}

/// `mpiio.offsets_steps`: IOR's shared-file collective calls at more ranks
/// than cores. Its ranks' blocks do not interleave, so ROMIO exchanges every
/// rank's start and end offsets (two all-gathers, each rank waiting for
/// descheduled ones) and then does independent I/O. A call less the mean call
/// of the same access and transfer at the most ranks that have a core each
/// (the I/O and the per-call costs, no wake-ups) is the exchange; its mean
/// over the step cost `nic_latency` + `oversubscribed_wakeup` (fitted before)
/// is the number of steps.
fn fit_offsets_steps(r: &ProbeResults, base: &Scenario, f: &mut Fitted) {
    const KEY: &str = "mpiio.offsets_steps";
    let cores = r.machine.cores;
    let collective = |k: usize| {
        r.ior
            .iter()
            .filter(move |x| x.shape == "shared-collective" && x.ranks == k)
    };
    let ranks_where = |over: bool| {
        r.ior
            .iter()
            .filter(|x| x.shape == "shared-collective" && (x.ranks > cores) == over)
            .map(|x| x.ranks)
            .max()
    };
    let (Some(ranks), Some(fewer)) = (ranks_where(true), ranks_where(false)) else {
        f.skip(
            &[KEY],
            format!(
                "needs IOR shared-collective runs at more ranks than cores ({cores}) and at no more"
            ),
        );
        return;
    };
    let Some(wakeup) = f.get("nodes.oversubscribed_wakeup").map(|p| p.value) else {
        f.skip(&[KEY], "needs nodes.oversubscribed_wakeup fitted".into());
        return;
    };
    let latency = f
        .get("nodes.nic_latency")
        .map_or(base.nodes[0].nic_latency, |p| p.value);
    let step = latency + wakeup;
    let mut beyond = Vec::new();
    for x in collective(ranks) {
        let alone: Vec<f64> = collective(fewer)
            .filter(|y| y.access == x.access && y.transfer == x.transfer)
            .map(|y| y.latency_s)
            .collect();
        if !alone.is_empty() {
            beyond.push(x.latency_s - alone.iter().sum::<f64>() / alone.len() as f64);
        }
    }
    match mean_estimate(&beyond, LEVEL) {
        Ok(e) => {
            let per = |t: f64| (t / step).max(0.0);
            f.params.push(Param {
                key: KEY.into(),
                unit: Unit::Number,
                value: per(e.value),
                low: per(e.ci_low),
                high: per(e.ci_high),
                probe: format!(
                    "ior -a MPIIO shared-collective (blocks that do not interleave) at {ranks} ranks on {cores} cores: call time"
                ),
                quality: format!(
                    "method=mean n={} of a call's time less the mean of the same access and transfer at {fewer} ranks: {:.3e} s, over the step {step:.3e} s (nic_latency + oversubscribed_wakeup)",
                    beyond.len(),
                    e.value
                ),
            });
        }
        Err(e) => f.skip(&[KEY], why(&e)),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::calibrate::memcpy::LockSample;

    #[test]
    fn the_run_to_run_spread_pools_the_repetitions_of_each_shape() {
        let row = |ranks, transfer, bw| IorRow {
            ranks,
            shape: "shared-independent".into(),
            transfer,
            access: "write".into(),
            latency_s: 0.0,
            open_s: 0.0,
            close_s: 0.0,
            bw_mib_s: bw,
            iter: None,
        };
        // Two shapes of two repetitions: ln ratios 0.2 and 0.4, so
        // within-shape squares 2·0.1² + 2·0.2² over 2 degrees of freedom.
        let e = std::f64::consts::E;
        let rows = [
            row(1, 4096, 100.0),
            row(1, 4096, 100.0 * e.powf(0.2)),
            row(2, 4096, 50.0),
            row(2, 4096, 50.0 * e.powf(0.4)),
            row(4, 4096, 70.0), // one repetition: no spread of its own
        ];
        let r = run_to_run(&rows).unwrap();
        assert!(
            (r.spread - (0.1f64.powi(2) + 0.2f64.powi(2)).sqrt()).abs() < 1e-12,
            "{r:?}"
        );
        assert_eq!((r.groups, r.repetitions), (2, 4));
        assert_eq!(run_to_run(&rows[4..]), None);
    }

    #[test]
    fn the_stored_calibration_carries_the_spread_of_its_stored_probes() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        // each calibrated scenario beside the probes it was fitted from
        for file in [
            "scenarios/calibrated/vm.toml",
            "validation/vm-b/scenario.toml",
            "validation/vm-e/scenario.toml",
            "validation/vm-f/scenario.toml",
            "validation/vm-g/scenario.toml",
            "validation/vm-h/scenario.toml",
            "validation/vm-i/scenario.toml",
            "validation/vm-j/scenario.toml",
            "validation/vm-k/scenario.toml",
            "validation/vm-l/scenario.toml",
            "validation/vm-m/scenario.toml",
            "validation/vm-n/scenario.toml",
            "validation/vm-o/scenario.toml",
            "validation/vm-p/scenario.toml",
            "validation/vm-q/scenario.toml",
            "validation/vm-r/scenario.toml",
            "validation/vm-s/scenario.toml",
            "validation/vm-t/scenario.toml",
            "validation/vm-u/scenario.toml",
            "validation/vm-v/scenario.toml",
            "validation/vm-w/scenario.toml",
            "validation/vm-x/scenario.toml",
            "validation/vm-y/scenario.toml",
        ] {
            let probes = root.join(format!("{file}.probes.json"));
            let raw: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(probes).unwrap()).unwrap();
            let rows: Vec<IorRow> = serde_json::from_value(raw["results"]["ior"].clone()).unwrap();
            let fitted = run_to_run(&rows).unwrap();
            let s = Scenario::load(&root.join(file)).unwrap();
            let stored = s
                .run_to_run
                .unwrap_or_else(|| panic!("{file}: no [run_to_run]"));
            assert!(
                (stored.spread - fitted.spread).abs() < 1e-12,
                "{file}: {stored:?} against {fitted:?}"
            );
            assert!(stored.quality.contains(&format!(
                "{} repetitions of {} shapes",
                fitted.repetitions, fitted.groups
            )));
        }
    }
    use crate::calibrate::Machine;
    use crate::calibrate::memcpy::CopySample;
    use crate::calibrate::plan::{Plan, Scale};
    use crate::calibrate::probes::IozoneRun;

    /// Deterministic noise: a 64-bit LCG, approximately normal (sum of 12 uniforms − 6).
    struct Lcg(u64);
    impl Lcg {
        fn normal(&mut self) -> f64 {
            (0..12)
                .map(|_| {
                    self.0 = self
                        .0
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    (self.0 >> 11) as f64 / (1u64 << 53) as f64
                })
                .sum::<f64>()
                - 6.0
        }
    }

    pub(crate) const SYSCALL: f64 = 2e-6;
    const READ_SYSCALL: f64 = 0.6e-6;
    const FIRST_OPEN: f64 = 400e-6;
    const FIRST_CLOSE: f64 = 80e-6;
    /// what the first repetition's write calls take beyond the later ones' (the
    /// first touch of the buffer and the file)
    const FIRST_WRITE: f64 = 5e-6;
    const CACHE_W: f64 = 3e9;
    /// What each of two writers of a new file at once keeps of one's rate.
    const WRITE_KEPT: f64 = 0.75;
    const CACHE_RW: f64 = 5e9;
    const CACHE_R: f64 = 6e9;
    const DEV_R: f64 = 1.5e9;
    const DEV_LAT: f64 = 80e-6;
    const SYNC: f64 = 1e-3;
    const DEV_W: f64 = 1e9;
    const DEV_OW: f64 = 1.4e9;
    const ALIASED: f64 = 1.2e9;
    const MEMCPY: f64 = 8e9;
    const PATTERN: f64 = 1.5e9;
    const PATTERN_CHECK: f64 = 3e9;
    const PATTERN_CACHED: f64 = 2.5e9;
    const PATTERN_CHECK_CACHED: f64 = 9e9;
    const FLOPS: f64 = 6e9;
    const BT: f64 = 1.7e9;
    const FFT: f64 = 4.5e9;
    const SIGNAL: f64 = 2.2e9;
    const ERROR_NORM: f64 = 150e6;
    /// The part of a barrier step's wake-up an all-reduce's waits.
    const ALLREDUCE_WAKE: f64 = 0.6;
    const STATEMENT: f64 = 250e-9;
    const WARM: u64 = 256 << 20;
    const SHARED_PTR: f64 = 3e-6;
    const DELETE: f64 = 40e-6;
    const DELETE_BW: f64 = 4e9;
    const FRESH_BW: f64 = 0.4e9;
    const RELEASE: f64 = 8.0;
    const NIC_LAT: f64 = 1e-6;
    const NIC_BW: f64 = 4e9;
    const INDEP: f64 = 1e-6;
    const COLL: f64 = 40e-6;
    const WAKEUP: f64 = 4e-3;
    const EAGER: u64 = 16384;
    const HUGE: u64 = 2 << 20;
    const MMAP_FROM: u64 = 32 << 20;
    const FIRST_TOUCH: f64 = 1.7e9;
    const MESSAGE_BW: f64 = 5e9;
    const POLLED_WAKEUP: f64 = 1e-3;
    const STAGGER: f64 = 4e-3;
    const OPEN_STEPS: f64 = 12.0;
    const OFFSETS_STEPS: f64 = 2.5;
    /// A woken writer's slice on a whole core, s.
    const WAKE_SLICE: f64 = 2e-3;
    /// The all-cores probe's kernels, their keys and the part each keeps.
    const ALL_CORES: [(&str, &str, f64); 7] = [
        ("busy_work", "nodes.compute.flops_all_cores", 0.5),
        ("pattern", "nodes.compute.pattern_all_cores", 0.8),
        ("bt", "nodes.compute.bt_all_cores", 0.85),
        ("error_norm", "nodes.compute.error_norm_all_cores", 0.95),
        ("fft", "nodes.compute.fft_all_cores", 0.75),
        ("signal", "nodes.compute.signal_all_cores", 1.05),
        ("aliased_read", "nodes.cache.aliased_all_cores", 0.6),
    ];
    const UNPACK: f64 = 110e6;
    const PACK: f64 = 160e6;

    /// Probe results generated from known parameters with noise and a few outliers.
    pub(crate) fn synthetic() -> ProbeResults {
        let machine = Machine {
            host: "synth".into(),
            cores: 2,
            mem_total_bytes: 16 << 30,
            cpu_cache_bytes: 1 << 20,
            readahead_bytes: Some(8 << 20),
            date: None,
            cpu: None,
            unreported_free_bytes: None,
            private_cache_bytes: Some(1 << 20),
        };
        let mut r = ProbeResults::new(machine, Plan::new(Scale::Quick, 2, 4, "/s"));
        let mut n = Lcg(0x9e37_79b9_7f4a_7c15);
        // The pattern samples draw their own noise, so the other probes' is unchanged.
        let mut np = Lcg(0x2545_f491_4f6c_dd1d);
        // Busy-work with its own noise too.
        let mut nb = Lcg(0x5851_f42d_4c95_7f2d);
        for flops in [6.4e5, 6.4e6, 6.4e7] {
            for _ in 0..6 {
                r.busy_work.push(crate::calibrate::memcpy::FlopSample {
                    flops,
                    seconds: 2e-6 + flops / FLOPS + 20e-6 * nb.normal(),
                });
            }
        }
        // The BT and FFT kernels with their own noise.
        let mut nk = Lcg(0x1405_7b7e_f767_814f);
        for flops in [2.5e7, 1e8, 4e8] {
            for _ in 0..5 {
                r.bt.push(crate::calibrate::memcpy::FlopSample {
                    flops,
                    seconds: 1e-5 + flops / BT + 200e-6 * nk.normal(),
                });
                r.fft.push(crate::calibrate::memcpy::FlopSample {
                    flops,
                    seconds: 3e-5 + flops / FFT + 200e-6 * nk.normal(),
                });
            }
        }
        // FTIO's input with its own noise: bands of I = 8, 16, 32, 48.
        let mut ns = Lcg(0x6c07_8965_d5a3_1c2b);
        for i in [8u64, 16, 32, 48] {
            for _ in 0..5 {
                let bytes = i * i * i * 16;
                r.signal.push(crate::calibrate::memcpy::CopySample {
                    bytes,
                    seconds: 2e-6 + bytes as f64 / SIGNAL + 5e-6 * ns.normal(),
                });
            }
        }
        // BTIO's error norm with its own noise: rank 0's dumps of the plan's
        // BT cases (24³ on 1 rank, 36³ and 64³ on 4).
        let mut ne = Lcg(0x3c6e_f372_fe94_f82b);
        for bytes in [552_960u64, 466_560, 2_621_440] {
            for _ in 0..5 {
                r.error_norm.push(crate::calibrate::memcpy::CopySample {
                    bytes,
                    seconds: 1e-5 + bytes as f64 / ERROR_NORM + 100e-6 * ne.normal(),
                });
            }
        }
        // Fortran statements with their own noise.
        let mut nf = Lcg(0x4f1b_bcdc_bfa5_3e0b);
        for statements in crate::calibrate::memcpy::FORTRAN_PROBE_COUNTS {
            for _ in 0..6 {
                r.fortran.push(crate::calibrate::memcpy::StatementSample {
                    statements,
                    seconds: 5e-6 + statements as f64 * STATEMENT + 20e-6 * nf.normal(),
                });
            }
        }
        for s in [1u64 << 20, 4 << 20, 16 << 20, 64 << 20] {
            for _ in 0..6 {
                let t = s as f64 / MEMCPY + 20e-6 * n.normal();
                r.memcpy.push(CopySample {
                    bytes: s,
                    seconds: t,
                });
                // within the private cache (1 MiB) the buffers stay in it
                let (fill, check) = match s <= 1 << 20 {
                    true => (PATTERN_CACHED, PATTERN_CHECK_CACHED),
                    false => (PATTERN, PATTERN_CHECK),
                };
                let t = s as f64 / fill + 40e-6 * np.normal();
                r.pattern.push(CopySample {
                    bytes: s,
                    seconds: t,
                });
                let t = s as f64 / check + 40e-6 * np.normal();
                r.pattern_check.push(CopySample {
                    bytes: s,
                    seconds: t,
                });
                let t = DELETE + 16.0 * s as f64 / DELETE_BW + 1e-3 * np.normal();
                r.delete.push(CopySample {
                    bytes: 16 * s,
                    seconds: t,
                });
            }
        }
        for s in [1u64, 64, 1024, 8192, 65536, 524288, 4 << 20] {
            for _ in 0..3 {
                let t = NIC_LAT + s as f64 / NIC_BW + 0.2e-6 * n.normal().abs();
                // b_eff's Sendrecv loop: two exchanges per iteration.
                r.beff.push(crate::calibrate::probes::BeffRow {
                    ranks: 2,
                    pattern: "ring-1*2fix".into(),
                    bytes: s,
                    method: "Sndrcv".into(),
                    loops: 100,
                    seconds: 200.0 * t,
                });
            }
        }
        // b_eff at 4 ranks on 2 cores: exchanges that wait for a descheduled
        // rank (the wake-up on top of the 2-rank exchange), twice above the
        // eager limit (the rendezvous); 8 repetitions of 1 byte, 2 of the others.
        for s in [1u64, 64, 1024, 4096, EAGER, EAGER + 1, 4 * EAGER] {
            let wakes = if s > EAGER { 2.0 } else { 1.0 };
            for _ in 0..if s == 1 { 8 } else { 2 } {
                let t = NIC_LAT + s as f64 / NIC_BW + wakes * WAKEUP * (1.0 + 0.05 * n.normal());
                r.beff.push(crate::calibrate::probes::BeffRow {
                    ranks: 4,
                    pattern: "ring-1*4fix".into(),
                    bytes: s,
                    method: "Sndrcv".into(),
                    loops: 8,
                    seconds: 16.0 * t,
                });
            }
        }
        // pingpong's two-phase test at 4 ranks: a synchronisation intercept, the
        // exchange of 3/4 of the bytes at its rate and the aggregator's cache copy.
        let mut nt = Lcg(0x6a09_e667_f3bc_c909);
        for per_rank in [512u64 << 10, 1 << 20, 2560 << 10, 8 << 20] {
            let bytes = 4 * per_rank;
            for (test, bw, cache) in [
                ("twophase_write", UNPACK, CACHE_W),
                ("twophase_read", PACK, CACHE_R),
            ] {
                for _ in 0..3 {
                    let t = 30e-3
                        + 0.75 * bytes as f64 / bw
                        + bytes as f64 / cache
                        + 2e-3 * nt.normal();
                    r.pingpong.push(ping(test, 4, bytes, 5, t, 0));
                }
            }
        }
        // pingpong's polled test at 4 ranks, 2 taking part: copies at half a
        // core (every rank shares the cores), a barrier step POLLED_WAKEUP more.
        for _ in 0..3 {
            for bytes in [64u64 << 10, 1 << 20, 8 << 20] {
                let copy = 2.0 * bytes as f64 / MEMCPY;
                for (test, seconds) in [
                    ("polled_copy", copy),
                    (
                        "polled_step",
                        copy + POLLED_WAKEUP * (1.0 + 0.2 * nt.normal()),
                    ),
                ] {
                    r.pingpong.push(ping(test, 4, bytes, 20, seconds, 2));
                }
            }
        }
        // pingpong's barrier exits at 4 ranks in 3 runs: the second rank out
        // within a few µs of the first, the other two STAGGER after them, give
        // or take a tenth (the fit: the mean over runs of (their mean - the
        // first two's)).
        for run in 0..3 {
            let (second, late) = (10e-6 * run as f64, STAGGER * (0.9 + 0.1 * run as f64));
            for (place, after) in [
                (1, second),
                (2, late + second / 2.0),
                (3, late + second / 2.0),
            ] {
                r.pingpong
                    .push(ping("barrier_exit", 4, 0, 10, after, place));
            }
        }
        // pingpong's barriers and all-reduces at 4 ranks in 3 jobs: 2 steps of
        // a latency and a wake-up (8 ms), the all-reduce's ALLREDUCE_WAKE of
        // the wake-up, give or take a tenth from job to job.
        for job in 0..3 {
            let base = 2.0 * NIC_LAT;
            let barrier = base + 2.0 * WAKEUP;
            let part = ALLREDUCE_WAKE * (0.9 + 0.1 * job as f64);
            r.pingpong.push(ping("barrier", 4, 0, 10, barrier, 0));
            r.pingpong.push(ping(
                "allreduce",
                4,
                8,
                10,
                base + part * (barrier - base),
                0,
            ));
        }
        let mut warm = IozoneRun {
            cold: false,
            fresh: false,
            mpiio_shared: None,
            rows: Vec::new(),
        };
        let mut cold = IozoneRun {
            cold: true,
            fresh: false,
            mpiio_shared: None,
            rows: Vec::new(),
        };
        let mut nw = Lcg(0xbb67_ae85_84ca_a73b);
        for file in [16u64 << 20, 64 << 20, 256 << 20] {
            for rec in [4096u64, 65536, 1 << 20] {
                let ops = file / rec;
                let row = |test: Pass, per: f64, fsync: f64| IozoneRow {
                    test,
                    file_bytes: file,
                    record_bytes: rec,
                    seconds: per * ops as f64 + fsync,
                    bytes: file,
                    ops,
                    kb_s: file as f64 / 1024.0 / (per * ops as f64),
                    fsync_s: matches!(test, Pass::Write | Pass::Rewrite).then_some(fsync),
                    dirty_bytes: file,
                };
                let fsync = SYNC + file as f64 / DEV_W + 2e-3 * n.normal();
                let w = SYSCALL + rec as f64 / CACHE_W + 0.05e-6 * n.normal();
                warm.rows.push(row(Pass::Write, w, fsync));
                let rw = SYSCALL + rec as f64 / CACHE_RW + 0.05e-6 * nw.normal();
                let resync = SYNC + file as f64 / DEV_OW + 2e-3 * nw.normal();
                warm.rows.push(row(Pass::Rewrite, rw, resync));
                let rr = READ_SYSCALL + rec as f64 / CACHE_R + 0.05e-6 * n.normal();
                warm.rows.push(row(Pass::Reread, rr, 0.0));
                let c = DEV_LAT + rec as f64 / DEV_R + 2e-6 * n.normal();
                cold.rows.push(row(Pass::Read, c, 0.0));
            }
        }
        // One stalled record-time sample (a daemon woke up).
        warm.rows[0].seconds *= 4.0;
        // Rewrites a wait after a delete: the copy at the cached rate, plus
        // what of the size beyond WARM is no longer backed at FRESH_BW (handed
        // back linearly over RELEASE, to the middle of the rewrite).
        let mut nr = Lcg(0x5851_f42d_4c95_7f2d);
        for &(bytes, wait) in &r.plan.release_steps {
            let (copy, excess) = (bytes as f64 / CACHE_W, bytes.saturating_sub(WARM) as f64);
            let mut t = copy + excess / FRESH_BW;
            for _ in 0..50 {
                let backed = if wait == 0.0 {
                    1.0
                } else {
                    (1.0 - (wait + t / 2.0) / RELEASE).max(0.0)
                };
                t = copy + excess * (1.0 - backed) / FRESH_BW;
            }
            r.release.push(crate::calibrate::memcpy::ReleaseSample {
                bytes,
                wait_s: wait,
                seconds: t * (1.0 + 0.002 * nr.normal()),
            });
        }
        // Settled writes: small requests find the warm floor, huge ones
        // (HUGE and more) take all their memory fresh.
        let rounds = r.plan.huge_rounds;
        for &request in r
            .plan
            .huge_requests
            .clone()
            .iter()
            .cycle()
            .take(rounds * r.plan.huge_requests.len())
        {
            let bytes = r.plan.huge_bytes;
            let mut t = bytes as f64 / CACHE_W;
            if request >= HUGE {
                t += bytes as f64 / FRESH_BW;
            }
            r.huge.push(HugeSample {
                request,
                bytes,
                seconds: t * (1.0 + 0.002 * nr.normal()),
            });
        }
        // The largest again beside a spinner per core (2): the vCPU holds its
        // core while the host backs the memory, so it all runs at 2/3 speed.
        let last = r.huge[r.huge.len() - 1];
        r.fresh_stall.push(HugeSample {
            seconds: last.seconds * 1.5,
            ..last
        });
        // The inode-lock probe: one file's writers copy one at a time, a file
        // each's in parallel.
        for rep in 0..r.plan.lock_reps {
            let bytes = r.plan.lock_bytes;
            for (writers, shared, t) in [
                (1, false, bytes as f64 / CACHE_W),
                (2, true, 2.0 * bytes as f64 / CACHE_W),
                (2, false, bytes as f64 / CACHE_W),
            ] {
                r.inode_lock.push(LockSample {
                    writers,
                    shared,
                    bytes: bytes * writers as u64,
                    seconds: t * (1.0 + 0.002 * nr.normal()),
                });
            }
            // two readers of a file each, a core each at the re-read rate
            r.bus_read.push(LockSample {
                writers: 2,
                shared: false,
                bytes: 2 * bytes,
                seconds: bytes as f64 / CACHE_R * (1.0 + 0.002 * nr.normal()),
            });
            // new files: one writer at CACHE_W, two at once each at
            // WRITE_KEPT of it, the reps 2 % apart (no draw: the draws
            // above stay as they were)
            let spread = 1.0 + 0.02 * (rep as f64 - 1.0);
            for (writers, kept) in [(1, 1.0), (2, WRITE_KEPT)] {
                r.bus_write.push(LockSample {
                    writers,
                    shared: false,
                    bytes: bytes * writers as u64,
                    seconds: bytes as f64 / (CACHE_W * kept) * spread,
                });
            }
        }
        // cached reads into a buffer 1 to 31 bytes past the source alias
        for _ in 0..3 {
            for &placed in &r.plan.alias_places {
                let rate = if (1..32).contains(&placed) {
                    ALIASED
                } else {
                    CACHE_R
                };
                r.aliased.push(super::super::memcpy::AliasSample {
                    placed,
                    bytes: r.plan.alias_bytes,
                    seconds: r.plan.alias_bytes as f64 / rate * (1.0 + 0.01 * nr.normal()),
                });
            }
        }
        // pingpong's locked-write test at 4 ranks: each writer woken from the
        // inode lock rewrites its 8 MiB on a whole core (within its slice);
        // its 32 MiB (6.7 ms) for WAKE_SLICE, then the third writer at 2/3
        // of a core and the last at 1/2: 4 w + 1.5 (w - WAKE_SLICE).
        let mut nl = Lcg(0x3c6e_f372_fe94_f82b);
        for mib in [8u64, 32] {
            for _ in 0..3 {
                let bytes = 4 * (mib << 20);
                let w = (mib << 20) as f64 / CACHE_RW;
                let whole = bytes as f64 / CACHE_RW;
                let t = match mib {
                    8 => whole,
                    _ => whole + 1.5 * (w - WAKE_SLICE),
                };
                r.pingpong.push(ping(
                    "locked_write",
                    4,
                    bytes,
                    3,
                    t * (1.0 + 0.01 * nl.normal()),
                    0,
                ));
            }
        }
        // MPI_Sendrecv_replace at 2 ranks: from MMAP_FROM on, the buffer is
        // filled fresh on top of the message.
        for mib in [8u64, 16, 24, 32, 48, 64] {
            let bytes = mib << 20;
            let mut t = bytes as f64 / MESSAGE_BW;
            if bytes >= MMAP_FROM {
                t += bytes as f64 / FIRST_TOUCH;
            }
            r.pingpong.push(ping(
                "sendrecv",
                2,
                bytes,
                4,
                t * (1.0 + 0.002 * nr.normal()),
                0,
            ));
        }
        // MPI-IO at explicit offsets and through the shared pointer.
        let mut np2 = Lcg(0x6a09_e667_f3bc_c909);
        let mut pointer_runs = Vec::new();
        for shared in [false, true] {
            let mut run = IozoneRun {
                cold: false,
                fresh: false,
                mpiio_shared: Some(shared),
                rows: Vec::new(),
            };
            let file = 16u64 << 20;
            for rec in [1024u64, 4096, 65536] {
                let ops = file / rec;
                let per = SYSCALL
                    + INDEP
                    + if shared { SHARED_PTR } else { 0.0 }
                    + rec as f64 / CACHE_W
                    + 0.05e-6 * np2.normal();
                for test in [Pass::Write, Pass::Rewrite] {
                    run.rows.push(IozoneRow {
                        test,
                        file_bytes: file,
                        record_bytes: rec,
                        seconds: per * ops as f64,
                        bytes: file,
                        ops,
                        kb_s: file as f64 / 1024.0 / (per * ops as f64),
                        fsync_s: None,
                        dirty_bytes: 0,
                    });
                }
            }
            pointer_runs.push(run);
        }
        r.iozone = vec![warm, cold];
        r.iozone.extend(pointer_runs);
        for ranks in [1usize, 2, 4] {
            for (shape, call) in [("shared-independent", INDEP), ("shared-collective", COLL)] {
                // at 4 ranks on 2 cores a collective call's offsets'
                // exchange waits OFFSETS_STEPS wake-ups
                let exchange = if shape == "shared-collective" && ranks == 4 {
                    OFFSETS_STEPS * (NIC_LAT + WAKEUP)
                } else {
                    0.0
                };
                let call = call + exchange;
                for t in [4096u64, 16384, 65536] {
                    for iter in 0..3 {
                        let first = |cost: f64| if iter == 0 { cost } else { 0.0 };
                        // (reads as the call-cost fits take them; their opens
                        // and closes are not fitted)
                        r.ior.push(IorRow {
                            ranks,
                            shape: shape.into(),
                            transfer: t,
                            access: "read".into(),
                            latency_s: call
                                + READ_SYSCALL
                                + t as f64 / CACHE_R
                                + 0.3e-6 * n.normal(),
                            open_s: 0.0,
                            close_s: 0.0,
                            bw_mib_s: 1.0,
                            iter: Some(iter),
                        });
                        r.ior.push(IorRow {
                            ranks,
                            shape: shape.into(),
                            transfer: t,
                            access: "write".into(),
                            // at 2 ranks and more each waits for the other's
                            // call and copy under the inode lock; IOR fills
                            // each transfer's pattern first (in the private cache)
                            latency_s: INDEP
                                + exchange
                                + if ranks == 1 { 1.0 } else { 2.0 }
                                    * (SYSCALL + t as f64 / CACHE_W)
                                + t as f64 / PATTERN_CACHED
                                + first(FIRST_WRITE)
                                + 0.3e-6 * n.normal(),
                            // at 4 ranks on 2 cores: 2 + OPEN_STEPS message steps of a wake-up each
                            open_s: 1e-3
                                + if ranks == 4 {
                                    (2.0 + OPEN_STEPS) * WAKEUP
                                } else {
                                    0.0
                                }
                                + first(FIRST_OPEN)
                                + 1e-4 * n.normal(),
                            close_s: 2e-4 + first(FIRST_CLOSE) + 1e-5 * n.normal(),
                            bw_mib_s: 1.0,
                            iter: Some(iter),
                        });
                    }
                }
            }
        }
        // The all-cores probe: 4 threads on the 2 cores, rounds keeping 0.98,
        // 1 and 1.02 × each kernel's part of its rate alone (10 units in 1 s).
        let cores = r.machine.cores as f64;
        let kernels = ALL_CORES
            .iter()
            .map(
                |&(kernel, _, kept)| crate::calibrate::memcpy::KernelRounds {
                    kernel: kernel.into(),
                    reps: 10,
                    alone_s: vec![1.0; 4],
                    together_s: [0.98, 1.0, 1.02]
                        .iter()
                        .map(|x| vec![4.0 / (cores * kept * x); 4])
                        .collect(),
                },
            )
            .collect();
        r.all_cores = Some(crate::calibrate::memcpy::KernelsTogether {
            threads: 4,
            kernels,
        });
        r
    }

    /// A pingpong row of the synthetic probes.
    fn ping(
        test: &str,
        ranks: u64,
        bytes: u64,
        iterations: u64,
        seconds: f64,
        active: u64,
    ) -> PingRow {
        PingRow {
            test: test.into(),
            ranks,
            bytes,
            iterations,
            seconds,
            active,
        }
    }

    fn base() -> Scenario {
        Scenario::from_str(include_str!("../../scenarios/default.toml"), "default.toml").unwrap()
    }

    fn within(f: &Fitted, key: &str, truth: f64) {
        let p = f
            .get(key)
            .unwrap_or_else(|| panic!("{key} not fitted: {:?}", f.skipped.get(key)));
        assert!(
            p.low <= truth && truth <= p.high,
            "{key}: {truth:e} outside [{:e}, {:e}] (value {:e}, {})",
            p.low,
            p.high,
            p.value,
            p.quality
        );
    }

    #[test]
    fn older_probes_alternate_fills_and_checks_in_one_list() {
        let apart = synthetic();
        let mut one_list = apart.clone();
        one_list.pattern = apart
            .pattern
            .iter()
            .zip(&apart.pattern_check)
            .flat_map(|(fill, check)| [*fill, *check])
            .collect();
        one_list.pattern_check.clear();
        let (a, b) = (fit_all(&apart, &base()), fit_all(&one_list, &base()));
        for key in ["nodes.compute.pattern", "nodes.compute.pattern_check"] {
            assert_eq!(a.get(key), b.get(key), "{key}");
        }
        within(&b, "nodes.compute.pattern", PATTERN);
    }

    #[test]
    fn synthetic_probes_give_back_their_parameters() {
        let f = fit_all(&synthetic(), &base());
        assert!(f.skipped.is_empty(), "{:?}", f.skipped);
        within(&f, "nodes.compute.memcpy", MEMCPY);
        within(&f, "nodes.memory_write_bw", 2.0 * WRITE_KEPT * CACHE_W);
        within(&f, "nodes.compute.pattern", PATTERN);
        within(&f, "nodes.compute.pattern_check", PATTERN_CHECK);
        within(&f, "nodes.compute.pattern_cached", PATTERN_CACHED);
        within(
            &f,
            "nodes.compute.pattern_check_cached",
            PATTERN_CHECK_CACHED,
        );
        assert_eq!(
            f.get("nodes.compute.private_cache").unwrap().value,
            (1u64 << 20) as f64
        );
        within(&f, "nodes.compute.flops", FLOPS);
        within(&f, "nodes.compute.bt", BT);
        within(&f, "nodes.compute.fft", FFT);
        within(&f, "nodes.compute.signal", SIGNAL);
        within(&f, "nodes.compute.error_norm", ERROR_NORM);
        within(&f, "nodes.allreduce_wake", ALLREDUCE_WAKE);
        within(&f, "nodes.fortran_statement", STATEMENT);
        // (the release fit's intervals carry the spread of its estimates,
        // not the noise of the ends it divides by)
        let fresh = f.get("nodes.cache.fresh_bw").unwrap().value;
        assert!((fresh / FRESH_BW - 1.0).abs() < 0.05, "fresh_bw {fresh:e}");
        let release = f.get("nodes.cache.release_time").unwrap().value;
        assert!(
            (release / RELEASE - 1.0).abs() < 0.03,
            "release_time {release}"
        );
        within(&f, "mpiio.shared_pointer", SHARED_PTR);
        within(&f, "metadata.delete_bw", DELETE_BW);
        assert_eq!(
            f.get("nodes.cache.readahead").unwrap().value,
            (8u64 << 20) as f64
        );
        let warm = f.get("nodes.cache.warm").unwrap().value;
        assert!((warm - WARM as f64).abs() < 64e6, "warm {warm:e}");
        within(&f, "nodes.memory_read_bw", 2.0 * CACHE_R);
        within(&f, "nodes.cache.aliased_bw", ALIASED);
        let w = f.get("nodes.cache.aliased_within").unwrap();
        assert_eq!(
            (w.value, w.low, w.high),
            (32.0, 32.0, 32.0),
            "{}",
            w.quality
        );
        // (the first repetition's FIRST_WRITE left out)
        within(&f, "nodes.syscall", SYSCALL);
        // net of the pattern fill IOR times with each write (1.6 us of 4 KiB
        // here, more than the noise of a mean of 2 leaves)
        let syscall = f.get("nodes.syscall").unwrap().value;
        assert!(
            (syscall - SYSCALL).abs() < 0.8e-6,
            "nodes.syscall {syscall:e}"
        );
        assert!(f.get("nodes.syscall").unwrap().quality.contains("n=2"));
        within(&f, "nodes.cache.write_bw", CACHE_W);
        within(&f, "nodes.cache.rewrite_bw", CACHE_RW);
        within(&f, "nodes.cache.read_bw", CACHE_R);
        within(&f, "nodes.read_syscall", READ_SYSCALL);
        within(&f, "server.device.read_latency", DEV_LAT);
        within(&f, "server.device.read_bw", DEV_R);
        within(&f, "metadata.sync", SYNC);
        within(&f, "server.device.write_bw", DEV_W);
        within(&f, "server.device.overwrite_bw", DEV_OW);
        within(&f, "mpiio.independent_call", INDEP);
        within(&f, "mpiio.collective_call", COLL);
        within(&f, "nodes.oversubscribed_wakeup", WAKEUP);
        assert_eq!(f.get("nodes.eager_limit").unwrap().value, EAGER as f64);
        let huge = f.get("nodes.cache.huge_from").unwrap();
        assert_eq!(
            (huge.value, huge.low),
            (HUGE as f64, (HUGE - HUGE / 16 + 1) as f64)
        );
        let mmap = f.get("nodes.mmap_from").unwrap();
        assert_eq!(
            (mmap.value, mmap.low),
            (MMAP_FROM as f64, ((24 << 20) + 1) as f64)
        );
        within(&f, "nodes.compute.first_touch", FIRST_TOUCH);
        assert_eq!(f.choices["nodes.waiting_ranks"].0, "poll");
        let span = f.choices.get(WRITE_LOCK_SPAN);
        let span = span.unwrap_or_else(|| panic!("{:?}", f.notes.get(WRITE_LOCK_SPAN)));
        assert_eq!(span.0, "call", "{}", span.1);
        within(&f, "nodes.polled_wakeup", POLLED_WAKEUP);
        // (0.9 + 1.0 + 1.1) / 3 of STAGGER, exactly.
        within(&f, "nodes.release_stagger", STAGGER);
        within(&f, "nodes.wake_slice", WAKE_SLICE);
        for (_, key, kept) in ALL_CORES {
            within(&f, key, kept);
        }
        within(&f, "nodes.oversubscribed_unpack_bw", UNPACK);
        within(&f, "nodes.oversubscribed_pack_bw", PACK);
        // The ranks <= cores opens only (those at 4 ranks wait for wake-ups).
        within(&f, "mpiio.open", 1e-3 - 30e-6);
        // Steps over the fitted wake-up: its few per cent of error, 12 times.
        let steps = f.get("mpiio.open_steps").unwrap().value;
        assert!((steps - OPEN_STEPS).abs() < 1.0, "open steps {steps}");
        // Over the fitted wake-up too, and the 2-rank calls' noise.
        let steps = f.get("mpiio.offsets_steps").unwrap().value;
        assert!((steps - OFFSETS_STEPS).abs() < 0.1, "offsets steps {steps}");
        within(&f, "mpiio.close", 2e-4 - 3e-6);
        within(&f, "mpiio.first_open", FIRST_OPEN);
        within(&f, "mpiio.first_close", FIRST_CLOSE);
        // The exchange time's noise is one-sided (|N|): the latency is biased up
        // by about 0.16 µs, the bandwidth is not.
        within(&f, "nodes.nic_bw", NIC_BW);
        within(&f, "nodes.message_bw", NIC_BW);
        assert_eq!(
            f.get("nodes.cache.capacity").unwrap().value,
            (16u64 << 30) as f64
        );
        assert!(f.notes["calibration.collective_call_by_ranks"].contains("4 ranks"));
    }

    /// Copies at the speed of a whole core with 4 ranks on 2: the waiting
    /// ranks leave the cores to the others, and no polled wake-up is fitted.
    #[test]
    fn idle_waiting_ranks_are_found_idle() {
        let mut r = synthetic();
        for p in r
            .pingpong
            .iter_mut()
            .filter(|p| p.test.starts_with("polled"))
        {
            p.seconds /= 2.0;
        }
        let f = fit_all(&r, &base());
        let (word, why) = &f.choices["nodes.waiting_ranks"];
        assert_eq!(word, "idle");
        assert!(why.contains("ran at 1.00 of a core"), "{why}");
        assert!(f.skipped["nodes.polled_wakeup"].contains("waiting ranks idle"));
        assert!(f.skipped["nodes.release_stagger"].contains("not chosen to poll"));
    }

    /// Exchanges that never step up leave the eager limit unfitted (above the
    /// largest size sent), not set at the largest size.
    #[test]
    fn no_rendezvous_step_leaves_the_eager_limit_unfitted() {
        let mut r = synthetic();
        r.beff.retain(|p| p.ranks == 2 || p.bytes <= EAGER);
        let f = fit_all(&r, &base());
        assert!(f.get("nodes.eager_limit").is_none());
        let why = &f.skipped["nodes.eager_limit"];
        assert!(
            why.contains(&format!("no step in the exchange time up to {EAGER} B")),
            "{why}"
        );
    }

    /// The fresh-stall probe: 2 MiB requests of 256 MiB (synthetic: 3 GB/s
    /// copies, 0.4 GB/s fresh, so 0.0895 + 0.6711 s alone); beside 2 spinners
    /// on 2 cores the writer has 2/3 of one. Holding the core, the write takes
    /// 1.5 x 0.7606 = 1.141 s; holding none, 1.5 x 0.0895 + 0.6711 = 0.805 s.
    /// The midpoint is 0.958 s: 1.141 s (the synthetic) chooses `core`,
    /// 0.81 s `none`; a write that took no fresh memory cannot tell.
    #[test]
    fn a_settled_write_beside_spinners_tells_whether_fresh_memory_holds_the_core() {
        let r = synthetic();
        let f = fit_all(&r, &base());
        let (word, says) = &f.choices[FRESH_STALL];
        assert_eq!(word, "core", "{says}");
        let mut r = synthetic();
        r.fresh_stall[0].seconds = 0.81;
        let f = fit_all(&r, &base());
        assert_eq!(
            f.choices[FRESH_STALL].0, "none",
            "{}",
            f.choices[FRESH_STALL].1
        );
        let mut r = synthetic();
        let copy = r.fresh_stall[0].bytes as f64 / CACHE_W;
        r.huge.iter_mut().for_each(|s| s.seconds = copy);
        r.fresh_stall[0].seconds = 1.5 * copy;
        let f = fit_all(&r, &base());
        assert!(!f.choices.contains_key(FRESH_STALL));
        assert!(f.notes[FRESH_STALL].contains("too close to tell"));
        let mut r = synthetic();
        r.fresh_stall.clear();
        assert!(fit_all(&r, &base()).notes[FRESH_STALL].contains("not probed"));
    }

    /// Settled writes as fast in every request size leave huge pages out of
    /// the model, not set at the largest size.
    #[test]
    fn writes_as_fast_in_every_request_size_leave_huge_from_unfitted() {
        let mut r = synthetic();
        let first = r.huge[0].seconds;
        for s in &mut r.huge {
            s.seconds = first * 1.1;
        }
        let f = fit_all(&r, &base());
        assert!(f.get("nodes.cache.huge_from").is_none());
        let why = &f.skipped["nodes.cache.huge_from"];
        assert!(why.contains("no request size up to"), "{why}");
    }

    /// Slow writes of the smallest requests (fresh memory they happened to
    /// find) are outliers: the huge size and fresh memory's rate are still
    /// measured against the quickest writes below it.
    #[test]
    fn a_slow_write_of_small_requests_does_not_hide_the_huge_size() {
        let mut r = synthetic();
        let f = fit_all(&r, &base());
        let want = f.get("nodes.cache.huge_from").unwrap().clone();
        let smallest = r.huge[0].request;
        let quickest = r.huge[0].seconds;
        for s in r.huge.iter_mut().filter(|s| s.request == smallest) {
            s.seconds = 4.0 * quickest;
        }
        let f = fit_all(&r, &base());
        let huge = f.get("nodes.cache.huge_from").unwrap();
        assert_eq!(
            (huge.value, huge.low),
            (want.value, want.low),
            "{}",
            huge.quality
        );
        // and fresh memory is what the huge writes took beyond the quickest
        let fresh = f.get("nodes.cache.fresh_bw").unwrap();
        assert!((fresh.value / FRESH_BW - 1.0).abs() < 0.01, "{fresh:?}");
        assert!(
            fresh.quality.contains("less the 1966080 B"),
            "{}",
            fresh.quality
        );
    }

    /// IOR's 10 us [7, 13] and IOzone's 4 us [0, 8] (its half-width 4 from
    /// the value up): weights 1/9 and 1/16, so (10/9 + 4/16) / (25/144) =
    /// 7.84 us, half-width 1 / sqrt(25/144) = 2.4 us. An IOR estimate with no
    /// finite width leaves IOzone's as it is; IOzone's with none, IOR's.
    #[test]
    fn two_measurements_of_the_write_call_combine_by_their_precision() {
        let ior = Estimate {
            value: 10e-6,
            ci_low: 7e-6,
            ci_high: 13e-6,
            level: LEVEL,
        };
        let iozone = Param {
            key: "nodes.syscall".into(),
            unit: Unit::Time,
            value: 4e-6,
            low: 0.0,
            high: 8e-6,
            probe: "iozone".into(),
            quality: String::new(),
        };
        let e = inverse_variance(&ior, &iozone);
        let close = |a: f64, b: f64| (a - b).abs() < 1e-15;
        assert!(close(e.value, 7.84e-6), "{e:?}");
        assert!(
            close(e.ci_low, 5.44e-6) && close(e.ci_high, 10.24e-6),
            "{e:?}"
        );
        let wide = Estimate {
            ci_high: f64::INFINITY,
            ..ior
        };
        let e = inverse_variance(&wide, &iozone);
        assert_eq!((e.value, e.ci_low, e.ci_high), (4e-6, 0.0, 8e-6));
        let flat = Param {
            high: 4e-6,
            ..iozone
        };
        assert_eq!(inverse_variance(&ior, &flat), ior);
    }

    /// Rounds of the settled writes: fresh memory in the 2 MiB requests at
    /// `FRESH_BW`, half that and 1/1.1 of it (1 MiB requests 256 MiB / 3 GB/s
    /// = 0.0895 s, 2 MiB that plus 0.6711, 1.3422 and 0.7382 s): `fresh_bw`
    /// is the median round's, FRESH_BW / 1.1, its interval FRESH_BW / 2 to
    /// FRESH_BW. The medians' 2 MiB write (0.0895 + 0.7382 s) is still huge.
    #[test]
    fn rounds_of_settled_writes_give_fresh_bw_their_median_and_range() {
        let mut r = synthetic();
        assert_eq!(r.plan.huge_rounds, 3);
        let bytes = r.plan.huge_bytes as f64;
        let copy = bytes / CACHE_W;
        let mut slow = [1.0, 2.0, 1.1].into_iter();
        for s in r.huge.iter_mut() {
            s.seconds = copy;
            if s.request >= HUGE {
                s.seconds += slow.next().unwrap() * bytes / FRESH_BW;
            }
        }
        let f = fit_all(&r, &base());
        let fresh = f.get("nodes.cache.fresh_bw").unwrap();
        let close = |a: f64, b: f64| (a / b - 1.0).abs() < 1e-9;
        assert!(close(fresh.value, FRESH_BW / 1.1), "{fresh:?}");
        assert!(close(fresh.low, FRESH_BW / 2.0), "{fresh:?}");
        assert!(close(fresh.high, FRESH_BW), "{fresh:?}");
        assert!(
            fresh.quality.contains("median over 3 rounds"),
            "{}",
            fresh.quality
        );
        assert_eq!(f.get("nodes.cache.huge_from").unwrap().value, HUGE as f64);
    }

    /// Settled writes whose smallest requests found the warm floor used up
    /// (two thirds of their memory fresh): the huge size is the one that took
    /// all its memory fresh; where every size did, the probe cannot tell.
    #[test]
    fn a_used_up_warm_floor_leaves_huge_from_to_the_writes_all_fresh() {
        let mut r = synthetic();
        let bytes = r.plan.huge_bytes as f64;
        let all_fresh = bytes / CACHE_W + bytes / FRESH_BW;
        for s in r.huge.iter_mut().filter(|s| s.request < HUGE) {
            s.seconds = bytes / CACHE_W + 2.0 / 3.0 * bytes / FRESH_BW;
        }
        let f = fit_all(&r, &base());
        let huge = f.get("nodes.cache.huge_from").unwrap();
        assert_eq!(
            (huge.value, huge.low),
            (HUGE as f64, (HUGE - HUGE / 16 + 1) as f64)
        );
        assert!(
            huge.quality.contains("warm floor was used up"),
            "{}",
            huge.quality
        );
        for s in &mut r.huge {
            s.seconds = all_fresh;
        }
        let f = fit_all(&r, &base());
        assert!(f.get("nodes.cache.huge_from").is_none());
        let why = &f.skipped["nodes.cache.huge_from"];
        assert!(
            why.contains("every request size took all its memory fresh"),
            "{why}"
        );
    }

    /// Exchanges as fast per byte at every size: MPI's buffers were reused
    /// throughout, so neither key is fitted.
    #[test]
    fn exchanges_as_fast_at_every_size_leave_mmap_from_unfitted() {
        let mut r = synthetic();
        for p in r.pingpong.iter_mut().filter(|p| p.bytes >= 1 << 20) {
            p.seconds = p.bytes as f64 / MESSAGE_BW;
        }
        let f = fit_all(&r, &base());
        assert!(f.get("nodes.mmap_from").is_none());
        assert!(f.get("nodes.compute.first_touch").is_none());
        let why = &f.skipped["nodes.mmap_from"];
        assert!(why.contains("no size from which"), "{why}");
    }

    /// Writers of one file as fast as writers of a file each: no inode lock;
    /// writers that do not scale at all: no choice, a note says why; writers
    /// of a file each that gain little, in runs apart from one file's: a lock.
    #[test]
    fn the_inode_lock_follows_what_writers_of_one_file_reach() {
        let f = fit_all(&synthetic(), &base());
        let (word, why) = &f.choices["filesystem.write_lock"];
        assert_eq!(word, "inode", "{why}");
        // Two writers of a file each copied at CACHE_W each, at once.
        let bus = f.get("nodes.memory_bw").unwrap();
        assert!((bus.value / (2.0 * CACHE_W) - 1.0).abs() < 0.01, "{bus:?}");
        assert!(bus.low <= bus.value && bus.value <= bus.high, "{bus:?}");
        let mut r = synthetic();
        for s in r.inode_lock.iter_mut().filter(|s| s.shared) {
            s.seconds /= 2.0;
        }
        assert_eq!(
            fit_all(&r, &base()).choices["filesystem.write_lock"].0,
            "none"
        );
        for s in r.inode_lock.iter_mut().filter(|s| s.writers == 2) {
            s.seconds *= 2.0;
        }
        let f = fit_all(&r, &base());
        assert!(!f.choices.contains_key("filesystem.write_lock"));
        assert!(f.notes["filesystem.write_lock"].contains("did not scale"));
        // A file each at 1.2 × one writer, every run of one file at 0.9 ×:
        // a small gain, but runs apart, so the probe tells.
        for s in r.inode_lock.iter_mut().filter(|s| s.writers == 2) {
            s.seconds /= if s.shared { 0.9 } else { 1.2 };
        }
        let (word, why) = &fit_all(&r, &base()).choices["filesystem.write_lock"];
        assert_eq!(word, "inode", "{why}");
    }

    /// Writers of a new file each at once that keep 3/4 of one writer's rate
    /// give `memory_write_bw` 1.5 × `write_bw` (scaled to IOzone's rate: the
    /// probe ran at half speed throughout, and still finds 3/4); where one
    /// run at once kept as much a writer as one run alone, no fit.
    #[test]
    fn writers_of_new_files_at_once_give_the_write_bus() {
        let mut r = synthetic();
        for s in r.bus_write.iter_mut() {
            s.seconds *= 2.0;
        }
        let f = fit_all(&r, &base());
        let p = f.get("nodes.memory_write_bw").unwrap();
        let bw = f.get("nodes.cache.write_bw").unwrap().value;
        assert!((p.value / (1.5 * bw) - 1.0).abs() < 1e-9, "{p:?}");
        assert!(p.low < p.value && p.value < p.high, "{p:?}");
        let slow = r.bus_write.iter_mut().find(|s| s.writers == 1).unwrap();
        slow.seconds *= 1.4;
        let f = fit_all(&r, &base());
        assert!(f.get("nodes.memory_write_bw").is_none());
        let why = &f.skipped["nodes.memory_write_bw"];
        assert!(why.contains("nothing shared binds"), "{why}");
    }

    /// Two writers of one file that take no longer per call than one: the
    /// lock covers the copy only (`copy`); without the inode lock, no choice.
    /// The synthetic writers wait for each other's whole call (`call`), and
    /// still do where the 1-rank step ran 2.5 times slow as a whole: the
    /// choice measures against the twin's 1-rank call, not that step's.
    #[test]
    fn the_write_lock_span_follows_what_two_writers_of_one_file_take() {
        let chooses_call = |r: &ProbeResults| {
            let f = fit_all(r, &base());
            let (word, why) = &f.choices[WRITE_LOCK_SPAN];
            assert_eq!(word, "call", "{why}");
        };
        chooses_call(&synthetic());
        let mut r = synthetic();
        for x in r
            .ior
            .iter_mut()
            .filter(|x| x.access == "write" && x.ranks == 1)
        {
            x.latency_s *= 2.5;
        }
        chooses_call(&r);
        let mut r = synthetic();
        for x in r
            .ior
            .iter_mut()
            .filter(|x| x.access == "write" && x.ranks == 2)
        {
            x.latency_s = INDEP + SYSCALL + x.transfer as f64 / CACHE_W;
        }
        let f = fit_all(&r, &base());
        let (word, why) = &f.choices[WRITE_LOCK_SPAN];
        assert_eq!(word, "copy", "{why}");
        for s in r.inode_lock.iter_mut().filter(|s| s.shared) {
            s.seconds /= 2.0;
        }
        let f = fit_all(&r, &base());
        assert!(!f.choices.contains_key(WRITE_LOCK_SPAN));
        assert!(f.notes[WRITE_LOCK_SPAN].contains("no inode lock"));
    }

    /// Writers of one file woken from its inode lock: `yield` at the whole
    /// core's time, `hold` at twice it (4 ranks on 2 cores); no choice
    /// without the inode lock.
    #[test]
    fn sleeping_ranks_follow_the_locked_writes() {
        let f = fit_all(&synthetic(), &base());
        let (word, why) = &f.choices["nodes.sleeping_ranks"];
        assert_eq!(word, "yield", "{why}");
        let mut r = synthetic();
        for p in r.pingpong.iter_mut().filter(|p| p.test == "locked_write") {
            p.seconds *= 2.0;
        }
        assert_eq!(
            fit_all(&r, &base()).choices["nodes.sleeping_ranks"].0,
            "hold"
        );
        for s in r.inode_lock.iter_mut().filter(|s| s.shared) {
            s.seconds /= 2.0;
        }
        let f = fit_all(&r, &base());
        assert!(!f.choices.contains_key("nodes.sleeping_ranks"));
        assert!(f.notes["nodes.sleeping_ranks"].contains("no inode lock"));
    }

    /// Long locked writes slower than their share alone explains give no
    /// slice of their own; the short ones, on a whole core, bound it from
    /// below by their copy (8 MiB at the fitted rewrite rate); one size alone
    /// fits nothing.
    #[test]
    fn the_wake_slice_is_at_least_what_short_writes_kept() {
        let mut r = synthetic();
        for p in r.pingpong.iter_mut() {
            if p.test == "locked_write" && p.bytes == 4 * (32 << 20) {
                p.seconds *= 1.5;
            }
        }
        let f = fit_all(&r, &base());
        let p = f.get("nodes.wake_slice").expect("a slice");
        let rewrite = f.get("nodes.cache.rewrite_bw").expect("fitted").value;
        let w8 = (8u64 << 20) as f64 / rewrite;
        assert!((p.value / w8 - 1.0).abs() < 1e-9, "{}", p.quality);
        assert!(p.low >= w8 * (1.0 - 1e-9), "{}", p.low);
        r.pingpong
            .retain(|p| !(p.test == "locked_write" && p.bytes == 4 * (32 << 20)));
        let f = fit_all(&r, &base());
        assert!(f.get("nodes.wake_slice").is_none());
        assert!(f.skipped["nodes.wake_slice"].contains("one size"));
    }

    /// The all-cores probe by hand, 2 cores, 4 threads, 10 units a run: alone
    /// 1 s before and after each round (10 units/s); threads taking 4 s each
    /// run at 2.5 units/s, 10 together, 5 per core: half their rate alone.
    /// Rounds of 2 s and 8 s each bound the interval; a round without its
    /// run alone after it counts for nothing.
    #[test]
    fn the_all_cores_part_is_the_aggregate_rate_per_core_over_the_rate_alone() {
        use crate::calibrate::memcpy::{KernelRounds, KernelsTogether};
        let rounds = |kernel: &str| KernelRounds {
            kernel: kernel.into(),
            reps: 10,
            alone_s: vec![1.0, 1.0, 1.0, 1.0],
            together_s: vec![vec![4.0; 4], vec![2.0; 4], vec![8.0; 4], vec![1.0; 4]],
        };
        let mut r = synthetic();
        r.machine.cores = 2;
        r.all_cores = Some(KernelsTogether {
            threads: 4,
            kernels: vec![rounds("busy_work"), rounds("fft")],
        });
        assert_eq!(rounds("bt").kept(2), [0.5, 1.0, 0.25]);
        let f = fit_all(&r, &base());
        let p = f.get("nodes.compute.flops_all_cores").expect("fitted");
        assert_eq!((p.value, p.low, p.high), (0.5, 0.25, 1.0));
        assert!(f.get("nodes.compute.fft_all_cores").is_some());
        assert!(f.skipped["nodes.compute.bt_all_cores"].contains("not probed"));
    }

    /// Freed memory that stays backed at the release probe's sizes: no
    /// release time; the fresh rate comes from the huge-page probe and the
    /// warm floor from the machine's unreported free memory.
    #[test]
    fn a_release_probe_that_sees_no_hand_back_takes_fresh_memory_from_the_huge_probe() {
        let mut r = synthetic();
        let (quickest, first) = (r.release[0].seconds, r.release[0].bytes as f64);
        for s in &mut r.release {
            s.seconds = quickest * s.bytes as f64 / first;
        }
        r.machine.unreported_free_bytes = Some(3 << 30);
        let f = fit_all(&r, &base());
        assert!(f.skipped.contains_key("nodes.cache.release_time"));
        let fresh = f.get("nodes.cache.fresh_bw").unwrap();
        assert!((fresh.value / FRESH_BW - 1.0).abs() < 0.02, "{fresh:?}");
        assert!(fresh.probe.starts_with("huge"), "{}", fresh.probe);
        assert_eq!(
            f.get("nodes.cache.warm").unwrap().value,
            (3u64 << 30) as f64
        );
        r.machine.unreported_free_bytes = None;
        r.huge.clear();
        let f = fit_all(&r, &base());
        assert!(f.skipped["nodes.cache.fresh_bw"].contains("no fresh memory either"));
        assert!(f.skipped.contains_key("nodes.cache.warm"));
    }

    #[test]
    fn a_missing_probe_is_skipped_with_its_reason() {
        let mut r = synthetic();
        r.iozone.clear();
        r.beff.retain(|p| p.ranks == 2);
        r.pingpong.clear();
        r.huge.clear();
        r.inode_lock.clear();
        let f = fit_all(&r, &base());
        assert!(f.notes["filesystem.write_lock"].contains("no inode-lock probe"));
        assert!(f.skipped["nodes.memory_bw"].contains("not probed"));
        assert!(f.skipped["nodes.read_syscall"].contains("no IOzone"));
        // (IOR's writes need the page cache's write rate: no IOzone, no syscall)
        assert!(f.skipped["nodes.syscall"].contains("no IOzone"));
        assert!(f.skipped["nodes.cache.huge_from"].contains("not probed"));
        assert!(f.skipped["nodes.compute.first_touch"].contains("not probed"));
        assert!(f.skipped["nodes.oversubscribed_wakeup"].contains("more ranks than cores"));
        assert!(f.skipped["nodes.eager_limit"].contains("more ranks than cores"));
        assert!(f.skipped["nodes.oversubscribed_pack_bw"].contains("--two-phase"));
        assert!(f.skipped["nodes.polled_wakeup"].contains("--polled"));
        assert!(!f.choices.contains_key("nodes.waiting_ranks"));
        assert!(
            f.get("mpiio.independent_call")
                .unwrap()
                .quality
                .contains("nodes.read_syscall not fitted")
        );
    }
}
