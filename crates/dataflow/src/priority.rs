//! Job priority, maintained incrementally: each job's time-invariant
//! priority record (Slurm's multifactor, the Flux model, Moab's inputs),
//! built in the dataflow, and the ranked pending queue ([`queue`]) the
//! records meet their users' fair-share factors in, from which
//! [`PriorityReader::top`] returns exactly the oracle's first `k`
//! `JobPriority` values (`fairflow_oracle::priority::queue`), at any `now`.
//!
//! # Inputs (time `u64`, diff `isize`)
//! - job rows, into the *rows dataflow* ([`capture_rows`]): one [`JobRow`]
//!   per active job (pending, held, running): its id, user association,
//!   the attributes priority needs, and two flags the driver keeps current
//!   as time passes (`begun`, `age_capped`; see [`crossings`]). A change is
//!   a retraction of the old row and an insertion of the new one. The
//!   dataflow only routes each row update to its job's shard
//!   ([`shard_key`]: the user association, under Moab the user): a job
//!   event steps a graph of two operators.
//! - into the *context dataflow* ([`PriorityInputs`], [`build`]):
//!   `facts`, everything else, as [`Fact`]s: the priority configuration
//!   ([`PriorityParams`], one), the cluster size (one), each user
//!   association's fair-share factor (exact `f64` bits, from the fair-share
//!   part), every association's effective Slurm association priority
//!   (the user association's own, else its nearest account's; accounts
//!   too), accounts' own priorities (Flux's bank priority), QOS priorities
//!   and partitions; `combos`, the distinct `(association, QOS, partition)`
//!   combinations active jobs name ([`Combo`]), and `partition_refs`, the
//!   distinct (partition, job category) pairs. The driver counts the rows
//!   it sends per combination and pair ([`ComboRefs`]) and sends only those
//!   that start or stop being named, so most job events do not feed (or
//!   step) the context dataflow at all.
//!
//! # Operators (what an update touches)
//! - `resolve`: one `reduce` per context key (association, account, QOS,
//!   partition) over that key's facts and one *reference* per combination
//!   naming it (and per job category, for partitions), giving the key's
//!   context with the oracle's defaults for what no fact defines (QOS
//!   priority 0, partition factor 1, ...). Fair-share factors do not enter
//!   here.
//! - `globals`: one `reduce` on the unit key over the *distinct* values of
//!   association priorities, QOS priorities, partition factors (plus the
//!   partitions that listed jobs name without a definition, which count
//!   with factor 1), the configuration and the cluster: the normalisation
//!   maxima. `O(distinct values)` per change, typically a few dozen.
//! - the context joins run over *combinations*, not jobs. Four `join_core`
//!   stages carry each combination through its association, account, QOS
//!   and partition contexts, a fifth joins the globals, giving one
//!   [`JobContext`] per combination, captured on every worker.
//! - each shard's reader meets its rows with their combinations' contexts
//!   (`PriorityReader::join_rows`) into [`PriorityRecord`]s: a job event
//!   re-derives its record; a change of a QOS or partition priority touches
//!   the combinations and jobs naming it; a change of a maximum, the
//!   cluster or the configuration touches every combination and job (every
//!   normalised factor changes). **A fair-share change touches no record**:
//!   the records' keys leave the fair-share term out ([`record`]).
//! - the queue is sharded across the workers: each worker's reader applies
//!   its records and every fact to its shard's [`queue::Queue`] (worker 0
//!   after each batch, the others when a read reaches them; reads merge the
//!   shards, see `worker::shards`): records by job id (`explain`),
//!   per user association its ranked jobs by key, the users ordered by
//!   their best key plus their fair-share term, and the ranked jobs by
//!   submit time. A fair-share change re-keys that user's two entries.
//!   Passing time changes nothing.
//!
//! Records carry no strings: jobs, associations, accounts, partitions and
//! QOS are interned integers ([`crate::names`]); a [`JobRow`] holds only what
//! priority needs (the job's name and other attributes stay in the book),
//! and a record is its row plus its combination's shared context (one
//! `Arc` per combination). Memory per active job: its record in the queue
//! (which holds its row), one entry in its combination's jobs, one entry in
//! its user's ranked jobs and one submit-time entry (pending jobs); no
//! arrangement holds rows. Results name their job
//! from the shared [`JobNames`] table (the queue breaks ties by name); the
//! driver fills in the other names from the book.
//!
//! [`TouchCounter`] counts every update leaving each stage (resolve,
//! globals, the five joins), every record the readers remove or add, and
//! every job and user entry the queue changes, for the benchmark's
//! `touched_records_mean`.
//!
//! # Reading (`PriorityReader`, each shard, after the probe passed the batch)
//! `top(k, now)` takes candidates from the queue in non-increasing order of
//! their upper bound at `now` (a best-first merge over the users, see
//! [`queue`]), computes each candidate's exact priority with the shared
//! formulas ([`PriorityRecord::evaluate`], bit-identical to the oracle),
//! keeps the best `k` by `QueueKey`, and stops when the next bound is more
//! than 1 below the `k`-th priority (so no unread job can reach or tie it:
//! the final priority is truncated or rounded). Cost: `O(k + ties)` record
//! evaluations plus `O(log n)` per candidate. When fewer than `k` jobs are
//! above the model's floor (Slurm 1, Flux 0: e.g. all weights 0, where
//! every job ties), the reader stops as soon as no unread job can exceed
//! the floor and fills the rest from the submit-time order:
//! `O(k + jobs above the floor)`. The reader keeps the first jobs of its
//! last search and the bounds of the rest ([`kept`]): after a batch that
//! brought no fact it re-ranks those with the jobs the batch changed, and
//! searches only when that cannot prove the first `k`. The driver
//! (`Engine::top`) keeps the last read, named and shared, and has worker 0
//! read its top `k'` in each batch's round trip.

