//! Running one benchmark from its command line: the options every benchmark
//! takes ([`CommonArgs`], resolved into [`Common`]: where it runs, seeds,
//! outputs, hints), what a benchmark gives the runner besides its program
//! ([`Benchmark`]: text, report, failure, files), and [`execute`], which runs
//! it on the back end chosen and writes its reports. The `piotwin` binary's
//! registry lists the benchmarks; each benchmark's options live in its own
//! folder (`bench/<name>/cli.rs`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::Args;
use piotwin_sim::{Scenario, SimOptions};
use piotwin_types::stop;

use crate::backend;
use crate::backend::trace::{CallRecord, Traced, trace_rows, write_trace};
use crate::ctx::{Hints, RankProgram};
use crate::report::{Interval, Mode, RunReport};
use crate::whatif::samples;

/// What went wrong, and so the exit code.
#[derive(Debug)]
pub enum CliError {
    /// Bad input: exit code 2, nothing written.
    Usage(String),
    /// Failure while running: exit code 1.
    Runtime(String),
    /// The same failure on a rank other than 0 of a real run: exit code 1, rank 0 says why.
    Quiet,
    /// A signal stopped the run early (its reports hold what finished):
    /// exit code 128 + the signal (130 for SIGINT), the message on rank 0.
    Interrupted {
        /// The signal number.
        signal: i32,
        /// What to say; `None` where another rank says it.
        message: Option<String>,
    },
}

impl CliError {
    /// The process's exit code: 2 bad input, 1 a failure while running.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_) => 2,
            CliError::Runtime(_) | CliError::Quiet => 1,
            CliError::Interrupted { signal, .. } => (128 + signal).clamp(1, 255) as u8,
        }
    }
    /// A run stopped early by `signal`; `kept` says where what finished is.
    pub fn interrupted(signal: i32, kept: &str) -> CliError {
        CliError::Interrupted {
            signal,
            message: Some(format!(
                "interrupted by {}: {kept}",
                stop::signal_name(signal)
            )),
        }
    }
    /// The message for stderr; `None` where another rank reports it.
    pub fn message(&self) -> Option<&str> {
        match self {
            CliError::Usage(m) | CliError::Runtime(m) => Some(m),
            CliError::Quiet => None,
            CliError::Interrupted { message, .. } => message.as_deref(),
        }
    }
}

/// Options every benchmark takes: where it runs, seeds, outputs, hints.
#[derive(Debug, Args)]
pub struct CommonArgs {
    /// Run in the twin of the storage system described by this scenario file (TOML) instead of for real.
    #[arg(long, value_name = "SCENARIO", help_heading = "Where it runs")]
    sim: Option<PathBuf>,
    /// Override a scenario value for --sim, e.g. --set filesystem.stripe_count=8 --set nodes[0].memory=16GiB (repeatable; checked like the file).
    #[arg(long = "set", value_name = "KEY=VALUE", help_heading = "Where it runs")]
    set: Vec<String>,
    /// Number of ranks for --sim or --dry-run (for real runs, mpiexec -n decides).
    #[arg(long, value_name = "N", help_heading = "Where it runs", allow_hyphen_values = true,
          value_parser = clap::value_parser!(u64).range(1..))]
    ranks: Option<u64>,
    /// Twin only: simulate every repetition of a time- or count-driven loop (no fast-forward of steady repetitions).
    #[arg(long, help_heading = "Where it runs")]
    exact: bool,
    /// Twin only: also run the twin K times, the calibrated parameters drawn from their 95 % intervals (and the machine's run-to-run spread), and report each metric's median and 95 % interval (the draws seeded by --seed).
    #[arg(long, value_name = "K", help_heading = "Where it runs",
          value_parser = clap::value_parser!(u64).range(2..))]
    samples: Option<u64>,
    /// Dry run (IOR's dryRun): run the benchmark's logic on --ranks N ranks with zero-cost I/O, no MPI, no scenario. Times are overhead only; no report is written.
    #[arg(long, help_heading = "Where it runs")]
    dry_run: bool,
    /// Seed of the twin's RNG and of the benchmark's random choices (IOR -z order, data pattern). Default: the scenario's seed in the twin, 0 otherwise.
    #[arg(long, value_name = "S", help_heading = "Outputs and hints")]
    seed: Option<u64>,
    /// Write the JSON run report to FILE (atomically; rank 0 only).
    #[arg(long, value_name = "FILE", help_heading = "Outputs and hints")]
    json: Option<PathBuf>,
    /// Write the CSV form of the run report to FILE (atomically; rank 0 only).
    #[arg(long, value_name = "FILE", help_heading = "Outputs and hints")]
    csv: Option<PathBuf>,
    /// Record every file call of every rank (rank, file, MPI-IO or POSIX call, offset in bytes and etypes, bytes, logical tick, start, duration) and write them to FILE as CSV (rank 0, atomically); the input of `piotwin phases`. The twin then runs every repetition (as --exact) and writes virtual times.
    #[arg(long, value_name = "FILE", help_heading = "Outputs and hints")]
    trace: Option<PathBuf>,
    /// An MPI-IO hint, e.g. --hint cb_nodes=4 --hint romio_cb_write=enable (repeatable; wins over --hints-file).
    #[arg(
        long = "hint",
        value_name = "KEY=VALUE",
        help_heading = "Outputs and hints"
    )]
    hints: Vec<String>,
    /// A file of MPI-IO hints: one `key=value` (or `key value`) per line, `#` comments.
    #[arg(long, value_name = "FILE", help_heading = "Outputs and hints")]
    hints_file: Option<PathBuf>,
}

