//! Predicted against measured: two [`RunReport`]s of the same benchmark put side by
//! side, metric by metric, with the signed error of the prediction, and the
//! summary the twin is judged by (median and maximum |error| over the compared
//! metrics, and over the benchmark's headline metrics).
//!
//! What it is for: `piotwin report side-by-side` ([`pair_metrics`],
//! [`render_pairs`]) and `piotwin compare` ([`Comparison`]). What it is not: a
//! statistical test — one run on each side; with `--samples`, the twin's
//! 95 % interval and whether the measured value lies inside it.
//!
//! Error convention: `error = 100 · (predicted − measured) / |measured|` percent, so
//! a positive error is an over-prediction; undefined (`None`) where either side is
//! missing or not finite, or the measured value is zero.

use std::collections::{BTreeMap, BTreeSet};

use super::{Interval, RunReport, median};

/// One headline metric in both reports.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct MetricPair {
    /// Metric name, with its unit (`write_mib_s`).
    pub name: String,
    /// The value measured for real, if that report has it.
    pub measured: Option<f64>,
    /// The value the twin predicted, if that report has it.
    pub predicted: Option<f64>,
    /// `100 · (predicted − measured) / |measured|`; `None` where either is
    /// missing or the measured value is zero.
    pub error_pct: Option<f64>,
}

/// The signed relative error of `predicted` against `measured`, in percent.
pub fn error_pct(measured: f64, predicted: f64) -> Option<f64> {
    (measured != 0.0 && measured.is_finite() && predicted.is_finite())
        .then(|| 100.0 * (predicted - measured) / measured.abs())
}

/// Pairs every metric of either report, in name order. Reports of different
/// benchmarks cannot be compared.
pub fn pair_metrics(
    measured: &RunReport,
    predicted: &RunReport,
) -> Result<Vec<MetricPair>, String> {
    if measured.benchmark != predicted.benchmark {
        return Err(format!(
            "the reports are of different benchmarks: measured `{}`, predicted `{}`",
            measured.benchmark, predicted.benchmark
        ));
    }
    Ok(pair_maps(&measured.metrics, &predicted.metrics))
}

/// Pairs every metric of either map, in name order.
fn pair_maps(
    measured: &BTreeMap<String, f64>,
    predicted: &BTreeMap<String, f64>,
) -> Vec<MetricPair> {
    let names: BTreeSet<&String> = measured.keys().chain(predicted.keys()).collect();
    names
        .into_iter()
        .map(|name| {
            let m = measured.get(name).copied();
            let p = predicted.get(name).copied();
            MetricPair {
                name: name.clone(),
                measured: m,
                predicted: p,
                error_pct: m.zip(p).and_then(|(m, p)| error_pct(m, p)),
            }
        })
        .collect()
}

/// The pairs as a fixed-width table for a terminal.
pub fn render_pairs(title: &str, pairs: &[MetricPair]) -> String {
    let num = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |v| format!("{v:.4}"));
    let width = pairs.iter().map(|p| p.name.len()).max().unwrap_or(6).max(6);
    let mut out = format!("{title}\n");
    out += &format!(
        "{:<width$}  {:>16}  {:>16}  {:>9}\n",
        "metric", "measured", "predicted", "error %"
    );
    for p in pairs {
        let err = p
            .error_pct
            .map_or_else(|| "-".to_string(), |e| format!("{e:+.1}"));
        out += &format!(
            "{:<width$}  {:>16}  {:>16}  {:>9}\n",
            p.name,
            num(p.measured),
            num(p.predicted),
            err
        );
    }
    out
}

/// What a metric is, for ordering the table and for the summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// One of the benchmark's headline results (see [`headline_metrics`]); first in
    /// the table, and summarised on their own too.
    Headline,
    /// Any other time or rate (see [`is_compared`]): in the summary.
    Detail,
    /// A count, flag or identity (`errors`, `valid`, `bytes_written`, a standard
    /// deviation): shown, but not a prediction to judge, so not in the summary.
    Info,
}