//! # Costs that are not incremental
//! - **Slurm `INCR_ONLY`** (the oracle's definition, `fairflow_oracle::
//!   priority`): a pending job's priority is the maximum of the priorities
//!   evaluated at every distinct event time since it entered the queue. The
//!   reader keeps that memory ([`PriorityReader::remember_incr_only`]), which
//!   the driver calls exactly where `Replay` does (before applying the first
//!   accepted event of a later time, and before a query's `--at`), at
//!   `O(listed jobs)` each; with the flag on, `top` evaluates every listed
//!   job (`O(listed jobs)` per read), because `max(floor, K + r·now)` has no
//!   single time-invariant order. A batch must not span two event times
//!   when the flag is on.
//! - **Slurm `CALCULATE_RUNNING`**: running jobs are listed (their records
//!   carry their priority, evaluated for `sprio`/`explain`, never ranked);
//!   it costs one record per running job and their updates, nothing per read.
//! - **Moab**: its XFACTOR, TARGET, USAGE and DEADLINE terms move every job
//!   at its own rate and its caps make even QUEUETIME non-linear, so no
//!   time-invariant key exists and the exact plan is to evaluate every job at
//!   read time: [`moab`] does, over the queue's records and its
//!   facts (configuration, credential usage, wallclock accuracy), computing
//!   the per-user running totals from the records: `O(listed jobs)` per
//!   read whatever the XFACTOR weight; updates stay incremental.
//!
//! # Plugging into the engine
//! 1. In `graph::build`, create a rows dataflow (`new_collection::<JobRow,
//!    isize>()` into [`capture_rows`]) and a context dataflow (the
//!    [`PriorityInputs`] into [`build`], with a [`TouchCounter`]), both
//!    capturing into the worker's one [`queue::Capture`], which its
//!    [`PriorityReader`] (its shard) reads; `probe_with` every stream of
//!    [`PriorityOutputs::captured`] and the rows' capture. Call
//!    `reader.absorb()` once the probes passed a batch.
//! 2. The job feed keeps each job's last sent [`JobRow`] (retract exactly the
//!    old row) and a [`crossings::Crossings`]; per batch at time `t`: re-send
//!    the rows of `due(t)` jobs with `begun_at`/`age_capped_at` recomputed,
//!    and `schedule(job, next_crossing(..))` for every row it sends; on a
//!    `config` event re-derive every row (crossings move).
//! 3. Facts: `Config(PriorityParams::from_config(..))` on config change;
//!    `Cluster`, `Qos`, `Partition`, `AccountPriority` from their events;
//!    `AssocPriority` (effective: own, else nearest ancestor account's, for
//!    every association); `Fairshare` per user association from the
//!    fair-share part (inside the dataflow); under Moab
//!    `MoabUsage`/`MoabUsageTotal`/`WallclockAccuracy`.
//! 4. `INCR_ONLY`: split batches at event-time boundaries and call
//!    `reader.remember_incr_only(prev_t)` where `Replay::feed` would.
//! 5. Reads: `reader.top(k, now)`, `reader.job(id, now)`,
//!    `reader.evaluate_all(now)` (sprio), `reader.ahead_of(target, now)` on
//!    every shard between steps, merged (`worker::shards`).
//!
//! # Driver contract
//! Before reading at `now`, the driver has run a batch at a time `<= now`
//! with every begin crossing `<= now` applied ([`crossings::Crossings::due`]).
//! Age-cap crossings may lag when the time factor's weight is not negative
//! (always for Slurm, whose weights are unsigned): past the cap the uncapped
//! bound over-estimates, so the read stays exact and only reads more. With
//! a negative Flux wait-time weight a lagging flag would under-estimate, so
//! the driver applies the age-cap crossings `<= now` too.

pub mod classic;
pub mod crossings;
pub mod fair_tree;
mod kept;
pub mod moab;
pub mod queue;
pub mod record;
pub mod waiting;

use std::collections::BTreeMap;
use std::sync::Arc;

use differential_dataflow::operators::arrange::{Arranged, TraceAgent};
use differential_dataflow::trace::implementations::ValSpine;
use differential_dataflow::VecCollection;
use fairflow_model::moab::Credential;
use fairflow_model::report::{CompactJobs, JobIdKey, JobPriority, JobState};
use fairflow_model::tres::TresCounts;
use fairflow_model::{Config, PriorityModel};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::{Exchange, ParallelizationContract, Pipeline};
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::vec::Broadcast;
use timely::dataflow::StreamVec;

use crate::names::JobNames;
use crate::types::{AccountId, AssocId, Epoch as Time, JobId, NameId, NodeId};
use queue::{Capture, Captured, Queue};

pub use crate::types::TouchCounter;
pub use record::PriorityRecord;

/// A candidate of a top read, ranked before it is evaluated whole: its
/// priority at the read's time, its name and where to evaluate it from.
struct Ranked<'q> {
    priority: u64,
    name: Arc<str>,
    record: &'q PriorityRecord,
    fairshare: f64,
}

impl Ranked<'_> {
    /// The queue's order ([`JobPriority::queue_key`]'s): priority
    /// descending, submit time, job id.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.cmp_to(other.priority, other.record.row.submit_at, &other.name)
    }

    /// [`Ranked::cmp`] against a job given by its priority, submit time
    /// and name.
    fn cmp_to(&self, priority: u64, submit_at: Time64, name: &str) -> std::cmp::Ordering {
        priority
            .cmp(&self.priority)
            .then(self.record.row.submit_at.cmp(&submit_at))
            .then_with(|| JobIdKey::compare(&self.name, name))
    }
}

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
    pub submit_at: Time64,
    /// When it last entered the queue (submit or requeue).
    pub queued_at: Time64,
    /// Its begin time, if any.
    pub begin: Option<Time64>,
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
    pub deadline: Option<Time64>,
    /// Moab SPVIOLATION.
    pub soft_policy_violation: Option<bool>,
    /// Moab ATTR attributes.
    pub attributes: Option<Vec<String>>,
    /// When it last started (Moab USAGE, FSPSPU).
    pub started_at: Option<Time64>,
    /// Closed spans held since it last entered the queue (Moab's accrual policy).
    pub held_spans: Vec<(Time64, Time64)>,
    /// When its current hold began, if it is held.
    pub held_since: Option<Time64>,
    /// Moab USERPRIO, as the job gives it.
    pub user_priority: Option<i64>,
}

/// Unix seconds (the model's time, not the logical time).
pub type Time64 = fairflow_model::Time;

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
        usage: u128,
    },
    /// Moab: all usage, frame units.
    MoabUsageTotal(u128),
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

/// The keys contexts are grouped by.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum Key {
    /// The globals.
    Unit,
    /// A user association.
    Assoc(AssocId),
    /// An account.
    Account(AccountId),
    /// A QOS.
    Qos(NameId),
    /// A partition.
    Partition(NameId),
}

/// The values the `resolve` and `globals` reduces group.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum Val {
    /// A combination active jobs name refers to the key.
    Named,
    /// A job category refers to the partition.
    Ref(u8),
    /// Association priority.
    AssocPriority(i64),
    /// Account priority.
    AccountPriority(i64),
    /// QOS priority.
    QosPriority(i64),
    /// A partition.
    Partition(Box<PartitionRec>),
    /// A partition factor (for the maximum).
    PartFactor(u32),
    /// A job category referring to an undefined partition.
    UndefinedPartRef(u8),
    /// The configuration.
    Config(Box<PriorityParams>),
    /// The cluster.
    Cluster(u64, TresBits),
}

/// A context key's resolved values (the oracle's defaults where no fact says).
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
pub struct KeyCtx {
    /// Effective association priority (association).
    pub assoc_priority: i64,
    /// Own priority (account).
    pub account_priority: Option<i64>,
    /// QOS priority (QOS; 0 when undefined).
    pub qos_priority: i64,
    /// Partition (defaults when undefined).
    pub partition: PartitionRec,
}

/// The globals: configuration, cluster and normalisation maxima.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct Globals {
    /// The configuration.
    pub params: PriorityParams,
    /// The largest association priority (at least 0).
    pub max_assoc: i64,
    /// The largest QOS priority (at least 0).
    pub max_qos: i64,
    /// The largest partition factor over defined partitions and those that
    /// listed jobs name.
    pub max_partition: u32,
    /// Cluster nodes.
    pub cluster_nodes: u64,
    /// Cluster TRES totals.
    pub cluster_tres: TresBits,
}

/// What the side arrangement holds.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum Side {
    /// A context key's values.
    Key(KeyCtx),
    /// The globals (key `Unit`), shared by every combination's context.
    Globals(Arc<Globals>),
    /// A job category naming an undefined partition (to the globals).
    UndefinedPartRef(u8),
}

