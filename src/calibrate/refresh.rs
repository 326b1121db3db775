//! The machine's rates measured again right before a comparison's real runs
//! (`piotwin compare --refresh-rates`): a shared guest's processor speed drifts
//! (the same busy-work loop ran at 5.4 and at 9.4 Gflop/s on one day here), so
//! rates fitted an hour earlier may describe a faster or slower machine than the
//! one the runs meet.
//!
//! The rate probes of the calibration run again exactly as its plan ran them
//! (the in-process kernels at its sizes and repetitions,
//! [`ProbeResults::with_kernels`], and its warm IOzone step, [`warm_iozone`]),
//! are fitted by the same fits, and each refreshed key becomes
//! `calibrated value × (fit now / fit of the stored probes)`. A ratio of the same
//! probe fitted the same way, not a spot rate at one size: copies here run at
//! 26 GB/s at 1 MiB and 8 GB/s at 64 MiB, so one size says little of a fit over
//! sizes.
//!
//! The page cache's write rate is refreshed only where the warm floor holds
//! the IOzone step's files ([`writes_unlike_calibration`]) and the writes
//! moved as the rewrites did ([`writes_took_fresh_memory`]): else its writes
//! took fresh memory, which the twin charges apart.
//!
//! What each core keeps of a kernel's rate with every core busy
//! (`nodes.compute.<kernel>_all_cores`) is measured again too: it is the
//! other cores' availability, which the host moves as it moves the speed (the
//! pattern fill kept 0.81 of a core on both at 17:40 UTC and 0.56 at 19:38
//! on 2026-12-07, and the 2-rank IOR writes of `validation/vm-x` ran as if it
//! kept more).
//!
//! What it is not: a recalibration. Latencies, the network, the device and the
//! collective terms keep their calibrated values; only the rates in
//! [`REFRESHED`], which the processor's speed moves, are measured again.

use piotwin_sim::Scenario;
use piotwin_sim::scenario::KeyKind;

use super::fits::fit_all;
use super::plan::{Probe, Step};
use super::probes::ProbeResults;

/// The keys measured again (calibration's `nodes.` names: the first node group).
pub const REFRESHED: [&str; 19] = [
    "nodes.compute.memcpy",
    "nodes.compute.pattern",
    "nodes.compute.pattern_check",
    "nodes.compute.pattern_cached",
    "nodes.compute.pattern_check_cached",
    "nodes.compute.flops",
    "nodes.compute.bt",
    "nodes.compute.error_norm",
    "nodes.compute.fft",
    "nodes.compute.signal",
    "nodes.compute.pattern_all_cores",
    "nodes.compute.flops_all_cores",
    "nodes.compute.bt_all_cores",
    "nodes.compute.error_norm_all_cores",
    "nodes.compute.fft_all_cores",
    "nodes.compute.signal_all_cores",
    WRITE_BW,
    "nodes.cache.rewrite_bw",
    "nodes.cache.read_bw",
];

const WRITE_BW: &str = "nodes.cache.write_bw";

/// One refreshed key.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Refreshed {
    /// The scenario key (`nodes[0].compute.memcpy`).
    pub key: String,
    /// Its unit as the scenario writes it: `B/s`, `flop/s`, or none (a plain
    /// number: what a core keeps with every core busy).
    pub unit: String,
    /// The scenario's calibrated value.
    pub calibrated: f64,
    /// Fit of the stored probes.
    pub then: f64,
    /// Fit of the probes run now.
    pub now: f64,
}

impl Refreshed {
    /// The value the twin takes: the calibrated one moved as the fits moved.
    pub fn value(&self) -> f64 {
        self.calibrated * self.now / self.then
    }

    /// As a `--set` override (a plain number, what a core keeps with every
    /// core busy, unquoted).
    pub fn as_override(&self) -> String {
        match self.unit.as_str() {
            "" => format!("{}={}", self.key, self.value()),
            unit => format!("{}=\"{:.3}{unit}\"", self.key, self.value()),
        }
    }
}

/// The calibration's warm IOzone step, its scratch file moved to `file`.
pub fn warm_iozone(stored: &ProbeResults, file: &str) -> Option<Step> {
    let mut step = stored
        .plan
        .steps
        .iter()
        .find(|s| s.probe == Probe::Iozone && s.shape == "warm")?
        .clone();
    let at = step.args.iter().position(|a| a == "-f")?;
    *step.args.get_mut(at + 1)? = file.to_string();
    Some(step)
}

