//! `fairflow sshare`: the fair-share table of the replayed state, under the
//! configured algorithm, as Slurm's `sshare -a -l` shows it, with Slurm's
//! `-a`, `-l` (accepted; every association is always shown, in the long
//! form), `-A ACCOUNTS`, `-u USERS`, `-o FIELDS` and `-n`/`--noheader`.

use fairflow_serve::slurm_json::SHARES_PATH;
use fairflow_serve::sshare::render;
use fairflow_serve::OutputFormat;

use crate::output::{emit, OutputArgs};
use crate::slurm_flags::{route, selection, shaped};
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

/// Replay (or ask the service), select, print.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let _ = (args.all, args.long);
    let format = if args.slurm {
        OutputFormat::SlurmJson
    } else {
        args.output.format()
    };
    let selection = selection(&[], &args.users, &args.accounts, &[]);
    if args.state.server.is_some() {
        // The service selects; -o and -n reshape its answer here.
        let path = |f: OutputFormat| match f {
            OutputFormat::SlurmJson => route(SHARES_PATH, f, &selection, &[]),
            _ => route("/v1/sshare", f, &selection, &[]),
        };
        let asked = |f| Ok(args.state.remote(&path(f))?.unwrap_or_default());
        return emit(&shaped(asked, format, &args.fields, !args.noheader)?);
    }
    let Some(mut engine) = args.state.engine()? else {
        // A non-zero process of the cluster mode: process 0 answers.
        return Ok(());
    };
    let mut table = engine.fairshare()?;
    selection.fairshare(&mut table);
    emit(&shaped(
        |f| Ok(render(&table, f)),
        format,
        &args.fields,
        !args.noheader,
    )?)
}
