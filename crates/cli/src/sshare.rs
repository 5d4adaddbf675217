//! `fairflow sshare`: the fair-share table of the replayed state, under the
//! configured algorithm, as Slurm's `sshare -a -l` shows it, with Slurm's
//! `-a`, `-l` (accepted; every association is always shown, in the long
//! form), `-A ACCOUNTS`, `-u USERS`, `-o FIELDS` and `-n`/`--noheader`.

use fairflow_serve::slurm_json::SHARES_PATH;
use fairflow_serve::sshare::render;
use fairflow_serve::OutputFormat;

use crate::output::{emit, OutputArgs};
use crate::remote::format_param;
use crate::slurm_flags::{filter_fairshare, shaped};
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
    /// Accepted for Slurm's `sshare -a`: every association is always shown.
    #[arg(short = 'a', long = "all")]
    all: bool,
    /// Accepted for Slurm's `sshare -l`: the long form is always shown.
    #[arg(short = 'l', long = "long")]
    long: bool,
    /// Only these accounts (comma-separated): their rows and their users'.
    #[arg(
        short = 'A',
        long = "accounts",
        value_name = "ACCOUNTS",
        value_delimiter = ','
    )]
    accounts: Vec<String>,
    /// Only these users' associations (comma-separated).
    #[arg(
        short = 'u',
        long = "users",
        value_name = "USERS",
        value_delimiter = ','
    )]
    users: Vec<String>,
    /// The columns to show, by header name, in this order (comma-separated,
    /// any case): Account,User,RawShares,NormShares,RawUsage,NormUsage,
    /// EffectvUsage,FairShare,LevelFS (and the algorithm's own columns).
    #[arg(
        short = 'o',
        long = "format",
        value_name = "FIELDS",
        value_delimiter = ',',
        conflicts_with = "json"
    )]
    fields: Vec<String>,
    /// No header line.
    #[arg(short = 'n', long = "noheader")]
    noheader: bool,
}

/// Replay, compute the table with the oracle, print it.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let _ = (args.all, args.long);
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
    let fields = args.fields.clone();
    let selecting = !args.accounts.is_empty() || !args.users.is_empty();
    if let Some(answer) = args.state.remote(&path)? {
        if selecting || !fields.is_empty() || args.noheader {
            anyhow::bail!("-A, -u, -o and -n are not available with --server yet");
        }
        return emit(&answer);
    }
    let Some(mut engine) = args.state.engine()? else {
        // A non-zero process of the cluster mode: process 0 answers.
        return Ok(());
    };
    let mut table = engine.fairshare()?;
    filter_fairshare(&mut table, &args.accounts, &args.users);
    emit(&shaped(
        |f| render(&table, f),
        format,
        &fields,
        !args.noheader,
    )?)
}
