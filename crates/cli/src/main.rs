//! The `fairflow` binary: parses the command line and prints what the engines
//! answer. The only place that uses `anyhow` and prints to stdout.
//!
//! One module per subcommand (`sshare`, `demo`, `import`); what every query
//! command shares lives in `state_args` (where state comes from: `--events`,
//! `--at`, `--slurm-conf`, `--moab-cfg`) and `output` (`-P`, `--json`, and
//! writing to stdout). A new subcommand is a module with an `Args` struct and
//! a `run` function, plus one variant of [`Command`].

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod demo;
mod import;
mod output;
mod sshare;
mod state_args;

#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// fairflow: HPC fair-share and job priority (Slurm, Flux, Moab), computed
/// from an event log.
#[derive(Debug, Parser)]
#[command(name = "fairflow", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// The fair-share table, as Slurm's `sshare -a -l` shows it.
    Sshare(sshare::Args),
    /// Slurm's classic fair-share example under every algorithm (no files needed).
    Demo(demo::Args),
    /// Convert another system's records into an event log.
    Import(import::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Sshare(args) => sshare::run(&args),
        Command::Demo(args) => demo::run(&args),
        Command::Import(args) => import::run(&args),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("fairflow: error: {}", message(&error));
            ExitCode::FAILURE
        }
    }
}

/// The error and its causes, each cause once: a cause whose text the message
/// already contains (some errors print their source) is not repeated.
fn message(error: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in error.chain() {
        let cause = cause.to_string();
        if !text.contains(&cause) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&cause);
        }
    }
    text
}
