//! The `piotwin` command line (see `cli` for its structure and exit codes).

mod cli;

use std::process::ExitCode;

use clap::Parser;

/// The twin allocates and frees millions of small objects per simulated
/// second (signals, flow paths, rendezvous vectors); glibc's allocator spent
/// over a third of a 1024-rank run consolidating its fast bins. Built with
/// `no_thp`: mimalloc otherwise advises transparent huge pages on its arenas,
/// and real runs' buffers then fault in 2 MiB pages of fresh memory that the
/// reference codes (glibc malloc, no advice) never take; FTIO's first read
/// into its 85 MB Square buffer took 0.19–0.27 s with the advice, 0.03 s without.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let parsed = cli::Cli::parse_from(cli::normalize_args(std::env::args_os().collect()));
    match cli::run(parsed) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if let Some(m) = e.message() {
                eprintln!("piotwin: error: {m}");
            }
            ExitCode::from(e.exit_code())
        }
    }
}