/// Why the refresh's IOzone writes are not like calibration's, if they are
/// not: the unreported free memory (`warm`, bytes, measured right before the
/// step) was below twice the largest file the write fit takes. IOzone writes
/// each file again at every record size, after deleting it, and memory freed
/// in large blocks goes back to the host within seconds; where the warm floor
/// cannot hold two such files, the writes take fresh memory, which the twin
/// charges apart (`nodes.cache.fresh_bw`), and their fit is no longer the
/// copy's rate. Before FTIO's runs in `validation/vm-u`, with 0.5 to 0.8 GB
/// unreported, the refreshed write rate came out at 0.36 × calibration's
/// while the copies' rate was 1.11 × (64 KiB records into 256 MiB files:
/// 0.29 to 1.36 GB/s, against 1.25 to 1.45 GB/s with 2 GB unreported).
pub fn writes_unlike_calibration(stored: &ProbeResults, warm: Option<u64>) -> Option<String> {
    let needed = 2 * super::fits::largest_cached_file(&stored.machine);
    let warm = warm?;
    (warm < needed).then(|| {
        format!(
            "{warm} B of free memory in blocks below free page reporting's order before the IOzone step, under twice its largest fitted file ({needed} B): its writes took fresh memory, so nodes.cache.write_bw stays as calibrated"
        )
    })
}

/// Why the refreshed writes took fresh memory though the warm floor held
/// their files, if they did: the write rate moved to less than half of what
/// the rewrite rate moved to (both copy into the page cache; a write only
/// allocates its pages too, so the processor moves them together). Requests
/// of `nodes.cache.huge_from` and more take large free blocks, which the host
/// may already have taken back whatever the small blocks hold: at 20:40 UTC on
/// 2026-12-07 three refreshes in a row gave the write rate 0.08-0.11 ×
/// calibration's with the rewrite rate 0.92 ×, and the twin predicted a 2-rank
/// IOR write −73 %.
pub fn writes_took_fresh_memory(refreshed: &[Refreshed]) -> Option<String> {
    let moved = |key: &str| {
        let key = in_first_group(key);
        refreshed
            .iter()
            .find(|r| r.key == key)
            .map(|r| r.now / r.then)
    };
    let (write, rewrite) = (moved(WRITE_BW)?, moved("nodes.cache.rewrite_bw")?);
    (write < rewrite / 2.0).then(|| {
        format!(
            "the page cache's write rate moved x{write:.3} while its rewrite rate moved x{rewrite:.3}: the writes took fresh memory, so nodes.cache.write_bw stays as calibrated"
        )
    })
}

/// Calibration's `nodes.` name as the scenario key of the first node group.
fn in_first_group(key: &str) -> String {
    key.replacen("nodes.", "nodes[0].", 1)
}

/// `refreshed` without the page cache's write rate (see
/// [`writes_unlike_calibration`]).
pub fn drop_writes(refreshed: &mut Vec<Refreshed>) {
    let key = in_first_group(WRITE_BW);
    refreshed.retain(|r| r.key != key);
}

/// The refreshed keys: every key of [`REFRESHED`] that the scenario holds as
/// calibrated and that both the stored probes and `now` fit.
pub fn refreshed(stored: &ProbeResults, now: &ProbeResults, scenario: &Scenario) -> Vec<Refreshed> {
    let (then_fit, now_fit) = (fit_all(stored, scenario), fit_all(now, scenario));
    REFRESHED
        .iter()
        .filter_map(|key| {
            let path = in_first_group(key);
            let c = scenario.calibration.get(&path)?;
            let unit = match c.kind {
                KeyKind::Rate => "B/s",
                KeyKind::Flops => "flop/s",
                KeyKind::Number => "",
                _ => return None,
            };
            let (calibrated, then, now) =
                (c.value, then_fit.get(key)?.value, now_fit.get(key)?.value);
            (then > 0.0 && now > 0.0 && calibrated > 0.0).then_some(Refreshed {
                key: path,
                unit: unit.into(),
                calibrated,
                then,
                now,
            })
        })
        .collect()
}

