//! `piotwin run pingpong`: the point-to-point probe's options, checked, turned
//! into the [`Pingpong`] program.

use crate::bench::common::options::parse_size;
use crate::bench::pingpong::{Pingpong, PingpongOutput, PingpongParams};
use crate::report::{Mode, RunReport};
use clap::Args;

use crate::run::{Benchmark, CliError, Common, CommonArgs, RunInfo};

/// The long help of `piotwin run`'s subcommand.
pub const LONG_ABOUT: &str = "\
Point-to-point probe: ranks paired r <-> r xor 1 exchange a buffer with
MPI_Sendrecv_replace, for each message size; then all ranks time barriers.
One exchange moves both directions at once, so its time is one one-way message
time (latency + bytes / bandwidth). Each row is the maximum over ranks of
elapsed / repetitions. With more ranks than cores the barrier time shows the
cost of waking a descheduled, busy-polling rank. Real runs check the data each
rank holds after the exchanges.";

/// The examples after the help.
pub const AFTER_HELP: &str = "\
Examples:
  mpiexec -n 2 piotwin run pingpong --sizes 1,1k,64k,1m,4m --json pp.json
  mpiexec -n 4 piotwin run pingpong --sizes 1 --barriers 2000
  piotwin run pingpong --sim scenarios/default.toml --ranks 2";

/// A comma-separated list of sizes, bytes.
#[derive(Debug, Clone)]
pub struct SizeList(Vec<u64>);

fn sizes_arg(text: &str) -> Result<SizeList, String> {
    text.split(',')
        .map(parse_size)
        .collect::<Result<_, _>>()
        .map(SizeList)
        .map_err(|e| e.to_string())
}

/// The probe's options and the common ones.
#[derive(Debug, Args)]
pub struct PingpongArgs {
    /// Message sizes, comma-separated (4k, 1m: powers of 1024; at least 1 byte, at most 1 GiB).
    #[arg(long, value_name = "SIZES", default_value = "1,64,1k,8k,64k,512k,4m", value_parser = sizes_arg)]
    sizes: SizeList,
    /// Most exchanges timed per size (large sizes do fewer: about --bytes-per-size bytes each, at least 4).
    #[arg(long, value_name = "N", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    iterations: u64,
    /// Bytes each size should move (sets the exchanges of large messages).
    #[arg(long, value_name = "SIZE", default_value = "256m", value_parser = parse_size)]
    bytes_per_size: u64,
    /// Barriers timed.
    #[arg(long, value_name = "N", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    barriers: u64,
    #[allow(missing_docs)]
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Nothing defaults from the machine.
impl crate::run::MachineDefaults for PingpongArgs {}

impl PingpongArgs {
    /// The checked program, ready to run with `common`.
    pub fn program(&self, common: &Common) -> Result<Pingpong, CliError> {
        let params = PingpongParams {
            sizes: self.sizes.0.clone(),
            iterations: self.iterations,
            bytes_per_size: self.bytes_per_size,
            barriers: self.barriers,
        };
        let ranks = common.ranks().or_else(crate::run::job_size).unwrap_or(1);
        params
            .validate(ranks)
            .map_err(|e| CliError::Usage(e.to_string()))?;
        Ok(Pingpong { params })
    }
}

impl Benchmark for Pingpong {
    fn render(&self, out: &PingpongOutput, run: &RunInfo) -> String {
        Pingpong::render(self, out, &run.label)
    }
    fn report(&self, out: &PingpongOutput, mode: Mode, run: &RunInfo) -> RunReport {
        Pingpong::report(self, out, mode, run.ranks, run.environment.clone())
    }
    fn failure(&self, out: &PingpongOutput) -> Option<String> {
        out.mismatches
            .first()
            .map(|m| format!("data check failed: {m}"))
    }
}
