//! `piotwin run btio` and `piotwin run btio-kernel`: the options of NPB BT-IO and
//! of the PnetCDF BTIO kernel, checked (process count included) before anything
//! is touched, turned into [`BtioProgram`] / [`KernelProgram`].

use std::path::Path;

use crate::bench::btio::bt::flops::npb_step;
use crate::bench::btio::{
    BtioArgs, BtioKernelArgs, BtioOutcome, BtioProgram, InputError, KernelOutcome, KernelProgram,
    Verification, btio_report, kernel_block, kernel_report, npb_block,
};
use crate::ctx::IoResult;
use crate::report::{Mode, RunReport};
use clap::Args;

use crate::run::{Benchmark, CliError, Common, CommonArgs, RunInfo};

/// The long help of `piotwin run`\'s subcommand.
pub const BTIO_LONG_ABOUT: &str = "\
NPB BT-IO (NAS Parallel Benchmarks 3.x BT with I/O): BT's diagonal
multi-partition of an NX x NY x NZ grid over a square number of processes
(p x p; each rank owns p cells); every --wr-interval time steps, and after the
last, the solution field (5 doubles per point) is appended to DIR/btio.out in
canonical order u(5, nx, ny, nz).

Subtypes: full    one collective write per dump through NPB's struct-of-subarrays view
          simple  one independent MPI-IO write per (cell, z, y) row
          fortran Fortran direct-access WRITEs (RECL=40), one per point, at the same
                  offsets, through the Fortran runtime as NPB's
          epio    a file per process, DIR/btio.out.NNNN: one Fortran sequential
                  record per cell and dump (with its 4-byte length markers)
          none    compute only
Between dumps every rank runs NPB's BT time step on its cells (copy_faces,
compute_rhs, the pipelined x, y and z block-tridiagonal solves, add) and the
dumps hold BT's solution u; the twin costs each part by its counted flops at its
BtStep rate. Mop/s is by NPB's count (3478.8 N^3 - 17655.7 navg^2 + 28023.7 navg
per step). After the timed region every dump is read back the same way and
verified as NPB verifies BT-IO: the mean error norm over the dumps and the
residual norm of the final u against the class's reference values (1e-8), and
the last dump bit for bit against the final u: SUCCESSFUL, or FAILED (exit 1).

Values come from the class, then --input inputbt.data (niter; dt; nx ny nz;
write interval [read interval]; collective-buffering nodes and buffer size),
then the explicit options.";

/// The examples after the help.
pub const BTIO_AFTER_HELP: &str = "\
Examples:
  mpiexec -n 4 piotwin run btio --class A --subtype full -p /scratch --json btio.json
  mpiexec -n 9 piotwin run btio --input inputbt.data --subtype simple -p /scratch
  piotwin run btio --class C --subtype full --sim scenarios/default.toml --ranks 1024
  piotwin run btio --grid 40,40,40 --steps 10 --wr-interval 5 --dry-run --ranks 16";

