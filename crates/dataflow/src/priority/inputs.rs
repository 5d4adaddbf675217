//! What the priority dataflow takes in: one [`JobRow`] per active job
//! (Moab's extra attributes in its [`MoabRow`]) and the [`Fact`]s, everything
//! else priority depends on (the configuration as [`PriorityParams`], the
//! cluster, partitions, QOS, association priorities, fair-share inputs,
//! Moab's usage), in the exact-bits encodings they travel in. Times here
//! are the model's [`Time`] (Unix seconds), never the logical
//! [`Epoch`](crate::types::Epoch) the collections are stepped by.

use std::collections::BTreeMap;

use fairflow_model::moab::Credential;
use fairflow_model::tres::TresCounts;
use fairflow_model::usage::FrameUsage;
use fairflow_model::{Config, PriorityModel, Time};

use super::{classic, fair_tree};
use crate::types::{AccountId, AssocId, JobId, NameId, NodeId};

/// TRES counts as `(name, f64 bits)`, sorted by name.
pub type TresBits = Vec<(String, u64)>;

/// TRES counts as exact bits.
pub fn tres_bits(counts: &TresCounts) -> TresBits {
    counts
        .iter()
        .map(|(n, v)| (n.clone(), v.to_bits()))
        .collect()
}

/// Where a job is.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
)]
pub enum Phase {
    /// Pending.
    #[default]
    Pending,
    /// Pending and held.
    Held,
    /// Running.
    Running,
}

/// One active job, as the priority dataflow needs it: interned ids and only
/// what the job's priority depends on (its name, user and other attributes
/// stay in the book).
#[derive(
    Debug,
    Clone,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
)]
pub struct JobRow {
    /// The job.
    pub job: JobId,
    /// Its id's number when the id is plain (`JobIdOrder::plain_number`),
    /// else 0: ties of priority and submit time decided without its name.
    pub id_number: u64,
    /// Its user association.
    pub assoc: AssocId,
    /// Its account.
    pub account: AccountId,
    /// Its partition ([`NONE`] for none).
    pub partition: NameId,
    /// Its QOS ([`NONE`] for none).
    pub qos: NameId,
    /// Where it is.
    pub phase: Phase,
    /// Driver-kept: has `begin` passed at the batch's time? ([`crossings`])
    pub begun: bool,
    /// Driver-kept: is the age (wait-time) factor at its cap? ([`crossings`])
    pub age_capped: bool,
    /// Flux urgency (16, Flux's default, when the job does not say).
    pub urgency: u8,
    /// How many times it started (identifies a stay in the queue).
    pub start_count: u32,
    /// When it was submitted.
    pub submit_at: Time,
    /// When it last entered the queue (submit or requeue).
    pub queued_at: Time,
    /// Its begin time, if any.
    pub begin: Option<Time>,
    /// Its node count (`f64` bits; 1 when its TRES do not say).
    pub nodes_bits: u64,
    /// Its CPU count (`f64` bits; 1 when its TRES do not say).
    pub cpus_bits: u64,
    /// Its count of each `PriorityWeightTRES` entry, in that order (`f64`
    /// bits, 0 when absent): allocated while running, else requested.
    pub weighted_tres: Box<[u64]>,
    /// Its own time limit, seconds (0: none, as a limit of 0 counts).
    pub time_limit_secs: u64,
    /// Slurm nice (0 when the job does not say).
    pub nice: i64,
    /// Slurm site factor (0 when the job does not say).
    pub site_factor: i64,
    /// User priority, Flux's user factor (0 when the job does not say).
    pub user_priority: i64,
    /// Under Moab, the job's credentials and Moab-only attributes.
    pub moab: Option<Box<MoabRow>>,
}

/// What Moab's read-time evaluation needs beyond a [`JobRow`] (sent only
/// under the Moab model).
#[derive(
    Debug,
    Clone,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
)]
pub struct MoabRow {
    /// The job id.
    pub id: String,
    /// The user.
    pub user: String,
    /// The account.
    pub account: String,
    /// The partition (`""` for none): Moab's class.
    pub partition: String,
    /// The QOS (`""` for none).
    pub qos: String,
    /// The TRES it counts: allocated while running, else requested.
    pub tres: TresBits,
    /// Moab group credential (default: the account).
    pub group: Option<String>,
    /// Moab BYPASS.
    pub bypass_count: Option<u64>,
    /// Moab DEADLINE.
    pub deadline: Option<Time>,
    /// Moab SPVIOLATION.
    pub soft_policy_violation: Option<bool>,
    /// Moab ATTR attributes.
    pub attributes: Option<Vec<String>>,
    /// When it last started (Moab USAGE, FSPSPU).
    pub started_at: Option<Time>,
    /// Closed spans held since it last entered the queue (Moab's accrual policy).
    pub held_spans: Vec<(Time, Time)>,
    /// When its current hold began, if it is held.
    pub held_since: Option<Time>,
    /// Moab USERPRIO, as the job gives it.
    pub user_priority: Option<i64>,
}

/// A partition's priority attributes.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct PartitionRec {
    /// `PriorityJobFactor`.
    pub job_factor: u32,
    /// Queue priority (Flux).
    pub priority: i64,
    /// `MaxTime`, seconds.
    pub max_time_secs: Option<u64>,
    /// TRES totals, if given.
    pub tres: Option<TresBits>,
}

impl Default for PartitionRec {
    fn default() -> Self {
        PartitionRec {
            job_factor: 1,
            priority: 0,
            max_time_secs: None,
            tres: None,
        }
    }
}

