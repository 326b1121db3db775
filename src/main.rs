//! The `piotwin` command line (see `cli` for its structure and exit codes).

mod cli;

use std::process::ExitCode;

use clap::Parser;

/// The twin allocates and frees millions of small objects per simulated
/// second (signals, flow paths, rendezvous vectors); glibc's allocator spent
/// over a third of a 1024-rank run consolidating its fast bins.
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