/// The context keys a job's record depends on besides the globals: its user
/// association (and so its account), QOS and partition. Jobs that share a
/// combination share one resolved context, so the context joins run over the
/// distinct combinations, never over jobs.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct Combo {
    /// The user association.
    pub assoc: AssocId,
    /// The account.
    pub account: AccountId,
    /// The QOS.
    pub qos: NameId,
    /// The partition.
    pub partition: NameId,
}

impl Combo {
    /// The combination `row` names.
    pub fn of(row: &JobRow) -> Self {
        Combo {
            assoc: row.assoc,
            account: row.account,
            qos: row.qos,
            partition: row.partition,
        }
    }
}

/// A combination on its way through the context joins.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct ComboCtx {
    /// The combination.
    pub combo: Combo,
    /// Its context so far.
    pub ctx: KeyCtx,
}

/// A combination's resolved context and the globals: everything a job's
/// record needs besides its row. Records share it (`Arc`): one per
/// combination, not one per job.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct JobContext {
    /// The combination's keys' contexts.
    pub ctx: KeyCtx,
    /// The globals (one for all combinations).
    pub globals: Arc<Globals>,
}

/// The input collections of the context dataflow.
pub struct PriorityInputs<'s> {
    /// Everything that is not a job.
    pub facts: VecCollection<'s, Time, Fact, isize>,
    /// The combinations active jobs name, each once ([`ComboRefs`]).
    pub combos: VecCollection<'s, Time, Combo, isize>,
    /// The (partition, job category) pairs active jobs name, each once.
    pub partition_refs: VecCollection<'s, Time, (NameId, u8), isize>,
}

/// The output: the streams to probe (they pass a time once every worker's
/// capture holds everything up to it).
pub struct PriorityOutputs<'s> {
    /// Probe these.
    pub captured: Vec<StreamVec<'s, Time, ()>>,
}

/// The combinations and the (partition, category) pairs that start (`+1`)
/// or stop (`-1`) being named.
pub type ComboDeltas = (Vec<(Combo, isize)>, Vec<((NameId, u8), isize)>);

/// The reference counts behind [`PriorityInputs::combos`] and
/// [`PriorityInputs::partition_refs`]: how many sent job rows name each
/// combination and each (partition, category) pair. The driver runs every
/// batch's row deltas through [`ComboRefs::deltas`] and sends only the
/// pairs that appear or disappear, so a job event that names what other
/// jobs already name sends nothing to the context dataflow (which then
/// does not step).
#[derive(Debug, Default, Clone)]
pub struct ComboRefs {
    combos: std::collections::HashMap<Combo, usize>,
    partition_refs: std::collections::HashMap<(NameId, u8), usize>,
}

impl ComboRefs {
    /// The partitions some sent row names.
    pub fn partitions(&self) -> impl Iterator<Item = NameId> + '_ {
        self.partition_refs.keys().map(|(partition, _)| *partition)
    }

    /// Count `rows` (retractions `-1`, insertions `+1`, exactly as sent)
    /// and return the combinations and partition pairs whose count moved
    /// between zero and non-zero.
    pub fn deltas(&mut self, rows: &[(JobRow, isize)]) -> ComboDeltas {
        let mut combos: Vec<(Combo, isize)> = Vec::new();
        let mut refs: Vec<((NameId, u8), isize)> = Vec::new();
        for (row, diff) in rows {
            combos.push((Combo::of(row), *diff));
            refs.push(((row.partition, category(row.phase, row.begun)), *diff));
        }
        (
            Self::moved(&mut self.combos, combos),
            Self::moved(&mut self.partition_refs, refs),
        )
    }

    /// Apply the net `changes` to `counts`; the keys that moved between zero
    /// and non-zero, with `+1` or `-1`.
    fn moved<K: Ord + std::hash::Hash + Copy>(
        counts: &mut std::collections::HashMap<K, usize>,
        mut changes: Vec<(K, isize)>,
    ) -> Vec<(K, isize)> {
        differential_dataflow::consolidation::consolidate(&mut changes);
        let mut moved = Vec::new();
        for (key, diff) in changes {
            let before = counts.get(&key).copied().unwrap_or(0);
            let after = before.checked_add_signed(diff).unwrap_or_else(|| {
                debug_assert!(false, "a row retracted that was not sent");
                0
            });
            if after == 0 {
                counts.remove(&key);
            } else {
                counts.insert(key, after);
            }
            match (before, after) {
                (0, 0) => {}
                (0, _) => moved.push((key, 1)),
                (_, 0) => moved.push((key, -1)),
                _ => {}
            }
        }
        moved
    }
}

/// A job's category for partition references: pending/held x begun, running.
fn category(phase: Phase, begun: bool) -> u8 {
    match (phase, begun) {
        (Phase::Pending, true) => 0,
        (Phase::Pending, false) => 1,
        (Phase::Held, true) => 2,
        (Phase::Held, false) => 3,
        (Phase::Running, _) => 4,
    }
}

fn category_listed(params: &PriorityParams, cat: u8) -> bool {
    let (phase, begun) = match cat {
        0 => (Phase::Pending, true),
        1 => (Phase::Pending, false),
        2 => (Phase::Held, true),
        3 => (Phase::Held, false),
        _ => (Phase::Running, true),
    };
    record::listed(params, phase, begun).is_some()
}

fn counted<'s, D: differential_dataflow::Data>(
    collection: VecCollection<'s, Time, D, isize>,
    touched: &TouchCounter,
) -> VecCollection<'s, Time, D, isize> {
    let touched = touched.clone();
    collection.inspect(move |_| touched.add(1))
}

/// One enrichment stage: join the combinations (keyed by what they need
/// next) with the keys' resolved context, let `fill` copy what it needs and
/// name the next key.
fn enrich<'s>(
    stage: VecCollection<'s, Time, (Key, ComboCtx), isize>,
    sides: &Arranged<'s, TraceAgent<ValSpine<Key, Side, Time, isize>>>,
    touched: &TouchCounter,
    fill: impl Fn(&mut ComboCtx, &KeyCtx) -> Key + 'static,
) -> VecCollection<'s, Time, (Key, ComboCtx), isize> {
    counted(
        stage.arrange_by_key().join_core(
            sides.clone(),
            move |_key, combo: &ComboCtx, side: &Side| {
                let Side::Key(kc) = side else { return None };
                let mut combo = combo.clone();
                let next = fill(&mut combo, kc);
                Some((next, combo))
            },
        ),
        touched,
    )
}

/// One key's context from its facts and references.
fn resolve(key: &Key, values: &[(&Val, isize)], out: &mut Vec<(Side, isize)>) {
    let mut ctx = KeyCtx::default();
    let mut defined = false;
    let mut categories = Vec::new();
    for (value, count) in values {
        if *count <= 0 {
            continue;
        }
        match value {
            Val::Ref(cat) => categories.push(*cat),
            Val::AssocPriority(p) => ctx.assoc_priority = *p,
            Val::AccountPriority(p) => ctx.account_priority = Some(*p),
            Val::QosPriority(p) => ctx.qos_priority = *p,
            Val::Partition(rec) => {
                ctx.partition = (**rec).clone();
                defined = true;
            }
            _ => {}
        }
    }
    out.push((Side::Key(ctx), 1));
    if matches!(key, Key::Partition(_)) && !defined {
        categories.dedup();
        out.extend(
            categories
                .into_iter()
                .map(|c| (Side::UndefinedPartRef(c), 1)),
        );
    }
}

