//! Prediction intervals: the calibrated parameters drawn from their stored
//! 95 % intervals, and the machine's run-to-run spread, K times; the twin run
//! on each draw; per metric the median and the central 95 % of the K results.
//!
//! A draw is a list of `--set KEY=VALUE` overrides, so a sampled scenario is
//! read, checked and run exactly like one the user wrote.
//!
//! * A fitted key `v` with interval `[l, h]` is drawn from a split normal
//!   distribution: standard deviation `(v − l)/1.96` below `v`, `(h − v)/1.96`
//!   above (the intervals calibration writes are not always symmetric: a
//!   latency's is cut at 0). Sizes are rounded to bytes; plain numbers stay
//!   inside `[l, h]`.
//! * The run-to-run spread `σ` of `[run_to_run]` gives one speed factor per
//!   draw, `f = exp(σ·z)`: every fitted rate is multiplied by it and every
//!   fitted time divided by it, as a faster or slower run of the whole machine.
//! * The model error `σm` of `[model_error]` (the twin's miss on
//!   calibration's own probes beyond that noise) gives one more factor per
//!   draw, `exp(σm·z)`, applied to the run's result instead of its inputs:
//!   rates (`*_mib_s`, `*_mb_s`, `*_ops_s`) multiplied, times (`*_s`) divided.
//! * Keys the user overrides (by `--set`, or a sweep's varied keys and
//!   alternatives, and every key below them) are not drawn: they are given.
//!
//! The draws come from a PCG stream seeded by the run's seed, in key order, so
//! the same scenario and seed give the same draws and the same interval.

use std::collections::BTreeMap;

use piotwin_sim::Scenario;
use piotwin_sim::scenario::{Calibrated, KeyKind};
use rand::{Rng, SeedableRng};
use statrs::distribution::{ContinuousCDF, Normal};

use crate::report::{Interval, RunReport};

/// The confidence level of the intervals drawn and reported.
pub const LEVEL: f64 = 0.95;

/// The two-sided 97.5 % quantile of the standard normal distribution: a 95 %
/// interval is `value ± 1.96 σ`.
const Z95: f64 = 1.959_963_984_540_054;

/// What a draw varies: the fitted keys (not overridden), the run-to-run
/// spread and the model error.
#[derive(Debug, Clone, PartialEq)]
pub struct Sampled {
    /// Fitted keys drawn from their intervals, in key order.
    pub keys: Vec<String>,
    /// The run-to-run spread applied as a speed factor (0: none recorded).
    pub spread: f64,
    /// The model error applied to the run's result (0: none recorded).
    pub model_error: f64,
}

/// One draw: the overrides of the sampled run, and the factor its result takes
/// for the model error.
#[derive(Debug, Clone, PartialEq)]
pub struct Draw {
    /// `KEY=VALUE` overrides, added to the user's.
    pub overrides: Vec<String>,
    /// Rates in the result are multiplied by it, times divided.
    pub outcome: f64,
}

/// Whether `key` (a key path such as `server.device.read_bw`) is `given` or lies below it.
fn within(key: &str, given: &str) -> bool {
    key == given
        || key
            .strip_prefix(given)
            .is_some_and(|rest| rest.starts_with('.') || rest.starts_with('['))
}

/// The key of a `KEY=VALUE` override.
pub fn override_key(o: &str) -> &str {
    o.split_once('=').map_or(o, |(k, _)| k).trim()
}

/// What draws of `scenario` vary when the keys of `overrides` are given; an
/// error when nothing would (no `[calibration]` intervals, no `[run_to_run]`).
pub fn sampled(scenario: &Scenario, overrides: &[String]) -> Result<Sampled, String> {
    let given: Vec<&str> = overrides.iter().map(|o| override_key(o)).collect();
    let keys: Vec<String> = scenario
        .calibration
        .iter()
        .filter(|(k, c)| {
            c.low < c.high
                && ((c.value - c.low).is_finite() || (c.high - c.value).is_finite())
                && !given.iter().any(|g| within(k, g))
        })
        .map(|(k, _)| k.clone())
        .collect();
    let spread = scenario.run_to_run.as_ref().map_or(0.0, |r| r.spread);
    let model_error = scenario.model_error.as_ref().map_or(0.0, |r| r.spread);
    if keys.is_empty() && spread == 0.0 && model_error == 0.0 {
        return Err(format!(
            "scenario `{}` has nothing to draw from: no fitted value with an interval under [calibration] \
             (or every one is overridden), no [run_to_run] and no [model_error] spread; `piotwin calibrate` writes them",
            scenario.file
        ));
    }
    Ok(Sampled {
        keys,
        spread,
        model_error,
    })
}

