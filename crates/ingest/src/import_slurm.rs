//! `fairflow import slurm`: a real Slurm's own outputs to an event log, so a
//! site can load its tree, usage, configuration and queue.
//!
//! # Inputs
//! - **Associations**, either form:
//!   - `sacctmgr -nP show assoc format=Cluster,Account,User,Share,ParentName`:
//!     rows `cluster|account|user|share|parent`;
//!   - `sacctmgr show assoc tree -P` (Slurm's default columns with their header
//!     line, `Cluster|Account|User|Partition|Share|Priority|GrpJobs|...`): the
//!     columns are found by name (`Account`, `User` and `Share` are needed,
//!     `Cluster` is used when present); an account's parent is its
//!     `ParentName` cell when there is such a column (`format=...,ParentName`),
//!     else the account the `tree` option's indentation puts it under. The
//!     default columns without `tree` do not say an account's parent, which is
//!     an error naming `ParentName`. A non-empty `Partition` (a per-partition
//!     association) is an error.
//!
//!   An account's row has an empty user (and its parent account); a user
//!   association's row names its account and user (its `ParentName` is
//!   ignored). `Share` is an integer (0 to 2^31 - 2) or `parent`. `root`'s
//!   own row creates nothing.
//! - **Usage**, `sshare -a -l -P` (or `-p`): the first line is the header, which
//!   gives the columns (`Account`, `User` and `RawUsage` are used; account names
//!   may be indented). A user association's `RawUsage` is its own usage; an
//!   account's own usage (charged to the account itself, e.g. by removed
//!   associations) is its `RawUsage` minus its children's, clamped at 0.
//!   Slurm truncates `RawUsage` to an integer, so that difference can be off by
//!   up to one TRES-second per child.
//! - **Usage as jobs** (instead of `sshare`), `sacct -a -X -P
//!   --format=JobID,User,Account,Partition,QOS,Start,End,AllocTRES,State`
//!   (with its header; see the `sacct` submodule): each job that started
//!   before `t` is submitted and started at its `Start` and ended at its
//!   `End`, and the rest of the import moves to the first job's start, so the
//!   engines charge and decay the jobs' usage themselves.
//! - **QOS**, `sacctmgr show qos -P` (with its header): `Name`, `Priority`,
//!   `UsageFactor`.
//! - **Cluster size**, `scontrol show node` output, or `slurm.conf`'s
//!   `NodeName=` lines (see the `nodes` submodule).
//! - **Associations from a dump**: `sacctmgr dump CLUSTER file=F`'s file is
//!   recognised by its `Cluster - '...'` lines, wherever the associations go.
//! - **Configuration**, `slurm.conf` or `scontrol show config`'s output (see
//!   [`crate::slurm_conf`]): its `Priority*` and `FairShareDampeningFactor`
//!   parameters.
//! - **Queue**, `squeue -h -t PD -o "%i|%u|%a|%P|%q|%V|%C|%D|%l"`: rows
//!   `jobid|user|account|partition|qos|submit time|cpus|nodes|time limit`,
//!   optionally a tenth cell, the eligible time (squeue's `EligibleTime`
//!   field, which only its `-O` form prints: `squeue -h -t PD -O
//!   "JobID:|,UserName:|,Account:|,Partition:|,QOS:|,SubmitTime:|,NumCPUs:|,NumNodes:|,TimeLimit:|,EligibleTime"`,
//!   cells trimmed), and optionally an eleventh, Slurm 26.05's SLUID (`-O
//!   ...,EligibleTime:|,Sluid`: the job's `sluid`; `s0000000000000` or empty
//!   for none). Times are ISO 8601 local time as squeue prints it
//!   (`2024-05-01T12:34:56`, in the zone of `TZ` or the system's); the
//!   partition and the QOS may be comma-separated lists (a job submitted to
//!   several: passed through, each listed name defined by a `partition` /
//!   `qos` event with no attributes before the submits, as the book requires
//!   of lists), an empty QOS or `(null)` means none, and the time limit is
//!   Slurm's duration (`30:00`, `1:00:00`, `2-00:00:00`) or `UNLIMITED` /
//!   `NOT_SET` (none).
//!
//! # Output
//! Events all at one time `t` (without `sacct`), in an order the validator
//! accepts: accounts (each after its parent), user associations, usage, one
//! `config` event, the `cluster`, the `qos` events, then one `submit` per
//! pending job (in submit-time order); with `sacct`, everything before the
//! queue is at the first job's start, the jobs' events at their times, and a
//! `tick` ends the log at `t`. Each `submit` keeps the
//! job's submit time (`submitted`, at most `t`: a later one is an error), so
//! its age is what Slurm's is; an eligible time becomes the job's `begin`
//! (Slurm's AGE counts from it unless `PriorityFlags=ACCRUE_ALWAYS`), and
//! `Unknown` (a job not yet eligible, whose age Slurm holds at 0) the time `t`.
//!
//! **Architecture invariant:** malformed input is an [`ImportError`] naming the
//! file, the line and the field; nothing here panics on input.

