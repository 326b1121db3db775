//! `piotwin run b_eff_io`: b_eff_io's options (the original's names accepted,
//! see [`normalize_beff_io_args`]), checked and turned into the [`BeffIo`] program;
//! rank 0 prints the summary and writes `PREFIX.sum`, `.prot`, `.json`, `.csv` and
//! a plot per partition.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::bench::beff_io::{
    BeffIo, BeffIoArgs, BeffIoError, Config, Measurements, normalize_beff_io_args, output, schedule,
};
use crate::report::{Mode, RunReport};
use clap::Args;
use piotwin_sim::{Placement, Scenario};

use crate::run::{Backend, Benchmark, CliError, Common, CommonArgs, RunInfo, check_output};

/// The long help of `piotwin run`'s subcommand.
pub const LONG_ABOUT: &str = "\
b_eff_io (Rabenseifner & Koniges, release 2.1): the effective I/O bandwidth of a
system as applications see it. 43 access patterns in 5 types (0 scatter through
a strided view, collective; 1 shared file pointer, collective; 2 a file per
process; 3 segmented shared file; 4 the same, collective) are written, rewritten
and read on each partition of the processes. The write pass is time-driven: each
pattern repeats until its share U/ΣU of T/#partitions is used; rewrite and read
repeat the write pass's counts. Every chunk carries check values that the read
pass verifies (real runs).

Results (MB = 10^6 bytes): per pattern, type, access method and partition, and
the system's b_eff_io under both definitions, named: release 2.1's
sqrt(WR·RD) and the paper's 0.25·write + 0.25·rewrite + 0.5·read.
Files: PREFIX.sum (summary table), PREFIX.prot (per-pattern protocol),
PREFIX.json and PREFIX.csv (run report), PREFIX_nNNN.png/.svg (plot per
partition). Progress: one line per pattern on stderr.

The original's single-dash options are accepted: -MB -MT -rewrite -noshared
-nounique -keep (and -T -N -p -f -i -e).";

/// The examples after the help.
pub const AFTER_HELP: &str = "\
Examples:
  mpiexec -n 2 piotwin run b_eff_io -MB 1024 -MT 2048 -T 60 -p /scratch/beff -f run1
  piotwin run b_eff_io -T 1800 --sim scenarios/default.toml --ranks 16 -f twin16
  piotwin run b_eff_io -T 10 -MB 64 --dry-run --ranks 4";

/// The words `piotwin run b_eff_io …` with the original's multi-letter options
/// (`-MB`, `-rewrite`, …) mapped to long ones; any other command line unchanged.
pub fn normalize_args(argv: Vec<OsString>) -> Vec<OsString> {
    let is_beff = argv.len() > 2 && argv[1] == "run" && argv[2] == "b_eff_io";
    if !is_beff {
        return argv;
    }
    let mut it = argv.into_iter();
    let head: Vec<OsString> = it.by_ref().take(3).collect();
    head.into_iter().chain(normalize_beff_io_args(it)).collect()
}

/// b_eff_io's options plus the common ones.
#[derive(Debug, Args)]
pub struct BeffIoCliArgs {
    #[command(flatten)]
    bench: BeffIoArgs,
    #[allow(missing_docs)]
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Default memory per process in the twin: the memory of rank 0's node (the first
/// node of the first group) over the ranks the twin places there (it fills the
/// cores in order, or one rank per node in turn under round-robin placement,
/// and spreads evenly over all nodes when oversubscribed).
fn twin_default_mb(scenario: &Scenario, ranks: u64) -> u64 {
    let Some(g) = scenario.nodes.first() else {
        return 1;
    };
    let nodes: u64 = scenario.nodes.iter().map(|g| g.count as u64).sum();
    let cores: u64 = scenario
        .nodes
        .iter()
        .map(|g| (g.count * g.cores) as u64)
        .sum();
    let on_node = if ranks <= cores && scenario.placement == Placement::RoundRobin {
        ranks.div_ceil(nodes.max(1)).min(g.cores as u64)
    } else if ranks <= cores {
        ranks.min(g.cores as u64)
    } else {
        ranks.div_ceil(nodes.max(1))
    };
    schedule::default_mb_per_process(g.memory, on_node)
}

/// `-MB` left out: the real run would take this machine's memory per core and the
/// twin the scenario's node memory per process.
impl crate::run::MachineDefaults for BeffIoCliArgs {
    fn machine_defaults(&self) -> Result<Vec<crate::run::MachineDefault>, CliError> {
        if self.bench.mb.is_some() {
            return Ok(Vec::new());
        }
        let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
        Ok(vec![crate::run::MachineDefault {
            flag: "-MB",
            value: host_default_mb()?.to_string(),
            from: format!(
                "this machine's MemTotal (/proc/meminfo) over its {cores} cores, as a real run takes it"
            ),
        }])
    }
}

/// Default memory per process on this machine: MemTotal of `/proc/meminfo` over
/// its cores (what the original's users give as memory per processor).
fn host_default_mb() -> Result<u64, CliError> {
    let text = std::fs::read_to_string("/proc/meminfo").map_err(|e| {
        CliError::Usage(format!(
            "-MB not given and /proc/meminfo unreadable ({e}): give the memory per process, e.g. -MB 1024"
        ))
    })?;
    let total = schedule::meminfo_total_bytes(&text).ok_or_else(|| {
        CliError::Usage(
            "-MB not given and /proc/meminfo has no MemTotal line: give the memory per process, e.g. -MB 1024"
                .into(),
        )
    })?;
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get() as u64);
    Ok(schedule::default_mb_per_process(total, cores))
}

