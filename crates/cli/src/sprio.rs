//! `fairflow sprio`: every listed job's priority and factors under the
//! configured model, as Slurm's `sprio -l` shows them; `-n` for the
//! normalized factors.

use fairflow_serve::sprio::render;

use crate::output::{emit, OutputArgs};
use crate::remote::format_param;
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

/// Load the state, compute every listed job's priority, print them.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let _ = args.long;
    let format = args.output.format();
    let path = format!(
        "/v1/sprio?format={}&norm={}",
        format_param(format),
        args.norm
    );
    if let Some(answer) = args.state.remote(&path)? {
        return emit(&answer);
    }
    let Some(mut engine) = args.state.engine()? else {
        // A non-zero process of the cluster mode: process 0 answers.
        return Ok(());
    };
    emit(&render(&engine.priorities()?, args.norm, format))
}
