//! `piotwin phases TRACE`: the I/O phases of an application from a trace of
//! one of its runs (`piotwin run … --trace`, or `darshan-dxt-parser` output):
//! the phase table, `phases.json` and the offset-over-tick plot per rank.

use std::path::{Path, PathBuf};

use clap::Args;
use piotwin::phases::replay::{self, Estimate};
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
the traced run reached, BW_MD: weight over the phase's I/O time with every rank in it
(collective calls from the last rank's arrival to the last return; independent calls
the longest time a rank spent in them). Ranks of a collective call are one phase even
where each brings a different amount; the replay then uses their mean.

Writes DIR/phases.json (the phases and the trace's warnings), DIR/offsets.svg (the
offset of every call over its tick, one line per rank, up to 8 ranks) and
DIR/index.html. Without a replay it prints each phase's IOR command line; with
--replay-sim SCENARIO (the twin) or --replay-real --dir DIR (mpiexec) it runs each
phase as the method's IOR-style run and prints BW_CH (over the replay's data calls,
IOR's wr/rd time, as BW_MD), Time_io = weight / BW_CH, the traced BW_MD and I/O time
(and the time with the waits in collective calls), the error and the usage of the
peak BW_PK (the storage of --scenario or of the replay's scenario); then also
DIR/estimate.svg.";

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
    /// Directory for phases.json, offsets.svg and, with a replay, estimate.svg (created if missing).
    #[arg(long, value_name = "DIR", default_value = "phases")]
    out: PathBuf,
    /// Replay every phase as an IOR-style run in the twin of this scenario: BW_CH, Time_io, error against the trace.
    #[arg(long, value_name = "SCENARIO", conflicts_with = "replay_real")]
    replay_sim: Option<PathBuf>,
    /// Replay every phase as an IOR-style run for real (under mpiexec), its files in --dir.
    #[arg(long, requires = "dir")]
    replay_real: bool,
    /// Scratch directory of real replays (their files are removed after each run).
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// The launcher of real replays (default: this MPI's mpiexec).
    #[arg(long, value_name = "CMD")]
    mpiexec: Option<String>,
    /// A scenario whose storage gives the peak BW_PK (default: --replay-sim's).
    #[arg(long, value_name = "SCENARIO")]
    scenario: Option<PathBuf>,
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
    let peak_scenario = a.scenario.as_ref().or(a.replay_sim.as_ref());
    let peak = match peak_scenario {
        Some(p) => Some(replay::peak_bandwidth(&load(p)?)),
        None => None,
    };
    let estimates = if a.replay_sim.is_some() || a.replay_real {
        let e = replay_all(a, &found, peak)?;
        print!("{}", estimate_table(&found, &e));
        e
    } else {
        println!(
            "\nReplays (IOR-style; run one with `--replay-sim SCENARIO` or `--replay-real --dir DIR`):"
        );
        for p in &found {
            println!(
                "  phase {}: {}",
                p.id,
                replay::ior_command_line(p, &format!("phase{}.dat", p.id))
            );
        }
        Vec::new()
    };
    let json = serde_json::json!({
        "trace": a.trace.display().to_string(),
        "warnings": trace.warnings,
        "phases": found,
        "peak_bytes_per_s": peak,
        "estimates": estimates,
        "time_io_s": estimates.iter().map(|e| e.time_io).sum::<f64>(),
        "traced_io_time_s": estimates.iter().map(|e| e.traced_time).sum::<f64>(),
    });
    if !estimates.is_empty() {
        let fig = estimate_figure(&estimates);
        let p = a.out.join("estimate.svg");
        fig.write_svg(&p)
            .map_err(|e| CliError::Runtime(e.to_string()))?;
    }
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
    let page = a.out.join("index.html");
    write(
        &page,
        html(a, &found, &estimates, &trace.warnings).as_bytes(),
    )?;
    eprintln!(
        "piotwin: wrote {}, {} and {}",
        path.display(),
        plot.display(),
        page.display()
    );
    Ok(())
}