/// The headline metrics of a comparison, most important first: those the
/// reports name ([`RunReport::headline`]: the measured one's, then any the
/// predicted one adds) that either report has; for reports that name none
/// (written before reports carried it), every top-level bandwidth
/// ([`crate::report::default_headline`]).
pub fn headline_metrics(
    measured: Option<&RunReport>,
    predicted: Option<&RunReport>,
    names: &[&str],
) -> Vec<String> {
    let mut named: Vec<String> = Vec::new();
    for r in [measured, predicted].into_iter().flatten() {
        for h in &r.headline {
            if !named.contains(h) && names.contains(&h.as_str()) {
                named.push(h.clone());
            }
        }
    }
    if named.is_empty() {
        return crate::report::default_headline(names.iter().copied());
    }
    named
}

/// True for a metric whose prediction is judged: a time or a rate (name ending in
/// `_s`: seconds, or per second as in `_mib_s`, `_ops_s`), a work rate (`mops`,
/// `mflops`) or a time share (`io_percent`, `io_fraction`); not a dispersion
/// (`_stddev`) nor a count or flag.
pub fn is_compared(name: &str) -> bool {
    (name.ends_with("_s") && !name.contains("stddev"))
        || matches!(name, "mops" | "mflops" | "io_percent" | "io_fraction")
}

/// One row of a comparison.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Row {
    /// The metric and both values.
    #[serde(flatten)]
    pub pair: MetricPair,
    /// Headline, detail or info.
    pub kind: Kind,
    /// The twin's 95 % interval of the metric, where it was sampled (`--samples`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval: Option<Interval>,
    /// The measured min–max band, where the real run was repeated (`--repeat`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub band: Option<Interval>,
}

impl Row {
    /// Whether the measured value lies inside the predicted interval; `None`
    /// without an interval or a measured value.
    pub fn inside(&self) -> Option<bool> {
        self.interval
            .zip(self.pair.measured)
            .map(|(i, m)| i.holds(m))
    }

    /// Whether the predicted value lies inside the measured min–max band;
    /// `None` without a band or a prediction.
    pub fn in_band(&self) -> Option<bool> {
        self.band.zip(self.pair.predicted).map(|(b, p)| b.holds(p))
    }

    /// Within goal: |error| at most `limit_pct`, or the prediction inside the
    /// measured band (the real runs themselves spread wider than the error).
    pub fn within_goal(&self, limit_pct: f64) -> bool {
        self.pair.error_pct.is_some_and(|e| e.abs() <= limit_pct) || self.in_band() == Some(true)
    }
}

/// The spread of |error| over a set of metrics.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Summary {
    /// Metrics with an error (both values present, measured non-zero).
    pub count: usize,
    /// Metrics of the set without an error (a side missing, or measured zero).
    pub missing: usize,
    /// Median of |error| in percent (mean of the two middle values for an even count).
    pub median_abs_error: Option<f64>,
    /// Largest |error| in percent.
    pub max_abs_error: Option<f64>,
    /// The metric with the largest |error|.
    pub max_metric: Option<String>,
    /// Metrics with a predicted interval and a measured value: how many, and
    /// how many of those measured values lie inside the interval.
    pub with_interval: usize,
    /// Of `with_interval`, inside it.
    pub inside: usize,
    /// Median interval width, percent of the interval's median.
    pub median_width_pct: Option<f64>,
    /// Metrics with a measured band (repeated real runs) and a prediction.
    pub with_band: usize,
    /// Of `with_band`, predicted inside the band.
    pub in_band: usize,
}

