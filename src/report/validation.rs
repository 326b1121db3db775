//! The held-out study: every `compare.json` under a directory (one per
//! `piotwin compare` run, as `make validate` writes them), reduced to the
//! headline metrics and summarised over all runs — the figure issue 5 judges the
//! calibrated twin by (median |error| and the largest one).
//!
//! It reads what compare wrote and recomputes nothing but the summary; the
//! pairing and the error formula are `compare.rs`'s. [`predict_again`] instead
//! predicts every stored run anew with sampled intervals (the coverage of
//! today's twin over stored held-out runs).

use std::path::{Path, PathBuf};

use super::RunReport;
use super::compare::{Comparison, Kind, MetricPair, Row, Summary};

/// One headline metric of one compared run.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Entry {
    /// The run: its directory's name (`b_eff_io-T60-n2`).
    pub run: String,
    /// The metric, its values and the error.
    #[serde(flatten)]
    pub row: Row,
}

/// Every headline metric of every `*/compare.json` directly under `dir`, in
/// directory-name order; a run that failed on a side is still listed (its
/// metrics without an error count as missing).
pub fn collect(dir: &Path) -> Result<Vec<Entry>, String> {
    let mut out = Vec::new();
    for path in runs(dir)?.into_iter().map(|r| r.join("compare.json")) {
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("`{}`: {e}", path.display()))?;
        let v: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| format!("`{}`: {e}", path.display()))?;
        let run = path
            .parent()
            .and_then(Path::file_name)
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let headline = v["headline"]
            .as_array()
            .ok_or_else(|| format!("`{}`: no `headline` list", path.display()))?;
        for name in headline.iter().filter_map(|n| n.as_str()) {
            let m = &v["metrics"][name];
            out.push(Entry {
                run: run.clone(),
                row: Row {
                    pair: MetricPair {
                        name: name.to_string(),
                        measured: m["measured"].as_f64(),
                        predicted: m["predicted"].as_f64(),
                        error_pct: m["error"].as_f64(),
                    },
                    kind: super::compare::Kind::Headline,
                    interval: serde_json::from_value(m["interval"].clone()).ok(),
                    band: serde_json::from_value(m["band"].clone()).ok(),
                },
            });
        }
    }
    Ok(out)
}

/// Every run of `collect` predicted again by today's twin, with `samples`
/// sampled runs each (so every headline metric gets its 95 % interval), on
/// `scenario` (default: `DIR/scenario.toml`, where `validation/<machine>/`
/// keeps the calibrated scenario its runs were compared with), against the
/// stored measured report (`<run>/measured.json`). The stored runs' options,
/// machine defaults, seed and the twin's start state are reused: the same
/// workload as measured, from the state the real runs found.
pub fn predict_again(
    dir: &Path,
    scenario: Option<&Path>,
    samples: usize,
) -> Result<Vec<Entry>, String> {
    let scenario = scenario.map_or_else(|| dir.join("scenario.toml"), Path::to_path_buf);
    if !scenario.is_file() {
        return Err(format!(
            "no scenario `{}` to predict with (give --scenario FILE)",
            scenario.display()
        ));
    }
    let mut out = Vec::new();
    for run in runs(dir)? {
        let path = run.join("compare.json");
        let read = |p: &Path| -> Result<serde_json::Value, String> {
            let text = std::fs::read_to_string(p).map_err(|e| format!("`{}`: {e}", p.display()))?;
            serde_json::from_str(&text).map_err(|e| format!("`{}`: {e}", p.display()))
        };
        let c = read(&path)?;
        let bad = |what: &str| format!("`{}`: no {what}", path.display());
        let word = |v: &serde_json::Value, what: &str| {
            v.as_str().map(str::to_string).ok_or_else(|| bad(what))
        };
        let mut options = Vec::new();
        for o in c["options"].as_array().ok_or_else(|| bad("options"))? {
            options.push(word(o, "options")?);
        }
        // The machine defaults compare resolved, as both of its runs got them.
        for r in c["resolved"].as_array().into_iter().flatten() {
            options.push(word(&r["flag"], "resolved flag")?);
            options.push(word(&r["value"], "resolved value")?);
        }
        // The start state compare gave the twin (the free memory the real runs found).
        let mut overrides = Vec::new();
        for o in c["twin_sets"].as_array().into_iter().flatten() {
            overrides.push(word(o, "twin_sets")?);
        }
        let bench = crate::whatif::TwinRun {
            benchmark: &word(&c["benchmark"], "benchmark")?,
            options,
            scenario: &scenario,
            ranks: c["ranks"].as_u64().ok_or_else(|| bad("ranks"))?,
            seed: Some(c["seed"].as_u64().ok_or_else(|| bad("seed"))?),
            samples: Some(samples),
            overrides,
        }
        .bench()
        .map_err(|e| format!("`{}`: {e}", path.display()))?;
        let (predicted, _) = bench.predict().map_err(|e| {
            format!(
                "`{}`: {}",
                path.display(),
                e.message().unwrap_or("interrupted")
            )
        })?;
        let measured: RunReport = serde_json::from_value(read(&run.join("measured.json"))?)
            .map_err(|e| format!("`{}`: {e}", run.join("measured.json").display()))?;
        let comparison = Comparison::new(&predicted.benchmark, Some(&measured), Some(&predicted))?;
        let name = run
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        for row in comparison
            .rows
            .into_iter()
            .filter(|r| r.kind == Kind::Headline)
        {
            out.push(Entry {
                run: name.clone(),
                row,
            });
        }
    }
    Ok(out)
}

