//! `fairflow sshare`: the fair-share table of the replayed state, under the
//! configured algorithm, as Slurm's `sshare -a -l` shows it.

use fairflow_serve::slurm_json::SHARES_PATH;
use fairflow_serve::sshare::render;
use fairflow_serve::OutputFormat;

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
    /// With `--json`: Slurm's own JSON (`sshare --json`, slurmrestd's
    /// `/slurm/v0.0.46/shares`, data_parser v0.0.46) instead of fairflow's.
    #[arg(long, requires = "json")]
    slurm: bool,
}

/// Replay, compute the table with the oracle, print it.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let format = if args.slurm {
        OutputFormat::SlurmJson
    } else {
        args.output.format()
    };
    let path = if args.slurm {
        SHARES_PATH.to_string()
    } else {
        format!("/v1/sshare?format={}", format_param(format))
    };
    if let Some(answer) = args.state.remote(&path)? {
        return emit(&answer);
    }
    let Some(mut engine) = args.state.engine()? else {
        // A non-zero process of the cluster mode: process 0 answers.
        return Ok(());
    };
    emit(&render(&engine.fairshare()?, format))
}