impl Summary {
    /// The summary of `rows`' errors.
    pub fn of<'a>(rows: impl IntoIterator<Item = &'a Row>) -> Summary {
        let mut missing = 0;
        let mut errs: Vec<(f64, &str)> = Vec::new();
        let (mut with_interval, mut inside) = (0, 0);
        let mut widths = Vec::new();
        let (mut with_band, mut in_band) = (0, 0);
        for r in rows {
            if let Some(holds) = r.in_band() {
                with_band += 1;
                in_band += usize::from(holds);
            }
            if let (Some(i), Some(holds)) = (r.interval, r.inside()) {
                with_interval += 1;
                inside += usize::from(holds);
                widths.push(100.0 * (i.high - i.low) / i.median.abs());
            }
            match r.pair.error_pct {
                Some(e) => errs.push((e.abs(), &r.pair.name)),
                None => missing += 1,
            }
        }
        let max = errs
            .iter()
            .copied()
            .fold(None, |best: Option<(f64, &str)>, e| match best {
                Some(b) if b.0 >= e.0 => Some(b),
                _ => Some(e),
            });
        let mut abs: Vec<f64> = errs.iter().map(|e| e.0).collect();
        let n = abs.len();
        Summary {
            count: n,
            missing,
            median_abs_error: median(&mut abs),
            max_abs_error: max.map(|m| m.0),
            max_metric: max.map(|m| m.1.to_string()),
            with_interval,
            inside,
            median_width_pct: median(&mut widths),
            with_band,
            in_band,
        }
    }

    /// One line: `median |error| 12.3 %, max |error| 45.6 % (read_mib_s), 6 metrics`.
    pub fn line(&self) -> String {
        let pct = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |v| format!("{v:.1} %"));
        let mut s = format!(
            "median |error| {}, max |error| {}",
            pct(self.median_abs_error),
            pct(self.max_abs_error)
        );
        if let Some(m) = &self.max_metric {
            s += &format!(" ({m})");
        }
        s += &format!(", {} metrics", self.count);
        if self.missing > 0 {
            s += &format!(
                " ({} without an error: a side missing or measured 0)",
                self.missing
            );
        }
        if self.with_interval > 0 {
            s += &format!(
                "; measured inside the predicted 95 % interval: {} of {} ({:.0} %), median interval width {}",
                self.inside,
                self.with_interval,
                100.0 * self.inside as f64 / self.with_interval as f64,
                pct(self.median_width_pct)
            );
        }
        if self.with_band > 0 {
            s += &format!(
                "; predicted inside the measured min-max band: {} of {}",
                self.in_band, self.with_band
            );
        }
        s
    }
}

/// A benchmark's predicted and measured metrics, ordered for reading: headline
/// metrics first (in [`headline_metrics`] order), then the other compared metrics,
/// then info metrics, each in name order.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Comparison {
    /// The benchmark both reports are of.
    pub benchmark: String,
    /// Every metric of either report.
    pub rows: Vec<Row>,
    /// Over the headline metrics.
    pub headline: Summary,
    /// Over the headline and detail metrics (info metrics are not predictions).
    pub all: Summary,
}

impl Comparison {
    /// Compares the reports that exist (a side whose run failed before writing
    /// its report is `None`: its values are missing). Reports of different
    /// benchmarks, or of another benchmark than `benchmark`, are refused.
    pub fn new(
        benchmark: &str,
        measured: Option<&RunReport>,
        predicted: Option<&RunReport>,
    ) -> Result<Comparison, String> {
        for (side, r) in [("measured", measured), ("predicted", predicted)] {
            if let Some(r) = r
                && r.benchmark != benchmark
            {
                return Err(format!(
                    "the {side} report is of benchmark `{}`, not `{benchmark}`",
                    r.benchmark
                ));
            }
        }
        let empty = BTreeMap::new();
        let pairs = pair_maps(
            measured.map_or(&empty, |r| &r.metrics),
            predicted.map_or(&empty, |r| &r.metrics),
        );
        let names: Vec<&str> = pairs.iter().map(|p| p.name.as_str()).collect();
        let headline = headline_metrics(measured, predicted, &names);
        let kind = |name: &str| {
            if headline.iter().any(|h| h == name) {
                Kind::Headline
            } else if is_compared(name) {
                Kind::Detail
            } else {
                Kind::Info
            }
        };
        let mut rows: Vec<Row> = pairs
            .into_iter()
            .map(|pair| Row {
                kind: kind(&pair.name),
                interval: predicted.and_then(|r| r.intervals.get(&pair.name)).copied(),
                band: measured.and_then(|r| r.bands.get(&pair.name)).copied(),
                pair,
            })
            .collect();
        let position = |r: &Row| headline.iter().position(|h| *h == r.pair.name);
        // Stable sort: names stay in order within detail and info.
        rows.sort_by_key(|r| (r.kind, position(r)));
        let summary =
            |keep: &dyn Fn(Kind) -> bool| Summary::of(rows.iter().filter(|r| keep(r.kind)));
        Ok(Comparison {
            benchmark: benchmark.to_string(),
            headline: summary(&|k| k == Kind::Headline),
            all: summary(&|k| k != Kind::Info),
            rows,
        })
    }