/// Where a run happens.
pub enum Backend {
    /// One rank of an mpiexec job, over MPI-IO.
    #[cfg(feature = "mpi")]
    Real,
    /// The twin.
    Sim {
        /// The scenario file, as given.
        path: PathBuf,
        /// The `--set` overrides, as given.
        overrides: Vec<String>,
        /// The loaded scenario.
        scenario: Box<Scenario>,
        /// Simulated ranks.
        ranks: u64,
        /// Fast-forward steady repetitions (off with `--exact`).
        fast_forward: bool,
    },
    /// Zero-cost I/O on `ranks` ranks.
    Null {
        /// Ranks.
        ranks: u64,
    },
}

/// The common options, checked: everything a run needs besides the benchmark's own.
pub struct Common {
    /// Where it runs.
    pub backend: Backend,
    /// Seed for the twin and the benchmark.
    pub seed: u64,
    /// `--json FILE`: the JSON report.
    pub json: Option<PathBuf>,
    /// `--csv FILE`: the CSV form of the report.
    pub csv: Option<PathBuf>,
    /// `--trace FILE`: every rank's file calls.
    pub trace: Option<PathBuf>,
    /// Hints from --hints-file, then --hint.
    pub hints: Hints,
    /// `--samples K`: twin runs on drawn parameters besides the nominal one.
    pub samples: Option<usize>,
    /// No progress on stderr: the run is one of many (a sweep's, a plan's).
    pub quiet: bool,
}

impl Common {
    /// Ranks known before the run (twin, dry run); `None` in real mode (mpiexec decides).
    pub fn ranks(&self) -> Option<u64> {
        match &self.backend {
            #[cfg(feature = "mpi")]
            Backend::Real => None,
            Backend::Sim { ranks, .. } | Backend::Null { ranks } => Some(*ranks),
        }
    }
    /// True for a real run (I/O paths must exist on this machine).
    pub fn is_real(&self) -> bool {
        self.ranks().is_none()
    }
}

/// The name and seed of a scenario (the one place that reads `Scenario`'s fields).
fn scenario_identity(s: &Scenario) -> (String, u64) {
    (s.name.clone(), s.seed)
}

