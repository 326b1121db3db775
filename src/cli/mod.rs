//! The command line: `piotwin run <benchmark> …`, `piotwin calibrate …` (fit a
//! scenario from real probes), `piotwin compare <benchmark> …` (real against
//! twin, see `compare.rs`), `piotwin sweep FILE` and `piotwin plan …` (what-if
//! studies over many twin runs, `sweep.rs`, `plan.rs`), `piotwin scenario check
//! FILE`, `piotwin report side-by-side`, `piotwin report validation`.
//!
//! The benchmarks `piotwin run` (and so `compare`) knows are registered in
//! `piotwin::bench` (`src/bench/mod.rs`): adding one is its folder there
//! (`params`, `program`, `output`, `tests`, and `cli`: its options as a
//! `clap::Args` struct with a flattened `CommonArgs`, `program(&self, &Common)`
//! that checks them and builds the program, `impl piotwin::run::Benchmark`),
//! its `pub mod` line and its line in the `benchmarks!` registry. `run` then
//! resolves the common options (everything checked, nothing run yet), builds
//! the program and executes it; `Bench::check` does the same without executing
//! (`piotwin compare` checks options with it before launching anything).
//!
//! Exit codes: 0 success; 1 a runtime failure (I/O error, failed verification, a
//! back end that failed — the report is still written with what was measured);
//! 2 bad input (unknown flag, bad value, unreadable scenario, unwritable output),
//! reported before anything runs or is written.

mod calibrate;
mod compare;
mod launcher;
mod phases;
mod plan;
mod sweep;

use std::ffi::OsString;

/// The command line with the shorthands of `compare` and `run b_eff_io` expanded
/// (see `compare::normalize_compare_args`, `beff_io::cli::normalize_args`).
pub(crate) fn normalize_args(argv: Vec<OsString>) -> Vec<OsString> {
    piotwin::bench::beff_io::cli::normalize_args(compare::normalize_compare_args(argv))
}

use std::path::{Path, PathBuf};

use clap::{Parser, Subcommand};
use piotwin::bench::Bench;
use piotwin::report::{RunReport, compare as report_compare};
use piotwin::run::CliError;

use piotwin_sim::Scenario;

const ABOUT: &str = "Dual-mode parallel I/O analyser: classic parallel I/O benchmarks run for real over MPI-IO or in a twin of the storage system";

const LONG_ABOUT: &str = "\
Dual-mode parallel I/O analyser. Every benchmark is written once and runs either
  * for real:     mpiexec -n 4 piotwin run ior -a MPIIO -b 16m -t 1m -c
  * in the twin:  piotwin run ior -a MPIIO -b 16m -t 1m -c --sim cluster.toml --ranks 1024
so that predicted and measured results stand side by side (same report schema).";

/// The `piotwin` command line.
#[derive(Debug, Parser)]
#[command(name = "piotwin", version, about = ABOUT, long_about = LONG_ABOUT)]
pub(crate) struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a benchmark: for real (one rank of an mpiexec job), in the twin (--sim), or dry (--dry-run).
    Run {
        #[command(subcommand)]
        bench: Bench,
    },
    /// Run a benchmark for real (launching mpiexec) and in the twin with the same options; print and write predicted against measured (JSON, HTML).
    #[command(long_about = compare::LONG_ABOUT, after_help = compare::AFTER_HELP)]
    Compare(Box<compare::CompareArgs>),
    /// Work with scenario files (descriptions of a storage system for the twin).
    Scenario {
        #[command(subcommand)]
        command: ScenarioCommand,
    },
    /// Calibrate the twin from probes run for real on this machine; write a calibrated scenario.
    #[command(long_about = calibrate::LONG_ABOUT, after_help = calibrate::AFTER_HELP)]
    Calibrate(Box<calibrate::CalibrateArgs>),
    /// Run every point of a sweep file in the twin (threads, or one share per rank under mpiexec); table, plots and page; resumable.
    #[command(long_about = sweep::LONG_ABOUT, after_help = sweep::AFTER_HELP)]
    Sweep(Box<sweep::SweepArgs>),
    /// Find the cheapest configuration whose twin prediction meets a target (monotone search, checked); write the chosen scenario.
    #[command(long_about = plan::LONG_ABOUT, after_help = plan::AFTER_HELP)]
    Plan(Box<plan::PlanArgs>),
    /// The I/O phases of an application from a trace of one run (`run --trace`, or Darshan DXT text).
    #[command(long_about = phases::LONG_ABOUT, after_help = phases::AFTER_HELP)]
    Phases(Box<phases::PhasesArgs>),
    /// Work with run reports (the JSON written by --json).
    Report {
        #[command(subcommand)]
        command: ReportCommand,
    },
}

