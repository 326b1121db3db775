//! `piotwin run ftio`: the FTIO options, checked against the process count
//! before anything is touched, turned into the [`FtioProgram`].

use crate::bench::ftio::{FtioArgs, FtioOutcome, FtioPlan, FtioProgram, build_report, nas_block};
use crate::report::{Mode, RunReport};
use clap::Args;

use crate::run::{Benchmark, CliError, Common, CommonArgs, RunInfo};

/// The long help of `piotwin run`'s subcommand.
pub const LONG_ABOUT: &str = "\
FTIO (Fagerstrom & Kuszmaul, NAS 1999): c processes compute the 2-D DFT of an
N x N complex matrix, N = I^2 * c, that lives on disk: initialization, DFT series
1, the out-of-core transposition (every Square transposed Mini-Square by
Mini-Square, then whole Squares exchanged with MPI_Sendrecv_replace along the
Diagonals schedule), DFT series 2, and verification of every element against a
closed-form transform. Headline: the I/O fraction = I/O time / total time;
also Mflop/s (5 N^2 log2(N^2) flops), I/O, compute and communication time per phase.

c must divide I^2 (I >= 2); an invalid I is refused before any file is touched,
with the smallest valid I for the process count. Data files: DIR/ftio.NNNN (one
per process) or DIR/ftio.shared (--shared-file); removed after the run unless --keep.
In the twin, FFT time comes from the scenario's `fft` rate; measure this machine's
with `cargo run --release --example fft_rate`.";

/// The examples after the help.
pub const AFTER_HELP: &str = "\
Examples:
  mpiexec -n 4 piotwin run ftio -i 8 -p /scratch --json ftio.json
  mpiexec -n 4 piotwin run ftio -i 16 --shared-file -p /scratch
  piotwin run ftio -i 16 --sim scenarios/default.toml --ranks 256 --json twin.json";

/// FTIO's options and the common ones.
#[derive(Debug, Args)]
pub struct FtioCliArgs {
    #[command(flatten)]
    ftio: FtioArgs,
    #[allow(missing_docs)]
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Nothing defaults from the machine.
impl crate::run::MachineDefaults for FtioCliArgs {}

/// The FTIO program with the options it was built from (the report names them).
pub struct FtioCli {
    args: FtioArgs,
    plan: FtioPlan,
    program: FtioProgram,
}

impl FtioCliArgs {
    /// The checked program, ready to run with `common`. A real run takes the
    /// process count from the launcher's environment; every rank checks it
    /// again when it starts (a mismatch stops all ranks before any file is touched).
    pub fn program(&self, common: &Common) -> Result<FtioCli, CliError> {
        let ranks = common.ranks().or_else(crate::run::job_size).unwrap_or(1);
        let mut plan = self
            .ftio
            .validate(ranks as usize)
            .map_err(|e| CliError::Usage(e.to_string()))?;
        if common.is_real() && !self.ftio.dir.is_dir() {
            return Err(CliError::Usage(format!(
                "-p `{}`: the directory does not exist (or is not a directory)",
                self.ftio.dir.display()
            )));
        }
        plan.hints = common.hints.clone();
        Ok(FtioCli {
            args: self.ftio.clone(),
            program: FtioProgram::new(plan.clone()),
            plan,
        })
    }
}

impl crate::ctx::RankProgram for FtioCli {
    type Output = FtioOutcome;

    async fn run<C: crate::ctx::IoCtx>(&self, ctx: &C) -> FtioOutcome {
        self.program.run(ctx).await
    }
}

impl Benchmark for FtioCli {
    fn render(&self, out: &FtioOutcome, run: &RunInfo) -> String {
        let mode = run.mode.unwrap_or(Mode::Sim);
        let report = build_report(&self.args, &self.plan, mode, run.environment.clone(), out);
        format!("FTIO: {}\n", run.label) + &nas_block(&report, run.mode.is_none())
    }
    fn report(&self, out: &FtioOutcome, mode: Mode, run: &RunInfo) -> RunReport {
        build_report(&self.args, &self.plan, mode, run.environment.clone(), out)
    }
    fn failure(&self, out: &FtioOutcome) -> Option<String> {
        if let Some(f) = &out.failure {
            return Some(f.clone());
        }
        let failed: u64 = out.ranks.iter().map(|r| r.verification.failed).sum();
        (failed > 0).then(|| {
            let checked: u64 = out.ranks.iter().map(|r| r.verification.checked).sum();
            format!("FTIO verification failed: {failed} of {checked} elements beyond tolerance")
        })
    }
}
