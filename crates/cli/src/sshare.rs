//! `fairflow sshare`: the fair-share table of the replayed state, under the
//! configured algorithm, as Slurm's `sshare -a -l` shows it.

use fairflow_serve::sshare::render;

use crate::output::{emit, OutputArgs};
use crate::state_args::StateArgs;

/// `fairflow sshare` flags.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    state: StateArgs,
    #[command(flatten)]
    output: OutputArgs,
}

/// Replay, compute the table with the oracle, print it.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let replay = args.state.load()?;
    let table = fairflow_oracle::fairshare::table(&replay.state);
    emit(&render(&table, args.output.format()))
}