/// The globals from the distinct values of the unit group.
fn globals(values: &[(&Val, isize)], out: &mut Vec<(Side, isize)>) {
    let mut params = None;
    let (mut nodes, mut tres) = (0, Vec::new());
    let (mut max_assoc, mut max_qos) = (0i64, 0i64);
    let mut max_partition: Option<u32> = None;
    let mut undefined = Vec::new();
    for (value, count) in values {
        if *count <= 0 {
            continue;
        }
        match value {
            Val::Config(p) => params = Some((**p).clone()),
            Val::Cluster(n, t) => {
                nodes = *n;
                tres = t.clone();
            }
            Val::AssocPriority(p) => max_assoc = max_assoc.max(*p),
            Val::QosPriority(p) => max_qos = max_qos.max(*p),
            Val::PartFactor(f) => max_partition = Some(max_partition.map_or(*f, |m| m.max(*f))),
            Val::UndefinedPartRef(cat) => undefined.push(*cat),
            _ => {}
        }
    }
    let params = params.unwrap_or_default();
    // Partitions no event defined count with the default factor 1 when a
    // listed job names them (the oracle's `maxima`).
    if undefined.iter().any(|cat| category_listed(&params, *cat)) {
        max_partition = Some(max_partition.map_or(1, |m| m.max(1)));
    }
    out.push((
        Side::Globals(Arc::new(Globals {
            params,
            max_assoc,
            max_qos,
            max_partition: max_partition.unwrap_or(0),
            cluster_nodes: nodes,
            cluster_tres: tres,
        })),
        1,
    ));
}

/// Build the context dataflow over `inputs` (on every worker, identically),
/// capturing into `capture`.
pub fn build<'s>(
    inputs: PriorityInputs<'s>,
    capture: &Capture,
    touched: &TouchCounter,
) -> PriorityOutputs<'s> {
    build_routed(inputs, capture, touched, Sharding::ByShardKey)
}

/// Where the priority dataflow's outputs are captured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sharding {
    /// Rows on their job's shard ([`shard_key`]), contexts and facts on
    /// every worker (the engine).
    ByShardKey,
    /// Everything on worker 0 (the crate's own tests of the stages, which
    /// read one queue on worker 0 whatever the number of workers).
    #[cfg(test)]
    OnWorkerZero,
}

/// [`build`], with the outputs captured as `sharding` says.
pub(crate) fn build_routed<'s>(
    inputs: PriorityInputs<'s>,
    capture: &Capture,
    touched: &TouchCounter,
    sharding: Sharding,
) -> PriorityOutputs<'s> {
    let PriorityInputs {
        facts,
        combos,
        partition_refs,
    } = inputs;

    let refs = combos
        .clone()
        .flat_map(|combo: Combo| {
            [
                (Key::Assoc(combo.assoc), Val::Named),
                (Key::Account(combo.account), Val::Named),
                (Key::Qos(combo.qos), Val::Named),
                (Key::Partition(combo.partition), Val::Named),
            ]
        })
        .concat(partition_refs.map(|(partition, cat)| (Key::Partition(partition), Val::Ref(cat))));
    let defs = facts.clone().flat_map(|fact: Fact| match fact {
        Fact::AssocPriority {
            of: AssocRef::User(assoc),
            priority,
        } => Some((Key::Assoc(assoc), Val::AssocPriority(priority))),
        Fact::AccountPriority { account, priority } => {
            Some((Key::Account(account), Val::AccountPriority(priority)))
        }
        Fact::Qos { name, priority } => Some((Key::Qos(name), Val::QosPriority(priority))),
        Fact::Partition { name, rec } => {
            Some((Key::Partition(name), Val::Partition(Box::new(rec))))
        }
        _ => None,
    });
    let resolved = counted(defs.concat(refs).reduce(resolve), touched);
    let facts_for_queue = facts.clone();

    let global_values = facts
        .flat_map(|fact: Fact| match fact {
            Fact::Config(p) => Some((Key::Unit, Val::Config(p))),
            Fact::Cluster { nodes, tres } => Some((Key::Unit, Val::Cluster(nodes, tres))),
            Fact::AssocPriority { priority, .. } => Some((Key::Unit, Val::AssocPriority(priority))),
            Fact::Qos { priority, .. } => Some((Key::Unit, Val::QosPriority(priority))),
            Fact::Partition { rec, .. } => Some((Key::Unit, Val::PartFactor(rec.job_factor))),
            _ => None,
        })
        .concat(
            resolved
                .clone()
                .flat_map(|(_, side): (Key, Side)| match side {
                    Side::UndefinedPartRef(cat) => Some((Key::Unit, Val::UndefinedPartRef(cat))),
                    _ => None,
                }),
        );
    let globals = counted(
        global_values.reduce(|_unit, values, out| globals(values, out)),
        touched,
    );
    let sides = resolved
        .filter(|(_, side)| matches!(side, Side::Key(_)))
        .concat(globals)
        .arrange_by_key();

    // The context joins run over the distinct combinations of keys that
    // active jobs name: association, account, QOS, partition, globals.
    let stage = combos.map(|combo: Combo| {
        (
            Key::Assoc(combo.assoc),
            ComboCtx {
                combo,
                ctx: KeyCtx::default(),
            },
        )
    });
    // Each stage copies one key's context into the combination, then re-keys it for the next.
    let stage = enrich(stage, &sides, touched, |cc, kc| {
        cc.ctx.assoc_priority = kc.assoc_priority;
        Key::Account(cc.combo.account)
    });
    let stage = enrich(stage, &sides, touched, |cc, kc| {
        cc.ctx.account_priority = kc.account_priority;
        Key::Qos(cc.combo.qos)
    });
    let stage = enrich(stage, &sides, touched, |cc, kc| {
        cc.ctx.qos_priority = kc.qos_priority;
        Key::Partition(cc.combo.partition)
    });
    let stage = enrich(stage, &sides, touched, |cc, kc| {
        cc.ctx.partition = kc.partition.clone();
        Key::Unit
    });
    // One context per combination, met by its jobs' rows in each shard's
    // reader (`PriorityReader::join_rows`), not in an arrangement of rows.
    let contexts = counted(
        stage
            .arrange_by_key()
            .join_core(sides, |_key, cc: &ComboCtx, side: &Side| {
                let Side::Globals(g) = side else { return None };
                Some((
                    cc.combo,
                    Arc::new(JobContext {
                        ctx: cc.ctx.clone(),
                        globals: g.clone(),
                    }),
                ))
            }),
        touched,
    );

    let contexts_sink = capture.clone();
    let contexts_sink = move |data: &mut Vec<ContextUpdate>| {
        let mut captured = contexts_sink.borrow_mut();
        captured.note_pending(data.iter().map(|(_, time, _)| *time));
        captured.contexts.append(data);
    };
    let facts_sink = capture.clone();
    let facts_sink =
        move |data: &mut Vec<(Fact, Time, isize)>| facts_sink.borrow_mut().facts.append(data);
    let (contexts_captured, facts_captured) = match sharding {
        Sharding::ByShardKey => (
            capture_on_every_worker(contexts.inner, "CaptureContexts", contexts_sink),
            capture_on_every_worker(facts_for_queue.inner, "CaptureFacts", facts_sink),
        ),
        #[cfg(test)]
        Sharding::OnWorkerZero => (
            capture_with(
                contexts.inner,
                Exchange::new(|_: &ContextUpdate| 0u64),
                "CaptureContexts",
                contexts_sink,
            ),
            capture_with(
                facts_for_queue.inner,
                Exchange::new(|_: &(Fact, Time, isize)| 0u64),
                "CaptureFacts",
                facts_sink,
            ),
        ),
    };
    PriorityOutputs {
        captured: vec![contexts_captured, facts_captured],
    }
}

