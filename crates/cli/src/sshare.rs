//! `fairflow sshare`: the fair-share table of the replayed state, under the
//! configured algorithm, as Slurm's `sshare -a -l` shows it.

use fairflow_serve::sshare::render;

use crate::output::{emit, OutputArgs};
use crate::remote::format_param;
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
    let format = args.output.format();
    if let Some(answer) = args
        .state
        .remote(&format!("/v1/sshare?format={}", format_param(format)))?
    {
        return emit(&answer);
    }
    let Some(mut engine) = args.state.engine()? else {
        // A non-zero process of the cluster mode: process 0 answers.
        return Ok(());
    };
    emit(&render(&engine.fairshare()?, format))
}
