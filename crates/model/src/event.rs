//! The events of the log (`../shared/spec/events.md`), as typed values. Parsing
//! from JSON lives in `fairflow-ingest`; whether an event is possible (its
//! account exists, its job is pending, ...) is decided there too.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::tres::{TresCounts, WeightList};
use crate::Time;

/// An association's shares: `FairShare=N` or `FairShare=parent`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum Shares {
    /// A number of shares (0 to 2^31 - 2, as in Slurm).
    Value(u32),
    /// `parent`: take the fair-share of the parent.
    Parent,
}

impl Shares {
    /// The shares this association adds to its sibling group's `level_shares`:
    /// its own, or 0 for `parent`.
    pub fn raw(self) -> u64 {
        match self {
            Shares::Value(v) => u64::from(v),
            Shares::Parent => 0,
        }
    }

    /// Is this `FairShare=parent`?
    pub fn is_parent(self) -> bool {
        matches!(self, Shares::Parent)
    }
}

impl std::fmt::Display for Shares {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Shares::Value(v) => write!(f, "{v}"),
            Shares::Parent => f.write_str("parent"),
        }
    }
}

/// The elements of a job's partition or QOS list as stored (`a,b`, as
/// Slurm's `-p a,b` / `--qos a,b`; one name is a list of one).
pub fn list_items(list: &str) -> impl Iterator<Item = &str> {
    list.split(',')
}

/// Does a stored partition or QOS list name several (`a,b`), not one?
pub fn is_list(list: &str) -> bool {
    list.contains(',')
}

/// The optional attributes of a job, as `submit` gives them and `update`
/// changes them. `None` means "not given".
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct JobSpec {
    /// Partition (Flux: queue; Moab: class), or several, comma-separated in
    /// the order given (Slurm's `-p a,b`).
    pub partition: Option<String>,
    /// QOS, or several, comma-separated in the order given (Slurm 24.11's
    /// `--qos a,b`).
    pub qos: Option<String>,
    /// Requested TRES (`cpu`, `node`, `mem` in MiB, `gres/gpu`, ...).
    pub tres: Option<TresCounts>,
    /// Time limit in seconds.
    pub time_limit_secs: Option<u64>,
    /// Nice value (Slurm).
    pub nice: Option<i64>,
    /// Urgency 0..31 (Flux; 16 by default).
    pub urgency: Option<u8>,
    /// Earliest start, Unix seconds.
    pub begin: Option<Time>,
    /// Site factor (Slurm's `site_factor`, set by an administrator).
    pub site_factor: Option<i64>,
    /// User-specified priority (Moab USERPRIO; Flux's user factor, which may only lower).
    pub user_priority: Option<i64>,
    /// Group credential (Moab); by default the account.
    pub group: Option<String>,
    /// Times the job was bypassed by backfill (Moab BYPASS).
    pub bypass_count: Option<u64>,
    /// Deadline, Unix seconds (Moab DEADLINE).
    pub deadline: Option<Time>,
    /// Does the job violate a soft policy limit (Moab SPVIOLATION)?
    pub soft_policy_violation: Option<bool>,
    /// Job attributes (Moab ATTR: `preemptee`, user-defined, ...).
    pub attributes: Option<Vec<String>>,
    /// Slurm 26.05's SLUID: the job's second key (`squeue -O Sluid`), which
    /// finds it as its id does; an `update` may set or change it (Slurm
    /// gives a requeued job a new one). Not in a serialised spec: a book's
    /// snapshot carries its jobs' SLUIDs after the book (format 7).
    #[serde(skip)]
    pub sluid: Option<crate::Sluid>,
}

impl JobSpec {
    /// Overwrite every field that `patch` gives.
    pub fn apply(&mut self, patch: &JobSpec) {
        macro_rules! take {
            ($($f:ident),*) => { $( if patch.$f.is_some() { self.$f = patch.$f.clone(); } )* };
        }
        take!(
            partition,
            qos,
            tres,
            time_limit_secs,
            nice,
            urgency,
            begin,
            site_factor,
            user_priority,
            group,
            bypass_count,
            deadline,
            soft_policy_violation,
            attributes,
            sluid
        );
    }
}

/// One event of the log.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Unix seconds.
    pub t: Time,
    /// What happens.
    pub op: Op,
}

/// The operation of an event; see `events.md` for the meaning of each.
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)]
pub enum Op {
    Account {
        name: String,
        parent: Option<String>,
        shares: Option<Shares>,
        /// Association priority (Slurm's assoc factor; Flux's bank priority).
        priority: Option<i64>,
    },
    User {
        user: String,
        account: String,
        shares: Option<Shares>,
        priority: Option<i64>,
    },
    RemoveAccount {
        name: String,
    },
    RemoveUser {
        user: String,
        account: String,
    },
    Usage {
        account: String,
        user: Option<String>,
        amount: f64,
        /// Under `UsageModel=flux`: the usage bin (half-life period, 0 the
        /// current one) the amount is added to as it is.
        period: Option<u32>,
    },
    ResetUsage,
    Submit {
        job: String,
        user: String,
        account: String,
        spec: JobSpec,
        /// When the job was really submitted, if before the event's time (a
        /// queue imported from a running Slurm): its submit time and the
        /// origin of its age. At most the event's time.
        submitted: Option<Time>,
    },
    Update {
        job: String,
        account: Option<String>,
        spec: JobSpec,
    },
    Hold {
        job: String,
    },
    Release {
        job: String,
    },
    Cancel {
        job: String,
    },
    Start {
        job: String,
        tres: Option<TresCounts>,
    },
    End {
        job: String,
    },
    Requeue {
        job: String,
        /// Slurm 25.11's expedited requeue (`sbatch --requeue=expedite`
        /// with `SlurmctldParameters=enable_expedited_requeue`): the job
        /// goes back marked `JOB_EXPEDITING`, first in the scheduler's
        /// queue until it starts again.
        expedite: bool,
    },
    Config {
        set: BTreeMap<String, Value>,
    },
    Qos {
        name: String,
        priority: Option<i64>,
        usage_factor: Option<f64>,
    },
    Partition {
        name: String,
        priority_job_factor: Option<u32>,
        tres_billing_weights: Option<WeightList>,
        /// The queue priority (Flux).
        priority: Option<i64>,
        /// The partition's TRES totals (TRES factor normalisation); the
        /// cluster's when absent.
        tres: Option<TresCounts>,
        /// The partition's maximum time limit, seconds.
        max_time_secs: Option<u64>,
        /// Slurm's `PriorityTier`: a job in several partitions lists them
        /// highest tier first, and its primary partition is the first.
        priority_tier: Option<u16>,
    },
    Cluster {
        nodes: u64,
        tres: TresCounts,
    },
    Tick,
}

impl Op {
    /// The `op` name as written in the log.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Account { .. } => "account",
            Op::User { .. } => "user",
            Op::RemoveAccount { .. } => "remove_account",
            Op::RemoveUser { .. } => "remove_user",
            Op::Usage { .. } => "usage",
            Op::ResetUsage => "reset_usage",
            Op::Submit { .. } => "submit",
            Op::Update { .. } => "update",
            Op::Hold { .. } => "hold",
            Op::Release { .. } => "release",
            Op::Cancel { .. } => "cancel",
            Op::Start { .. } => "start",
            Op::End { .. } => "end",
            Op::Requeue { .. } => "requeue",
            Op::Config { .. } => "config",
            Op::Qos { .. } => "qos",
            Op::Partition { .. } => "partition",
            Op::Cluster { .. } => "cluster",
            Op::Tick => "tick",
        }
    }
}