/// `--json FILE`/`--csv FILE` must be creatable: its directory exists, is a
/// directory and takes a new file (tried with a probe file, removed at once).
pub fn check_output(path: &Path, flag: &str) -> Result<(), CliError> {
    let shown = path.display();
    if path.is_dir() {
        return Err(CliError::Usage(format!(
            "{flag} `{shown}`: is a directory; give a file name"
        )));
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !dir.is_dir() {
        return Err(CliError::Usage(format!(
            "{flag} `{shown}`: the directory `{}` does not exist (or is not a directory)",
            dir.display()
        )));
    }
    let probe = dir.join(format!(".piotwin-probe-{}", std::process::id()));
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
    {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => Err(CliError::Usage(format!(
            "{flag} `{shown}`: cannot create files in `{}`: {e}",
            dir.display()
        ))),
    }
}

impl CommonArgs {
    /// Checks every common option (scenario parsed, outputs writable, hints
    /// parsed) and returns them resolved. Nothing is run or written.
    pub fn resolve(&self) -> Result<Common, CliError> {
        let usage = |m: String| Err(CliError::Usage(m));
        if self.sim.is_some() && self.dry_run {
            return usage(
                "--sim and --dry-run exclude each other: pick the twin or the null back end".into(),
            );
        }
        if !self.set.is_empty() && self.sim.is_none() {
            return usage("--set overrides a scenario value: it needs --sim SCENARIO".into());
        }
        if self.samples.is_some() && self.sim.is_none() {
            return usage(
                "--samples draws the twin's calibrated parameters: it needs --sim SCENARIO --ranks N"
                    .into(),
            );
        }
        if self.exact && self.sim.is_none() {
            return usage("--exact applies to twin runs (--sim SCENARIO --ranks N) only".into());
        }
        let backend = match (&self.sim, self.dry_run, self.ranks) {
            (Some(path), _, Some(ranks)) => {
                let scenario = Scenario::load_with(path, &self.set)
                    .map_err(|e| CliError::Usage(format!("--sim `{}`: {e}", path.display())))?;
                if self.samples.is_some() {
                    samples::sampled(&scenario, &self.set)
                        .map_err(|e| CliError::Usage(format!("--samples: {e}")))?;
                }
                Backend::Sim {
                    path: path.clone(),
                    overrides: self.set.clone(),
                    scenario: Box::new(scenario),
                    ranks,
                    fast_forward: !self.exact && self.trace.is_none(),
                }
            }
            (Some(_), _, None) => {
                return usage("--sim needs --ranks N: the number of simulated ranks".into());
            }
            (None, true, Some(ranks)) => Backend::Null { ranks },
            (None, true, None) => return usage("--dry-run needs --ranks N".into()),
            (None, false, Some(_)) => {
                return usage(
                    "--ranks applies to --sim and --dry-run; a real run's size is mpiexec's -n (e.g. mpiexec -n 4 piotwin run …)"
                        .into(),
                );
            }
            #[cfg(feature = "mpi")]
            (None, false, None) => Backend::Real,
            #[cfg(not(feature = "mpi"))]
            (None, false, None) => {
                return usage(
                    "this piotwin was built without MPI (cargo feature `mpi` off): it cannot run for real; \
                     run in the twin with --sim SCENARIO --ranks N, or check options with --dry-run --ranks N"
                        .into(),
                );
            }
        };
        if matches!(backend, Backend::Null { .. }) && (self.json.is_some() || self.csv.is_some()) {
            return usage("--dry-run measures nothing, so it writes no --json/--csv report".into());
        }
        if let Some(p) = &self.json {
            check_output(p, "--json")?;
        }
        if let Some(p) = &self.csv {
            check_output(p, "--csv")?;
        }
        if let Some(p) = &self.trace {
            check_output(p, "--trace")?;
        }
        if let (Some(j), Some(c)) = (&self.json, &self.csv)
            && j == c
        {
            return usage(format!(
                "--json and --csv name the same file `{}`",
                j.display()
            ));
        }
        let mut hints = Hints::new();
        if let Some(f) = &self.hints_file {
            let text = std::fs::read_to_string(f).map_err(|e| {
                CliError::Usage(format!(
                    "--hints-file `{}`: cannot read it: {e}",
                    f.display()
                ))
            })?;
            hints
                .parse_file_text(&text, &f.display().to_string())
                .map_err(|e| CliError::Usage(e.to_string()))?;
        }
        for h in &self.hints {
            hints
                .parse_item(h, "--hint")
                .map_err(|e| CliError::Usage(e.to_string()))?;
        }
        let seed = match (&self.seed, &backend) {
            (Some(s), _) => *s,
            (None, Backend::Sim { scenario, .. }) => scenario_identity(scenario).1,
            (None, _) => 0,
        };
        Ok(Common {
            backend,
            seed,
            json: self.json.clone(),
            csv: self.csv.clone(),
            trace: self.trace.clone(),
            hints,
            samples: self.samples.map(|k| k as usize),
            quiet: false,
        })
    }
}

/// An option left out whose default comes from the machine the run starts on
/// (b_eff_io's `-MB`: memory per process). The real run would take it from the
/// host and the twin from the scenario, i.e. two different workloads: `compare`
/// resolves it once, here, and gives the value to both runs.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct MachineDefault {
    /// The option as the benchmark's command line spells it (`-MB`).
    pub flag: &'static str,
    /// Its value on this machine.
    pub value: String,
    /// Where the value came from, for the reader.
    pub from: String,
}

/// The options of a benchmark's command line that default from the machine.
pub trait MachineDefaults {
    /// Every such option the command line leaves out, resolved on this machine.
    fn machine_defaults(&self) -> Result<Vec<MachineDefault>, CliError> {
        Ok(Vec::new())
    }
}

