//! Run reports: the one schema every benchmark's results take, in both modes, so
//! that `compare` can diff a predicted and a measured report field by field; plus
//! atomic writers for JSON and CSV (a report is never half-written).

pub mod compare;
pub mod html;
pub mod plot;
pub mod validation;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use piotwin_types::Hints;
use serde::{Deserialize, Serialize};

/// Which back end produced a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Measured over MPI-IO.
    Real,
    /// Predicted by the twin.
    Sim,
}

/// A table of results (per repetition, per pattern, per phase, …).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Table {
    /// Column names, with units in the name (`bw_mib_s`, `open_s`).
    pub columns: Vec<String>,
    /// Rows of values, one per column.
    pub rows: Vec<Vec<serde_json::Value>>,
}

/// Everything a run produced. Same schema for real and twin runs.
///
/// Twin reports are bit-identical for the same scenario, seed and options, so
/// nothing in here may depend on the wall clock or the host in sim mode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    /// Benchmark name: `ior`, `b_eff_io`, `btio`, `btio-kernel`, `ftio`, …
    pub benchmark: String,
    /// Real or twin.
    pub mode: Mode,
    /// Number of ranks.
    pub ranks: usize,
    /// The benchmark's options, as given (after defaults).
    pub params: serde_json::Value,
    /// Where it ran: MPI library and host (real), scenario file, name and seed (twin).
    pub environment: BTreeMap<String, String>,
    /// MPI-IO hints in effect (real mode: read back with `MPI_File_get_info`).
    pub hints: Hints,
    /// Every scalar result, e.g. `write_mib_s`; units in the name.
    pub metrics: BTreeMap<String, f64>,
    /// The benchmark's headline metrics among [`RunReport::metrics`], most
    /// important first (what `compare` and validation judge first). Reports
    /// written before it existed have none: see [`default_headline`].
    #[serde(default)]
    pub headline: Vec<String>,
    /// Detail tables, by name (`repetitions`, `patterns`, …).
    pub tables: BTreeMap<String, Table>,
    /// Problems found that did not stop the run (verification mismatches, a failed
    /// pattern whose later patterns were still measured). Empty on a clean run.
    pub errors: Vec<String>,
    /// The signal (`SIGINT`, `SIGTERM`) that stopped the run early; the report
    /// then holds what finished before it. Absent on a run that ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<String>,
    /// Twin runs with `--samples K`: per metric, the median and the 95 %
    /// interval over K runs whose calibrated parameters were drawn from their
    /// intervals (`crate::whatif::samples`). Absent otherwise.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub intervals: BTreeMap<String, Interval>,
    /// Real runs repeated (`compare --repeat K`): per metric, the median and the
    /// min–max band over the K runs (`level` 1: every run inside), the metrics
    /// themselves being those medians ([`RunReport::median_of`]). Absent otherwise.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub bands: BTreeMap<String, Interval>,
}

/// A metric's spread over sampled twin runs: the median and the central
/// interval holding `level` of the samples (2.5 % and 97.5 % quantiles for 0.95).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// The median over the samples.
    pub median: f64,
    /// The lower quantile.
    pub low: f64,
    /// The upper quantile.
    pub high: f64,
    /// The share of samples inside `[low, high]` by construction (0.95).
    pub level: f64,
    /// How many sampled runs gave the metric.
    pub samples: usize,
}

impl Interval {
    /// Whether `value` lies inside `[low, high]`.
    pub fn holds(&self, value: f64) -> bool {
        self.low <= value && value <= self.high
    }
}

/// The median of `xs`, sorting them (mean of the two middle values for an even count).
pub fn median(xs: &mut [f64]) -> Option<f64> {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(xs[n / 2]),
        _ => Some(0.5 * (xs[n / 2 - 1] + xs[n / 2])),
    }
}

/// Write `bytes` to `path` atomically: a temporary file in the same directory,
/// flushed, then renamed over `path`.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{}.tmp-{}", name, std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