/// The configuration job priority depends on (Slurm and Flux), totally
/// ordered so that it can travel in a collection.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[allow(missing_docs)]
pub struct PriorityParams {
    pub model: PriorityModel,
    pub accrue_always: bool,
    pub calculate_running: bool,
    pub incr_only: bool,
    pub small_relative_to_time: bool,
    pub no_normal_assoc: bool,
    pub no_normal_part: bool,
    pub no_normal_qos: bool,
    pub no_normal_tres: bool,
    pub favor_small: bool,
    pub max_age_secs: i64,
    pub weight_age: u32,
    pub weight_assoc: u32,
    pub weight_fairshare: u32,
    pub weight_job_size: u32,
    pub weight_partition: u32,
    pub weight_qos: u32,
    /// `PriorityWeightTRES` in order, weights as `f64` bits.
    pub weight_tres: Vec<(String, u64)>,
    pub flux_fairshare: i64,
    pub flux_queue: i64,
    pub flux_bank: i64,
    pub flux_urgency: i64,
    pub flux_wait_time: i64,
    pub flux_max_wait_secs: i64,
    pub flux_qos: i64,
    pub flux_job_size: i64,
    pub flux_user: i64,
    /// Moab's `moab.cfg` parameters as written (`Config::moab`).
    pub moab: BTreeMap<String, String>,
}

impl PriorityParams {
    /// The priority parameters of a configuration.
    pub fn from_config(c: &Config) -> Self {
        let f = c.flags;
        PriorityParams {
            model: c.model,
            accrue_always: f.accrue_always,
            calculate_running: f.calculate_running,
            incr_only: f.incr_only,
            small_relative_to_time: f.small_relative_to_time,
            no_normal_assoc: f.no_normal_assoc,
            no_normal_part: f.no_normal_part,
            no_normal_qos: f.no_normal_qos,
            no_normal_tres: f.no_normal_tres,
            favor_small: c.favor_small,
            max_age_secs: c.max_age_secs,
            weight_age: c.weight_age,
            weight_assoc: c.weight_assoc,
            weight_fairshare: c.weight_fairshare,
            weight_job_size: c.weight_job_size,
            weight_partition: c.weight_partition,
            weight_qos: c.weight_qos,
            weight_tres: c
                .weight_tres
                .weights
                .iter()
                .map(|(n, w)| (n.clone(), w.to_bits()))
                .collect(),
            flux_fairshare: c.flux.fairshare,
            flux_queue: c.flux.queue,
            flux_bank: c.flux.bank,
            flux_urgency: c.flux.urgency,
            flux_wait_time: c.flux.wait_time,
            flux_max_wait_secs: c.flux.max_wait_time_secs,
            flux_qos: c.flux.qos,
            flux_job_size: c.flux.job_size,
            flux_user: c.flux.user,
            moab: c.moab.clone(),
        }
    }
}

impl Default for PriorityParams {
    fn default() -> Self {
        PriorityParams::from_config(&Config::default())
    }
}

/// Whose effective association priority an [`Fact::AssocPriority`] is.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum AssocRef {
    /// An account.
    Account(AccountId),
    /// A user association.
    User(AssocId),
}

/// Everything besides jobs that priority depends on.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum Fact {
    /// The configuration (exactly one; boxed, so that facts stay small).
    Config(Box<PriorityParams>),
    /// The cluster's size (at most one; none is 0 nodes).
    Cluster {
        /// Nodes.
        nodes: u64,
        /// TRES totals.
        tres: TresBits,
    },
    /// Fair Tree with Slurm's ties: an association's place in the sorted
    /// tree (the queue derives ranks from these; no factor is sent per user).
    TreeSlot {
        /// The association.
        node: NodeId,
        /// Its group, weight and placement.
        slot: fair_tree::TreeSlot,
    },
    /// Classic or depth-oblivious: an association's classic inputs (the
    /// queue evaluates every user's factor from these; boxed, so that
    /// facts stay small).
    ClassicNode {
        /// The association.
        node: NodeId,
        /// Its inputs.
        inputs: Box<classic::ClassicNode>,
    },
    /// A user association's fair-share factor.
    Fairshare {
        /// The user association.
        assoc: AssocId,
        /// The factor's `f64` bits.
        factor_bits: u64,
    },
    /// An association's effective Slurm priority (every association).
    AssocPriority {
        /// The association.
        of: AssocRef,
        /// The priority (own, else the nearest account's, else 0).
        priority: i64,
    },
    /// An account's own priority, when set (Flux's bank priority).
    AccountPriority {
        /// The account.
        account: AccountId,
        /// Its priority.
        priority: i64,
    },
    /// A defined QOS.
    Qos {
        /// Its name.
        name: NameId,
        /// Its priority.
        priority: i64,
    },
    /// A defined partition.
    Partition {
        /// Its name.
        name: NameId,
        /// Its attributes.
        rec: PartitionRec,
    },
    /// Moab: a credential's decayed usage, frame units (the oracle's
    /// `priority::moab::credential_usage`).
    MoabUsage {
        /// The credential type.
        kind: Credential,
        /// Its name.
        name: String,
        /// Its usage.
        usage: FrameUsage,
    },
    /// Moab: all usage, frame units.
    MoabUsageTotal(FrameUsage),
    /// Moab: a user's wallclock accuracy sums.
    WallclockAccuracy {
        /// The user.
        user: String,
        /// CPU-seconds used (bits).
        used_bits: u64,
        /// CPU-seconds requested (bits).
        requested_bits: u64,
    },
}

/// Submit times as order-preserving `u64`.
pub(crate) fn ordered_submit(t: Time) -> u64 {
    (t as u64) ^ (1 << 63)
}