    /// The `metrics` object of `compare.json`: `{name: {predicted, measured,
    /// error}}`, `null` where missing; error in percent.
    pub fn metrics_json(&self) -> serde_json::Value {
        let map: serde_json::Map<String, serde_json::Value> = self
            .rows
            .iter()
            .map(|r| {
                let mut m = serde_json::json!({
                    "predicted": r.pair.predicted,
                    "measured": r.pair.measured,
                    "error": r.pair.error_pct,
                });
                if let Some(i) = r.interval {
                    m["interval"] = serde_json::json!(i);
                    m["inside"] = serde_json::json!(r.inside());
                }
                if let Some(b) = r.band {
                    m["band"] = serde_json::json!(b);
                    m["in_band"] = serde_json::json!(r.in_band());
                }
                (r.pair.name.clone(), m)
            })
            .collect();
        serde_json::Value::Object(map)
    }

    /// The table for a terminal: predicted, measured, error % per metric, in
    /// sections (headline, detail, not summarised), then the summary lines.
    pub fn render(&self, title: &str) -> String {
        let width = self
            .rows
            .iter()
            .map(|r| r.pair.name.len())
            .max()
            .unwrap_or(6)
            .max(6);
        let sampled = self.rows.iter().any(|r| r.interval.is_some());
        let banded = self.rows.iter().any(|r| r.band.is_some());
        let mut out = format!("{title}\n");
        out += &format!(
            "{:<width$}  {:>13}  {:>13}  {:>9}{}{}\n",
            "metric",
            "predicted",
            "measured",
            "error %",
            if banded {
                "  measured min-max band       predicted inside"
            } else {
                ""
            },
            if sampled {
                "  predicted 95 % interval    measured inside"
            } else {
                ""
            }
        );
        let mut section = None;
        for r in &self.rows {
            if section != Some(r.kind) {
                section = Some(r.kind);
                out += match r.kind {
                    Kind::Headline => "-- headline\n",
                    Kind::Detail => "-- detail\n",
                    Kind::Info => "-- not summarised (counts, flags, dispersion)\n",
                };
            }
            let err = r
                .pair
                .error_pct
                .map_or_else(|| "-".to_string(), |e| format!("{e:+.1}"));
            let yes_no = |b: Option<bool>| match b {
                Some(true) => "yes",
                Some(false) => "NO",
                None => "-",
            };
            let span = |i: Interval| {
                format!(
                    "[{}, {}]",
                    format_value(Some(i.low)),
                    format_value(Some(i.high))
                )
            };
            let band = match (banded, r.band) {
                (false, _) => String::new(),
                (true, None) => format!("  {:<28} -", "-"),
                (true, Some(b)) => format!("  {:<28} {}", span(b), yes_no(r.in_band())),
            };
            let interval = match (sampled, r.interval) {
                (false, _) => String::new(),
                (true, None) => "  -".into(),
                (true, Some(i)) => format!("  {}  {}", span(i), yes_no(r.inside())),
            };
            out += &format!(
                "{:<width$}  {:>13}  {:>13}  {:>9}{band}{interval}\n",
                r.pair.name,
                format_value(r.pair.predicted),
                format_value(r.pair.measured),
                err
            );
        }
        out += &format!("summary, headline: {}\n", self.headline.line());
        out += &format!("summary, all compared: {}\n", self.all.line());
        out
    }
}