/// Where and how a run happened, for the text and the report.
pub struct RunInfo {
    /// Real or twin (`None`: dry run, no report).
    pub mode: Option<Mode>,
    /// One line for humans: `twin of cluster.toml (cluster), seed 1`.
    pub label: String,
    /// Ranks that ran.
    pub ranks: u64,
    /// Host and MPI library, or scenario and seed.
    pub environment: BTreeMap<String, String>,
    /// A twin run's fast-forward: whether it was on, and the iterations it
    /// skipped (summed over ranks).
    pub fast_forward: Option<(bool, u64)>,
    /// The signal that stopped the run early, agreed by every rank.
    pub interrupted: Option<i32>,
}

impl RunInfo {
    /// The run's environment, plus (twin runs) whether repetitions were
    /// fast-forwarded and how many iterations (summed over ranks) were skipped.
    pub fn environment_with_fast_forward(&self, mode: Mode) -> BTreeMap<String, String> {
        let mut env = self.environment.clone();
        if mode == Mode::Sim {
            let ff = match self.fast_forward {
                Some((true, skipped)) => {
                    format!("on, {skipped} iterations skipped (summed over ranks)")
                }
                _ => "off (--exact)".to_string(),
            };
            env.insert("fast_forward".to_string(), ff);
        }
        env
    }
}

/// What the runner needs from a benchmark's program besides running it.
pub trait Benchmark: RankProgram {
    /// The human output (the original benchmark's style) from rank 0's output.
    fn render(&self, out: &Self::Output, run: &RunInfo) -> String;
    /// The run report from rank 0's output.
    fn report(&self, out: &Self::Output, mode: Mode, run: &RunInfo) -> RunReport;
    /// The failure that makes the exit code 1, if any (the report is written anyway).
    fn failure(&self, out: &Self::Output) -> Option<String>;
    /// The benchmark's own result files besides --json/--csv (rank 0, real and
    /// twin runs), each written atomically; returns their paths. None by default.
    fn write_files(
        &self,
        out: &Self::Output,
        mode: Mode,
        run: &RunInfo,
    ) -> Result<Vec<PathBuf>, String> {
        let _ = (out, mode, run);
        Ok(Vec::new())
    }
}