impl BeffIoCliArgs {
    /// The checked program, ready to run with `common`: options resolved, hints
    /// file read, scratch directory (real runs) and output files checked.
    pub fn program(&self, common: &Common) -> Result<BeffIo, CliError> {
        let world = common.ranks().or_else(crate::run::job_size).unwrap_or(1);
        let default_mb = match &common.backend {
            Backend::Sim {
                scenario, ranks, ..
            } => twin_default_mb(scenario, *ranks),
            _ if self.bench.mb.is_some() => 1,
            _ => host_default_mb()?,
        };
        let mut cfg = Config::resolve(
            &self.bench,
            world as usize,
            default_mb,
            common.hints.clone(),
        )
        .map_err(|e| CliError::Usage(e.to_string()))?;
        cfg.progress = !common.quiet;
        if common.is_real() && !Path::new(&cfg.path).is_dir() {
            return Err(CliError::Usage(format!(
                "-p `{}`: the scratch directory does not exist (or is not a directory)",
                cfg.path
            )));
        }
        if !matches!(common.backend, Backend::Null { .. }) {
            let sum = PathBuf::from(format!("{}.sum", cfg.prefix));
            check_output(&sum, "-f")?;
        }
        Ok(BeffIo { cfg })
    }
}

impl Benchmark for BeffIo {
    fn render(&self, out: &Result<Measurements, BeffIoError>, run: &RunInfo) -> String {
        let Ok(m) = out else {
            return String::new();
        };
        let cfg = &self.cfg;
        let a = output::Analysis::new(cfg, m);
        let mut s = format!("# {}\n", run.label);
        s.push_str(&output::summary_text(
            cfg,
            m,
            &a,
            run.mode.unwrap_or(Mode::Real),
            &run.environment_with_fast_forward(run.mode.unwrap_or(Mode::Real)),
        ));
        s
    }

    fn report(
        &self,
        out: &Result<Measurements, BeffIoError>,
        mode: Mode,
        run: &RunInfo,
    ) -> RunReport {
        let cfg = &self.cfg;
        match out {
            Ok(m) => output::run_report(
                cfg,
                m,
                &output::Analysis::new(cfg, m),
                mode,
                run.ranks as usize,
                run.environment_with_fast_forward(mode),
            ),
            Err(e) => RunReport {
                interrupted: None,
                intervals: Default::default(),
                bands: Default::default(),
                benchmark: "b_eff_io".into(),
                mode,
                ranks: run.ranks as usize,
                params: serde_json::to_value(cfg).unwrap_or_default(),
                environment: run.environment_with_fast_forward(mode),
                hints: cfg.common_hints.clone(),
                metrics: Default::default(),
                headline: Vec::new(),
                tables: Default::default(),
                errors: vec![e.to_string()],
            },
        }
    }

    fn write_files(
        &self,
        out: &Result<Measurements, BeffIoError>,
        mode: Mode,
        run: &RunInfo,
    ) -> Result<Vec<PathBuf>, String> {
        match out {
            Ok(m) => output::write_outputs(
                &self.cfg,
                m,
                mode,
                run.ranks as usize,
                run.environment_with_fast_forward(mode),
            )
            .map_err(|e| e.to_string()),
            Err(_) => Ok(Vec::new()),
        }
    }

    fn failure(&self, out: &Result<Measurements, BeffIoError>) -> Option<String> {
        match out {
            Err(e) => Some(e.to_string()),
            Ok(Measurements {
                stopped: Some(why), ..
            }) => Some(format!(
                "stopped early: {why} (what finished is in the report; scratch files removed unless -keep)"
            )),
            Ok(m) => {
                let errors: u64 = m.patterns.iter().map(|p| p.errors).sum();
                (errors > 0).then(|| {
                    let first = m
                        .error_messages
                        .first()
                        .map_or("none on rank 0", String::as_str);
                    format!(
                        "{errors} data errors (failed calls, short transfers or wrong data); first: {first}"
                    )
                })
            }
        }
    }
}
