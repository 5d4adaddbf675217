//! `fairflow top`: the first `-k` jobs of the ranked queue, in the order a
//! scheduler would visit them; `squeue`-style `-A ACCOUNTS`, `-u USERS`,
//! `-p PARTITIONS` keep only those jobs (ranks stay the queue's ranks among
//! the jobs shown). With `-p`, each job ranks by its priority in those
//! partitions: a job submitted to several partitions or several QOS by its
//! best (partition, QOS) pair there. `--offset N` pages: the ranks shown
//! start at `N + 1`.

use fairflow_serve::top::render_page;

use crate::output::{emit, OutputArgs};
use crate::slurm_flags::{route, JobSelectionArgs};
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
    /// Skip this many jobs first (paging: `--offset 20 -k 10` shows ranks
    /// 21 to 30).
    #[arg(long, value_name = "N", default_value_t = 0)]
    offset: usize,
    #[command(flatten)]
    select: JobSelectionArgs,
}

/// Load the state, take the first `k` of the ranked queue, print them.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let format = args.output.format();
    let selection = args.select.selection(&[]);
    let offset = if args.offset > 0 {
        args.offset.to_string()
    } else {
        String::new()
    };
    let path = route(
        "/v1/top",
        format,
        &selection,
        &[("k", args.k.to_string()), ("offset", offset)],
    );
    if let Some(answer) = args.state.remote(&path)? {
        return emit(&answer);
    }
    let Some(mut engine) = args.state.engine()? else {
        // A non-zero process of the cluster mode: process 0 answers.
        return Ok(());
    };
    emit(&render_page(
        &engine.top_page(args.offset, args.k, &selection)?,
        args.offset,
        args.k,
        format,
    ))
}