/// Several refreshes of one comparison as one: each key's median `now` (as
/// the measured side's median, [`crate::report::median`]), for the keys every
/// refresh measured.
pub fn median(runs: &[Vec<Refreshed>]) -> Vec<Refreshed> {
    let Some(first) = runs.first() else {
        return Vec::new();
    };
    first
        .iter()
        .filter_map(|r| {
            let mut now: Vec<f64> = runs
                .iter()
                .map(|run| run.iter().find(|x| x.key == r.key).map(|x| x.now))
                .collect::<Option<_>>()?;
            Some(Refreshed {
                now: crate::report::median(&mut now)?,
                ..r.clone()
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calibrate::memcpy::{CopySample, FlopSample};
    use crate::calibrate::plan::{Plan, Scale};

    fn copies(rate: f64) -> Vec<CopySample> {
        [64u64 << 20, 128 << 20, 256 << 20, 512 << 20]
            .iter()
            .flat_map(|&b| {
                (0..3).map(move |k| CopySample {
                    bytes: b,
                    // A fixed start plus the copy, a little noise so the fit has spread.
                    seconds: 1e-5 + b as f64 / rate * (1.0 + 0.001 * k as f64),
                })
            })
            .collect()
    }

    fn loops(rate: f64) -> Vec<FlopSample> {
        [1e6, 1e7, 1e8]
            .iter()
            .flat_map(|&f| {
                (0..3).map(move |k| FlopSample {
                    flops: f,
                    seconds: 1e-6 + f / rate * (1.0 + 0.001 * k as f64),
                })
            })
            .collect()
    }

    /// The default scenario with `text` (calibration entries) after it and
    /// `set` over it.
    fn with_calibration(text: &str, set: &[String]) -> Scenario {
        let text = format!("{}{text}", include_str!("../../scenarios/default.toml"));
        Scenario::from_str_with(&text, "test.toml", set).expect("scenario")
    }

    fn results(copy_rate: f64, flop_rate: f64) -> ProbeResults {
        let machine = crate::calibrate::Machine {
            host: "vm".into(),
            cores: 2,
            mem_total_bytes: 24 << 30,
            cpu_cache_bytes: 16 << 20,
            readahead_bytes: None,
            date: None,
            cpu: None,
            unreported_free_bytes: None,
            private_cache_bytes: None,
        };
        let mut r = ProbeResults::new(machine, Plan::new(Scale::Tiny, 2, 4, "/scratch"));
        r.memcpy = copies(copy_rate);
        r.busy_work = loops(flop_rate);
        r
    }

    /// Calibrated at 10 GB/s copies and 8 Gflop/s loops (the scenario says
    /// 12 GB/s: edited after calibration); measured again at 8 GB/s and
    /// 4 Gflop/s: the twin gets 12 × 0.8 = 9.6 GB/s and 8 × 0.5 = 4 Gflop/s, and
    /// keys the scenario does not hold as calibrated stay out.
    #[test]
    fn a_refreshed_rate_moves_the_calibrated_value_as_its_fit_moved() {
        let text = r#"
            [calibration."nodes[0].compute.memcpy"]
            value = "12GB/s"
            low = "11GB/s"
            high = "13GB/s"
            probe = "memcpy"
            quality = "test"
            [calibration."nodes[0].compute.flops"]
            value = "8Gflop/s"
            low = "7Gflop/s"
            high = "9Gflop/s"
            probe = "busy work"
            quality = "test"
        "#;
        let scenario = with_calibration(text, &[]);
        let out = refreshed(&results(10e9, 8e9), &results(8e9, 4e9), &scenario);
        let keys: Vec<&str> = out.iter().map(|r| r.key.as_str()).collect();
        assert_eq!(keys, ["nodes[0].compute.memcpy", "nodes[0].compute.flops"]);
        assert!((out[0].value() / 9.6e9 - 1.0).abs() < 1e-3, "{out:?}");
        assert!((out[1].value() / 4e9 - 1.0).abs() < 1e-3, "{out:?}");
        assert_eq!(
            out[0].as_override(),
            format!("nodes[0].compute.memcpy=\"{:.3}B/s\"", out[0].value())
        );
        assert!(out[1].as_override().ends_with("flop/s\""));
    }

    /// What a core keeps with every core busy is refreshed as the rates are:
    /// calibrated 0.56, the stored rounds kept 0.5 (each of 2 threads at
    /// half the rate alone), the rounds now 0.8: 0.56 × 0.8 / 0.5 = 0.896,
    /// written as a plain number (all its digits) the scenario takes.
    #[test]
    fn what_a_core_keeps_with_every_core_busy_is_refreshed_too() {
        use crate::calibrate::memcpy::{KernelRounds, KernelsTogether};
        let text = r#"
            [calibration."nodes[0].compute.pattern_all_cores"]
            value = 0.56
            low = 0.5
            high = 0.6
            probe = "all cores"
            quality = "test"
        "#;
        let scenario = with_calibration(text, &[]);
        let with_kept = |kept: f64| {
            let mut r = results(1e9, 1e9);
            r.all_cores = Some(KernelsTogether {
                threads: 2,
                kernels: vec![KernelRounds {
                    kernel: "pattern".into(),
                    reps: 10,
                    alone_s: vec![1.0; 4],
                    together_s: vec![vec![1.0 / kept; 2]; 3],
                }],
            });
            r
        };
        let out = refreshed(&with_kept(0.5), &with_kept(0.8), &scenario);
        let kept = out
            .iter()
            .find(|r| r.key == "nodes[0].compute.pattern_all_cores")
            .expect("refreshed");
        assert!((kept.value() - 0.896).abs() < 1e-9, "{kept:?}");
        assert_eq!(
            kept.as_override(),
            format!("nodes[0].compute.pattern_all_cores={}", kept.value())
        );
        // the override parses
        with_calibration(text, &[kept.as_override()]);
    }

    #[test]
    fn refreshes_combine_by_their_median_over_keys_every_one_measured() {
        let r = |key: &str, now: f64| Refreshed {
            key: key.into(),
            unit: "B/s".into(),
            calibrated: 10.0,
            then: 5.0,
            now,
        };
        let runs = vec![
            vec![r("a", 4.0), r("b", 1.0)],
            vec![r("a", 6.0)],
            vec![r("a", 5.0), r("b", 2.0)],
        ];
        let m = median(&runs);
        assert_eq!(m, vec![r("a", 5.0)]);
        assert_eq!(m[0].value(), 10.0);
        assert!(median(&[]).is_empty());
    }

    /// 24 GiB of memory: the write fit takes files up to 512 MiB, so the
    /// refresh's writes need 1 GiB unreported; 1 GiB - 1 B drops the write
    /// rate (and says how much there was), 1 GiB or an unknown amount keep it.
    #[test]
    fn writes_into_a_used_up_warm_floor_leave_the_write_rate_as_calibrated() {
        let r = results(1e9, 1e9);
        let why = writes_unlike_calibration(&r, Some((1 << 30) - 1)).expect("under 1 GiB");
        assert!(
            why.contains("1073741823 B") && why.contains("1073741824 B"),
            "{why}"
        );
        assert_eq!(writes_unlike_calibration(&r, Some(1 << 30)), None);
        assert_eq!(writes_unlike_calibration(&r, None), None);
        let key = |k: &str| Refreshed {
            key: k.into(),
            unit: "B/s".into(),
            calibrated: 1.0,
            then: 1.0,
            now: 1.0,
        };
        let mut v = vec![
            key("nodes[0].cache.write_bw"),
            key("nodes[0].cache.rewrite_bw"),
        ];
        drop_writes(&mut v);
        assert_eq!(v, vec![key("nodes[0].cache.rewrite_bw")]);
    }

    /// A write rate that fell to under half of the rewrite rate's move took
    /// fresh memory: 0.1 against 0.92 says so; 0.5 against 0.9 does not.
    #[test]
    fn writes_far_below_the_rewrites_took_fresh_memory() {
        let r = |key: &str, now: f64| Refreshed {
            key: key.into(),
            unit: "B/s".into(),
            calibrated: 1.0,
            then: 1.0,
            now,
        };
        let fresh = [
            r("nodes[0].cache.write_bw", 0.1),
            r("nodes[0].cache.rewrite_bw", 0.92),
        ];
        let why = writes_took_fresh_memory(&fresh).expect("fresh");
        assert!(why.contains("x0.100") && why.contains("x0.920"), "{why}");
        let warm = [
            r("nodes[0].cache.write_bw", 0.5),
            r("nodes[0].cache.rewrite_bw", 0.9),
        ];
        assert_eq!(writes_took_fresh_memory(&warm), None);
        assert_eq!(writes_took_fresh_memory(&fresh[..1]), None);
    }

    #[test]
    fn the_warm_iozone_step_writes_where_it_is_told() {
        let r = results(1e9, 1e9);
        let step = warm_iozone(&r, "/out/refresh.tmp").expect("the plan has a warm IOzone step");
        assert_eq!(step.ranks, 1);
        let at = step.args.iter().position(|a| a == "-f").unwrap();
        assert_eq!(step.args[at + 1], "/out/refresh.tmp");
        assert!(!step.args.contains(&"-I".to_string()));
    }
}