use std::collections::BTreeSet;

use fairflow_model::event::Op;
use fairflow_model::{Event, Time};

mod assoc;
mod conf;
mod queue;
mod text;
mod usage;

use assoc::{accounts_parents_first, read_associations, Associations};
use conf::{read_qos, read_slurm_conf};
pub(crate) use queue::time_limit_secs;
use queue::{name_list, read_queue};
pub(crate) use text::check_name;
use text::Lines;
use usage::read_usage;
pub(crate) use usage::{own_usage, AssocKey};

/// One input: its name (as given on the command line) and its text.
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    /// The file name, for error messages.
    pub name: &'a str,
    /// The whole text.
    pub text: &'a str,
}

/// What to import.
#[derive(Debug, Clone, Copy)]
pub struct SlurmImport<'a> {
    /// `sacctmgr -nP show assoc format=Cluster,Account,User,Share,ParentName`.
    pub assoc: Source<'a>,
    /// `sshare -a -l -P`, for `RawUsage`.
    pub sshare: Option<Source<'a>>,
    /// `slurm.conf`.
    pub slurm_conf: Option<Source<'a>>,
    /// `squeue -h -t PD -o "%i|%u|%a|%P|%q|%V|%C|%D|%l"` (optionally a
    /// tenth cell, the eligible time).
    pub squeue: Option<Source<'a>>,
    /// `sacctmgr show qos -P` (with its header): each QOS's priority and
    /// usage factor.
    pub qos: Option<Source<'a>>,
    /// `scontrol show node`: the cluster's size (else `slurm_conf`'s
    /// `NodeName=` lines).
    pub nodes: Option<Source<'a>>,
    /// `sacct -a -X -P --format=JobID,User,Account,Partition,QOS,Start,End,AllocTRES,State`:
    /// the usage history as jobs, instead of `sshare`.
    pub sacct: Option<Source<'a>>,
    /// Only this cluster's associations; required when there are several.
    pub cluster: Option<&'a str>,
    /// The time of every event.
    pub t: Time,
}

/// A malformed input line: the file, the line (1-based), the field and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: line {line}: {}{reason}", field.as_ref().map(|f| format!("field `{f}`: ")).unwrap_or_default())]
pub struct ImportError {
    /// The file, as named by the caller.
    pub file: String,
    /// 1-based line number.
    pub line: u64,
    /// The column at fault (`Share`, `RawUsage`, ...), if one is.
    pub field: Option<String>,
    /// What is wrong.
    pub reason: String,
}

