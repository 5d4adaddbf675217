//! The `fairflow` binary: parses the command line and prints what the engines
//! answer. The only place that uses `anyhow` and prints to stdout.
//!
//! One module per subcommand (`sshare`, `sprio`, `top`, `explain`, `position`, `audit`, `plot`, `whatif`, `demo`,
//! `import`, `serve`, `loadtest`, `gen`, `replay`, `bench`, `man` and
//! `completions` in `manpage`); `measure` holds
//! the latency, memory and machine helpers `bench` and `demo` share; what every query
//! command shares lives in `state_args` (where state comes from: `--events`,
//! `--at`, `--slurm-conf`, `--moab-cfg`) and `output` (`-P`, `--json`, and
//! writing to stdout). A new subcommand is a module with an `Args` struct and
//! a `run` function, plus one variant of [`Command`].

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

mod audit;
mod bench;
mod bench_args;
mod bench_baselines;
mod bench_engine;
mod bench_oracle;
mod bench_output;
mod bench_reads;
mod bench_restart;
mod bench_service_reads;
mod bench_setup;
mod demo;
mod explain;
mod flux_views;
mod gen;
mod history;
mod import;
mod input_check;
mod loadtest;
mod log_batches;
mod logging;
mod manpage;
mod measure;
mod output;
mod plot;
mod position;
mod remote;
mod replay;
mod serve;
mod slurm_flags;
mod sprio;
mod sshare;
mod state_args;
mod token_file;
mod top;
mod whatif;

#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// fairflow: HPC fair-share and job priority (Slurm, Flux, Moab), computed
/// from an event log.
#[derive(Debug, Parser)]
#[command(name = "fairflow", version, about, long_about = None)]
struct Cli {
    /// How log records on standard error are written: `text` or `json` (one
    /// object a line). `RUST_LOG` chooses what is logged (default `info` for
    /// fairflow, `warn` for its libraries).
    #[arg(long, global = true, value_enum, default_value = "text")]
    log_format: logging::LogFormat,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// The fair-share table, as Slurm's `sshare -a -l` shows it.
    Sshare(sshare::Args),
    /// The live service: HTTP, accounting taps, durable log, checkpoints.
    Serve(Box<serve::Args>),
    /// A deterministic synthetic workload as an event log.
    Gen(gen::Args),
    /// A bounded load test of a running service on this machine.
    Loadtest(loadtest::Args),
    /// Each pending job's priority and factors, as Slurm's `sprio -l` shows them.
    Sprio(sprio::Args),
    /// The pending jobs in the order a scheduler would visit them.
    Top(top::Args),
    /// The bank tree as Flux's `flux account view-bank BANK -t [-P]` prints it.
    ViewBank(flux_views::ViewBankArgs),
    /// Pending jobs' priority factors as Flux's `flux account jobs` prints them.
    FluxJobs(flux_views::FluxJobsArgs),
    /// Why a job has its priority: every factor, and the fair-share path.
    Explain(explain::Args),
    /// Who is over- and under-served, per level; high fair-share users waiting longest.
    Audit(audit::Args),
    /// One association's fair-share history: a service's (`--server`) or a log's.
    History(history::Args),
    /// Pictures: the fair-share tree (`plot tree`), a replay's history (`plot history`).
    Plot(plot::Args),
    /// A job's place in line: its rank, the jobs ahead by account, the gap to the next.
    Position(position::Args),
    /// What proposed changes (events, a slurm.conf) would do to fair-shares and the queue.
    Whatif(whatif::Args),
    /// Slurm's classic fair-share example under every algorithm (no files needed).
    Demo(demo::Args),
    /// Convert another system's records into an event log.
    Import(import::Args),
    /// Feed logs or SWF traces through the incremental engine and report its speed.
    Replay(replay::Args),
    /// Measure the incremental engine at cluster scale against full recomputation.
    Bench(bench::Args),
    /// The man page (roff), generated from these definitions.
    Man(manpage::ManArgs),
    /// Shell completions (bash, zsh, fish, elvish, powershell).
    Completions(manpage::CompletionsArgs),
}

fn main() -> ExitCode {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let cli = match serve::with_config_file(&argv) {
        Ok(None) => Cli::parse(),
        // `serve --config FILE`: the file's flags, then the command line's,
        // which override them.
        Ok(Some(argv)) => {
            let matches = Cli::command()
                .args_override_self(true)
                .get_matches_from(argv);
            match Cli::from_arg_matches(&matches) {
                Ok(cli) => cli,
                Err(error) => error.exit(),
            }
        }
        Err(error) => {
            eprintln!("fairflow: error: {}", message(&error));
            return ExitCode::FAILURE;
        }
    };
    logging::init(cli.log_format);
    let outcome = match cli.command {
        Command::Sshare(args) => sshare::run(&args),
        Command::Sprio(args) => sprio::run(&args),
        Command::Top(args) => top::run(&args),
        Command::ViewBank(args) => flux_views::run_view_bank(&args),
        Command::FluxJobs(args) => flux_views::run_flux_jobs(&args),
        Command::Explain(args) => explain::run(&args),
        Command::Position(args) => position::run(&args),
        Command::Plot(args) => plot::run(&args),
        Command::History(args) => history::run(&args),
        Command::Audit(args) => audit::run(&args),
        Command::Whatif(args) => whatif::run(&args),
        Command::Demo(args) => demo::run(&args),
        Command::Serve(args) => serve::run(&args),
        Command::Gen(args) => gen::run(&args),
        Command::Loadtest(args) => loadtest::run(&args),
        Command::Import(args) => import::run(&args),
        Command::Replay(args) => replay::run(&args),
        Command::Bench(args) => bench::run(&args),
        Command::Man(args) => manpage::run_man(&args, Cli::command()),
        Command::Completions(args) => manpage::run_completions(&args, Cli::command()),
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
