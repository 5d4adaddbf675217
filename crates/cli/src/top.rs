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

/// Load the state, take the first `k` of the ranked queue, print them.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let mut engine = args.state.engine()?;
    let queue = engine.top(args.k);
    emit(&render(&queue, args.k, args.output.format()))
}
