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
cost of waking a descheduled, busy-polling rank, and the barrier_exit rows when
the ranks left the barriers (row k: the mean time after the first rank out at
which the (k+1)-th left, over the first 100 barriers), then the allreduce row
(as many all-reduces of one value, timed the same way). Real runs check the data
each rank holds after the exchanges and every all-reduce's sum.

With --two-phase SIZES, then collective I/O through ROMIO's two-phase method:
every rank sees one shared file (-o) through an interleaved view (blocks of
--two-phase-block, ranks round robin), and for each size makes 3 to 10
write_at_all calls of that many bytes per rank, then read_at_all of the same
bytes, each after a barrier; rows twophase_write and twophase_read give the
mean call time (maximum over ranks) and the bytes of one call over all ranks.
The file is deleted at the end; real runs check what they read back.

With --polled A, before that: the first A ranks, in a communicator of their own,
time for each size of --polled-copies n copies of a buffer, then n steps of a
copy and a barrier among them, while the other ranks wait in a barrier of all;
rows polled_copy and polled_step give the mean time of a copy and of a step.
The steps come in episodes of 5, each after every rank taking part wrote,
synced and deleted a page-sized file of its own (-o with .polledR appended;
untimed), so that the kernel places the ranks again as it does an I/O
application's.
With more ranks than cores this shows what waiting ranks do (MPICH busy-polls:
they keep their share of the cores) and what a barrier among no more ranks
than cores costs meanwhile. Real runs check the last copy.

With --locked-writes SIZES, after the polled test, for each size: every rank
writes SIZE bytes at rank * SIZE of one shared file (-o, independent MPI-IO),
once untimed (so the timed writes find their pages cached) and then 3 to 20
times, each after a barrier; row locked_write gives the mean call time (maximum
over ranks). Where the file system takes an inode lock, the writes copy one at
a time; with more ranks than cores this shows whether a writer that slept on
the lock runs on a whole core or at its share beside the polling ranks, and
(from a size whose copy outlasts a time slice) for how long. The file is
deleted after each size; real runs check what they read back.";

/// The examples after the help.
pub const AFTER_HELP: &str = "\
Examples:
  mpiexec -n 2 piotwin run pingpong --sizes 1,1k,64k,1m,4m --json pp.json
  mpiexec -n 4 piotwin run pingpong --sizes 1 --barriers 2000
  mpiexec -n 4 piotwin run pingpong --sizes 1 --two-phase 256k,1m,4m -o /scratch/pp.dat
  mpiexec -n 4 piotwin run pingpong --sizes 1 --polled 2 --polled-copies 64k,1m,8m
  mpiexec -n 4 piotwin run pingpong --sizes 1 --locked-writes 8m,32m -o /scratch/pp.dat
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
    /// Then time two-phase collective I/O: bytes per rank of each collective call, comma-separated (multiples of --two-phase-block); no test without it.
    #[arg(long, value_name = "SIZES", value_parser = sizes_arg)]
    two_phase: Option<SizeList>,
    /// Block of the two-phase test's interleaved file view (rank r's blocks at (r + k * ranks) * block).
    #[arg(long, value_name = "SIZE", default_value = "64k", value_parser = parse_size)]
    two_phase_block: u64,
    /// The two-phase test's file (created and deleted).
    #[arg(short = 'o', long, value_name = "PATH", default_value = "pingpong.dat")]
    file: String,
    /// Then time copies and copy-and-barrier steps on the first N ranks while the others wait (the polled test); no test without it.
    #[arg(long, value_name = "N", requires = "polled_copies")]
    polled: Option<u64>,
    /// Bytes of each copy of the polled test, comma-separated.
    #[arg(long, value_name = "SIZES", value_parser = sizes_arg, requires = "polled")]
    polled_copies: Option<SizeList>,
    /// Then every rank writes this many bytes to its part of one file (-o) at once, after a barrier, 3 to 20 times (the locked-write test), for each size of the comma-separated list; no test without it.
    #[arg(long, value_name = "SIZES", value_parser = sizes_arg)]
    locked_writes: Option<SizeList>,
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
            two_phase: self
                .two_phase
                .as_ref()
                .map_or_else(Vec::new, |l| l.0.clone()),
            two_phase_block: self.two_phase_block,
            file: self.file.clone(),
            polled: self.polled.unwrap_or(0),
            polled_copies: self
                .polled_copies
                .as_ref()
                .map_or_else(Vec::new, |l| l.0.clone()),
            locked_writes: self
                .locked_writes
                .as_ref()
                .map_or_else(Vec::new, |l| l.0.clone()),
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
