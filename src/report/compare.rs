//! Predicted against measured: two [`RunReport`]s of the same benchmark put side by
//! side, metric by metric, with the signed error of the prediction.

use super::RunReport;

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
    let names: std::collections::BTreeSet<&String> = measured
        .metrics
        .keys()
        .chain(predicted.metrics.keys())
        .collect();
    Ok(names
        .into_iter()
        .map(|name| {
            let m = measured.metrics.get(name).copied();
            let p = predicted.metrics.get(name).copied();
            MetricPair {
                name: name.clone(),
                measured: m,
                predicted: p,
                error_pct: m.zip(p).and_then(|(m, p)| error_pct(m, p)),
            }
        })
        .collect())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Mode, RunReport};
    use std::collections::BTreeMap;

    fn report(mode: Mode, metrics: &[(&str, f64)]) -> RunReport {
        RunReport {
            benchmark: "ior".into(),
            mode,
            ranks: 4,
            params: serde_json::Value::Null,
            environment: BTreeMap::new(),
            hints: Default::default(),
            metrics: metrics.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            tables: BTreeMap::new(),
            errors: vec![],
        }
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
}
