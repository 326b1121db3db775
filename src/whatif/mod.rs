//! What-if studies over the twin: many runs of one benchmark on variations of
//! one scenario, and what a planner does with them.
//!
//! * [`samples`] — prediction intervals: the calibrated parameters drawn from
//!   their intervals, the twin run on each draw, the median and 95 % interval;
//! * [`sweep`] — sweep files: a base scenario, a benchmark, what varies; the
//!   points checked before any runs, run in parallel threads (and one per MPI
//!   rank under `mpiexec`), kept as they finish, resumed after a stop;
//! * [`plan`] — goal-seek: the cheapest configuration meeting a target on a
//!   metric, by monotone search checked on the way;
//! * [`output`] — a sweep's table (CSV, JSON), its plots and its HTML page;
//! * [`TwinRun`] — one twin run as `piotwin run` takes it, parsed into its benchmark.
//!
//! What it is not: a model. Every number here is a twin run's; this module
//! only chooses which runs to make and summarises them.

pub mod output;
pub mod plan;
pub mod runner;
pub mod samples;
pub mod sweep;

use std::ffi::OsString;
use std::path::Path;

use clap::Parser;

use crate::bench::Bench;

/// One twin run as `piotwin run` takes it: the benchmark with its options, on
/// a scenario file with `--set` overrides. What sweeps, the model error of
/// calibration and re-predicted validation runs all run.
pub struct TwinRun<'a> {
    /// The benchmark, as `piotwin run` names it.
    pub benchmark: &'a str,
    /// Its options.
    pub options: Vec<String>,
    /// The scenario file.
    pub scenario: &'a Path,
    /// Simulated ranks.
    pub ranks: u64,
    /// `--seed`; `None`: the scenario's.
    pub seed: Option<u64>,
    /// `--samples K`.
    pub samples: Option<usize>,
    /// `--set KEY=VALUE` overrides.
    pub overrides: Vec<String>,
}

impl TwinRun<'_> {
    /// The run's command line parsed as `run` parses it: the benchmark, ready
    /// to check or predict; a bad option is the parser's first error line.
    pub fn bench(&self) -> Result<Bench, String> {
        let mut argv: Vec<OsString> = vec!["piotwin".into(), "run".into(), self.benchmark.into()];
        argv.extend(self.options.iter().map(Into::into));
        argv.extend([
            "--sim".into(),
            self.scenario.as_os_str().to_owned(),
            "--ranks".into(),
            self.ranks.to_string().into(),
        ]);
        if let Some(s) = self.seed {
            argv.extend(["--seed".into(), s.to_string().into()]);
        }
        if let Some(k) = self.samples {
            argv.extend(["--samples".into(), k.to_string().into()]);
        }
        for o in &self.overrides {
            argv.extend(["--set".into(), o.into()]);
        }
        let argv = crate::bench::beff_io::cli::normalize_args(argv);
        RunLine::try_parse_from(argv)
            .map(|l| match l.command {
                RunCommand::Run { bench } => bench,
            })
            .map_err(|e| {
                e.to_string()
                    .lines()
                    .next()
                    .unwrap_or("")
                    .trim_start_matches("error: ")
                    .to_string()
            })
    }
}

/// `piotwin run`'s command line alone, to parse a twin run's benchmark.
#[derive(Debug, Parser)]
struct RunLine {
    #[command(subcommand)]
    command: RunCommand,
}

#[derive(Debug, clap::Subcommand)]
enum RunCommand {
    Run {
        #[command(subcommand)]
        bench: Bench,
    },
}