/// One value of a fitted key drawn from its interval, `z` a standard normal
/// deviate. An interval open on one side (a fit whose slope could be zero:
/// `unbounded`) is taken as wide there as on its bounded side.
fn draw_value(c: &Calibrated, z: f64) -> f64 {
    let (below, above) = (c.value - c.low, c.high - c.value);
    let (below, above) = match (below.is_finite(), above.is_finite()) {
        (true, false) => (below, below),
        (false, true) => (above, above),
        _ => (below, above),
    };
    let sd = if z < 0.0 { below } else { above } / Z95;
    let x = c.value + z * sd;
    match c.kind {
        KeyKind::Number => x.clamp(c.low, c.high),
        _ => x,
    }
}

/// `x` written as the scenario reads a value of `kind` (no exponents: the
/// scenario's numbers are decimals). Rates and times stay positive.
fn as_override(key: &str, c: &Calibrated, x: f64) -> String {
    let integral = |v: f64| v.fract() == 0.0;
    let value = match c.kind {
        KeyKind::Size => format!("\"{}B\"", x.round().max(0.0) as u64),
        KeyKind::Rate => format!("\"{:.3}B/s\"", x.max(c.value * 1e-3)),
        KeyKind::Flops => format!("\"{:.3}flop/s\"", x.max(c.value * 1e-3)),
        KeyKind::Time => format!("\"{:.15}s\"", x.max(0.0)),
        KeyKind::Number if integral(c.value) && integral(c.low) && integral(c.high) => {
            format!("{}", x.round())
        }
        KeyKind::Number => format!("{x}"),
    };
    format!("{key}={value}")
}

/// `samples` draws of `scenario`'s fitted parameters, each the overrides to add
/// to `overrides` (the user's, kept as they are); seeded by `seed`.
pub fn draw(
    scenario: &Scenario,
    overrides: &[String],
    samples: usize,
    seed: u64,
) -> Result<Vec<Draw>, String> {
    let what = sampled(scenario, overrides)?;
    let normal = Normal::standard();
    // A stream of its own, apart from the twin's (which the seed also drives).
    let mut rng = rand_pcg::Pcg64::seed_from_u64(seed ^ 0x5a4d_504c_4553_0001);
    let mut z = || {
        let u: f64 = rng.random_range(f64::EPSILON..1.0);
        normal.inverse_cdf(u)
    };
    let given = |k: &str| overrides.iter().any(|o| within(k, override_key(o)));
    Ok((0..samples)
        .map(|_| {
            let speed = (what.spread * z()).exp();
            let outcome = (what.model_error * z()).exp();
            let mut values: BTreeMap<&str, f64> = what
                .keys
                .iter()
                .map(|k| (k.as_str(), draw_value(&scenario.calibration[k], z())))
                .collect();
            if what.spread > 0.0 {
                // The machine's speed this run: every fitted rate and time at once.
                for (k, c) in &scenario.calibration {
                    if given(k) {
                        continue;
                    }
                    let x = values.get(k.as_str()).copied().unwrap_or(c.value);
                    let scaled = match c.kind {
                        KeyKind::Rate | KeyKind::Flops => x * speed,
                        KeyKind::Time => x / speed,
                        KeyKind::Size | KeyKind::Number => continue,
                    };
                    values.insert(k, scaled);
                }
            }
            let overrides = values
                .iter()
                .map(|(k, x)| as_override(k, &scenario.calibration[*k], *x))
                .collect();
            Draw { overrides, outcome }
        })
        .collect())
}

/// `report`'s result as the model error `factor` moves it: rates multiplied,
/// times divided, anything else (counts, fractions) as it is.
pub fn apply_outcome(report: &mut RunReport, factor: f64) {
    for (name, v) in report.metrics.iter_mut() {
        match crate::report::unit_group(name).map(|(stem, _)| stem) {
            Some("time_s") => *v /= factor,
            Some(_) => *v *= factor,
            None => {}
        }
    }
}

/// Quantile `q` of sorted `xs` by linear interpolation between order
/// statistics (Hyndman and Fan's type 7, R's and NumPy's default).
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    let pos = q * (sorted.len() - 1) as f64;
    let (i, frac) = (pos.floor() as usize, pos.fract());
    match sorted.get(i + 1) {
        Some(next) => sorted[i] + frac * (next - sorted[i]),
        None => sorted[i],
    }
}