/// The rows dataflow's one stage: every job row update goes to its shard
/// ([`shard_key`]; worker 0 with `sharding` `OnWorkerZero`) and into
/// `capture` there, where the reader meets it with its combination's
/// context. Returns the stream to probe.
pub(crate) fn capture_rows<'s>(
    rows: VecCollection<'s, Time, JobRow, isize>,
    capture: &Capture,
    sharding: Sharding,
) -> StreamVec<'s, Time, ()> {
    let sink = capture.clone();
    let sink = move |data: &mut Vec<RowUpdate>| {
        let mut captured = sink.borrow_mut();
        captured.note_pending(data.iter().map(|(_, time, _)| *time));
        captured.rows.append(data);
    };
    match sharding {
        Sharding::ByShardKey => capture_with(
            rows.inner,
            Exchange::new(|(row, _, _): &RowUpdate| shard_key(row)),
            "CaptureRows",
            sink,
        ),
        #[cfg(test)]
        Sharding::OnWorkerZero => capture_with(
            rows.inner,
            Exchange::new(|_: &RowUpdate| 0u64),
            "CaptureRows",
            sink,
        ),
    }
}

/// The shard a job's records live on, as a key for timely's exchange
/// (`key % workers`): its user association, mixed, so that consecutive ids
/// spread; under Moab its user's name, so that a user's running totals
/// (summed over every job of the user, whatever the account) are read on
/// one shard. Every record of one user association is on one shard, so its
/// ranked jobs and best keys are local.
pub fn shard_key(row: &JobRow) -> u64 {
    use std::hash::{Hash, Hasher};
    match &row.moab {
        Some(moab) => {
            // `DefaultHasher::new` has fixed keys: the same key in every
            // process of one binary.
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            moab.user.hash(&mut hasher);
            hasher.finish()
        }
        None => u64::from(row.assoc).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 17,
    }
}

/// A job row's update at one logical time.
pub(crate) type RowUpdate = (JobRow, Time, isize);

/// A combination's context's update at one logical time.
pub(crate) type ContextUpdate = ((Combo, Arc<JobContext>), Time, isize);

/// Send every update to every worker (each shard needs every factor, the
/// sorted tree and the context: one fact per association at most, small
/// against jobs) and hand each arriving batch to `sink` (see
/// [`capture_with`]). With one worker, nothing moves.
pub(crate) fn capture_on_every_worker<'s, D: differential_dataflow::ExchangeData>(
    updates: StreamVec<'s, Time, (D, Time, isize)>,
    name: &str,
    sink: impl FnMut(&mut Vec<(D, Time, isize)>) + 'static,
) -> StreamVec<'s, Time, ()> {
    let updates = if updates.scope().peers() > 1 {
        updates.broadcast()
    } else {
        updates
    };
    capture_with(updates, Pipeline, name, sink)
}

/// Send every update to worker 0 (where the driver's reads of the tree are
/// served) and hand each arriving batch to `sink` there (see
/// [`capture_with`]).
pub(crate) fn capture_on_worker_0<'s, D: differential_dataflow::ExchangeData>(
    updates: StreamVec<'s, Time, (D, Time, isize)>,
    name: &str,
    sink: impl FnMut(&mut Vec<(D, Time, isize)>) + 'static,
) -> StreamVec<'s, Time, ()> {
    let route = Exchange::new(|_: &(D, Time, isize)| 0u64);
    capture_with(updates, route, name, sink)
}

/// Move `updates` by `pact` and hand each arriving batch to `sink` on the
/// worker it reaches; the returned (empty) stream passes a time once every
/// update up to it was handed over, so a probe on it says when every
/// worker's capture is complete.
fn capture_with<'s, D, P>(
    updates: StreamVec<'s, Time, D>,
    pact: P,
    name: &str,
    mut sink: impl FnMut(&mut Vec<D>) + 'static,
) -> StreamVec<'s, Time, ()>
where
    D: Clone + 'static,
    P: ParallelizationContract<Time, Vec<D>>,
{
    updates.unary::<CapacityContainerBuilder<Vec<()>>, _, _, _>(pact, name, |_capability, _info| {
        move |input, _output| {
            input.for_each(|_time, data| sink(data));
        }
    })
}

/// Submit times as order-preserving `u64`.
pub(crate) fn ordered_submit(t: Time64) -> u64 {
    (t as u64) ^ (1 << 63)
}

/// Slurm's `INCR_ONLY` memory: job -> (its stay in the queue, its floor).
pub type IncrFloors = BTreeMap<String, ((Time64, u32), u64)>;

/// Reads one shard of the priority outputs (after the probe passed the
/// batch): the [`Queue`] the captured updates are applied to, and Slurm's
/// `INCR_ONLY` memory of its jobs.
pub struct PriorityReader {
    /// The active jobs' names (ties in the queue are broken by name).
    names: JobNames,
    capture: Capture,
    queue: Queue,
    touched: TouchCounter,
    /// `INCR_ONLY` memory: job -> (stay, floor).
    floors: IncrFloors,
    /// The first jobs of the last top read ([`kept`]).
    kept: Option<kept::KeptTop>,
    /// What was absorbed since.
    since_kept: kept::SinceKept,
    /// Top reads answered from the kept top (not searched).
    kept_reads: u64,
    /// Every combination's context, as captured.
    contexts: std::collections::HashMap<Combo, Arc<JobContext>>,
    /// This shard's jobs by the combination their row names.
    combo_jobs: std::collections::BTreeSet<(Combo, JobId)>,
}

impl PriorityReader {
    /// A reader of the updates [`build`] captures in `capture` (this
    /// worker's [`PriorityOutputs::capture`]), naming jobs from `names`; the queue's
    /// own updates are counted in `touched`.
    pub fn new(names: JobNames, capture: Capture, touched: TouchCounter) -> Self {
        PriorityReader {
            names,
            capture,
            queue: Queue::new(),
            touched,
            floors: BTreeMap::new(),
            kept: None,
            since_kept: kept::SinceKept::default(),
            kept_reads: 0,
            contexts: std::collections::HashMap::new(),
            combo_jobs: std::collections::BTreeSet::new(),
        }
    }

    /// Apply what the dataflow emitted since the last call (the driver calls
    /// it once the probe passed a batch; every read calls it too).
    pub fn absorb(&mut self) {
        let capture = self.capture.clone();
        let mut captured = capture.borrow_mut();
        if captured.rows.is_empty() && captured.contexts.is_empty() && captured.facts.is_empty() {
            return;
        }
        self.join_rows(&mut captured);
        self.since_kept.note(&mut self.kept, &captured);
        self.queue.absorb(&mut captured, &self.touched);
    }

