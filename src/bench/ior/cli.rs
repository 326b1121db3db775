//! `piotwin run ior`: IOR's options, checked, turned into the [`Ior`] program.

use std::path::Path;

use crate::bench::common::options::parse_size;
use crate::bench::ior::{Ior, IorOutput, IorParams};
use crate::ctx::Api;
use crate::report::{Mode, RunReport};
use clap::{Args, ValueEnum};

use crate::run::{Benchmark, CliError, Common, CommonArgs, RunInfo};

/// The long help of `piotwin run`'s subcommand.
pub const LONG_ABOUT: &str = "\
IOR-style probe: N ranks each write and/or read `-s` segments of a `-b` block,
in `-t` transfers, to one shared file or one file per process (-F), through POSIX
or MPI-IO (independent, or collective with -c). Options are IOR's, with IOR's
meaning; output is IOR's per-repetition lines and \"Summary of all tests\".

Layout: rank r of N writes segment s, transfer j at offset j*t + s*N*b + r*b of
the shared file, or j*t + s*b of its own file testFile.0000000r (-F).
Bandwidth per repetition = all ranks' bytes / (latest close end - earliest open
start); open, wr/rd and close times are the maxima over ranks.
Every byte written is a pattern of (file, offset, --seed); real runs verify every
byte read back and report mismatches (exit code 1).

Differences from IOR: -C shifts the reading rank by --tasks-per-node (default 1;
IOR takes the ranks per node from the job), -z permutes each rank's own
transfers (seed --seed + rank) instead of the whole file's, the file is removed
after each repetition that wrote it unless -k, and there is no stonewalling.
Each transfer is filled with its pattern before it is written and checked after it
is read inside the timed loop; IOR fills its buffer once and checks only with -R/-W,
in separate passes. Measured here (2 ranks, MPI-IO, -t 1m -b 256m, page cache,
IOR 4 built beside it, 3 alternating runs of -i 3, MiB/s): reads 8925-9590 against
IOR's 16251-25535 (a test build without the check read 15783-25318); writes
4880-5617 against IOR's 1865-2200 (its first repetition 400), not yet explained
(IOR 4 calls the large-count MPI_File_write_at_c).";

/// The examples after the help.
pub const AFTER_HELP: &str = "\
Examples:
  mpiexec -n 4 piotwin run ior -a MPIIO -c -b 16m -t 1m -s 4 -i 3 -o /scratch/ior.dat --json ior.json
  mpiexec -n 4 piotwin run ior -a POSIX -F -C -e -b 64m -t 4m -o /scratch/ior
  piotwin run ior -a MPIIO -c -b 16m -t 1m --sim scenarios/cluster.toml --ranks 1024 --json twin.json
  piotwin run ior -z -b 1m -t 4k --dry-run --ranks 8";

/// `-a`: the I/O library.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ApiArg {
    /// POSIX open/pwrite/pread/fsync (independent only).
    Posix,
    /// MPI-IO (ROMIO): hints, collective buffering with -c.
    Mpiio,
}

fn size_arg(text: &str) -> Result<u64, String> {
    parse_size(text).map_err(|e| e.to_string())
}

