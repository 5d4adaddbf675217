//! `fairflow top`: the first `-k` jobs of the ranked queue, in the order a
//! scheduler would visit them.

use fairflow_serve::top::render;

use crate::output::{emit, OutputArgs};
use crate::remote::format_param;
use crate::state_args::StateArgs;

/// `fairflow top` flags.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    state: StateArgs,
    #[command(flatten)]
    output: OutputArgs,
    /// How many jobs to show.
    #[arg(short = 'k', value_name = "N", default_value_t = 10)]
    k: usize,
}

/// Load the state, take the first `k` of the ranked queue, print them.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let format = args.output.format();
    let path = format!("/v1/top?k={}&format={}", args.k, format_param(format));
    if let Some(answer) = args.state.remote(&path)? {
        return emit(&answer);
    }
    let Some(mut engine) = args.state.engine()? else {
        // A non-zero process of the cluster mode: process 0 answers.
        return Ok(());
    };
    emit(&render(&engine.top(args.k)?, args.k, format))
}
