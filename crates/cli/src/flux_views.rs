//! Flux's own views of the replayed state (or of a service's, `--server`):
//! `fairflow view-bank [BANK] -t [-P]`, as `flux account view-bank BANK -t`
//! prints the bank tree (`--emulate-format [-P|--json]`: as `flux account
//! fairshare-emulate` prints its fair-shares), and `fairflow flux-jobs [USER]`, as `flux account
//! jobs USER` prints each pending job's priority factors (`-v`: the
//! calculation). The formats are `fairflow_serve::flux`'s.
//!
//! With `--server`, the tree comes from the service's `/v1/sshare` (its JSON
//! for the values, its table for the depth of each row), where usage is
//! sshare's whole `RawUsage`; the jobs from its `/v1/sprio` JSON.

use anyhow::{bail, Context};
use fairflow_model::report::{JobPriority, JobState, PriorityFactor, Selection};
use fairflow_model::PriorityModel;
use fairflow_model::Shares;
use fairflow_serve::flux::emulate::{emulated_users, render_emulate, EmulateFormat};
use fairflow_serve::flux::{
    bank_tree, flux_job_rows, render_flux_jobs, render_view_bank, BankTreeRow,
};
use fairflow_serve::OutputFormat;
use serde_json::Value;

use crate::output::emit;
use crate::slurm_flags::{route, selection};
use crate::state_args::StateArgs;

/// `fairflow view-bank` flags.
#[derive(Debug, clap::Args)]
pub struct ViewBankArgs {
    #[command(flatten)]
    state: StateArgs,
    /// The bank at the top of the tree.
    #[arg(default_value = "root")]
    bank: String,
    /// The tree (flux-accounting's `-t`).
    #[arg(short = 't', long = "tree")]
    tree: bool,
    /// `|`-separated (flux-accounting's `-P`, with `-t` or --emulate-format).
    #[arg(short = 'P', long = "parsable")]
    parsable: bool,
    /// What `flux account fairshare-emulate` prints instead of the tree: one
    /// line per association under the bank (Username, Bank, Shares, Usage,
    /// FairShare), highest fair-share first; -P and --json for its other
    /// forms.
    #[arg(long = "emulate-format", conflicts_with = "tree")]
    emulate_format: bool,
    /// With --emulate-format: the emulator's `--json` form.
    #[arg(long, requires = "emulate_format", conflicts_with = "parsable")]
    json: bool,
}

/// `fairflow flux-jobs` flags.
#[derive(Debug, clap::Args)]
pub struct FluxJobsArgs {
    #[command(flatten)]
    state: StateArgs,
    /// Only this user's jobs (flux-accounting's `jobs USER`); every user's
    /// when absent.
    user: Option<String>,
    /// Only jobs in this bank.
    #[arg(long)]
    bank: Option<String>,
    /// Only jobs in this queue.
    #[arg(long)]
    queue: Option<String>,
    /// Each job's calculation instead of the table.
    #[arg(short = 'v', long = "verbose")]
    verbose: bool,
}

/// Print the bank tree, or the emulator's output.
pub fn run_view_bank(args: &ViewBankArgs) -> anyhow::Result<()> {
    if !args.tree && !args.emulate_format {
        bail!("fairflow view-bank prints the bank tree: give -t (flux account view-bank's --tree), or --emulate-format");
    }
    let rows = if args.state.server.is_some() {
        remote_tree(&args.state)?
    } else {
        let Some(mut engine) = args.state.engine()? else {
            return Ok(());
        };
        bank_tree(&engine.fairshare()?)
    };
    if args.emulate_format {
        let format = match (args.parsable, args.json) {
            (true, _) => EmulateFormat::Parsable,
            (_, true) => EmulateFormat::Json,
            _ => EmulateFormat::Table,
        };
        let users = emulated_users(&rows, &args.bank)?;
        return emit(&render_emulate(&users, format));
    }
    match render_view_bank(&rows, &args.bank, args.parsable) {
        Some(text) => emit(&text),
        None => bail!("bank {} not found", args.bank),
    }
}