/// The page: the phase table, the estimates, the plots.
fn html(a: &PhasesArgs, found: &[Phase], estimates: &[Estimate], warnings: &[String]) -> String {
    use piotwin::report::html::{STYLE, escape};
    let title = format!("I/O phases of {}", a.trace.display());
    let mut h = format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{t}</title><style>{STYLE}</style></head><body>\n<h1>{t}</h1>\n",
        t = escape(&title)
    );
    for w in warnings {
        h += &format!("<p class=\"failed\">{}</p>\n", escape(w));
    }
    h += "<h2>Phases</h2>\n<table><tr><th>phase</th><th>operation</th><th>np</th><th>rs</th><th>rep</th><th>weight</th><th>f(initOffset)</th><th>mode</th><th>type</th><th>collective</th><th>IOR replay</th></tr>\n";
    for p in found {
        h += &format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td style=\"text-align:left\"><code>{}</code></td></tr>\n",
            p.id,
            escape(&p.operations()),
            p.ranks.len(),
            escape(&p.request_size()),
            p.reps,
            p.weight,
            escape(&p.initial_offset.to_string()),
            escape(&p.metadata.access_mode),
            escape(&p.metadata.access_type),
            p.metadata
                .collective
                .map_or("?", |c| if c { "yes" } else { "no" }),
            escape(&replay::ior_command_line(p, &format!("phase{}.dat", p.id))),
        );
    }
    h += "</table>\n";
    if !estimates.is_empty() {
        h += "<h2>Estimate</h2>\n<pre>";
        h += &escape(&estimate_table(found, estimates));
        h += "</pre>\n<img src=\"estimate.svg\" alt=\"estimated and traced time per phase\">\n";
    }
    h += "<h2>Offset over tick</h2>\n<img src=\"offsets.svg\" alt=\"offset over tick per rank\">\n</body></html>\n";
    h
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

fn load(path: &Path) -> Result<piotwin_sim::Scenario, CliError> {
    piotwin_sim::Scenario::load(path)
        .map_err(|e| CliError::Usage(format!("`{}`: {e}", path.display())))
}

/// Every phase replayed (twin or real), characterised and estimated.
fn replay_all(
    a: &PhasesArgs,
    found: &[Phase],
    peak: Option<f64>,
) -> Result<Vec<Estimate>, CliError> {
    let mut out = Vec::new();
    for p in found {
        let (write, read, options) = match &a.replay_sim {
            Some(scn) => {
                let options = replay::ior_options(p, &format!("phase{}.dat", p.id));
                let run = piotwin::whatif::TwinRun {
                    benchmark: "ior",
                    options: options.clone(),
                    scenario: scn,
                    ranks: p.ranks.len() as u64,
                    seed: None,
                    samples: None,
                    overrides: Vec::new(),
                };
                let bench = run
                    .bench()
                    .map_err(|e| CliError::Runtime(format!("phase {}: {e}", p.id)))?;
                let (report, failure) = bench.predict()?;
                if let Some(f) = failure {
                    return Err(CliError::Runtime(format!(
                        "phase {}: the twin replay failed: {f}",
                        p.id
                    )));
                }
                let (write, read) = replay::data_bandwidths(&report);
                (write, read, options)
            }
            None => real_replay(a, p)?,
        };
        let bw = replay::characterised_bandwidth(p, write, read).ok_or_else(|| {
            CliError::Runtime(format!(
                "phase {}: the replay reported no bandwidth for its operations",
                p.id
            ))
        })?;
        out.push(replay::estimate(p, bw, peak, options));
    }
    Ok(out)
}

