//! `piotwin phases TRACE`: the I/O phases of an application from a trace of
//! one of its runs (`piotwin run … --trace`, or `darshan-dxt-parser` output):
//! the phase table, `phases.json` and the offset-over-tick plot per rank.

use std::path::{Path, PathBuf};

use clap::Args;
use piotwin::phases::{self, model::Phase};
use piotwin::report::plot::{Figure, Panel, Series};
use piotwin::run::CliError;

/// The long help.
pub(crate) const LONG_ABOUT: &str = "\
The I/O phases of an application (Mendez, Rexachs, Luque): reads a trace of its file
calls -- piotwin's own (`piotwin run ... --trace FILE`, real or twin) or Darshan DXT as
darshan-dxt-parser prints it -- merges each rank's calls into local access patterns (a
unit of 1-4 calls repeated with a constant displacement, back to back in the rank's
ticks) and the patterns the ranks share into phases: file, operations, np, request
size, repetitions, weight = np * rep * request size, the initial offset as a function
of the rank, access mode and type, collective, blocking, pointer, and the bandwidth
the traced run reached (weight over the longest time a rank spent in the phase's calls).

Writes DIR/phases.json (the phases and the trace's warnings) and DIR/offsets.svg
(the offset of every call over its tick, one line per rank, up to 8 ranks).";

/// Examples.
pub(crate) const AFTER_HELP: &str = "\
Examples:
  mpiexec -n 4 piotwin run madbench2 2048 8 1 32 1024 1 1 --filetype shared --trace mb.csv
  piotwin phases mb.csv --out mb-phases
  darshan-dxt-parser app.darshan > app.dxt && piotwin phases app.dxt --out app-phases";

/// `piotwin phases`'s options.
#[derive(Debug, Args)]
pub(crate) struct PhasesArgs {
    /// The trace: a `--trace` CSV or darshan-dxt-parser text.
    #[arg(value_name = "TRACE")]
    trace: PathBuf,
    /// Directory for phases.json and offsets.svg (created if missing).
    #[arg(long, value_name = "DIR", default_value = "phases")]
    out: PathBuf,
}

pub(crate) fn run(a: &PhasesArgs) -> Result<(), CliError> {
    let text = std::fs::read_to_string(&a.trace)
        .map_err(|e| CliError::Usage(format!("`{}`: cannot read it: {e}", a.trace.display())))?;
    let trace = phases::read(&a.trace.display().to_string(), &text)
        .map_err(|e| CliError::Usage(e.to_string()))?;
    std::fs::create_dir_all(&a.out).map_err(|e| {
        CliError::Usage(format!(
            "--out `{}`: cannot create it: {e}",
            a.out.display()
        ))
    })?;
    let found = phases::model::phases(&trace.records);
    print!("{}", table(&found));
    for w in &trace.warnings {
        eprintln!("piotwin: warning: {w}");
    }
    let json = serde_json::json!({
        "trace": a.trace.display().to_string(),
        "warnings": trace.warnings,
        "phases": found,
    });
    let path = a.out.join("phases.json");
    write(
        &path,
        serde_json::to_string_pretty(&json)
            .expect("phases serialise")
            .as_bytes(),
    )?;
    let plot = a.out.join("offsets.svg");
    offsets_figure(&trace.records)
        .write_svg(&plot)
        .map_err(|e| CliError::Runtime(e.to_string()))?;
    eprintln!("piotwin: wrote {} and {}", path.display(), plot.display());
    Ok(())
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), CliError> {
    piotwin::report::write_atomic(path, bytes)
        .map_err(|e| CliError::Runtime(format!("`{}`: cannot write: {e}", path.display())))
}

/// The phase table as text.
pub(crate) fn table(found: &[Phase]) -> String {
    let mut out = format!(
        "{:>5} {:<11} {:>4} {:>12} {:>6} {:>14} {:<22} {:<10} {:<11} {:>10} {:>11}\n",
        "phase",
        "operation",
        "np",
        "rs",
        "rep",
        "weight",
        "f(initOffset)",
        "mode",
        "type",
        "collective",
        "traced MB/s"
    );
    for p in found {
        out += &format!(
            "{:>5} {:<11} {:>4} {:>12} {:>6} {:>14} {:<22} {:<10} {:<11} {:>10} {:>11.1}\n",
            p.id,
            p.operations(),
            p.ranks.len(),
            p.request_size(),
            p.reps,
            p.weight,
            p.initial_offset.to_string(),
            p.metadata.access_mode,
            p.metadata.access_type,
            p.metadata
                .collective
                .map_or("?".to_string(), |c| if c { "yes" } else { "no" }
                    .to_string()),
            p.traced_bandwidth() / 1e6,
        );
    }
    out
}

/// Offset over tick, a line per rank (the first 8).
fn offsets_figure(records: &[phases::Record]) -> Figure {
    let mut series: Vec<Series> = Vec::new();
    for r in records.iter().filter(|r| r.offset.is_some()) {
        if series.len() <= r.rank && r.rank < 8 {
            series.resize_with(r.rank + 1, || Series {
                name: String::new(),
                points: Vec::new(),
            });
        }
        if let Some(s) = series.get_mut(r.rank) {
            s.name = format!("rank {}", r.rank);
            s.points
                .push((r.tick as f64, r.offset.unwrap_or(0) as f64 / 1048576.0));
        }
    }
    series.retain(|s| !s.points.is_empty());
    let max_tick = records.iter().map(|r| r.tick).max().unwrap_or(1) as f64;
    Figure {
        title: "Offset of every call over its tick".into(),
        panels: vec![Panel {
            title: String::new(),
            x_label: "tick".into(),
            y_label: "offset [MiB]".into(),
            x_range: (0.0, max_tick.max(1.0)),
            x_ticks: Vec::new(),
            log_y: false,
            series,
        }],
        panel_size: (900, 500),
    }
}