/// IOR's options.
#[derive(Debug, Args)]
pub struct IorArgs {
    /// API for I/O: POSIX or MPIIO.
    #[arg(
        short = 'a',
        value_name = "API",
        value_enum,
        ignore_case = true,
        default_value = "posix"
    )]
    api: ApiArg,
    /// Block size: contiguous bytes each rank writes per segment (4k, 1m, 2g: powers of 1024).
    #[arg(short = 'b', value_name = "SIZE", default_value = "1m", value_parser = size_arg, allow_hyphen_values = true)]
    block: u64,
    /// Transfer size: bytes per I/O call; must divide the block size.
    #[arg(short = 't', value_name = "SIZE", default_value = "256k", value_parser = size_arg, allow_hyphen_values = true)]
    transfer: u64,
    /// Segment count: blocks per rank (segment s of rank r is at s*N*b + r*b).
    #[arg(short = 's', value_name = "COUNT", default_value_t = 1, allow_hyphen_values = true,
          value_parser = clap::value_parser!(u64).range(1..))]
    segments: u64,
    /// File per process: each rank its own file, -o name + `.%08d` of the rank.
    #[arg(short = 'F')]
    file_per_proc: bool,
    /// Collective I/O (MPI_File_write_at_all / read_at_all); needs -a MPIIO.
    #[arg(short = 'c')]
    collective: bool,
    /// Reorder tasks: read back what the rank --tasks-per-node further on wrote (defeats the client cache).
    #[arg(short = 'C')]
    reorder: bool,
    /// Ranks per node: the shift of -C.
    #[arg(long, value_name = "N", default_value_t = 1, allow_hyphen_values = true,
          value_parser = clap::value_parser!(u64).range(1..))]
    tasks_per_node: u64,
    /// fsync (MPI_File_sync) after the writes, inside the timed write.
    #[arg(short = 'e')]
    fsync: bool,
    /// Write the file (with neither -w nor -r: write, then read).
    #[arg(short = 'w')]
    write: bool,
    /// Read the file, verifying every byte in real runs (with neither -w nor -r: write, then read).
    #[arg(short = 'r')]
    read: bool,
    /// Random offsets: each rank visits its transfers in a seeded random order.
    #[arg(short = 'z')]
    random: bool,
    /// Repetitions of the whole test.
    #[arg(short = 'i', value_name = "COUNT", default_value_t = 1, allow_hyphen_values = true,
          value_parser = clap::value_parser!(u64).range(1..))]
    repetitions: u64,
    /// Keep the test file after each repetition (otherwise a repetition that wrote it removes it).
    #[arg(short = 'k')]
    keep_file: bool,
    /// Test file name (in the twin only a name).
    #[arg(short = 'o', value_name = "FILE", default_value = "testFile")]
    path: String,
    /// Also write IOR's own JSON summary (`ior -O summaryFormat=JSON`'s schema) to FILE, for scripts written for IOR.
    #[arg(long, value_name = "FILE")]
    ior_json: Option<std::path::PathBuf>,
    #[allow(missing_docs)]
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Nothing defaults from the machine.
impl crate::run::MachineDefaults for IorArgs {}

impl IorArgs {
    /// The checked program, ready to run with `common`.
    pub fn program(&self, common: &Common) -> Result<Ior, CliError> {
        let params = IorParams {
            api: match self.api {
                ApiArg::Posix => Api::Posix,
                ApiArg::Mpiio => Api::MpiIo,
            },
            block: self.block,
            transfer: self.transfer,
            segments: self.segments,
            file_per_proc: self.file_per_proc,
            collective: self.collective,
            reorder: self.reorder,
            tasks_per_node: self.tasks_per_node,
            fsync: self.fsync,
            write: self.write,
            read: self.read,
            random: self.random,
            repetitions: self.repetitions,
            keep_file: self.keep_file,
            path: self.path.clone(),
            hints: common.hints.clone(),
            seed: common.seed,
        };
        let ranks = common.ranks().or_else(crate::run::job_size).unwrap_or(1);
        params
            .validate(ranks)
            .map_err(|e| CliError::Usage(e.to_string()))?;
        if common.is_real() {
            let dir = match Path::new(&self.path).parent() {
                Some(d) if !d.as_os_str().is_empty() => d,
                _ => Path::new("."),
            };
            if !dir.is_dir() {
                return Err(CliError::Usage(format!(
                    "-o `{}`: the directory `{}` does not exist (or is not a directory)",
                    self.path,
                    dir.display()
                )));
            }
        }
        if let Some(p) = &self.ior_json {
            crate::run::check_output(p, "--ior-json")?;
        }
        Ok(Ior::new(params).with_ior_json(self.ior_json.clone()))
    }
}

impl Benchmark for Ior {
    fn render(&self, out: &IorOutput, run: &RunInfo) -> String {
        Ior::render(self, out, run.ranks, &run.label)
    }
    fn report(&self, out: &IorOutput, mode: Mode, run: &RunInfo) -> RunReport {
        Ior::report(self, out, mode, run.ranks, run.environment.clone())
    }
    fn write_files(
        &self,
        out: &IorOutput,
        _mode: Mode,
        run: &RunInfo,
    ) -> Result<Vec<std::path::PathBuf>, String> {
        let Some(path) = &self.ior_json else {
            return Ok(Vec::new());
        };
        let text = serde_json::to_string_pretty(&self.ior_json(out, run.ranks))
            .expect("the summary serialises");
        crate::report::write_atomic(path, text.as_bytes())
            .map_err(|e| format!("--ior-json `{}`: {e}", path.display()))?;
        Ok(vec![path.clone()])
    }
    fn failure(&self, out: &IorOutput) -> Option<String> {
        out.failure.clone().or_else(|| {
            out.verify_errors
                .first()
                .map(|e| format!("data verification failed: {e}"))
        })
    }
}
