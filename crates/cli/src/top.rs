//! `fairflow top`: the first `-k` jobs of the ranked queue, in the order a
//! scheduler would visit them; `squeue`-style `-A ACCOUNTS`, `-u USERS`,
//! `-p PARTITIONS` keep only those jobs (ranks stay the queue's ranks among
//! the jobs shown). With `-p`, each job ranks by its priority in those
//! partitions: a job submitted to several partitions or several QOS by its
//! best (partition, QOS) pair there.

use fairflow_model::report::partition_queue;
use fairflow_serve::top::render;

use crate::output::{emit, OutputArgs};
use crate::remote::format_param;
use crate::slurm_flags::filter_jobs;
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
    /// Only these accounts' jobs (comma-separated), as `squeue -A`.
    #[arg(
        short = 'A',
        long = "account",
        value_name = "ACCOUNTS",
        value_delimiter = ',',
        conflicts_with = "server"
    )]
    accounts: Vec<String>,
    /// Only these users' jobs (comma-separated), as `squeue -u`.
    #[arg(
        short = 'u',
        long = "user",
        value_name = "USERS",
        value_delimiter = ',',
        conflicts_with = "server"
    )]
    users: Vec<String>,
    /// Only jobs in these partitions (comma-separated), as `squeue -p`.
    #[arg(
        short = 'p',
        long = "partition",
        value_name = "PARTITIONS",
        value_delimiter = ',',
        conflicts_with = "server"
    )]
    partitions: Vec<String>,
}

/// Load the state, take the first `k` of the ranked queue, print them.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let format = args.output.format();
    let path = format!("/v1/top?k={}&format={}", args.k, format_param(format));
    if let Some(answer) = args.state.remote(&path)? {
        return emit(&answer);
    }
    let Some(mut engine) = args.state.engine()? else {
        // A non-zero process of the cluster mode: process 0 answers.
        return Ok(());
    };
    if args.accounts.is_empty() && args.users.is_empty() && args.partitions.is_empty() {
        return emit(&render(&engine.top(args.k)?, args.k, format));
    }
    let mut queue = if args.partitions.is_empty() {
        engine.top(usize::MAX)?
    } else {
        // Each job by its priority in the given partitions (its best pair
        // there, for a job submitted to several partitions or QOS).
        partition_queue(&engine.priorities()?, &args.partitions)
    };
    filter_jobs(&mut queue, &[], &args.users, &args.accounts, &[]);
    queue.truncate(args.k);
    emit(&render(&queue, args.k, format))
}
