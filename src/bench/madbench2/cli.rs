//! `piotwin run madbench2`: the original's arguments and environment, checked
//! against the process count before anything is touched.

use std::path::PathBuf;

use clap::Args;

use crate::bench::madbench2::{
    Madbench2Args, Madbench2Outcome, Madbench2Plan, Madbench2Program, build_report, chart,
    original_text, summary_text,
};
use crate::report::{Mode, RunReport};
use crate::run::{Benchmark, CliError, Common, CommonArgs, RunInfo};

/// The long help of `piotwin run`'s subcommand.
pub const LONG_ABOUT: &str = "\
MADbench2 in I/O mode (Borrill et al., SC07): the out-of-core matrix workload of a
CMB power-spectrum code. S writes NO_BIN matrices (slots), W reads them back and
overwrites them with its results, C reads those; busy-work (multiply-add loops
scaled as the replaced computation) runs between the calls. Each rank's piece of a
NO_PIX x NO_PIX matrix of doubles is block-cyclic (SBLOCKSIZE) over a square
process grid; slots are padded to FBLOCKSIZE bytes. W and C run in NO_GANG gangs;
in each group of RMOD (WMOD) consecutive ranks of a gang, reads (writes) go one
after another by token passing.

Output as the original: per function (S, W, C) the time in other work (_cc),
busy-work (_bw), reads (_r), writes (_w) and in total, mean [min:max] over ranks;
then bytes and bandwidths per function and the verification of every word read
back. The original's environment variables IOMETHOD, IOMODE, FILETYPE, BWEXP and
REMAP are read too (an option wins). Checks as the original: P a perfect square,
NO_GANG a square dividing P and NO_BIN, FBLOCKSIZE a multiple of 8, RMOD and
WMOD dividing P/NO_GANG. Data files: DIR/madbench2.data_<rank> or
DIR/madbench2.data (SHARED), removed after the run unless --keep.
In the twin, busy-work costs its flops at the scenario's `flops` rate.";

/// The examples after the help.
pub const AFTER_HELP: &str = "\
Examples:
  mpiexec -n 4 piotwin run madbench2 2048 8 1 32 1024 1 1 --iomethod mpi -p /scratch
  IOMETHOD=MPI IOMODE=ASYNC FILETYPE=SHARED mpiexec -n 16 piotwin run madbench2 8192 8 4 32 1024 2 2
  piotwin run madbench2 8192 8 1 32 1024 1 1 --filetype shared --sim scenarios/nfs-raid5.toml --ranks 16";

/// MADbench2's options and the common ones.
#[derive(Debug, Args)]
pub struct Madbench2CliArgs {
    #[command(flatten)]
    args: Madbench2Args,
    #[allow(missing_docs)]
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Nothing defaults from the machine.
impl crate::run::MachineDefaults for Madbench2CliArgs {}

/// The program with the options it was built from (the report names them).
pub struct Madbench2Cli {
    args: Madbench2Args,
    plan: Madbench2Plan,
    program: Madbench2Program,
}

impl Madbench2CliArgs {
    /// The checked program, ready to run with `common`. A real run takes the
    /// process count from the launcher's environment; every rank checks it
    /// again when it starts.
    pub fn program(&self, common: &Common) -> Result<Madbench2Cli, CliError> {
        let ranks = common.ranks().or_else(crate::run::job_size).unwrap_or(1);
        let mut plan = self
            .args
            .validate(ranks)
            .map_err(|e| CliError::Usage(e.to_string()))?;
        if common.is_real() && !self.args.dir.is_dir() {
            return Err(CliError::Usage(format!(
                "-p `{}`: the directory does not exist (or is not a directory)",
                self.args.dir.display()
            )));
        }
        plan.hints = common.hints.clone();
        Ok(Madbench2Cli {
            args: self.args.clone(),
            program: Madbench2Program::new(plan.clone()),
            plan,
        })
    }
}

impl crate::ctx::RankProgram for Madbench2Cli {
    type Output = Madbench2Outcome;

    async fn run<C: crate::ctx::IoCtx>(&self, ctx: &C) -> Madbench2Outcome {
        self.program.run(ctx).await
    }
}

impl Benchmark for Madbench2Cli {
    fn render(&self, out: &Madbench2Outcome, run: &RunInfo) -> String {
        let mode = run.mode.unwrap_or(Mode::Sim);
        let report = build_report(&self.args, &self.plan, mode, run.environment.clone(), out);
        format!("MADbench2: {}\n", run.label)
            + &original_text(&self.args, &self.plan, out)
            + &summary_text(&report, run.mode.is_none())
    }
    fn report(&self, out: &Madbench2Outcome, mode: Mode, run: &RunInfo) -> RunReport {
        build_report(&self.args, &self.plan, mode, run.environment.clone(), out)
    }
    fn failure(&self, out: &Madbench2Outcome) -> Option<String> {
        if let Some(f) = &out.failure {
            return Some(f.clone());
        }
        let failed: u64 = out.ranks.iter().map(|r| r.verification.failed_words).sum();
        (failed > 0).then(|| {
            let checked: u64 = out.ranks.iter().map(|r| r.verification.checked_bytes).sum();
            format!(
                "MADbench2 verification failed: {failed} of {} words read back differ from what was written",
                checked / 8
            )
        })
    }
    fn write_files(
        &self,
        out: &Madbench2Outcome,
        mode: Mode,
        run: &RunInfo,
    ) -> Result<Vec<PathBuf>, String> {
        let Some(path) = &self.args.plot else {
            return Ok(Vec::new());
        };
        let report = build_report(&self.args, &self.plan, mode, run.environment.clone(), out);
        chart(&report).write_svg(path).map_err(|e| e.to_string())?;
        Ok(vec![path.clone()])
    }
}
