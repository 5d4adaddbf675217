//! `fairflow sprio`: every listed job's priority and factors under the
//! configured model, as Slurm's `sprio -l` shows them; `-n` for the
//! normalized factors.

use fairflow_serve::sprio::render;

use crate::output::{emit, OutputArgs};
use crate::state_args::StateArgs;

/// `fairflow sprio` flags.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    state: StateArgs,
    #[command(flatten)]
    output: OutputArgs,
    /// The normalized factors (0..1, seven decimals) instead of the weighted ones.
    #[arg(short = 'n', long = "norm")]
    norm: bool,
    /// Accepted for Slurm's `sprio -l`: fairflow always prints the long form.
    #[arg(short = 'l', long = "long")]
    long: bool,
}

/// Replay, compute fair-share and priorities with the oracle, print them.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let _ = args.long;
    let replay = args.state.load()?;
    let factors = fairflow_oracle::fairshare::user_factors(&replay.state);
    let priorities = fairflow_oracle::priority::evaluate(&replay.state, &factors);
    emit(&render(&priorities, args.norm, args.output.format()))
}