/// The long help of `piotwin run`\'s subcommand.
pub const KERNEL_LONG_ABOUT: &str = "\
The PnetCDF BTIO kernel (no time stepping): --records global arrays of
X x Y x Z points (5 doubles each), BT's multi-partition over a square process
count, written (w) or read (r) as one record after another in DIR/btio.mpi.
Methods: 0 MPI collective through the struct-of-subarrays view
         1 MPI independent through the same view
         2 one blocking collective per cell (p per record)
         3 the p per-cell requests posted nonblocking and completed by one wait
           (one aggregated collective per record, as PnetCDF's ncmpi_wait_all)
Every record is read back and checked after the timed region.
--input reads the kernel's inputbt.data (w|r; method; records; X Y Z; directory);
explicit options win.";

/// The examples after the help.
pub const KERNEL_AFTER_HELP: &str = "\
Examples:
  mpiexec -n 4 piotwin run btio-kernel --method 3 --mode w --records 5 --grid 64,64,64 -p /scratch
  mpiexec -n 4 piotwin run btio-kernel --method 3 --mode r --records 5 --grid 64,64,64 -p /scratch
  piotwin run btio-kernel --input inputbt.data --sim scenarios/default.toml --ranks 1024";

/// `piotwin run btio`'s options.
#[derive(Debug, Args)]
pub struct BtioCliArgs {
    #[command(flatten)]
    btio: BtioArgs,
    #[allow(missing_docs)]
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Nothing defaults from the machine.
impl crate::run::MachineDefaults for BtioCliArgs {}

/// `piotwin run btio-kernel`'s options.
#[derive(Debug, Args)]
pub struct KernelCliArgs {
    #[command(flatten)]
    kernel: BtioKernelArgs,
    #[allow(missing_docs)]
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Nothing defaults from the machine.
impl crate::run::MachineDefaults for KernelCliArgs {}

/// The number of processes the run will have: `--ranks` in the twin and the dry
/// run, the launcher's job size for a real run (MPICH's PMI, Open MPI; 1 when
/// started without a launcher, as MPI's singleton init).
fn nprocs(common: &Common) -> Result<usize, CliError> {
    let n = common
        .ranks()
        .unwrap_or_else(|| crate::run::job_size().unwrap_or(1));
    usize::try_from(n).map_err(|_| CliError::Usage(format!("--ranks `{n}`: too many processes")))
}

fn usage(e: InputError) -> CliError {
    CliError::Usage(e.to_string())
}

/// In a real run the output directory must exist (nothing is created for it).
fn check_dir(common: &Common, dir: &str) -> Result<(), CliError> {
    if common.is_real() && !Path::new(dir).is_dir() {
        return Err(CliError::Usage(format!(
            "-p `{dir}`: the directory does not exist (or is not a directory)"
        )));
    }
    Ok(())
}

impl BtioCliArgs {
    /// The checked program, ready to run with `common`.
    pub fn program(&self, common: &Common) -> Result<BtioProgram, CliError> {
        let cfg = self.btio.resolve(nprocs(common)?).map_err(usage)?;
        check_dir(common, &cfg.dir)?;
        Ok(BtioProgram::new(cfg, &common.hints))
    }
}

impl KernelCliArgs {
    /// The checked program, ready to run with `common`. A real read run also
    /// needs the file written before, with at least the records to be read.
    pub fn program(&self, common: &Common) -> Result<KernelProgram, CliError> {
        let cfg = self.kernel.resolve(nprocs(common)?).map_err(usage)?;
        check_dir(common, &cfg.dir)?;
        if common.is_real() && !cfg.write {
            let path = cfg.file_path();
            let need = 40 * cfg.grid.iter().product::<u64>() * cfg.records;
            match std::fs::metadata(&path) {
                Ok(m) if m.len() >= need => {}
                Ok(m) => {
                    return Err(CliError::Usage(format!(
                        "--mode r: `{path}` holds {} bytes, fewer than the {need} of {} records of \
                         {}x{}x{}; write it first with --mode w and the same grid",
                        m.len(),
                        cfg.records,
                        cfg.grid[0],
                        cfg.grid[1],
                        cfg.grid[2]
                    )));
                }
                Err(e) => {
                    return Err(CliError::Usage(format!(
                        "--mode r: cannot read `{path}`: {e}; write it first with --mode w"
                    )));
                }
            }
        }
        Ok(KernelProgram::new(cfg, &common.hints))
    }
}

/// The report of a run that stopped on an I/O error: what was asked, the error, no metrics.
fn failed_report(
    benchmark: &str,
    params: serde_json::Value,
    mode: Mode,
    run: &RunInfo,
    error: String,
) -> RunReport {
    RunReport {
        interrupted: None,
        intervals: Default::default(),
        bands: Default::default(),
        benchmark: benchmark.into(),
        mode,
        ranks: run.ranks as usize,
        params,
        environment: run.environment.clone(),
        hints: Default::default(),
        metrics: Default::default(),
        headline: Vec::new(),
        tables: Default::default(),
        errors: vec![error],
    }
}

fn verification_failure(v: &Verification) -> Option<String> {
    match v {
        Verification::Failed(why) => Some(format!("verification FAILED: {why}")),
        _ => None,
    }
}

impl Benchmark for BtioProgram {
    fn render(&self, out: &IoResult<BtioOutcome>, run: &RunInfo) -> String {
        let cfg = self.config();
        let head = format!(
            " piotwin: {}\n BT operation count (NPB's): {:.4e} flops per time step\n",
            run.label,
            npb_step(cfg.grid)
        );
        match out {
            Ok(o) => head + &npb_block(cfg, o),
            Err(_) => head,
        }
    }
    fn report(&self, out: &IoResult<BtioOutcome>, mode: Mode, run: &RunInfo) -> RunReport {
        match out {
            Ok(o) => btio_report(self.config(), o, mode, run.environment.clone()),
            Err(e) => failed_report(
                "btio",
                serde_json::to_value(self.config()).expect("a BtioConfig serialises"),
                mode,
                run,
                e.to_string(),
            ),
        }
    }
    fn failure(&self, out: &IoResult<BtioOutcome>) -> Option<String> {
        match out {
            Ok(o) => verification_failure(&o.verification),
            Err(e) => Some(format!("btio: {e}")),
        }
    }
}

impl Benchmark for KernelProgram {
    fn render(&self, out: &IoResult<KernelOutcome>, run: &RunInfo) -> String {
        let head = format!("piotwin: {}\n", run.label);
        match out {
            Ok(o) => head + &kernel_block(self.config(), o),
            Err(_) => head,
        }
    }
    fn report(&self, out: &IoResult<KernelOutcome>, mode: Mode, run: &RunInfo) -> RunReport {
        match out {
            Ok(o) => kernel_report(self.config(), o, mode, run.environment.clone()),
            Err(e) => failed_report(
                "btio-kernel",
                serde_json::to_value(self.config()).expect("a KernelConfig serialises"),
                mode,
                run,
                e.to_string(),
            ),
        }
    }
    fn failure(&self, out: &IoResult<KernelOutcome>) -> Option<String> {
        match out {
            Ok(o) => verification_failure(&o.verification),
            Err(e) => Some(format!("btio-kernel: {e}")),
        }
    }
}