    /// Apply the captured row and context updates of the logical times
    /// before `upper` (complete: the probes of both priority dataflows
    /// passed them), leaving the facts and later updates for the next
    /// [`absorb`]: a shard other than worker 0's absorbs its jobs while
    /// worker 0 works, instead of at its next read. The queue's state is a
    /// function of the rows, contexts and facts it holds, whatever the order
    /// they came in.
    ///
    /// [`absorb`]: PriorityReader::absorb
    pub fn absorb_records_before(&mut self, upper: Time) {
        let capture = self.capture.clone();
        let mut captured = capture.borrow_mut();
        if captured.rows.is_empty() && captured.contexts.is_empty() {
            return;
        }
        // Nothing complete yet: leave the pending updates where they are
        // (this runs after every step of the worker).
        if captured.pending_from.is_some_and(|from| from >= upper) {
            return;
        }
        let (rows, later_rows): (Vec<_>, Vec<_>) = std::mem::take(&mut captured.rows)
            .into_iter()
            .partition(|(_, time, _)| *time < upper);
        let (contexts, later_contexts): (Vec<_>, Vec<_>) = std::mem::take(&mut captured.contexts)
            .into_iter()
            .partition(|(_, time, _)| *time < upper);
        captured.pending_from = later_rows
            .iter()
            .map(|(_, time, _)| *time)
            .chain(later_contexts.iter().map(|(_, time, _)| *time))
            .min();
        captured.rows = later_rows;
        captured.contexts = later_contexts;
        if rows.is_empty() && contexts.is_empty() {
            return;
        }
        let mut ready = Captured {
            rows,
            contexts,
            ..Captured::default()
        };
        self.join_rows(&mut ready);
        self.since_kept.note(&mut self.kept, &ready);
        self.queue.absorb(&mut ready, &self.touched);
    }

    /// Meet the captured rows with their combinations' contexts: move
    /// `captured`'s rows and contexts into record updates (`records`), the
    /// queue's input. A job whose row changed gets its new row's record; a
    /// combination whose context changed re-derives the record of each of
    /// its jobs on this shard. Each record removed or added counts as one
    /// touched record. Updates of several logical times consolidate: the
    /// records follow the last rows and contexts, as the queue needs.
    fn join_rows(&mut self, captured: &mut Captured) {
        if captured.rows.is_empty() && captured.contexts.is_empty() {
            return;
        }
        let mut records: Vec<((JobId, PriorityRecord), Time, isize)> = Vec::new();
        // Contexts: retractions first (a changed context is a retraction
        // and an insertion of the same combination).
        let mut contexts: Vec<((Combo, Arc<JobContext>), isize)> = captured
            .contexts
            .drain(..)
            .map(|(update, _, diff)| (update, diff))
            .collect();
        differential_dataflow::consolidation::consolidate(&mut contexts);
        let mut changed: Vec<Combo> = Vec::with_capacity(contexts.len());
        for ((combo, context), _) in contexts.iter().filter(|(_, diff)| *diff < 0) {
            if self.contexts.get(combo) == Some(context) {
                self.contexts.remove(combo);
            }
            changed.push(*combo);
        }
        for ((combo, context), _) in contexts.into_iter().filter(|(_, diff)| *diff > 0) {
            self.contexts.insert(combo, context);
            changed.push(combo);
        }
        changed.sort_unstable();
        changed.dedup();

        // Rows: each job's net change, by job.
        let mut rows: Vec<(JobRow, isize)> = captured
            .rows
            .drain(..)
            .map(|(row, _, diff)| (row, diff))
            .collect();
        differential_dataflow::consolidation::consolidate(&mut rows);
        rows.sort_by_key(|(row, diff)| (row.job, *diff));
        let mut jobs_changed: Vec<JobId> = Vec::with_capacity(rows.len());
        for (row, diff) in rows {
            if jobs_changed.last() != Some(&row.job) {
                jobs_changed.push(row.job);
                // The job's record as the queue holds it goes, whatever
                // context it was made with.
                if let Some(old) = self.queue.record(row.job) {
                    self.combo_jobs.remove(&(Combo::of(&old.row), row.job));
                    records.push(((row.job, old.clone()), 0, -1));
                }
            }
            if diff > 0 {
                let combo = Combo::of(&row);
                let Some(context) = self.contexts.get(&combo) else {
                    debug_assert!(false, "a row before its combination's context");
                    continue;
                };
                self.combo_jobs.insert((combo, row.job));
                records.push(((row.job, record::build_record(&row, context)), 0, 1));
            }
        }
        // Contexts that changed: the other jobs naming them.
        for combo in changed {
            let Some(context) = self.contexts.get(&combo) else {
                continue;
            };
            for &(_, job) in self
                .combo_jobs
                .range((combo, JobId::MIN)..=(combo, JobId::MAX))
            {
                if jobs_changed.binary_search(&job).is_ok() {
                    continue;
                }
                let Some(old) = self.queue.record(job) else {
                    continue;
                };
                if Arc::ptr_eq(&old.context, context) || old.context == *context {
                    continue;
                }
                let new = record::build_record(&old.row, context);
                records.push(((job, old.clone()), 0, -1));
                records.push(((job, new), 0, 1));
            }
        }
        self.touched.add(records.len() as u64);
        captured.records.append(&mut records);
    }

    /// The `INCR_ONLY` memory (for a snapshot).
    pub fn floors(&self) -> &IncrFloors {
        &self.floors
    }

    /// Replace the `INCR_ONLY` memory (a restore).
    pub fn set_floors(&mut self, floors: IncrFloors) {
        self.floors = floors;
    }

    /// Every user association's fair-share factor as the priority dataflow
    /// sees it.
    pub fn fairshare_factors(&mut self) -> BTreeMap<AssocId, f64> {
        self.absorb();
        self.queue.fairshare_factors()
    }

    /// [`PriorityReader::fairshare_factors`] as a dense table by
    /// association id (`None`: no entry).
    pub fn fairshare_factors_dense(&mut self) -> Vec<Option<f64>> {
        self.absorb();
        self.queue.fairshare_factors_dense()
    }

    /// The entries of [`PriorityReader::fairshare_factors`] of `assocs`
    /// only (a read of a few associations: `explain`'s path).
    pub fn fairshare_factors_of(&mut self, assocs: &[AssocId]) -> BTreeMap<AssocId, f64> {
        self.absorb();
        assocs
            .iter()
            .filter_map(|&assoc| Some((assoc, self.queue.fairshare_factor(assoc)?)))
            .collect()
    }

    /// The record's job's name (`""` if the table no longer has it, which a
    /// driver that publishes names before each batch never lets happen).
    fn name_of(&self, record: &PriorityRecord) -> Arc<str> {
        self.names
            .get(record.job())
            .unwrap_or_else(|| Arc::from(""))
    }

    fn floor_of(&self, name: &str, record: &PriorityRecord) -> Option<u64> {
        self.floors
            .get(name)
            .filter(|(stay, _)| *stay == record.stay())
            .map(|(_, floor)| *floor)
    }