/// The tree's events: accounts (each after its parent), user
/// associations, then the usage that is not 0.
fn tree_ops(
    tree: &Associations,
    assoc: Source<'_>,
    usage: Option<Vec<(AssocKey, f64)>>,
) -> Result<Vec<Op>, ImportError> {
    let mut ops: Vec<Op> = Vec::new();
    for name in accounts_parents_first(tree, assoc)? {
        let row = &tree.accounts[&name];
        ops.push(Op::Account {
            name,
            parent: Some(row.parent.clone()),
            shares: Some(row.shares),
            priority: None,
        });
    }
    for (account, user, _, shares) in &tree.users {
        ops.push(Op::User {
            user: user.clone(),
            account: account.clone(),
            shares: Some(*shares),
            priority: None,
        });
    }
    for ((account, user), amount) in usage.into_iter().flatten() {
        if amount > 0.0 {
            ops.push(Op::Usage {
                account,
                user,
                amount,
                period: None,
            });
        }
    }
    Ok(ops)
}

/// Convert Slurm's outputs to events, all at `input.t`, in an order the
/// validator accepts (see the module documentation).
pub fn import_slurm(input: &SlurmImport<'_>) -> Result<Vec<Event>, ImportError> {
    let tree = read_associations(input.assoc, input.cluster)?;
    let usage = input
        .sshare
        .map(|source| read_usage(source, &tree))
        .transpose()?;
    let config = input.slurm_conf.map(read_slurm_conf).transpose()?;
    let queue = input
        .squeue
        .map(|source| read_queue(source, &tree, input.t))
        .transpose()?;
    let qos = input.qos.map(read_qos).transpose()?;
    let cluster = match (input.nodes, input.slurm_conf) {
        (Some(source), _) => Some(nodes::from_scontrol_nodes(&Lines { source })?),
        (None, Some(source)) => nodes::from_slurm_conf(&Lines { source })?,
        (None, None) => None,
    };
    let history = match (input.sacct, input.sshare) {
        (Some(source), Some(_)) => {
            return Err(Lines { source }.err(
                1,
                None,
                "give the usage as sshare's RawUsage or as sacct's jobs, not both",
            ))
        }
        (Some(source), None) => sacct::read_sacct(source, &tree, input.t)?,
        (None, _) => Vec::new(),
    };

    let t = input.t;
    // The tree, configuration, cluster and QOS exist from before the first
    // job of the history (all at `t` without one).
    let t0 = history.first().map_or(t, |(first, _)| *first);
    let mut ops = tree_ops(&tree, input.assoc, usage)?;
    if let Some(set) = config.filter(|set| !set.is_empty()) {
        ops.push(Op::Config { set });
    }
    if let Some(size) = cluster {
        ops.push(Op::Cluster {
            nodes: size.nodes,
            tres: size.tres(),
        });
    }
    let defined_qos: BTreeSet<String> = qos
        .iter()
        .flatten()
        .filter_map(|op| match op {
            Op::Qos { name, .. } => Some(name.clone()),
            _ => None,
        })
        .collect();
    ops.extend(qos.into_iter().flatten());
    let mut events: Vec<Event> = ops.into_iter().map(|op| Event { t: t0, op }).collect();
    events.extend(history.into_iter().map(|(t, op)| Event { t, op }));
    // A QOS list's names are defined (with no attributes) by the queue's
    // reader; the ones `sacctmgr show qos` defined already need no second.
    events.extend(
        queue
            .into_iter()
            .flatten()
            .filter(|op| {
                !matches!(op, Op::Qos { name, priority: None, usage_factor: None } if defined_qos.contains(name))
            })
            .map(|op| Event { t, op }),
    );
    // The log's time is the import's: usage is as of `t`.
    if events.last().is_some_and(|last| last.t < t) {
        events.push(Event { t, op: Op::Tick });
    }
    // What the log's reader would refuse (a RawUsage beyond 2^50, ...) is
    // refused here, by the same check.
    crate::check::check_events(&events).map_err(|(index, r)| ImportError {
        file: "the import".into(),
        line: index as u64 + 1,
        field: r.field,
        reason: format!(
            "event {} of the import is out of bounds: {}",
            index + 1,
            r.reason
        ),
    })?;
    Ok(events)
}

pub(crate) mod nodes;
mod sacct;

#[cfg(test)]
mod sluid_tests;
#[cfg(test)]
mod tests;