/// One phase replayed for real: `mpiexec -n np piotwin run ior …`, its file in
/// --dir, its report and output kept in --out as `phase<id>.json` and `.txt`.
fn real_replay(
    a: &PhasesArgs,
    p: &Phase,
) -> Result<(Option<f64>, Option<f64>, Vec<String>), CliError> {
    let dir = a
        .dir
        .as_ref()
        .expect("clap requires --dir with --replay-real");
    let file = dir.join(format!("piotwin-phase{}.dat", p.id));
    let options = replay::ior_options(p, &file.display().to_string());
    let name = format!("phase{}", p.id);
    let launcher = super::launcher::Launcher::resolve(a.mpiexec.as_deref())?;
    let exe = std::env::current_exe().map_err(|e| CliError::Runtime(e.to_string()))?;
    let mut cmd = launcher.command(p.ranks.len() as u64);
    cmd.arg(exe)
        .arg("run")
        .arg("ior")
        .args(&options)
        .arg("--json")
        .arg(a.out.join(format!("{name}.json")));
    // Run where `piotwin phases` runs: --dir and --out are as the user gave them.
    let side = super::compare::run_side("phases", &name, cmd, Path::new("."), &a.out)?;
    let report = match (side.failure, side.report) {
        (Some(f), _) => {
            return Err(CliError::Runtime(format!(
                "phase {}: the replay failed: {f}",
                p.id
            )));
        }
        (None, Some(r)) => r,
        (None, None) => unreachable!("a run without a failure wrote its report"),
    };
    let (write, read) = replay::data_bandwidths(&report);
    Ok((write, read, options))
}

/// The estimates beside the trace, per phase and in total.
fn estimate_table(found: &[Phase], e: &[Estimate]) -> String {
    let mut out = format!(
        "\n{:>5} {:>12} {:>12} {:>12} {:>12} {:>9} {:>8} {:>12}\n",
        "phase",
        "BW_CH MB/s",
        "Time_io s",
        "BW_MD MB/s",
        "traced s",
        "error %",
        "usage %",
        "w/ waits s"
    );
    for (p, x) in found.iter().zip(e) {
        out += &format!(
            "{:>5} {:>12.1} {:>12.4} {:>12.1} {:>12.4} {:>9.1} {:>8} {:>12.4}\n",
            p.id,
            x.bw_ch / 1e6,
            x.time_io,
            x.bw_md / 1e6,
            x.traced_time,
            x.error_rel,
            x.usage.map_or("-".to_string(), |u| format!("{u:.1}")),
            x.traced_time_with_waits,
        );
    }
    let sum = |f: fn(&Estimate) -> f64| e.iter().map(f).sum::<f64>();
    let (est, traced, waits) = (
        sum(|x| x.time_io),
        sum(|x| x.traced_time),
        sum(|x| x.traced_time_with_waits),
    );
    let rel = |t: f64| {
        if t > 0.0 {
            100.0 * (est - t) / t
        } else {
            f64::NAN
        }
    };
    out += &format!(
        "total Time_io {est:.4} s against {traced:.4} s traced ({:+.1} %); {waits:.4} s with \
         the waits in collective calls ({:+.1} %)\n",
        rel(traced),
        rel(waits)
    );
    out
}

/// Estimated against traced time per phase.
fn estimate_figure(e: &[Estimate]) -> Figure {
    let line = |name: &str, f: &dyn Fn(&Estimate) -> f64| Series {
        name: name.into(),
        points: e.iter().map(|x| (x.phase as f64, f(x))).collect(),
    };
    Figure {
        title: "I/O time per phase: estimated (Time_io) and traced".into(),
        panels: vec![Panel {
            title: String::new(),
            x_label: "phase".into(),
            y_label: "seconds".into(),
            x_range: (0.5, e.len() as f64 + 0.5),
            x_ticks: e
                .iter()
                .map(|x| (x.phase as f64, x.phase.to_string()))
                .collect(),
            log_y: false,
            series: vec![
                line("Time_io", &|x| x.time_io),
                line("traced", &|x| x.traced_time),
            ],
        }],
        panel_size: (700, 450),
    }
}