/// The run directories directly under `dir` (those holding a `compare.json`), in name order.
fn runs(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut runs: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("`{}`: {e}", dir.display()))?
        .filter_map(|d| d.ok().map(|d| d.path()))
        .filter(|p| p.join("compare.json").is_file())
        .collect();
    runs.sort();
    if runs.is_empty() {
        return Err(format!(
            "`{}` holds no <run>/compare.json (written by `piotwin compare --out`)",
            dir.display()
        ));
    }
    Ok(runs)
}

/// The entries as a table, then the summary over all of them and the count
/// within `limit_pct`.
pub fn render(entries: &[Entry], limit_pct: f64) -> String {
    let num = super::compare::format_value;
    let sampled = entries.iter().any(|e| e.row.interval.is_some());
    let mut s = format!(
        "{:<22} {:<16} {:>12} {:>12} {:>9}{}\n",
        "run",
        "metric",
        "predicted",
        "measured",
        "error %",
        if sampled {
            "  95 % interval              inside"
        } else {
            ""
        }
    );
    for e in entries {
        let p = &e.row.pair;
        let err = p
            .error_pct
            .map_or_else(|| "-".into(), |x| format!("{x:+.1}"));
        let interval = match (sampled, e.row.interval) {
            (false, _) => String::new(),
            (true, None) => "  -".into(),
            (true, Some(i)) => format!(
                "  {:<26} {}",
                format!("[{}, {}]", num(Some(i.low)), num(Some(i.high))),
                match e.row.inside() {
                    Some(true) => "yes",
                    Some(false) => "NO",
                    None => "-",
                }
            ),
        };
        s += &format!(
            "{:<22} {:<16} {:>12} {:>12} {:>9}{interval}\n",
            e.run,
            p.name,
            num(p.predicted),
            num(p.measured),
            err
        );
    }
    let summary = Summary::of(entries.iter().map(|e| &e.row));
    let within = entries
        .iter()
        .filter(|e| e.row.within_goal(limit_pct))
        .count();
    let or_band = match summary.with_band {
        0 => "",
        _ => " or inside the measured band",
    };
    s += &format!(
        "headline metrics of {} runs: {}; {within} of {} within {limit_pct} %{or_band}\n",
        entries
            .iter()
            .map(|e| &e.run)
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        summary.line(),
        summary.count
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_run(dir: &Path, name: &str, body: serde_json::Value) {
        std::fs::create_dir_all(dir.join(name)).unwrap();
        std::fs::write(dir.join(name).join("compare.json"), body.to_string()).unwrap();
    }

    #[test]
    fn collects_headlines_of_every_run_and_summarises_them() {
        let d = tempfile::tempdir().unwrap();
        write_run(
            d.path(),
            "ior-1-n2",
            serde_json::json!({"headline": ["write_mib_s", "read_mib_s"], "metrics": {
                "write_mib_s": {"predicted": 110.0, "measured": 100.0, "error": 10.0},
                "read_mib_s": {"predicted": 70.0, "measured": 100.0, "error": -30.0},
                "write_mean_s": {"predicted": 1.0, "measured": 2.0, "error": -50.0}}}),
        );
        write_run(
            d.path(),
            "b_eff_io-T60-n1",
            serde_json::json!({"headline": ["b_eff_io_mb_s"], "metrics": {
                "b_eff_io_mb_s": {"predicted": 95.0, "measured": 100.0, "error": -5.0}}}),
        );
        std::fs::write(d.path().join("stray.txt"), "not a run").unwrap();
        let e = collect(d.path()).unwrap();
        let names: Vec<(&str, &str)> = e
            .iter()
            .map(|e| (e.run.as_str(), e.row.pair.name.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                ("b_eff_io-T60-n1", "b_eff_io_mb_s"),
                ("ior-1-n2", "write_mib_s"),
                ("ior-1-n2", "read_mib_s")
            ]
        );
        let text = render(&e, 25.0);
        // |errors| 5, 10, 30: median 10, max 30; two within 25 %.
        assert!(
            text.contains("median |error| 10.0 %, max |error| 30.0 % (read_mib_s), 3 metrics"),
            "{text}"
        );
        assert!(text.contains("2 of 3 within 25 %"), "{text}");
        assert!(text.contains("headline metrics of 2 runs"), "{text}");
    }

    #[test]
    fn the_coverage_is_the_share_of_measured_values_inside_their_intervals() {
        let d = tempfile::tempdir().unwrap();
        let interval = |low: f64, high: f64| serde_json::json!({"median": (low + high) / 2.0, "low": low, "high": high, "level": 0.95, "samples": 32});
        write_run(
            d.path(),
            "ior-1-n2",
            serde_json::json!({"headline": ["write_mib_s", "read_mib_s"], "metrics": {
                "write_mib_s": {"predicted": 110.0, "measured": 100.0, "error": 10.0, "interval": interval(90.0, 130.0)},
                "read_mib_s": {"predicted": 70.0, "measured": 100.0, "error": -30.0, "interval": interval(60.0, 80.0)}}}),
        );
        write_run(
            d.path(),
            "ior-2-n2",
            serde_json::json!({"headline": ["write_mib_s"], "metrics": {
                "write_mib_s": {"predicted": 95.0, "measured": 100.0, "error": -5.0, "interval": interval(80.0, 120.0)}}}),
        );
        let e = collect(d.path()).unwrap();
        let s = Summary::of(e.iter().map(|e| &e.row));
        assert_eq!((s.with_interval, s.inside), (3, 2));
        // Widths 40/110, 20/70, 40/100: median 36.4 %.
        assert!((s.median_width_pct.unwrap() - 100.0 * 40.0 / 110.0).abs() < 1e-9);
        let text = render(&e, 25.0);
        assert!(
            text.contains("measured inside the predicted 95 % interval: 2 of 3 (67 %), median interval width 36.4 %"),
            "{text}"
        );
        assert!(text.contains("[60.000, 80.000]           NO"), "{text}");
    }

    #[test]
    fn a_directory_without_runs_is_refused() {
        let d = tempfile::tempdir().unwrap();
        assert!(
            collect(d.path())
                .unwrap_err()
                .contains("no <run>/compare.json")
        );
    }
}