    /// The record evaluated at `now` with its user's factor, named, with
    /// its `INCR_ONLY` floor.
    fn evaluate(&self, record: &PriorityRecord, now: Time64) -> Option<JobPriority> {
        self.evaluate_with(record, self.queue.fairshare_of(record.row.assoc), now)
    }

    /// [`PriorityReader::evaluate`] with the user's factor given (a pass over
    /// every record reads the factors from one table).
    fn evaluate_with(
        &self,
        record: &PriorityRecord,
        fairshare: f64,
        now: Time64,
    ) -> Option<JobPriority> {
        let name = self.name_of(record);
        record.evaluate(&name, fairshare, now, self.floor_of(&name, record))
    }

    /// A user association's factor from a [`Queue::factor_table`].
    fn factor_in(table: &[f64], record: &PriorityRecord) -> f64 {
        table.get(record.row.assoc as usize).copied().unwrap_or(0.0)
    }

    /// One job's priority and factors at `now` (`explain`, `sprio -j`):
    /// `None` when the job is not active or not listed. Slurm and Flux: one
    /// lookup; Moab: `O(active jobs)` (per-user running totals).
    pub fn job(&mut self, job: JobId, now: Time64) -> Option<JobPriority> {
        self.absorb();
        let record = self.queue.record(job)?;
        if record.model() == PriorityModel::Moab {
            let name = self.name_of(record);
            return self.evaluate_all(now).into_iter().find(|p| *p.job == *name);
        }
        self.evaluate(record, now)
    }

    /// Every listed job's priority at `now`, in job-name order (the oracle's
    /// `priority::evaluate`). `O(active jobs)`.
    pub fn evaluate_all(&mut self, now: Time64) -> Vec<JobPriority> {
        self.absorb();
        let mut all = self.listed_priorities(now);
        all.sort_by(|a, b| a.job.cmp(&b.job));
        all
    }

    /// [`PriorityReader::evaluate_all`] held compactly: each job's priority
    /// is encoded as it is evaluated, so the shard never holds every job's
    /// decoded priority at once.
    pub fn evaluate_all_compact(&mut self, now: Time64) -> CompactJobs {
        self.absorb();
        let mut all = CompactJobs::new();
        self.each_listed(now, |job| all.push(&job));
        all.sorted_by_job()
    }

    /// Every listed job's priority at `now`, in no particular order (Moab:
    /// its read-time evaluation over every record). `O(active jobs)`.
    fn listed_priorities(&self, now: Time64) -> Vec<JobPriority> {
        let mut all = Vec::new();
        self.each_listed(now, |job| all.push(job));
        all
    }

    /// Each listed job's priority at `now`, handed to `each` as it is
    /// evaluated, in no particular order (Moab: its read-time evaluation
    /// over every record, evaluated together first).
    fn each_listed(&self, now: Time64, mut each: impl FnMut(JobPriority)) {
        let moab = self
            .queue
            .any_record()
            .is_some_and(|r| r.model() == PriorityModel::Moab);
        if moab {
            moab::evaluate(self.queue.records(), &self.queue.facts(), now)
                .into_iter()
                .for_each(each);
            return;
        }
        let table = self.queue.factor_table();
        for record in self.queue.records() {
            if let Some(job) = self.evaluate_with(record, Self::factor_in(&table, record), now) {
                each(job);
            }
        }
    }

    /// The oracle's `remember_incr_only` at `now`: each pending job's floor
    /// becomes the larger of it and its priority now; floors of jobs no
    /// longer queued are dropped; without Slurm's `INCR_ONLY` every floor is
    /// forgotten. `O(active jobs)`.
    pub fn remember_incr_only(&mut self, now: Time64) {
        self.absorb();
        let on = self
            .queue
            .any_record()
            .is_some_and(PriorityRecord::incr_only);
        if !on {
            self.floors.clear();
            return;
        }
        let mut next: IncrFloors = BTreeMap::new();
        let table = self.queue.factor_table();
        for record in self.queue.records() {
            let name = self.name_of(record);
            let floor = self.floor_of(&name, record);
            let mut kept = floor;
            if let Some(p) = self.evaluate_with(record, Self::factor_in(&table, record), now) {
                if p.state == JobState::Pending {
                    kept = Some(floor.map_or(p.priority, |f| f.max(p.priority)));
                }
            }
            if let Some(value) = kept {
                if record.row.phase != Phase::Running {
                    next.insert(name.to_string(), (record.stay(), value));
                }
            }
        }
        self.floors = next;
    }

    /// The first `k` jobs of the ranked queue at `now`, exactly the oracle's
    /// `priority::queue(..)[..k]` (see the module documentation).
    ///
    /// After a batch that brought no fact, the read re-ranks the first jobs
    /// of the last read with the jobs changed since ([`kept`]) and searches
    /// only when that cannot prove the first `k`.
    pub fn top(&mut self, k: usize, now: Time64) -> Vec<JobPriority> {
        self.absorb();
        if let Some(top) = self.top_from_kept(k, now) {
            self.kept_reads += 1;
            return top;
        }
        let (top, kept) = self.search_top(k, now);
        self.kept = kept;
        self.since_kept = kept::SinceKept::default();
        top
    }

    /// How many top reads were answered from the kept top.
    #[cfg(test)]
    pub(crate) fn kept_reads(&self) -> u64 {
        self.kept_reads
    }

    /// The priority at or below which jobs are ordered by submit time alone
    /// (Slurm 1, Flux 0); `None` for the models whose reads evaluate every
    /// record (Moab, Slurm's `INCR_ONLY`) and for an empty queue.
    fn floor(&self) -> Option<u64> {
        let first = self.queue.any_record()?;
        if first.model() == PriorityModel::Moab || first.incr_only() {
            return None;
        }
        Some(match first.model() {
            PriorityModel::Slurm => 1,
            _ => 0,
        })
    }

    /// The first `k` jobs at `now` by a search of the queue, with what the
    /// next read may keep of it ([`kept`]; `None` where the read filled
    /// from the floor or evaluated every record).
    fn search_top(&self, k: usize, now: Time64) -> (Vec<JobPriority>, Option<kept::KeptTop>) {
        if k == 0 || self.queue.any_record().is_none() {
            return (Vec::new(), None);
        }
        let Some(floor) = self.floor() else {
            let mut all = self.listed_priorities(now);
            all.retain(|p| p.state == JobState::Pending);
            all.sort_by_cached_key(JobPriority::queue_key);
            all.truncate(k);
            return (all, None);
        };
        // Candidates are ranked by their priority alone (no factor list, no
        // key built); only the `k` returned are evaluated whole at the end.
        // The best `k + KEPT_SPARE` read are kept for the next read, and the
        // bounds of the others noted.
        let wanted = k + kept::KEPT_SPARE;
        let mut left_out = [f64::NEG_INFINITY; 2];
        let mut candidates = self.queue.candidates(now);
        let mut best: Vec<Ranked<'_>> = Vec::with_capacity(wanted.min(1024) + 1);
        while let Some(bound) = candidates.peek_bound() {
            if best.len() >= k {
                let kth = best[k - 1].priority;
                if kth > floor && bound < kth as f64 - 1.0 {
                    break;
                }
            }
            if bound < floor as f64 {
                // Every unread job is at the floor: fewer than `k` jobs are
                // above it, and `best` holds them all.
                best.truncate(k);
                let best = Self::evaluate_ranked(best, now);
                return (self.fill_from_floor(best, k, floor, now), None);
            }
            let Some((record, fairshare)) = candidates.next_candidate() else {
                break;
            };
            if let Some((_, candidate)) = self.rank(record, fairshare, now) {
                let at = best.partition_point(|kept| kept.cmp(&candidate).is_lt());
                if at < wanted {
                    best.insert(at, candidate);
                    if best.len() > wanted {
                        let dropped = best.pop().expect("longer than wanted");
                        kept::leave_out(&mut left_out, &dropped);
                    }
                } else {
                    kept::leave_out(&mut left_out, &candidate);
                }
            }
        }
        let unread = candidates.unread_key_bounds();
        let unread = [unread[0].max(left_out[0]), unread[1].max(left_out[1])];
        let kept = kept::KeptTop::new(now, k, &best, unread);
        best.truncate(k);
        (Self::evaluate_ranked(best, now), Some(kept))
    }

