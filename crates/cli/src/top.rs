//! `fairflow top`: the first `-k` jobs of the ranked queue, in the order a
//! scheduler would visit them.

use fairflow_serve::top::render;

use crate::output::{emit, OutputArgs};
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

/// Replay, rank the pending jobs with the oracle, print the first `k`.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let replay = args.state.load()?;
    let factors = fairflow_oracle::fairshare::user_factors(&replay.state);
    let priorities = fairflow_oracle::priority::evaluate(&replay.state, &factors);
    let queue = fairflow_oracle::priority::queue(&priorities);
    emit(&render(&queue, args.k, args.output.format()))
}
