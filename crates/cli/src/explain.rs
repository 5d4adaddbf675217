//! `fairflow explain JOB`: why a job has its priority: every factor with its
//! value, weight and contribution, the model and algorithm, and the
//! fair-share path from `root` to the job's user association.

use fairflow_serve::explain::{render_json, render_text};

use crate::output::emit;
use crate::state_args::StateArgs;

/// `fairflow explain` flags.
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

/// Load the state, ask the engine why, print it.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let format = if args.json { "json" } else { "text" };
    let path = crate::remote::job_path(&args.job, "explain", format);
    if let Some(answer) = args.state.remote(&path)? {
        return emit(&answer);
    }
    let Some(mut engine) = args.state.engine()? else {
        // A non-zero process of the cluster mode: process 0 answers.
        return Ok(());
    };
    let why = engine.explain(&args.job)?;
    let text = if args.json {
        render_json(&why.job, why.algorithm, &why.path, why.sluid)
    } else {
        render_text(&why.job, why.algorithm, &why.path)
    };
    emit(&text)
}
