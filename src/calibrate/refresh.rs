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
//! the IOzone step's files ([`writes_unlike_calibration`]): else its writes
//! take fresh memory, which the twin charges apart.
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
pub const REFRESHED: [&str; 13] = [
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
    /// Its unit as the scenario writes it: `B/s` or `flop/s`.
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

    /// As a `--set` override.
    pub fn as_override(&self) -> String {
        format!("{}=\"{:.3}{}\"", self.key, self.value(), self.unit)
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

/// `refreshed` without the page cache's write rate (see
/// [`writes_unlike_calibration`]).
pub fn drop_writes(refreshed: &mut Vec<Refreshed>) {
    let key = WRITE_BW.replacen("nodes.", "nodes[0].", 1);
    refreshed.retain(|r| r.key != key);
}

/// The refreshed keys: every key of [`REFRESHED`] that the scenario holds as
/// calibrated and that both the stored probes and `now` fit.
pub fn refreshed(stored: &ProbeResults, now: &ProbeResults, scenario: &Scenario) -> Vec<Refreshed> {
    let (then_fit, now_fit) = (fit_all(stored, scenario), fit_all(now, scenario));
    REFRESHED
        .iter()
        .filter_map(|key| {
            let path = key.replacen("nodes.", "nodes[0].", 1);
            let c = scenario.calibration.get(&path)?;
            let unit = match c.kind {
                KeyKind::Rate => "B/s",
                KeyKind::Flops => "flop/s",
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
        let scenario = Scenario::from_str(
            &format!("{}{text}", include_str!("../../scenarios/default.toml")),
            "test.toml",
        )
        .expect("scenario");
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