    /// A candidate's state and its ranking at `now` with its user's factor
    /// (no factor list built).
    fn rank<'q>(
        &self,
        record: &'q PriorityRecord,
        fairshare: f64,
        now: Time64,
    ) -> Option<(JobState, Ranked<'q>)> {
        let (state, priority) = record.priority_at(fairshare, now, None)?;
        let ranked = Ranked {
            priority,
            name: self.name_of(record),
            record,
            fairshare,
        };
        Some((state, ranked))
    }

    /// The ranked candidates evaluated whole, in their order.
    fn evaluate_ranked(best: Vec<Ranked<'_>>, now: Time64) -> Vec<JobPriority> {
        best.into_iter()
            .filter_map(|ranked| {
                let p = ranked
                    .record
                    .evaluate(&ranked.name, ranked.fairshare, now, None)?;
                debug_assert_eq!(p.priority, ranked.priority, "the same bits both ways");
                Some(p)
            })
            .collect()
    }

    /// Every ranked job of this queue at `now` whose queue key is at most
    /// `target`'s (the target itself included when it is here), in queue
    /// order. A sharded queue answers for its shard, and the shards' answers
    /// merged are the whole queue's (the target may live on another shard).
    /// The same best-first search as [`PriorityReader::top`], stopped when
    /// the next bound cannot reach the target's priority instead of the
    /// `k`-th: `O(jobs read · log)`, where the jobs read are those ahead of
    /// it and the few whose bound ties with it; Moab and `INCR_ONLY` read
    /// every record.
    pub fn ahead_of(&mut self, target: &JobPriority, now: Time64) -> Vec<JobPriority> {
        self.absorb();
        let Some(first) = self.queue.any_record() else {
            return Vec::new();
        };
        if first.model() == PriorityModel::Moab || first.incr_only() {
            // Moab's priorities (per-user running totals) and `INCR_ONLY`'s
            // floors are read over every record.
            let key = target.queue_key();
            let mut ahead = self.listed_priorities(now);
            ahead.retain(|p| p.state == JobState::Pending && p.queue_key() <= key);
            ahead.sort_by_cached_key(JobPriority::queue_key);
            return ahead;
        }
        let floor = match first.model() {
            PriorityModel::Slurm => 1,
            _ => 0,
        };
        // Candidates are ranked as in `compute_top` (no factor list); only
        // the jobs ahead are evaluated whole.
        let is_ahead = |candidate: &Ranked<'_>| {
            candidate
                .cmp_to(target.priority, target.submit_at, &target.job)
                .is_le()
        };
        let mut candidates = self.queue.candidates(now);
        let mut ahead: Vec<Ranked<'_>> = Vec::new();
        let mut reached_floor = false;
        while let Some(bound) = candidates.peek_bound() {
            if target.priority > floor && bound < target.priority as f64 - 1.0 {
                break;
            }
            if bound < floor as f64 {
                // Every unread job is at the floor.
                reached_floor = true;
                break;
            }
            let Some((record, fairshare)) = candidates.next_candidate() else {
                break;
            };
            if let Some((JobState::Pending, candidate)) = self.rank(record, fairshare, now) {
                if is_ahead(&candidate) {
                    ahead.push(candidate);
                }
            }
        }
        if reached_floor && target.priority <= floor {
            // The job is at the floor: every job above it, then those at
            // the floor before it in submit order.
            ahead.retain(|candidate| candidate.priority > floor);
            let above: std::collections::HashSet<JobId> = ahead
                .iter()
                .map(|candidate| candidate.record.job())
                .collect();
            let last_second = ordered_submit(target.submit_at);
            for (second, id) in self.queue.by_submit() {
                if second > last_second {
                    break;
                }
                if above.contains(&id) {
                    continue;
                }
                let Some(record) = self.queue.record(id) else {
                    continue;
                };
                let fairshare = self.queue.fairshare_of(record.row.assoc);
                if let Some((JobState::Pending, candidate)) = self.rank(record, fairshare, now) {
                    if is_ahead(&candidate) {
                        ahead.push(candidate);
                    }
                }
            }
        }
        ahead.sort_by(Ranked::cmp);
        Self::evaluate_ranked(ahead, now)
    }

    /// What this shard holds (the worker and process left 0: the driver
    /// knows them), with this process's peak memory.
    pub fn holdings(&mut self) -> crate::cluster::ShardHoldings {
        self.absorb();
        let user_associations: std::collections::BTreeSet<AssocId> = self
            .queue
            .records()
            .map(|record| record.row.assoc)
            .collect();
        let mut combinations = 0;
        let mut last: Option<&Combo> = None;
        for (combo, _) in &self.combo_jobs {
            if last != Some(combo) {
                combinations += 1;
                last = Some(combo);
            }
        }
        crate::cluster::ShardHoldings {
            jobs: self.queue.len(),
            ranked: self.queue.ranked_len(),
            user_associations: user_associations.len(),
            combinations,
            peak_rss_kib: crate::cluster::own_status_kib("VmHWM").unwrap_or(0),
            ..Default::default()
        }
    }

    /// Complete `best` (every ranked job above the floor, fewer than `k`)
    /// with jobs at the floor in queue order (submit time, then job id),
    /// read from the submit-time order: `O(k + jobs above the floor)`.
    fn fill_from_floor(
        &self,
        mut best: Vec<JobPriority>,
        k: usize,
        floor: u64,
        now: Time64,
    ) -> Vec<JobPriority> {
        best.retain(|p| p.priority > floor);
        let above: std::collections::BTreeSet<String> =
            best.iter().map(|p| p.job.clone()).collect();
        // Jobs submitted in the same second, ordered by job id when complete.
        let mut group: Vec<JobPriority> = Vec::new();
        let mut group_second: Option<u64> = None;
        let mut fifo = self.queue.by_submit();
        loop {
            let next = fifo.next();
            let second = next.map(|(second, _)| second);
            if second != group_second {
                group.sort_by_cached_key(JobPriority::queue_key);
                best.append(&mut group);
                if best.len() >= k {
                    break;
                }
                group_second = second;
            }
            let Some((_, job)) = next else {
                break;
            };
            let Some(record) = self.queue.record(job) else {
                continue;
            };
            if above.contains(&*self.name_of(record)) {
                continue;
            }
            if let Some(p) = self.evaluate(record, now) {
                group.push(p);
            }
        }
        best.truncate(k);
        best
    }
}