/// Runs `program` on the back end `common` chose, prints rank 0's results and
/// writes its reports. Every rank returns the same outcome.
pub fn execute<P: Benchmark + Sync>(program: &P, common: &Common) -> Result<(), CliError> {
    install_stop_handlers()?;
    // With --trace every rank's program runs inside the trace layer, and rank
    // 0 ends up with every rank's rows.
    let traced = Traced {
        inner: program,
        files_only: true,
    };
    let mut trace: Option<Vec<Vec<u8>>> = None;
    let (out, info, is_root) = match &common.backend {
        #[cfg(feature = "mpi")]
        Backend::Real => {
            let failed =
                |e: piotwin_real::RealError| CliError::Runtime(format!("real run failed: {e}"));
            let (job, out) = match common.trace {
                None => backend::real::launch(program).map_err(failed)?,
                Some(_) => {
                    let (job, (out, calls)) = backend::real::launch(&traced).map_err(failed)?;
                    let rows = trace_rows(job.rank, &calls);
                    trace = piotwin_real::Comm::world()
                        .gather_bytes(&rows, 0)
                        .map_err(|e| {
                            CliError::Runtime(format!("--trace: gathering the records: {e}"))
                        })?;
                    (job, out)
                }
            };
            let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
                .map(|h| h.trim().to_string())
                .unwrap_or_else(|_| "unknown".into());
            let environment = BTreeMap::from([
                ("host".to_string(), host.clone()),
                ("mpi_library".to_string(), job.library.clone()),
            ]);
            let label = format!("real, {} ranks on {host}, {}", job.size, job.library);
            (
                out,
                RunInfo {
                    mode: Some(Mode::Real),
                    label,
                    ranks: job.size as u64,
                    environment,
                    fast_forward: None,
                    interrupted: job.stopped,
                },
                job.rank == 0,
            )
        }
        Backend::Sim {
            path,
            scenario,
            ranks,
            fast_forward,
            ..
        } => {
            let (out, info) = match common.trace {
                None => twin_run(program, path, scenario, *ranks, *fast_forward, common.seed)?,
                Some(_) => {
                    let (outs, info) =
                        twin_launch(&traced, path, scenario, *ranks, false, common.seed)?;
                    let (out, rows) = rank0_and_rows(outs);
                    trace = Some(rows);
                    (out, info)
                }
            };
            (out, info, true)
        }
        Backend::Null { ranks } => {
            let dry =
                |e: backend::null::NullError| CliError::Runtime(format!("dry run failed: {e}"));
            let out = match common.trace {
                None => backend::null::launch(*ranks as usize, program)
                    .map_err(dry)?
                    .swap_remove(0),
                Some(_) => {
                    let outs = backend::null::launch(*ranks as usize, &traced).map_err(dry)?;
                    let (out, rows) = rank0_and_rows(outs);
                    trace = Some(rows);
                    out
                }
            };
            let label = format!("dry run, {ranks} ranks, zero-cost I/O: times are overhead only");
            (
                out,
                RunInfo {
                    mode: None,
                    label,
                    ranks: *ranks,
                    environment: BTreeMap::new(),
                    fast_forward: None,
                    interrupted: stop::requested(),
                },
                true,
            )
        }
    };
    if is_root {
        if let (Some(path), Some(rows)) = (&common.trace, &trace) {
            write_trace(path, rows).map_err(|e| {
                CliError::Runtime(format!("--trace `{}`: cannot write: {e}", path.display()))
            })?;
            eprintln!("piotwin: wrote {}", path.display());
        }
        print!("{}", program.render(&out, &info));
        if let Some(mode) = info.mode {
            let mut report = program.report(&out, mode, &info);
            report.interrupted = info.interrupted.map(stop::signal_name);
            if let Some(k) = common.samples
                && info.interrupted.is_none()
            {
                report.intervals = sample_intervals(program, common, k)?;
                print!("{}", samples::render(&report));
            }
            if let Some(p) = &common.json {
                report.write_json(p).map_err(|e| {
                    CliError::Runtime(format!("--json `{}`: cannot write: {e}", p.display()))
                })?;
            }
            if let Some(p) = &common.csv {
                report.write_csv(p).map_err(|e| {
                    CliError::Runtime(format!("--csv `{}`: cannot write: {e}", p.display()))
                })?;
            }
            let written = program
                .write_files(&out, mode, &info)
                .map_err(|e| CliError::Runtime(format!("cannot write results: {e}")))?;
            for p in written {
                eprintln!("piotwin: wrote {}", p.display());
            }
        }
    }
    if let Some(signal) = info.interrupted {
        return Err(match is_root {
            true => CliError::interrupted(
                signal,
                "the output above and the reports hold what finished",
            ),
            false => CliError::Interrupted {
                signal,
                message: None,
            },
        });
    }
    match program.failure(&out) {
        Some(f) if is_root => Err(CliError::Runtime(f)),
        Some(_) => Err(CliError::Quiet),
        None => Ok(()),
    }
}

/// Rank 0's output and every rank's `--trace` rows, from every rank's traced output.
fn rank0_and_rows<O>(outs: Vec<(O, Vec<CallRecord>)>) -> (O, Vec<Vec<u8>>) {
    let (mut outs, rows): (Vec<O>, Vec<Vec<u8>>) = outs
        .into_iter()
        .enumerate()
        .map(|(r, (out, calls))| (out, trace_rows(r, &calls)))
        .unzip();
    (outs.swap_remove(0), rows)
}

/// One twin run of `program` on `scenario` (read from `path`): rank 0's output
/// and where and how it ran.
fn twin_run<P: Benchmark>(
    program: &P,
    path: &Path,
    scenario: &Scenario,
    ranks: u64,
    fast_forward: bool,
    seed: u64,
) -> Result<(P::Output, RunInfo), CliError> {
    let (mut outs, info) = twin_launch(program, path, scenario, ranks, fast_forward, seed)?;
    Ok((outs.swap_remove(0), info))
}

/// One twin run of `program`: every rank's output, and where and how it ran.
fn twin_launch<P: RankProgram>(
    program: &P,
    path: &Path,
    scenario: &Scenario,
    ranks: u64,
    fast_forward: bool,
    seed: u64,
) -> Result<(Vec<P::Output>, RunInfo), CliError> {
    let options = SimOptions { seed, fast_forward };
    let (outs, stats) = backend::sim::launch(scenario, ranks as usize, options, program)
        .map_err(|e| CliError::Runtime(format!("the twin failed: {e}")))?;
    let (name, _) = scenario_identity(scenario);
    let environment = BTreeMap::from([
        ("scenario".to_string(), name.clone()),
        ("scenario_file".to_string(), path.display().to_string()),
        ("seed".to_string(), seed.to_string()),
    ]);
    let label = format!(
        "twin of `{}` ({name}), {ranks} ranks, seed {seed}",
        path.display()
    );
    let info = RunInfo {
        mode: Some(Mode::Sim),
        label,
        ranks,
        environment,
        fast_forward: Some((fast_forward, stats.skipped)),
        interrupted: stop::requested(),
    };
    Ok((outs, info))
}