impl RunReport {
    /// The report of `runs`, repeated runs of one benchmark with the same
    /// options: every metric is the median over the runs that have it, with its
    /// min–max band in [`RunReport::bands`]; the errors of every run, each
    /// prefixed with its run number (`run 2 of 3: …`); interrupted if any run
    /// was; everything else (parameters, tables) the first run's. `None` for no runs.
    pub fn median_of(runs: &[RunReport]) -> Option<RunReport> {
        let first = runs.first()?;
        let mut values: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
        for r in runs {
            for (name, v) in &r.metrics {
                values.entry(name).or_default().push(*v);
            }
        }
        let mut out = first.clone();
        out.metrics.clear();
        out.bands.clear();
        for (name, mut vs) in values {
            let median = median(&mut vs).expect("a metric some run has");
            let n = vs.len();
            out.metrics.insert(name.to_string(), median);
            out.bands.insert(
                name.to_string(),
                Interval {
                    median,
                    low: vs[0],
                    high: vs[n - 1],
                    level: 1.0,
                    samples: n,
                },
            );
        }
        let k = runs.len();
        out.errors = runs
            .iter()
            .enumerate()
            .flat_map(|(i, r)| {
                r.errors
                    .iter()
                    .map(move |e| format!("run {} of {k}: {e}", i + 1))
            })
            .collect();
        out.interrupted = runs.iter().find_map(|r| r.interrupted.clone());
        out.environment
            .insert("repeats".into(), format!("median of {k} runs"));
        Some(out)
    }

    /// The report as pretty JSON (keys in a fixed order: deterministic).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a RunReport always serialises") + "\n"
    }

    /// Write the JSON report to `path` atomically.
    pub fn write_json(&self, path: &Path) -> std::io::Result<()> {
        write_atomic(path, self.to_json().as_bytes())
    }

    /// The CSV form: a `metric,value` section, then each table as a header row
    /// `table,<columns…>` followed by `<name>,<values…>` rows.
    pub fn to_csv(&self) -> String {
        let mut w = csv::WriterBuilder::new()
            .flexible(true)
            .from_writer(Vec::new());
        let cell = |v: &serde_json::Value| match v {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        w.write_record(["metric", "value"]).expect("in-memory CSV");
        for (k, v) in &self.metrics {
            w.write_record([k.clone(), v.to_string()])
                .expect("in-memory CSV");
        }
        for (k, i) in &self.intervals {
            for (what, v) in [("median", i.median), ("low", i.low), ("high", i.high)] {
                w.write_record([format!("{k}.{what}"), v.to_string()])
                    .expect("in-memory CSV");
            }
        }
        if let Some(signal) = &self.interrupted {
            w.write_record(["interrupted", signal.as_str()])
                .expect("in-memory CSV");
        }
        for (name, t) in &self.tables {
            let mut header = vec!["table".to_string()];
            header.extend(t.columns.iter().cloned());
            w.write_record(&header).expect("in-memory CSV");
            for row in &t.rows {
                let mut rec = vec![name.clone()];
                rec.extend(row.iter().map(cell));
                w.write_record(&rec).expect("in-memory CSV");
            }
        }
        String::from_utf8(w.into_inner().expect("in-memory CSV")).expect("CSV of UTF-8 strings")
    }

    /// Write the CSV form to `path` atomically.
    pub fn write_csv(&self, path: &Path) -> std::io::Result<()> {
        write_atomic(path, self.to_csv().as_bytes())
    }
}

/// The headline of a benchmark that names none: every top-level bandwidth
/// (`*_mib_s`, `*_mb_s` not prefixed by a partition `n<N>_`), in name order.
pub fn default_headline<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    names
        .into_iter()
        .filter(|n| {
            let partition = n.strip_prefix('n').is_some_and(|r| {
                r.split('_')
                    .next()
                    .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
            });
            (n.ends_with("_mib_s") || n.ends_with("_mb_s")) && !partition
        })
        .map(|n| n.to_string())
        .collect()
}

/// The axis label and file stem of a metric's unit group, from its name's
/// suffix; `None` for metrics with no common unit (counts, fractions).
pub fn unit_group(name: &str) -> Option<(&'static str, &'static str)> {
    if name.ends_with("_mib_s") {
        Some(("bandwidth_mib_s", "bandwidth [MiB/s]"))
    } else if name.ends_with("_mb_s") {
        Some(("bandwidth_mb_s", "bandwidth [MB/s = 10^6 B/s]"))
    } else if name.ends_with("_ops_s") {
        Some(("ops_s", "operations per second"))
    } else if name.ends_with("_s") {
        Some(("time_s", "time [s]"))
    } else {
        None
    }
}

/// `names` that are among `metrics`, in that order: a report's headline.
pub fn headline_among(metrics: &BTreeMap<String, f64>, names: &[&str]) -> Vec<String> {
    names
        .iter()
        .filter(|n| metrics.contains_key(**n))
        .map(|n| n.to_string())
        .collect()
}
