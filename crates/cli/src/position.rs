//! `fairflow position JOB`: a job's place in line: its rank in the whole
//! queue and in each of its partitions, how many jobs of each account are
//! ahead of it (the `--top-accounts` with the most), and what it lacks to pass the job just ahead (priority
//! points, and per factor the value it alone would need). From `--events`
//! or a running `--server` (`GET /v1/jobs/{id}/position`).

use fairflow_model::report::position::{parse_accounts_shown, ACCOUNTS_SHOWN};
use fairflow_serve::position::{render_json, render_text};

use crate::output::emit;
use crate::state_args::StateArgs;

/// `fairflow position` flags.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The job id.
    job: String,
    #[command(flatten)]
    state: StateArgs,
    /// One JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// How many of the accounts with jobs ahead to list: those with the
    /// most (a number, or `all`); `ahead_accounts` counts every one.
    #[arg(long, default_value_t = ACCOUNTS_SHOWN, value_parser = parse_accounts_shown)]
    top_accounts: usize,
}

/// Load the state, ask the engine where the job stands, print it.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let format = if args.json { "json" } else { "text" };
    let shown = if args.top_accounts == usize::MAX {
        "all".to_string()
    } else {
        args.top_accounts.to_string()
    };
    let path = crate::remote::job_path(&args.job, "position", format);
    let path = format!("{path}&top_accounts={shown}");
    if let Some(answer) = args.state.remote(&path)? {
        return emit(&answer);
    }
    let Some(mut engine) = args.state.engine()? else {
        // A non-zero process of the cluster mode: process 0 answers.
        return Ok(());
    };
    let place = engine.position_showing(&args.job, args.top_accounts)?;
    let text = if args.json {
        render_json(&place)
    } else {
        render_text(&place)
    };
    emit(&text)
}
