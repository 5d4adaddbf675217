//! `fairflow sprio`: every listed job's priority and factors under the
//! configured model, as Slurm's `sprio -l` shows them; `-n` for the
//! normalized factors, Slurm's `-j JOBS`, `-u USERS`, `-p PARTITIONS`,
//! `-A ACCOUNTS` selections, `-o FIELDS` (by column name) and `-h`/`--noheader`.

use fairflow_serve::sprio::render;

use crate::output::{emit, OutputArgs};
use crate::remote::format_param;
use crate::slurm_flags::{filter_jobs, shaped};
use crate::state_args::StateArgs;

/// `fairflow sprio` flags. `-h` is Slurm's `--noheader` here, so help is
/// `--help` only.
#[derive(Debug, clap::Args)]
#[command(disable_help_flag = true)]
pub struct Args {
    /// Print help.
    #[arg(long, action = clap::ArgAction::Help)]
    help: Option<bool>,
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
    /// Only these jobs (comma-separated ids).
    #[arg(short = 'j', long = "jobs", value_name = "JOBS", value_delimiter = ',')]
    jobs: Vec<String>,
    /// Only these users' jobs (comma-separated).
    #[arg(
        short = 'u',
        long = "user",
        value_name = "USERS",
        value_delimiter = ','
    )]
    users: Vec<String>,
    /// Only these accounts' jobs (comma-separated).
    #[arg(
        short = 'A',
        long = "account",
        value_name = "ACCOUNTS",
        value_delimiter = ','
    )]
    accounts: Vec<String>,
    /// Only jobs in these partitions (comma-separated).
    #[arg(
        short = 'p',
        long = "partition",
        value_name = "PARTITIONS",
        value_delimiter = ','
    )]
    partitions: Vec<String>,
    /// The columns to show, by header name, in this order (comma-separated,
    /// any case): JOBID,PARTITION,USER,ACCOUNT,PRIORITY,SITE,AGE,ASSOC,
    /// FAIRSHARE,JOBSIZE,PARTITION,QOS,NICE,TRES. (Slurm's `%`-specifiers are
    /// not read.)
    #[arg(
        short = 'o',
        long = "format",
        value_name = "FIELDS",
        value_delimiter = ',',
        conflicts_with = "json"
    )]
    fields: Vec<String>,
    /// No header line (Slurm's `sprio -h`).
    #[arg(short = 'h', long = "noheader")]
    noheader: bool,
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
        let reshaping = !args.jobs.is_empty()
            || !args.users.is_empty()
            || !args.accounts.is_empty()
            || !args.partitions.is_empty()
            || !args.fields.is_empty()
            || args.noheader;
        if reshaping {
            anyhow::bail!("-j, -u, -A, -p, -o and -h are not available with --server yet");
        }
        return emit(&answer);
    }
    let Some(mut engine) = args.state.engine()? else {
        // A non-zero process of the cluster mode: process 0 answers.
        return Ok(());
    };
    let mut jobs = engine.priorities()?;
    filter_jobs(
        &mut jobs,
        &args.jobs,
        &args.users,
        &args.accounts,
        &args.partitions,
    );
    let fields = args.fields.clone();
    emit(&shaped(
        |f| render(&jobs, args.norm, f),
        format,
        &fields,
        !args.noheader,
    )?)
}