/// Per metric, the median and the central [`LEVEL`] interval over `reports`
/// (the sampled runs; a metric some runs lack is summarised over those that have it).
pub fn intervals(reports: &[RunReport]) -> BTreeMap<String, Interval> {
    let mut by_metric: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for r in reports {
        for (k, v) in &r.metrics {
            if v.is_finite() {
                by_metric.entry(k).or_default().push(*v);
            }
        }
    }
    by_metric
        .into_iter()
        .map(|(k, mut xs)| {
            xs.sort_by(f64::total_cmp);
            let tail = (1.0 - LEVEL) / 2.0;
            let interval = Interval {
                median: quantile(&xs, 0.5),
                low: quantile(&xs, tail),
                high: quantile(&xs, 1.0 - tail),
                level: LEVEL,
                samples: xs.len(),
            };
            (k.to_string(), interval)
        })
        .collect()
}

/// The text after a sampled run's own output: each headline metric's nominal
/// value (the run above), the median and the 95 % interval of the samples.
pub fn render(report: &RunReport) -> String {
    let Some(k) = report.intervals.values().map(|i| i.samples).max() else {
        return String::new();
    };
    let mut out = format!(
        "\nPrediction intervals ({k} twin runs, calibrated parameters drawn from their {:.0} % intervals):\n",
        LEVEL * 100.0
    );
    out += &format!(
        "{:<28} {:>14} {:>14} {:>14} {:>14} {:>9}\n",
        "metric", "nominal", "median", "low", "high", "width %"
    );
    for name in &report.headline {
        if let (Some(v), Some(i)) = (report.metrics.get(name), report.intervals.get(name)) {
            let width = 100.0 * (i.high - i.low) / i.median.abs();
            out += &format!(
                "{name:<28} {v:>14.6} {:>14.6} {:>14.6} {:>14.6} {width:>9.1}\n",
                i.median, i.low, i.high
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scenario with one fitted device bandwidth, 1 GB/s in [0.8, 1.3] GB/s
    /// (asymmetric, as a fit's interval can be), and one fitted latency.
    fn synthetic(run_to_run: &str) -> Scenario {
        let base = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/scenarios/default.toml"
        ))
        .unwrap();
        let text = format!(
            "{base}\n[calibration.\"server.device.write_bw\"]\nvalue = \"1GB/s\"\nlow = \"0.8GB/s\"\nhigh = \"1.3GB/s\"\nprobe = \"synthetic\"\n\
             [calibration.\"mpiio.open\"]\nvalue = \"100us\"\nlow = \"100us\"\nhigh = \"100us\"\nprobe = \"synthetic\"\n{run_to_run}"
        );
        Scenario::from_str(&text, "synthetic.toml").unwrap()
    }

    fn values(draws: &[Draw], key: &str) -> Vec<f64> {
        let mut v: Vec<f64> = draws
            .iter()
            .map(|d| {
                let o = d
                    .overrides
                    .iter()
                    .find(|o| override_key(o) == key)
                    .expect("drawn");
                let text = o.split_once('=').unwrap().1.trim_matches('"');
                piotwin_sim::units::parse_rate(text).unwrap()
            })
            .collect();
        v.sort_by(f64::total_cmp);
        v
    }

    #[test]
    fn an_interval_open_above_is_drawn_as_wide_as_below() {
        let text = format!(
            "{}\n[calibration.\"server.device.read_bw\"]\nvalue = \"1GB/s\"\nlow = \"0.5GB/s\"\nhigh = \"unbounded\"\nprobe = \"synthetic\"\n",
            std::fs::read_to_string(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/scenarios/default.toml"
            ))
            .unwrap()
        );
        let s = Scenario::from_str(&text, "open.toml").unwrap();
        assert!(s.calibration["server.device.read_bw"].high.is_infinite());
        let draws = draw(&s, &[], 20_000, 3).unwrap();
        let v = values(&draws, "server.device.read_bw");
        assert!(v.iter().all(|x| x.is_finite()));
        let (lo, hi) = (quantile(&v, 0.025), quantile(&v, 0.975));
        assert!((lo / 0.5e9 - 1.0).abs() < 0.02, "2.5 % quantile {lo}");
        assert!((hi / 1.5e9 - 1.0).abs() < 0.02, "97.5 % quantile {hi}");
    }

    #[test]
    fn draws_recover_the_stored_interval() {
        let s = synthetic("");
        let draws = draw(&s, &[], 20_000, 7).unwrap();
        let v = values(&draws, "server.device.write_bw");
        let (lo, med, hi) = (quantile(&v, 0.025), quantile(&v, 0.5), quantile(&v, 0.975));
        assert!((lo / 0.8e9 - 1.0).abs() < 0.01, "2.5 % quantile {lo}");
        assert!((med / 1.0e9 - 1.0).abs() < 0.01, "median {med}");
        assert!((hi / 1.3e9 - 1.0).abs() < 0.01, "97.5 % quantile {hi}");
        // A value with no width is not drawn; the same seed gives the same draws.
        assert!(
            draws
                .iter()
                .all(|d| d.overrides.iter().all(|o| override_key(o) != "mpiio.open"))
        );
        assert!(
            draws.iter().all(|d| d.outcome == 1.0),
            "no [model_error]: results as run"
        );
        assert_eq!(draw(&s, &[], 50, 7).unwrap(), draws[..50].to_vec());
        assert_ne!(draw(&s, &[], 50, 8).unwrap(), draws[..50].to_vec());
    }

    #[test]
    fn the_run_to_run_spread_scales_every_fitted_rate_and_time() {
        let s = synthetic("[run_to_run]\nspread = 0.2\n");
        let draws = draw(&s, &[], 20_000, 1).unwrap();
        // The bandwidth's log spread: its interval's (0.5 / 1.96 / 2 ≈ 0.13 averaged) and 0.2 combined.
        let v: Vec<f64> = values(&draws, "server.device.write_bw")
            .iter()
            .map(|x| x.ln())
            .collect();
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        let sd = (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / v.len() as f64).sqrt();
        assert!(sd > 0.2 && sd < 0.3, "sd of ln(bandwidth) {sd}");
        // The fixed latency is now drawn too: divided by the same speed factor.
        assert!(
            draws
                .iter()
                .all(|d| d.overrides.iter().any(|o| override_key(o) == "mpiio.open"))
        );
    }

    /// A spread is a standard deviation of a log: a very noisy machine's is above
    /// 1 (calibration measured 1.04 under load), and it must read back.
    #[test]
    fn a_spread_above_one_reads_and_a_negative_one_is_refused() {
        let s = synthetic("[run_to_run]\nspread = 1.04\n");
        assert_eq!(s.run_to_run.unwrap().spread, 1.04);
        let base = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/scenarios/default.toml"
        ))
        .unwrap();
        let text = format!("{base}\n[model_error]\nspread = -0.1\n");
        let e = Scenario::from_str(&text, "s.toml").unwrap_err().to_string();
        assert!(e.contains("model_error.spread") && e.contains("≥ 0"), "{e}");
    }

    #[test]
    fn the_model_error_moves_results_not_inputs() {
        let s = synthetic("[model_error]\nspread = 0.3\n");
        let draws = draw(&s, &[], 20_000, 2).unwrap();
        let mut logs: Vec<f64> = draws.iter().map(|d| d.outcome.ln()).collect();
        logs.sort_by(f64::total_cmp);
        let (lo, hi) = (quantile(&logs, 0.025), quantile(&logs, 0.975));
        assert!(
            (lo + 1.96 * 0.3).abs() < 0.02 && (hi - 1.96 * 0.3).abs() < 0.02,
            "{lo} {hi}"
        );
        let mut r: RunReport = serde_json::from_str(
            r#"{"benchmark":"x","mode":"sim","ranks":1,"params":null,"environment":{},"hints":{},
                "metrics":{"write_mib_s":100.0,"write_mean_s":2.0,"errors":1.0},"tables":{},"errors":[]}"#,
        )
        .unwrap();
        apply_outcome(&mut r, 2.0);
        assert_eq!(r.metrics["write_mib_s"], 200.0);
        assert_eq!(r.metrics["write_mean_s"], 1.0);
        assert_eq!(r.metrics["errors"], 1.0);
    }

    #[test]
    fn overridden_keys_are_given_not_drawn_and_nothing_to_draw_is_an_error() {
        let s = synthetic("");
        let given = ["server.device={kind=\"ssd\"}".to_string()];
        assert!(
            sampled(&s, &given)
                .unwrap_err()
                .contains("nothing to draw from")
        );
        let plain = Scenario::from_str(
            &std::fs::read_to_string(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/scenarios/lustre-hdd.toml"
            ))
            .unwrap(),
            "lustre-hdd.toml",
        )
        .unwrap();
        assert!(
            sampled(&plain, &[])
                .unwrap_err()
                .contains("lustre-hdd.toml")
        );
    }

    #[test]
    fn intervals_are_the_median_and_central_95_percent() {
        let reports: Vec<RunReport> = (1..=41)
            .map(|i| {
                let mut r: RunReport = serde_json::from_str(
                    r#"{"benchmark":"x","mode":"sim","ranks":1,"params":null,"environment":{},"hints":{},"metrics":{},"tables":{},"errors":[]}"#,
                )
                .unwrap();
                r.metrics.insert("bw_mb_s".into(), i as f64);
                r
            })
            .collect();
        let i = intervals(&reports)["bw_mb_s"];
        // Type 7: the 2.5 % quantile of 1..=41 sits at position 0.025 · 40 = 1, i.e. 2.
        assert_eq!((i.median, i.high, i.samples), (21.0, 40.0, 41));
        assert!((i.low - 2.0).abs() < 1e-12, "{}", i.low);
    }
}