#[derive(Debug, Subcommand)]
enum ReportCommand {
    /// Print a measured and a predicted report of one benchmark side by side, with the error of each metric.
    SideBySide {
        /// The report of the real run (JSON).
        #[arg(long, value_name = "FILE")]
        measured: PathBuf,
        /// The report of the twin run (JSON).
        #[arg(long, value_name = "FILE")]
        predicted: PathBuf,
    },
    /// Summarise a held-out study: the headline metrics of every DIR/<run>/compare.json
    /// (as `make validate` writes them), the median and largest |error|, and how many are
    /// within --limit %. Also writes DIR/validation.json. Exit code 1 when the median
    /// |error| is above --limit (or no headline metric has an error).
    Validation {
        /// The directory holding one `piotwin compare --out` directory per run.
        #[arg(value_name = "DIR")]
        dir: PathBuf,
        /// The |error| a headline metric should stay within, percent; the run fails when
        /// the median |error| is above it.
        #[arg(long, value_name = "PCT", default_value_t = 25.0)]
        limit: f64,
        /// Predict every stored run again with today's twin, K sampled runs each: every
        /// headline metric gets its 95 % interval, the summary its coverage.
        #[arg(long, value_name = "K", value_parser = clap::value_parser!(u64).range(2..))]
        samples: Option<u64>,
        /// The scenario for --samples (default: DIR/scenario.toml).
        #[arg(long, value_name = "FILE", requires = "samples")]
        scenario: Option<PathBuf>,
    },
}

/// Reads a JSON run report; a missing or malformed file is bad input.
fn read_report(path: &Path, flag: &str) -> Result<RunReport, CliError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        CliError::Usage(format!("{flag} `{}`: cannot read it: {e}", path.display()))
    })?;
    serde_json::from_str(&text).map_err(|e| {
        CliError::Usage(format!(
            "{flag} `{}`: not a piotwin run report (line {}, column {}): {e}",
            path.display(),
            e.line(),
            e.column()
        ))
    })
}

#[derive(Debug, Subcommand)]
enum ScenarioCommand {
    /// Load and check a scenario file; print its summary or the first error (exit code 2).
    Check {
        /// The scenario file (TOML).
        file: PathBuf,
    },
    /// Print the scenario schema: every key, what it holds, its default, what it is (Markdown).
    Schema,
}

/// Runs the parsed command line.
pub(crate) fn run(cli: Cli) -> Result<(), CliError> {
    match cli.command {
        Command::Run { bench } => bench.run(),
        Command::Compare(args) => compare::run(&args),
        Command::Calibrate(args) => calibrate::run(&args),
        Command::Sweep(args) => sweep::run(&args),
        Command::Plan(args) => plan::run(&args),
        Command::Phases(args) => phases::run(&args),
        Command::Report {
            command:
                ReportCommand::Validation {
                    dir,
                    limit,
                    samples,
                    scenario,
                },
        } => {
            let entries = match samples {
                None => piotwin::report::validation::collect(&dir),
                Some(k) => piotwin::report::validation::predict_again(
                    &dir,
                    scenario.as_deref(),
                    k as usize,
                ),
            }
            .map_err(|e| CliError::Usage(format!("report validation: {e}")))?;
            print!("{}", piotwin::report::validation::render(&entries, limit));
            let json = serde_json::to_string_pretty(&entries).expect("entries serialise");
            let out = dir.join("validation.json");
            piotwin::report::write_atomic(&out, json.as_bytes())
                .map_err(|e| CliError::Runtime(format!("cannot write `{}`: {e}", out.display())))?;
            println!("wrote {}", out.display());
            let summary = piotwin::report::compare::Summary::of(entries.iter().map(|e| &e.row));
            match summary.median_abs_error {
                Some(m) if m <= limit => Ok(()),
                Some(m) => Err(CliError::Runtime(format!(
                    "report validation: median |error| {m:.1} % is above --limit {limit} %"
                ))),
                None => Err(CliError::Runtime(
                    "report validation: no headline metric has an error to judge".into(),
                )),
            }
        }
        Command::Scenario {
            command: ScenarioCommand::Check { file },
        } => {
            let scenario = Scenario::load(&file)
                .map_err(|e| CliError::Usage(format!("scenario `{}`: {e}", file.display())))?;
            println!("{scenario}");
            Ok(())
        }
        Command::Scenario {
            command: ScenarioCommand::Schema,
        } => {
            print!("{}", piotwin_sim::scenario::schema::markdown());
            Ok(())
        }
        Command::Report {
            command:
                ReportCommand::SideBySide {
                    measured,
                    predicted,
                },
        } => {
            let m = read_report(&measured, "--measured")?;
            let p = read_report(&predicted, "--predicted")?;
            let pairs = report_compare::pair_metrics(&m, &p).map_err(CliError::Usage)?;
            let title = format!(
                "{}: measured ({} ranks, {:?}) against predicted ({} ranks, {:?})",
                m.benchmark, m.ranks, m.mode, p.ranks, p.mode
            );
            print!("{}", report_compare::render_pairs(&title, &pairs));
            Ok(())
        }
    }
}
