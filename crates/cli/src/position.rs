//! `fairflow position JOB`: a job's place in line: its rank in the whole
//! queue and in each of its partitions, how many jobs of each account are
//! ahead of it, and what it lacks to pass the job just ahead (priority
//! points, and per factor the value it alone would need). From `--events`
//! or a running `--server` (`GET /v1/jobs/{id}/position`).

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
}

/// Load the state, ask the engine where the job stands, print it.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let format = if args.json { "json" } else { "text" };
    let path = crate::remote::job_path(&args.job, "position", format);
    if let Some(answer) = args.state.remote(&path)? {
        return emit(&answer);
    }
    let Some(mut engine) = args.state.engine()? else {
        // A non-zero process of the cluster mode: process 0 answers.
        return Ok(());
    };
    let place = engine.position(&args.job)?;
    let text = if args.json {
        render_json(&place)
    } else {
        render_text(&place)
    };
    emit(&text)
}
