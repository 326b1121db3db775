//! The benchmarks, written once against [`crate::ctx::IoCtx`], each in its
//! folder (`params`, `program`, `output`, `tests`, `cli`), and the registry of
//! those `piotwin run` knows: adding a benchmark is its folder, its `pub mod`
//! line and its line in `benchmarks!` below.

use crate::report::RunReport;
use crate::run::{
    CliError, Common, MachineDefault, MachineDefaults, execute, predict, sample_intervals,
};

pub mod beff;
pub mod beff_io;
pub mod btio;
pub mod common;
pub mod ftio;
pub mod ior;
pub mod iozone;
pub mod madbench2;
pub mod pingpong;

/// Declares the benchmarks `piotwin run` (and so `compare`) knows, each as its
/// subcommand's doc line and help, a variant name and its options type: the
/// enum [`Bench`] and how each is checked and run.
macro_rules! benchmarks {
    ($( $(#[$attr:meta])* $variant:ident($args:ty), )*) => {
        /// The benchmarks `piotwin run` knows.
        #[derive(Debug, clap::Subcommand)]
        pub enum Bench {
            $( $(#[$attr])* #[allow(missing_docs)] $variant(Box<$args>), )*
        }

        impl Bench {
            /// Checks the options as `run` does before it runs (common options
            /// resolved, the program built and checked); runs and writes nothing.
            pub fn check(&self) -> Result<(), CliError> {
                match self {
                    $( Bench::$variant(a) => a.program(&a.common.resolve()?).map(drop), )*
                }
            }

            /// The options left out that default from the machine, resolved here
            /// (what `compare` passes to both of its runs).
            pub fn machine_defaults(&self) -> Result<Vec<MachineDefault>, CliError> {
                match self {
                    $( Bench::$variant(a) => a.machine_defaults(), )*
                }
            }

            /// A twin run's report and failure, nothing printed or written (no
            /// progress either), and
            /// with `--samples K` the prediction intervals in the report.
            pub fn predict(&self) -> Result<(RunReport, Option<String>), CliError> {
                match self {
                    $( Bench::$variant(a) => {
                        let common = Common { quiet: true, ..a.common.resolve()? };
                        let program = a.program(&common)?;
                        let (mut report, failure) = predict(&program, &common, &[])?;
                        if let Some(k) = common.samples && report.interrupted.is_none() {
                            report.intervals = sample_intervals(&program, &common, k)?;
                        }
                        Ok((report, failure))
                    } )*
                }
            }

            /// Runs the benchmark in the mode its common options select.
            pub fn run(&self) -> Result<(), CliError> {
                match self {
                    $( Bench::$variant(a) => {
                        let common = a.common.resolve()?;
                        execute(&a.program(&common)?, &common)
                    } )*
                }
            }
        }
    };
}

// The registry: one entry per benchmark (a subcommand of `piotwin run`).
benchmarks! {
    /// IOR-style probe: bandwidth of N ranks writing/reading a shared file or a file per process.
    #[command(long_about = ior::cli::LONG_ABOUT, after_help = ior::cli::AFTER_HELP)]
    Ior(ior::cli::IorArgs),
    /// NPB BT-IO: BT's multi-partition field dumped every few steps (full, simple, fortran, epio, none).
    #[command(long_about = btio::cli::BTIO_LONG_ABOUT, after_help = btio::cli::BTIO_AFTER_HELP)]
    Btio(btio::cli::BtioCliArgs),
    /// The PnetCDF BTIO kernel: records of BT's multi-partition written or read by method 0-3.
    #[command(long_about = btio::cli::KERNEL_LONG_ABOUT, after_help = btio::cli::KERNEL_AFTER_HELP)]
    BtioKernel(btio::cli::KernelCliArgs),
    /// FTIO: out-of-core 2-D FFT (N = I²·c) and its I/O fraction.
    #[command(long_about = ftio::cli::LONG_ABOUT, after_help = ftio::cli::AFTER_HELP)]
    Ftio(ftio::cli::FtioCliArgs),
    /// IOzone-style probe: kB/s per file size x record size for write, rewrite, read, re-read, random, strided.
    #[command(long_about = iozone::cli::LONG_ABOUT, after_help = iozone::cli::AFTER_HELP)]
    Iozone(iozone::cli::IozoneArgs),
    /// b_eff_io: effective I/O bandwidth over 43 time-driven access patterns (release 2.1).
    #[command(name = "b_eff_io", long_about = beff_io::cli::LONG_ABOUT, after_help = beff_io::cli::AFTER_HELP)]
    BeffIo(beff_io::cli::BeffIoCliArgs),
    /// MADbench2 in I/O mode: S writes, W reads and rewrites, C reads per-rank matrix slots, busy-work between.
    #[command(long_about = madbench2::cli::LONG_ABOUT, after_help = madbench2::cli::AFTER_HELP)]
    Madbench2(madbench2::cli::Madbench2CliArgs),
    /// b_eff: effective communication bandwidth over ring and random patterns, 21 sizes, 3 methods.
    #[command(name = "b_eff", long_about = beff::cli::LONG_ABOUT, after_help = beff::cli::AFTER_HELP)]
    Beff(beff::cli::BeffArgs),
    /// Point-to-point probe: MPI_Sendrecv_replace time over message sizes, and barrier time.
    #[command(long_about = pingpong::cli::LONG_ABOUT, after_help = pingpong::cli::AFTER_HELP)]
    Pingpong(pingpong::cli::PingpongArgs),
}