/// A twin run's report, nothing printed or written (the runs of sweeps, plans
/// and samples), with the failure that would make `run`'s exit code 1. A
/// twin-only `common` (`--sim`); `extra` overrides go after its `--set`s.
pub fn predict<P: Benchmark>(
    program: &P,
    common: &Common,
    extra: &[String],
) -> Result<(RunReport, Option<String>), CliError> {
    let Backend::Sim {
        path,
        overrides,
        scenario,
        ranks,
        fast_forward,
    } = &common.backend
    else {
        return Err(CliError::Usage(
            "a prediction needs --sim SCENARIO --ranks N".into(),
        ));
    };
    let loaded;
    let scenario: &Scenario = if extra.is_empty() {
        scenario
    } else {
        let all: Vec<String> = overrides.iter().chain(extra).cloned().collect();
        loaded = Scenario::load_with(path, &all)
            .map_err(|e| CliError::Usage(format!("--sim `{}`: {e}", path.display())))?;
        &loaded
    };
    let (out, info) = twin_run(program, path, scenario, *ranks, *fast_forward, common.seed)?;
    let mut report = program.report(&out, Mode::Sim, &info);
    report.interrupted = info.interrupted.map(stop::signal_name);
    Ok((report, program.failure(&out)))
}

/// `samples` twin runs of `program` on parameters drawn from the scenario's
/// intervals, in parallel (rayon's pool), summarised per metric. Stops with
/// the run when a signal asks it to.
pub fn sample_intervals<P: Benchmark + Sync>(
    program: &P,
    common: &Common,
    samples: usize,
) -> Result<BTreeMap<String, Interval>, CliError> {
    use rayon::prelude::*;
    let Backend::Sim {
        overrides,
        scenario,
        ..
    } = &common.backend
    else {
        return Err(CliError::Usage(
            "--samples needs --sim SCENARIO --ranks N".into(),
        ));
    };
    let draws = samples::draw(scenario, overrides, samples, common.seed)
        .map_err(|e| CliError::Usage(format!("--samples: {e}")))?;
    let reports: Vec<RunReport> = draws
        .par_iter()
        .map(|draw| {
            let (mut report, _) = predict(program, common, &draw.overrides)?;
            samples::apply_outcome(&mut report, draw.outcome);
            Ok(report)
        })
        .collect::<Result<_, CliError>>()?;
    if let Some(signal) = stop::requested() {
        return Err(CliError::interrupted(
            signal,
            "no interval: the sampled runs did not all finish",
        ));
    }
    Ok(samples::intervals(&reports))
}

/// SIGINT and SIGTERM, from here on: the first asks the run to stop
/// (`piotwin_types::stop`; benchmarks stop at their next checkpoint, keep what
/// finished and remove their scratch files), a second ends the process at once
/// (the signal's default action). Installed once per process, by the commands
/// that heed it (`run`, and `compare`, which passes it on to its runs).
pub fn install_stop_handlers() -> Result<(), CliError> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    static INSTALLED: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    let installed = INSTALLED.get_or_init(|| {
        for signal in [SIGINT, SIGTERM] {
            // One action does both, so no signal falls between two registrations.
            // SAFETY: it only loads and stores atomics, or re-raises the signal
            // with its default action, as `emulate_default_handler` is made for.
            unsafe {
                signal_hook::low_level::register(signal, move || {
                    if stop::requested().is_some() {
                        let _ = signal_hook::low_level::emulate_default_handler(signal);
                    } else {
                        stop::request(signal);
                    }
                })
            }
            .map_err(|e| format!("cannot install the handler of signal {signal}: {e}"))?;
        }
        Ok(())
    });
    installed.clone().map_err(CliError::Runtime)
}

/// The job size the MPI launcher announced to this process (MPICH's PMI,
/// Open MPI); `None` outside a launcher.
pub fn job_size() -> Option<u64> {
    ["PMI_SIZE", "OMPI_COMM_WORLD_SIZE"]
        .iter()
        .find_map(|v| std::env::var(v).ok()?.parse().ok())
}