/// A value with about 5 significant digits, in scientific notation outside
/// [1e-3, 1e6); `-` where missing.
pub fn format_value(v: Option<f64>) -> String {
    match v {
        None => "-".to_string(),
        Some(0.0) => "0".to_string(),
        Some(v) if !v.is_finite() => format!("{v}"),
        Some(v) if (1e-3..1e6).contains(&v.abs()) => {
            let decimals = (4 - v.abs().log10().floor() as i32).clamp(0, 7) as usize;
            format!("{v:.decimals$}")
        }
        Some(v) => format!("{v:.4e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Mode, RunReport};
    use std::collections::BTreeMap;

    fn report(mode: Mode, metrics: &[(&str, f64)]) -> RunReport {
        let metrics: BTreeMap<String, f64> =
            metrics.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        RunReport {
            interrupted: None,
            intervals: Default::default(),
            bands: Default::default(),
            benchmark: "ior".into(),
            mode,
            ranks: 4,
            params: serde_json::Value::Null,
            environment: BTreeMap::new(),
            hints: Default::default(),
            headline: crate::report::headline_among(&metrics, crate::bench::ior::HEADLINE),
            metrics,
            tables: BTreeMap::new(),
            errors: vec![],
        }
    }

    #[test]
    fn repeated_runs_give_medians_and_bands_and_a_prediction_in_the_band_is_within_goal() {
        let mut runs = vec![
            report(Mode::Real, &[("write_mib_s", 100.0), ("read_mib_s", 300.0)]),
            report(Mode::Real, &[("write_mib_s", 160.0), ("read_mib_s", 200.0)]),
            report(Mode::Real, &[("write_mib_s", 120.0)]),
        ];
        runs[1].errors.push("verification failed".into());
        let m = RunReport::median_of(&runs).unwrap();
        // write: 100, 120, 160 -> 120 [100, 160]; read: 200, 300 -> 250 [200, 300].
        assert_eq!(m.metrics["write_mib_s"], 120.0);
        assert_eq!(m.metrics["read_mib_s"], 250.0);
        let b = m.bands["write_mib_s"];
        assert_eq!((b.low, b.high, b.samples, b.level), (100.0, 160.0, 3, 1.0));
        assert_eq!(m.bands["read_mib_s"].samples, 2);
        assert_eq!(
            m.errors,
            vec!["run 2 of 3: verification failed".to_string()]
        );
        // Predicted write 150: +25 %, inside [100, 160]; read 320: +28 %, outside [200, 300].
        let p = report(Mode::Sim, &[("write_mib_s", 150.0), ("read_mib_s", 320.0)]);
        let c = Comparison::new("ior", Some(&m), Some(&p)).unwrap();
        let row = |n: &str| c.rows.iter().find(|r| r.pair.name == n).unwrap().clone();
        assert_eq!(row("write_mib_s").in_band(), Some(true));
        assert!(row("write_mib_s").within_goal(10.0));
        assert_eq!(row("read_mib_s").in_band(), Some(false));
        assert!(!row("read_mib_s").within_goal(25.0));
        assert!(row("read_mib_s").within_goal(28.0));
        assert_eq!((c.headline.with_band, c.headline.in_band), (2, 1));
        let json = c.metrics_json();
        assert_eq!(json["write_mib_s"]["in_band"], true);
        assert_eq!(json["write_mib_s"]["band"]["high"], 160.0);
        assert!(
            c.render("t").contains("[100.00, 160.00]"),
            "{}",
            c.render("t")
        );
    }

    #[test]
    fn error_is_signed_and_relative_to_the_measurement() {
        assert_eq!(error_pct(200.0, 250.0), Some(25.0));
        assert_eq!(error_pct(200.0, 150.0), Some(-25.0));
        assert_eq!(error_pct(0.0, 1.0), None);
    }

    #[test]
    fn pairs_every_metric_of_either_report() {
        let m = report(Mode::Real, &[("read_mib_s", 400.0), ("write_mib_s", 100.0)]);
        let p = report(Mode::Sim, &[("write_mib_s", 90.0), ("extra", 1.0)]);
        let pairs = pair_metrics(&m, &p).unwrap();
        let names: Vec<_> = pairs.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["extra", "read_mib_s", "write_mib_s"]);
        assert_eq!(pairs[1].predicted, None);
        assert_eq!(pairs[1].error_pct, None);
        assert!((pairs[2].error_pct.unwrap() + 10.0).abs() < 1e-12);
        let mut other = p.clone();
        other.benchmark = "btio".into();
        assert!(
            pair_metrics(&m, &other)
                .unwrap_err()
                .contains("different benchmarks")
        );
    }

    fn row(name: &str, m: Option<f64>, p: Option<f64>) -> Row {
        Row {
            interval: None,
            band: None,
            pair: MetricPair {
                name: name.into(),
                measured: m,
                predicted: p,
                error_pct: m.zip(p).and_then(|(m, p)| error_pct(m, p)),
            },
            kind: Kind::Detail,
        }
    }

    #[test]
    fn error_of_a_negative_zero_or_not_finite_measurement() {
        // Relative to |measured|: over-predicting a negative value is a positive error.
        assert_eq!(error_pct(-200.0, -150.0), Some(25.0));
        assert_eq!(error_pct(100.0, 0.0), Some(-100.0));
        assert_eq!(error_pct(-0.0, 5.0), None);
        assert_eq!(error_pct(f64::NAN, 5.0), None);
        assert_eq!(error_pct(5.0, f64::INFINITY), None);
    }

    #[test]
    fn summary_takes_median_and_max_of_absolute_errors() {
        // Errors -50, +10, +20, -30 %: |e| sorted 10 20 30 50, median (20+30)/2.
        let rows = [
            row("a", Some(100.0), Some(50.0)),
            row("b", Some(100.0), Some(110.0)),
            row("c", Some(10.0), Some(12.0)),
            row("d", Some(10.0), Some(7.0)),
            row("zero", Some(0.0), Some(1.0)),
            row("missing", None, Some(1.0)),
        ];
        let s = Summary::of(&rows);
        assert_eq!(s.count, 4);
        assert_eq!(s.missing, 2);
        assert!((s.median_abs_error.unwrap() - 25.0).abs() < 1e-9);
        assert!((s.max_abs_error.unwrap() - 50.0).abs() < 1e-9);
        assert_eq!(s.max_metric.as_deref(), Some("a"));
        // Odd count: the middle value.
        let s = Summary::of(&rows[1..4]);
        assert!((s.median_abs_error.unwrap() - 20.0).abs() < 1e-9);
        assert!((s.max_abs_error.unwrap() - 30.0).abs() < 1e-9);
        // Nothing to summarise.
        let s = Summary::of(&rows[4..]);
        assert_eq!((s.count, s.missing), (0, 2));
        assert_eq!((s.median_abs_error, s.max_abs_error), (None, None));
        assert!(s.line().contains("median |error| -"), "{}", s.line());
    }

    #[test]
    fn comparison_orders_headline_detail_info_and_summarises_each() {
        let mut m = report(
            Mode::Real,
            &[
                ("read_mib_s", 2000.0),
                ("write_mib_s", 3000.0),
                ("write_mean_s", 0.01),
                ("write_mib_s_stddev", 5.0),
                ("errors", 0.0),
            ],
        );
        m.benchmark = "ior".into();
        let p = report(
            Mode::Sim,
            &[
                ("read_mib_s", 2200.0),
                ("write_mib_s", 2400.0),
                ("write_mean_s", 0.0125),
                ("write_mib_s_stddev", 0.0),
                ("errors", 0.0),
            ],
        );
        let c = Comparison::new("ior", Some(&m), Some(&p)).unwrap();
        let order: Vec<(&str, Kind)> = c
            .rows
            .iter()
            .map(|r| (r.pair.name.as_str(), r.kind))
            .collect();
        assert_eq!(
            order,
            [
                ("write_mib_s", Kind::Headline),
                ("read_mib_s", Kind::Headline),
                ("write_mean_s", Kind::Detail),
                ("errors", Kind::Info),
                ("write_mib_s_stddev", Kind::Info),
            ]
        );
        // Headline: -20 % and +10 %; all compared adds +25 %.
        assert_eq!(c.headline.count, 2);
        assert!((c.headline.median_abs_error.unwrap() - 15.0).abs() < 1e-9);
        assert!((c.headline.max_abs_error.unwrap() - 20.0).abs() < 1e-9);
        assert_eq!(c.all.count, 3);
        assert!((c.all.median_abs_error.unwrap() - 20.0).abs() < 1e-9);
        assert_eq!(c.all.max_metric.as_deref(), Some("write_mean_s"));
        let j = c.metrics_json();
        assert_eq!(j["write_mib_s"]["measured"], 3000.0);
        assert_eq!(j["write_mib_s"]["predicted"], 2400.0);
        assert!((j["write_mib_s"]["error"].as_f64().unwrap() + 20.0).abs() < 1e-9);
        assert!(j["errors"]["error"].is_null());
        let text = c.render("t");
        assert!(text.find("write_mib_s").unwrap() < text.find("write_mean_s").unwrap());
        assert!(text.contains("summary, headline: median |error| 15.0 %, max |error| 20.0 % (write_mib_s), 2 metrics"), "{text}");
    }

    #[test]
    fn comparison_with_one_side_missing_has_no_errors() {
        let m = report(Mode::Real, &[("write_mib_s", 100.0)]);
        let c = Comparison::new("ior", Some(&m), None).unwrap();
        assert_eq!(c.rows.len(), 1);
        assert_eq!(c.rows[0].pair.predicted, None);
        assert_eq!((c.all.count, c.all.missing), (0, 1));
        assert!(c.metrics_json()["write_mib_s"]["predicted"].is_null());
        assert!(
            Comparison::new("btio", Some(&m), None)
                .unwrap_err()
                .contains("measured report is of benchmark `ior`")
        );
    }

    #[test]
    fn headlines_are_the_reports_own_else_their_top_level_bandwidths() {
        let names = [
            "n2_write_mb_s",
            "write_mb_s",
            "io_time_s",
            "agg_mib_s",
            "n_x_mb_s",
        ];
        // reports that name no headline (written before they did)
        let mut old = report(Mode::Real, &[]);
        old.headline.clear();
        assert_eq!(
            headline_metrics(Some(&old), None, &names),
            ["write_mb_s", "agg_mib_s", "n_x_mb_s"]
        );
        // the reports' own, in the measured one's order, those either has
        let mut m = report(Mode::Real, &[("read_mib_s", 1.0), ("write_mib_s", 2.0)]);
        m.headline = vec!["read_mib_s".into(), "write_mib_s".into()];
        let p = report(Mode::Sim, &[("io_time_s", 1.0)]);
        let mut p = p;
        p.headline = vec!["io_time_s".into()];
        assert_eq!(
            headline_metrics(
                Some(&m),
                Some(&p),
                &["io_time_s", "read_mib_s", "write_mib_s"]
            ),
            ["read_mib_s", "write_mib_s", "io_time_s"]
        );
        assert_eq!(
            headline_metrics(Some(&m), None, &["write_mib_s"]),
            ["write_mib_s"]
        );
    }

    #[test]
    fn values_keep_about_five_significant_digits() {
        assert_eq!(format_value(None), "-");
        assert_eq!(format_value(Some(0.0)), "0");
        assert_eq!(format_value(Some(8668.69629)), "8668.7");
        assert_eq!(format_value(Some(0.0066854)), "0.0066854");
        assert_eq!(format_value(Some(2.3072e-4)), "2.3072e-4");
        assert_eq!(format_value(Some(138699.14)), "138699");
        assert_eq!(format_value(Some(-12.5)), "-12.500");
    }
}
