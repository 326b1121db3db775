//! `piotwin run b_eff`: b_eff's options, checked, turned into the [`Beff`] program.

use std::path::PathBuf;

use clap::Args;

use crate::bench::beff::{Beff, BeffOutput, BeffParams};
use crate::report::{Mode, RunReport};
use crate::run::{Benchmark, CliError, Common, CommonArgs, RunInfo};

/// The long help of `piotwin run`'s subcommand.
pub const LONG_ABOUT: &str = "\
b_eff (Rabenseifner & Koniges): the effective communication bandwidth. All
processes send to their neighbours at the same time: six ring patterns (rings of
about 2, 4, 8, max(16, n/4), max(32, n/2) and n processes) and the same six over
random permutations of the processes; each process sends to its ring's next and
previous process and receives from both. 21 message sizes (1 B to 4 KiB by
doubling, then 8 geometric steps to Lmax = memory per process / 128), each loop
300 iterations for the shortest message, cut so a loop takes 2.5-5 ms; three
methods (MPI_Sendrecv, MPI_Alltoallv, MPI_Irecv/MPI_Isend/MPI_Waitall), each
measurement repeated.

b(pattern, L) = L * 2n * loops / (max over processes of the loop time), best of
methods and repetitions; per pattern the average over the 21 sizes;
b_eff = logavg(logavg(6 rings), logavg(6 random)). Also b_eff per process, at
Lmax, rings only at Lmax, and the ping-pong of ranks 0 and 1 (latency at 1 byte,
bandwidth at Lmax). MB = 10^6 bytes. Real runs check every message received.";

/// The examples after the help.
pub const AFTER_HELP: &str = "\
Examples:
  mpiexec -n 4 piotwin run b_eff --mb 1024 --json beff.json --plot beff
  piotwin run b_eff --sim scenarios/default.toml --ranks 16 --mb 256";

/// b_eff's options and the common ones.
#[derive(Debug, Args)]
pub struct BeffArgs {
    /// Memory per process in MiB (b_eff's MEMORY_PER_PROCESSOR): Lmax = MB/128, at most 128 MiB.
    #[arg(long, value_name = "MB", default_value_t = 1024)]
    mb: u64,
    /// Repetitions of each measurement (the best counts).
    #[arg(long, value_name = "N", default_value_t = 3)]
    repetitions: u64,
    /// Seed of the random patterns' permutations (b_eff seeds from the clock).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pattern_seed: u64,
    /// Loop length of the shortest message (b_eff's 300; fewer for a quick look).
    #[arg(long, value_name = "N", default_value_t = crate::bench::beff::FIRST_LOOP)]
    first_loop: u64,
    /// Write the log-log plot of bandwidth over message size to STEM.svg and STEM.png.
    #[arg(long, value_name = "STEM")]
    plot: Option<PathBuf>,
    #[allow(missing_docs)]
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Nothing defaults from the machine: `--mb` has a fixed default.
impl crate::run::MachineDefaults for BeffArgs {}

/// The program and where its plot goes.
#[derive(Debug, Clone)]
pub struct BeffRun {
    /// The benchmark.
    pub beff: Beff,
    plot: Option<PathBuf>,
}

impl BeffArgs {
    /// The checked program, ready to run with `common`.
    pub fn program(&self, common: &Common) -> Result<BeffRun, CliError> {
        let params = BeffParams {
            mb: self.mb,
            repetitions: self.repetitions,
            seed: self.pattern_seed,
            first_loop: self.first_loop,
        };
        let ranks = common.ranks().or_else(crate::run::job_size).unwrap_or(1);
        params
            .validate(ranks)
            .map_err(|e| CliError::Usage(e.to_string()))?;
        Ok(BeffRun {
            beff: Beff { params },
            plot: self.plot.clone(),
        })
    }
}

impl crate::ctx::RankProgram for BeffRun {
    type Output = BeffOutput;
    async fn run<C: crate::ctx::IoCtx>(&self, ctx: &C) -> BeffOutput {
        self.beff.run(ctx).await
    }
}

impl Benchmark for BeffRun {
    fn render(&self, out: &BeffOutput, run: &RunInfo) -> String {
        let mut text = self.beff.render(out, &run.label, run.ranks);
        if run.mode == Some(Mode::Sim) {
            let env = run.environment_with_fast_forward(Mode::Sim);
            let ff = &env["fast_forward"];
            text.push_str(&format!("twin fast-forward of the message loops: {ff}\n"));
        }
        text
    }
    fn report(&self, out: &BeffOutput, mode: Mode, run: &RunInfo) -> RunReport {
        self.beff.report(
            out,
            mode,
            run.ranks,
            run.environment_with_fast_forward(mode),
        )
    }
    fn failure(&self, out: &BeffOutput) -> Option<String> {
        out.mismatches
            .first()
            .map(|m| format!("data check failed: {m}"))
    }
    fn write_files(
        &self,
        out: &BeffOutput,
        _mode: Mode,
        run: &RunInfo,
    ) -> Result<Vec<PathBuf>, String> {
        match &self.plot {
            None => Ok(Vec::new()),
            Some(stem) => self
                .beff
                .write_plot(
                    out,
                    &format!("b_eff, {} processes ({})", run.ranks, run.label),
                    stem,
                )
                .map_err(|e| e.to_string()),
        }
    }
}
