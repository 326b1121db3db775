//! `piotwin run iozone`: IOzone's options, checked, turned into the [`Iozone`] program.

use std::path::Path;

use crate::bench::iozone::{Iozone, IozoneOutput, IozoneParams, Test, parse_kb_size};
use crate::ctx::Api;
use crate::report::{Mode, RunReport};
use clap::{ArgAction, Args, ValueEnum};

use crate::run::{Benchmark, CliError, Common, CommonArgs, RunInfo};

/// The long help of `piotwin run`'s subcommand.
pub const LONG_ABOUT: &str = "\
IOzone-style probe: one process (or one per rank: IOzone's throughput mode, one
file each, aggregate kB/s) writes and reads a file of size -s in records of size
-r: -i 0 write/rewrite, -i 1 read/re-read, -i 2 random read/random write,
-i 5 strided read (-j records apart). Output is IOzone's table in kBytes/sec
(kB = 1024 bytes) per file size x record size, then each pass's seconds, records
and the time of its final fsync with the bytes it dirtied (the sync-cost probe).

Sizes are IOzone's: a bare number is kB (-s 512 = 512 kB), or give a unit
(k, m, g). -a is auto mode: files 64k..512m (-n, -g), records 4k..16m (-y, -q),
doubling, records no larger than the file. Test 0 always runs: it creates the
file the other tests read. Open and close are outside the times; every write pass
ends with an fsync, inside the time with -e. -I drops the file's cached pages
before each read pass (fsync + posix_fadvise DONTNEED; in the twin, write-back
and eviction from the node's page cache), so reads come from the device.

Data is a pattern of (rank, offset, --seed): every 512-byte block starts with a
stamp of its offset. Real runs check every stamp read and every byte of each
64th record (a cost of about 2% of a memory copy, so reads stay back to back) and
report mismatches (exit code 1). Random orders come from --seed and are the same
in both modes. Each file x record size starts from a fresh test file; it is
deleted at the end unless -w.";

/// The examples after the help.
pub const AFTER_HELP: &str = "\
Examples:
  piotwin run iozone -a -g 64m -f /scratch --json iozone.json
  piotwin run iozone -i 0 -i 1 -i 2 -i 5 -s 256m -r 4k -r 1m -e -I -f /scratch/io.tmp
  mpiexec -n 4 piotwin run iozone -s 1g -r 1m -i 0 -i 1 -f /scratch --api MPIIO
  piotwin run iozone -a -g 1g --sim scenarios/default.toml --ranks 1 --json twin.json";

/// `--api`: the I/O library.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ApiArg {
    /// POSIX open/pwrite/pread/fsync.
    Posix,
    /// MPI-IO (independent calls, each rank its own file).
    Mpiio,
}

fn test_arg(text: &str) -> Result<Test, String> {
    let allowed = "allowed: 0 (write, rewrite), 1 (read, re-read), 2 (random read, random write), 5 (strided read)";
    let n: u64 = text
        .trim()
        .parse()
        .map_err(|_| format!("not a test number; {allowed}"))?;
    Test::from_number(n).ok_or_else(|| format!("this probe has no test {n}; {allowed}"))
}

/// Value of a bare `-a` (auto mode).
const AUTO: &str = "auto";

/// IOzone's options.
#[derive(Debug, Args)]
pub struct IozoneArgs {
    /// Test to run (repeatable; default 0 1 2): 0 write/rewrite, 1 read/re-read, 2 random read/write, 5 strided read.
    #[arg(short = 'i', value_name = "TEST", value_parser = test_arg, action = ArgAction::Append,
          allow_hyphen_values = true)]
    tests: Vec<Test>,
    /// File size (repeatable): a bare number is kB; units k, m, g. Default 512k (or the auto range).
    #[arg(short = 's', value_name = "SIZE", value_parser = parse_kb_size, action = ArgAction::Append,
          allow_hyphen_values = true)]
    file_sizes: Vec<u64>,
    /// Record size (repeatable): a bare number is kB; units k, m, g. Default 4k (or the auto range).
    #[arg(short = 'r', value_name = "SIZE", value_parser = parse_kb_size, action = ArgAction::Append,
          allow_hyphen_values = true)]
    record_sizes: Vec<u64>,
    /// Bare -a: auto mode (files 64k..512m, records 4k..16m, doubling). -a POSIX|MPIIO: the API, as --api.
    #[arg(short = 'a', value_name = "API", num_args = 0..=1, default_missing_value = AUTO,
          action = ArgAction::Append)]
    a: Vec<String>,
    /// API for I/O: POSIX or MPIIO (default POSIX).
    #[arg(long = "api", value_name = "API", value_enum, ignore_case = true)]
    api: Option<ApiArg>,
    /// Auto mode's smallest file size (needs -a).
    #[arg(short = 'n', value_name = "SIZE", value_parser = parse_kb_size, allow_hyphen_values = true)]
    min_file: Option<u64>,
    /// Auto mode's largest file size (needs -a).
    #[arg(short = 'g', value_name = "SIZE", value_parser = parse_kb_size, allow_hyphen_values = true)]
    max_file: Option<u64>,
    /// Auto mode's smallest record size (needs -a).
    #[arg(short = 'y', value_name = "SIZE", value_parser = parse_kb_size, allow_hyphen_values = true)]
    min_record: Option<u64>,
    /// Auto mode's largest record size (needs -a).
    #[arg(short = 'q', value_name = "SIZE", value_parser = parse_kb_size, allow_hyphen_values = true)]
    max_record: Option<u64>,
    /// Include the final fsync of each write pass in its time.
    #[arg(short = 'e')]
    fsync: bool,
    /// Cold reads: drop the file's cached pages before each read pass.
    #[arg(short = 'I')]
    cold: bool,
    /// Keep the test file(s) at the end (otherwise deleted).
    #[arg(short = 'w')]
    keep: bool,
    /// Not in IOzone: the sequential tests (0, 1) through MPI-IO's shared file
    /// pointer (MPI_File_write_shared/read_shared); needs --api MPIIO.
    #[arg(long = "shared-pointer")]
    shared_pointer: bool,
    /// Stride of the strided read (-i 5), in records.
    #[arg(short = 'j', value_name = "RECORDS", default_value_t = crate::bench::iozone::DEFAULT_STRIDE,
          allow_hyphen_values = true, value_parser = clap::value_parser!(u64).range(1..))]
    stride: u64,
    /// Test file, or a directory to put `iozone.tmp` in; under N ranks each rank adds `.RANK`.
    #[arg(short = 'f', value_name = "PATH", default_value = "iozone.tmp")]
    path: String,
    #[allow(missing_docs)]
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Nothing defaults from the machine.
impl crate::run::MachineDefaults for IozoneArgs {}