/// The tree from a service: `/v1/sshare`'s JSON rows, each at the depth its
/// table row is indented to.
fn remote_tree(state: &StateArgs) -> anyhow::Result<Vec<BankTreeRow>> {
    let everything = Selection::default();
    let ask = |format| -> anyhow::Result<String> {
        Ok(state
            .remote(&route("/v1/sshare", format, &everything, &[]))?
            .unwrap_or_default())
    };
    let json: Value =
        serde_json::from_str(&ask(OutputFormat::Json)?).context("the service's sshare JSON")?;
    let table = ask(OutputFormat::Table)?;
    let depths: Vec<usize> = table
        .lines()
        .skip(2)
        .map(|line| line.len() - line.trim_start().len())
        .collect();
    let rows = json
        .as_array()
        .context("the service's sshare JSON is not an array")?;
    if rows.len() != depths.len() {
        bail!("the service's sshare table and JSON differ in length");
    }
    rows.iter()
        .zip(depths)
        .map(|(row, depth)| {
            let text = |key: &str| row.get(key).and_then(Value::as_str).map(str::to_string);
            Ok(BankTreeRow {
                bank: text("account").context("an sshare row without account")?,
                user: text("user"),
                depth,
                shares: match row.get("raw_shares") {
                    Some(Value::Number(n)) => n
                        .as_u64()
                        .and_then(|n| u32::try_from(n).ok())
                        .map(Shares::Value),
                    Some(Value::String(s)) if s == "parent" => Some(Shares::Parent),
                    _ => None,
                },
                usage: row.get("raw_usage").and_then(Value::as_f64).unwrap_or(0.0),
                fairshare: row.get("fairshare").and_then(Value::as_f64),
            })
        })
        .collect()
}

/// Print the jobs' breakdowns.
pub fn run_flux_jobs(args: &FluxJobsArgs) -> anyhow::Result<()> {
    let users: Vec<String> = args.user.iter().cloned().collect();
    let accounts: Vec<String> = args.bank.iter().cloned().collect();
    let partitions: Vec<String> = args.queue.iter().cloned().collect();
    let selection = selection(&[], &users, &accounts, &partitions);
    let rows = if let Some(answer) =
        args.state
            .remote(&route("/v1/sprio", OutputFormat::Json, &selection, &[]))?
    {
        let jobs: Value = serde_json::from_str(&answer).context("the service's sprio JSON")?;
        let jobs: Vec<JobPriority> = jobs
            .as_array()
            .context("the service's sprio JSON is not an array")?
            .iter()
            .filter_map(remote_job)
            .collect();
        flux_job_rows(&jobs)
    } else {
        let Some(mut engine) = args.state.engine()? else {
            return Ok(());
        };
        let mut jobs = engine.priorities()?;
        engine.resolve_selection(&selection).jobs(&mut jobs);
        jobs.sort_by_key(JobPriority::queue_key);
        flux_job_rows(&jobs)
    };
    emit(&render_flux_jobs(&rows, args.verbose))
}

/// A job of the service's sprio JSON (`fairflow_serve::sprio::job_json`),
/// with what the Flux view reads.
fn remote_job(job: &Value) -> Option<JobPriority> {
    let text = |key: &str| {
        job.get(key)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let state = match text("state").as_str() {
        "pending" => JobState::Pending,
        "held" => JobState::Held,
        _ => return None,
    };
    if text("model") != PriorityModel::Flux.name() {
        return None;
    }
    let number = |f: &Value, key: &str| f.get(key).and_then(Value::as_f64).unwrap_or(0.0);
    let factors = job
        .get("factors")?
        .as_array()?
        .iter()
        .map(|f| {
            let name = f.get("name").and_then(Value::as_str).unwrap_or("");
            let mut factor = PriorityFactor::new(
                name.to_string(),
                number(f, "normalized"),
                number(f, "weight"),
            );
            factor.weighted = number(f, "weighted");
            factor
        })
        .collect();
    Some(JobPriority {
        job: text("job_id"),
        user: text("user"),
        account: text("account"),
        partition: text("partition"),
        qos: text("qos"),
        submit_at: job.get("submit_at").and_then(Value::as_i64).unwrap_or(0),
        priority: job.get("priority").and_then(Value::as_u64).unwrap_or(0),
        state,
        model: PriorityModel::Flux,
        factors,
        pairs: Vec::new(),
        priority_tier: 0,
        expedited: false,
    })
}
