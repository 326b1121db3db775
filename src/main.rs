//! The `piotwin` command line (see `cli` for its structure and exit codes).

mod cli;

use std::process::ExitCode;

use clap::Parser;

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