impl IozoneArgs {
    /// Auto mode and the API from `-a` and `--api`.
    fn auto_and_api(&self) -> Result<(bool, Api), CliError> {
        let mut auto = false;
        let mut api = self.api.map(|a| match a {
            ApiArg::Posix => Api::Posix,
            ApiArg::Mpiio => Api::MpiIo,
        });
        for v in &self.a {
            let picked = match v.to_ascii_lowercase().as_str() {
                AUTO => {
                    auto = true;
                    continue;
                }
                "posix" => Api::Posix,
                "mpiio" => Api::MpiIo,
                _ => {
                    return Err(CliError::Usage(format!(
                        "-a `{v}`: not an API; give -a alone for auto mode, or -a POSIX / -a MPIIO for the API"
                    )));
                }
            };
            if api.is_some_and(|a| a != picked) {
                return Err(CliError::Usage(format!(
                    "-a `{v}`: contradicts the API already chosen ({api:?}); give one"
                )));
            }
            api = Some(picked);
        }
        Ok((auto, api.unwrap_or(Api::Posix)))
    }

    /// The checked program, ready to run with `common`.
    pub fn program(&self, common: &Common) -> Result<Iozone, CliError> {
        let (auto, api) = self.auto_and_api()?;
        if !auto {
            for (flag, v) in [
                ("-n", self.min_file),
                ("-g", self.max_file),
                ("-y", self.min_record),
                ("-q", self.max_record),
            ] {
                if v.is_some() {
                    return Err(CliError::Usage(format!(
                        "{flag}: sets a bound of auto mode; it needs -a"
                    )));
                }
            }
        }
        let mut params = IozoneParams::new(common.seed);
        if !self.tests.is_empty() {
            params.tests = self.tests.clone();
        }
        params.file_sizes = self.file_sizes.clone();
        params.record_sizes = self.record_sizes.clone();
        params.auto = auto;
        params.auto_file = (
            self.min_file.unwrap_or(params.auto_file.0),
            self.max_file.unwrap_or(params.auto_file.1),
        );
        params.auto_record = (
            self.min_record.unwrap_or(params.auto_record.0),
            self.max_record.unwrap_or(params.auto_record.1),
        );
        params.api = api;
        params.stride = self.stride;
        params.fsync_in_time = self.fsync;
        params.cold = self.cold;
        params.shared_pointer = self.shared_pointer;
        params.keep = self.keep;
        params.hints = common.hints.clone();
        params.progress = true;
        // A directory gets IOzone's file name inside it (in the twin too, so
        // both modes name the same files).
        let given = Path::new(&self.path);
        params.path = if self.path.ends_with('/') || given.is_dir() {
            given.join("iozone.tmp").display().to_string()
        } else {
            self.path.clone()
        };
        let ranks = common.ranks().or_else(crate::run::job_size).unwrap_or(1);
        params
            .validate(ranks)
            .map_err(|e| CliError::Usage(e.to_string()))?;
        if common.is_real() {
            let dir = match Path::new(&params.path).parent() {
                Some(d) if !d.as_os_str().is_empty() => d,
                _ => Path::new("."),
            };
            if !dir.is_dir() {
                return Err(CliError::Usage(format!(
                    "-f `{}`: the directory `{}` does not exist (or is not a directory)",
                    self.path,
                    dir.display()
                )));
            }
        }
        Ok(Iozone::new(params))
    }
}

impl Benchmark for Iozone {
    fn render(&self, out: &IozoneOutput, run: &RunInfo) -> String {
        Iozone::render(self, out, run.ranks, &run.label)
    }
    fn report(&self, out: &IozoneOutput, mode: Mode, run: &RunInfo) -> RunReport {
        Iozone::report(self, out, mode, run.ranks, run.environment.clone())
    }
    fn failure(&self, out: &IozoneOutput) -> Option<String> {
        out.failure.clone().or_else(|| {
            out.verify_errors
                .first()
                .map(|e| format!("data verification failed: {e}"))
        })
    }
}
