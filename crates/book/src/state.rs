//! The state of the book: the association tree, each association's own usage
//! in exact frame units, QOS, partitions, the cluster, and the jobs.
//! [`State::apply`] takes an event [`crate::Book::check`] accepted (it is the
//! one place an event's effects are written: `apply` for the tree and the
//! settings, `job_events` for the jobs); time advancing applies usage
//! resets and re-bases the decay frame (`time`, see `fairflow_model::usage`);
//! `flux_usage` keeps flux-accounting's usage bins under `UsageModel=flux`.
//! The read-side rules both engines call are in `crate::rules`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use fairflow_model::config::UsageModel;
use fairflow_model::event::{is_list, list_items, JobSpec};
use fairflow_model::job_priority::SlurmTresInput;
use fairflow_model::moab::Credential;
use fairflow_model::tres::{billable_tres, BillingMode, TresCounts, WeightList};
use fairflow_model::usage::{DecayFrame, FrameUsage, OwnUsage};
use fairflow_model::{Config, Shares, Time};

use crate::flux_bins::FluxBins;
use crate::name_map::NameMap;

mod apply;
mod flux_usage;
mod job_events;
mod restored;
mod time;

/// The active jobs by id, in id order: a persistent B-tree whose nodes and
/// jobs are shared between copies, so copying a state (a what-if's base)
/// copies a pointer, and a change to a copy copies the path to the job it
/// changes and that job, not the others. (Each job behind its own `Arc`: a
/// node holds dozens of entries, so a changed node copies pointers, not
/// jobs.) Change a job through [`State::job_mut`].
pub type Jobs = imbl::OrdMap<String, Arc<Job>>;

/// An account.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Account {
    /// The parent account; `None` for root.
    pub parent: Option<String>,
    /// `FairShare`.
    pub shares: Shares,
    /// Association priority (Slurm's assoc factor, Flux's bank priority).
    pub priority: Option<i64>,
    /// Usage charged to the account itself.
    pub usage: OwnUsage,
    /// Creation order: root 0, then 1, 2, ... as accounts are created (a
    /// re-created account is new). Slurm's Fair Tree walks tied accounts
    /// newest first.
    #[serde(default)]
    pub created: u64,
}

/// A user association (a user in an account).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct UserAssoc {
    /// `FairShare`.
    pub shares: Shares,
    /// Association priority.
    pub priority: Option<i64>,
    /// Usage charged to the association (directly and by its jobs).
    pub usage: OwnUsage,
}

/// A QOS.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Qos {
    /// `Priority`.
    pub priority: i64,
    /// `UsageFactor` (1 by default).
    pub usage_factor: f64,
}

impl Default for Qos {
    fn default() -> Self {
        Qos {
            priority: 0,
            usage_factor: 1.0,
        }
    }
}

/// A partition (Flux: queue; Moab: class).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Partition {
    /// `PriorityJobFactor` (1 by default).
    pub priority_job_factor: u32,
    /// `TRESBillingWeights`.
    pub billing_weights: WeightList,
    /// Queue priority (Flux).
    pub priority: i64,
    /// The partition's TRES totals, if given.
    pub tres: Option<TresCounts>,
    /// `MaxTime`, seconds, if given.
    pub max_time_secs: Option<u64>,
    /// `PriorityTier` (0 by default). Not in the serialised state: the
    /// snapshot carries the tiers after the book (format 4, `snapshot`), so
    /// the formats before it, which had no tier, read unchanged.
    #[serde(skip)]
    pub priority_tier: u16,
}

impl Default for Partition {
    fn default() -> Self {
        Partition {
            priority_job_factor: 1,
            billing_weights: WeightList::default(),
            priority: 0,
            tres: None,
            max_time_secs: None,
            priority_tier: 0,
        }
    }
}

/// The cluster's size.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct Cluster {
    /// Node count (0 until a `cluster` event).
    pub nodes: u64,
    /// TRES totals.
    pub tres: TresCounts,
}

/// Where a job is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum JobPhase {
    /// Pending.
    Pending,
    /// Pending and held.
    Held,
    /// Running since `since` at fixed-point billable `rate`.
    Running {
        /// When accrual (re)started: the start, a usage reset, or a
        /// settlement that moved it. A settlement of whole associations
        /// leaves it: its unsettled accrual starts at
        /// [`State::accrual_since`] of it.
        since: Time,
        /// Fixed-point billable TRES per second.
        rate: u128,
    },
}

/// A job that is pending, held or running.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Job {
    /// The job id.
    pub id: String,
    /// The user.
    pub user: String,
    /// The account.
    pub account: String,
    /// The job's attributes.
    pub spec: JobSpec,
    /// When it was submitted.
    pub submit_at: Time,
    /// When it (last) entered the queue: the submit, or the last requeue.
    pub queued_at: Time,
    /// The TRES it was allocated at its last start.
    pub allocated: Option<TresCounts>,
    /// Phase.
    pub phase: JobPhase,
    /// How many times it started (Moab STARTCOUNT counts restarts: this minus one).
    pub start_count: u32,
    /// When it last started (Moab's USAGE component and credential usage).
    #[serde(default)]
    pub started_at: Option<Time>,
    /// The spans it spent held since it last entered the queue, each
    /// `(held_at, released_at)`, in time order (Moab's effective queue time
    /// does not count them; `JOBPRIOACCRUALPOLICY`).
    #[serde(default)]
    pub held_spans: Vec<(Time, Time)>,
    /// When it was held, while it is held.
    #[serde(default)]
    pub held_since: Option<Time>,
}

impl Job {
    /// The partition name (`""` when none was given); of a job in several
    /// partitions, the first listed: Slurm's primary partition, as the book
    /// keeps a pending (or held) job's list in `PriorityTier` order
    /// ([`State::tier_ordered`]).
    pub fn partition(&self) -> &str {
        first_item(self.spec.partition.as_deref())
    }

    /// The QOS name (`""` when none was given); of a job with several QOS,
    /// the first listed (the Flux and Moab models' QOS; Slurm's primary QOS is
    /// [`State::primary_qos`]).
    pub fn qos(&self) -> &str {
        first_item(self.spec.qos.as_deref())
    }

    /// Every listed partition, in the list's order (one, maybe `""`, when
    /// the job names none or one): a pending or held job's in `PriorityTier`
    /// order, highest first, equal tiers in the order given.
    pub fn partitions(&self) -> impl Iterator<Item = &str> {
        list_items(self.spec.partition.as_deref().unwrap_or(""))
    }

    /// Was the job submitted to several partitions or several QOS?
    pub fn has_pairs(&self) -> bool {
        let listed = |l: &Option<String>| l.as_deref().is_some_and(is_list);
        listed(&self.spec.partition) || listed(&self.spec.qos)
    }

    /// Is the job pending and not held?
    pub fn is_pending(&self) -> bool {
        self.phase == JobPhase::Pending
    }

    /// Its held spans since it last entered the queue, the current hold (if
    /// any) counted as lasting until `until`.
    pub fn held_spans_until(&self, until: Time) -> Vec<(Time, Time)> {
        let mut spans = self.held_spans.clone();
        if let Some(held_at) = self.held_since {
            spans.push((held_at, until.max(held_at)));
        }
        spans
    }

    /// The Moab credentials a job charges besides its user and account: its
    /// group (the `group` field, else its account), its QOS and its class
    /// (partition), `""` when none.
    pub fn extra_credentials(&self) -> [(Credential, String); 3] {
        [
            (
                Credential::Group,
                self.spec
                    .group
                    .clone()
                    .unwrap_or_else(|| self.account.clone()),
            ),
            (Credential::Qos, self.qos().to_string()),
            (Credential::Class, self.partition().to_string()),
        ]
    }
}

/// The first element of a partition or QOS list, `""` for none.
fn first_item(list: Option<&str>) -> &str {
    list.and_then(|l| list_items(l).next()).unwrap_or("")
}

/// A QOS list's elements sorted as Slurm sorts a job's `qos_list`
/// (`priority_sort_qos_desc`): by priority, highest first; equal
/// priorities keep the order given (a stable sort).
fn qos_by_priority<'a>(qos: &BTreeMap<String, Qos>, list: &'a str) -> Vec<&'a str> {
    let mut sorted: Vec<&str> = list_items(list).collect();
    sorted.sort_by_key(|q| std::cmp::Reverse(qos.get(*q).map_or(0, |r| r.priority)));
    sorted
}

/// Usage accrued at fixed-point `rate` over `[from, to]` in `frame`, for
/// intervals that may start before the frame's epoch (without decay the
/// clock stops at the epoch, so the interval is measured directly).
pub fn accrued_between(frame: &DecayFrame, rate: u128, from: Time, to: Time) -> FrameUsage {
    if to <= from {
        0
    } else if frame.half_life_secs <= 0 {
        rate * ((to - from) as u128 * fairflow_model::usage::CLOCK_UNITS_PER_SEC)
    } else {
        frame.accrued(rate, from, to)
    }
}

/// [`Jobs`] read through a `BTreeMap`, whose reading allocates as entries
/// arrive: `imbl`'s own reader reserves the count a snapshot claims at once,
/// so a damaged count aborted the process (issue 37, the `snapshot` fuzz
/// target) instead of being an error.
fn deserialize_jobs<'de, D: serde::Deserializer<'de>>(reader: D) -> Result<Jobs, D::Error> {
    let jobs: BTreeMap<String, Arc<Job>> = serde::Deserialize::deserialize(reader)?;
    Ok(jobs.into_iter().collect())
}

/// Everything the book knows at `now`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct State {
    /// The time of the last event (or query).
    pub now: Time,
    /// The configuration in force.
    pub config: Config,
    /// The frame usage is stored in.
    pub frame: DecayFrame,
    /// The next `PriorityUsageResetPeriod` boundary.
    pub next_reset: Option<Time>,
    /// Accounts by name, root included.
    pub accounts: NameMap<String, Account>,
    /// User associations by `(account, user)`.
    pub users: NameMap<(String, String), UserAssoc>,
    /// QOS by name.
    pub qos: BTreeMap<String, Qos>,
    /// Partitions by name.
    pub partitions: BTreeMap<String, Partition>,
    /// The cluster.
    pub cluster: Cluster,
    /// Active jobs by id, shared copy-on-write ([`Jobs`]).
    #[serde(deserialize_with = "deserialize_jobs")]
    pub jobs: Jobs,
    /// Moab fair-share usage settled to group, QOS and class credentials
    /// (usage events charge the account's group; ended and requeued jobs
    /// their group, QOS and class), in frame units. Running jobs' share is
    /// added when it is read (`priority::moab`).
    #[serde(default)]
    pub credential_usage: NameMap<(Credential, String), FrameUsage>,
    /// When usage was last reset: running jobs' credential accrual counts
    /// from their start or from here, whichever is later.
    #[serde(default)]
    pub last_reset_at: Option<Time>,
    /// Per user, over ended jobs that had a time limit: (CPU-seconds used,
    /// CPU-seconds requested), Moab's wallclock accuracy.
    #[serde(default)]
    pub wallclock_accuracy: BTreeMap<String, (f64, f64)>,
    /// `INCR_ONLY` memory: per pending job, the highest priority evaluated
    /// since it (re)entered the queue (`priority::remember_incr_only`).
    #[serde(default)]
    pub priority_floor: BTreeMap<String, u64>,
    /// `INCR_ONLY` memory per (partition, QOS) pair: per pending job with
    /// several pairs, the highest priority evaluated for each pair, by its
    /// index in [`State::job_pairs`] (Slurm's `priority_array`), since the
    /// job (re)entered the queue or any partition last changed (a
    /// `partition` event forgets every job's: Slurm rebuilds the array when
    /// `last_part_update` is newer). Not in the serialised state: the
    /// snapshot carries it after the book (format 5, `snapshot`).
    #[serde(skip)]
    pub pair_floor: BTreeMap<String, Vec<u64>>,
    /// The active jobs marked for expedited requeue (Slurm's
    /// `JOB_EXPEDITING`): a `requeue` with `expedite` marks a job, its next
    /// `start` (Slurm clears the mark at launch), `end` or `cancel`
    /// unmarks it. Not in the serialised state: the snapshot carries it
    /// after the book (format 7, `snapshot`).
    #[serde(skip)]
    pub expedited: std::collections::BTreeSet<String>,
    /// The last settlement: every running job's accrual is settled up to
    /// the later of this time and its `since` ([`State::accrual_since`]), so
    /// settling to an earlier boundary is a no-op.
    #[serde(default = "time_min")]
    pub accrual_settled_to: Time,
    /// Accounts created so far (root excluded): the next account's
    /// [`Account::created`] is one more.
    #[serde(default)]
    pub accounts_created: u64,
    /// flux-accounting's usage bins, under `UsageModel=flux` (`None` under
    /// Slurm's): every association's settled usage is the sum of its bins.
    /// Not in the serialised state: the snapshot carries them after the book
    /// (format 6, `snapshot`).
    #[serde(skip)]
    pub flux_bins: Option<FluxBins>,
    /// Derived: the jobs that may be running (see [`RunningIndex`]).
    #[serde(skip)]
    running_index: RunningIndex,
}

/// The ids of every running job and perhaps some that stopped running: a
/// job enters at its start and leaves when a settlement finds it no longer
/// running, so a settlement at a calc-period boundary visits the running
/// jobs, not every job. Not serialised: a state read back (or built any
/// other way) finds it unknown and rebuilds it from its jobs at the first
/// settlement. It takes no part in equality.
#[derive(Debug, Clone, Default)]
struct RunningIndex {
    ids: BTreeSet<String>,
    /// Does `ids` hold every running job?
    complete: bool,
}

impl PartialEq for RunningIndex {
    fn eq(&self, _: &RunningIndex) -> bool {
        true
    }
}

/// The serde default of [`State::accrual_settled_to`]: nothing settled yet.
fn time_min() -> Time {
    Time::MIN
}

impl State {
    /// An empty cluster with only `root`, under `config`, at time 0.
    pub fn new(config: Config) -> Self {
        let mut accounts = NameMap::new();
        accounts.insert(
            "root".to_string(),
            Account {
                parent: None,
                shares: Shares::Value(1),
                priority: None,
                usage: OwnUsage::default(),
                created: 0,
            },
        );
        let frame = DecayFrame::new(config.frame_half_life_secs(), 0);
        State {
            now: 0,
            next_reset: None,
            config,
            frame,
            accounts,
            users: NameMap::new(),
            qos: BTreeMap::new(),
            partitions: BTreeMap::new(),
            cluster: Cluster::default(),
            jobs: Jobs::new(),
            credential_usage: NameMap::new(),
            last_reset_at: None,
            wallclock_accuracy: BTreeMap::new(),
            priority_floor: BTreeMap::new(),
            pair_floor: BTreeMap::new(),
            expedited: std::collections::BTreeSet::new(),
            accrual_settled_to: Time::MIN,
            accounts_created: 0,
            flux_bins: None,
            running_index: RunningIndex {
                ids: BTreeSet::new(),
                complete: true,
            },
        }
    }

    /// The own usage of an association (`user` `None`: the account
    /// itself), if it exists (an event's check proves the associations it
    /// names exist; every job's association and every account's parent do).
    pub fn own_usage_mut(&mut self, account: &str, user: Option<&str>) -> Option<&mut OwnUsage> {
        match user {
            None => self.accounts.get_mut(account).map(|a| &mut a.usage),
            Some(user) => (self.users)
                .get_mut(&(account.to_string(), user.to_string()))
                .map(|u| &mut u.usage),
        }
    }

    /// Job `id`, to change it: copied first if a copy of the state shares
    /// it ([`Jobs`]).
    pub fn job_mut(&mut self, id: &str) -> Option<&mut Job> {
        self.jobs.get_mut(id).map(Arc::make_mut)
    }

    /// An association's usage as visible at `now`, in frame units: settled
    /// usage, plus (with continuous accrual) what running jobs accrued so far.
    pub fn visible_usage(&self, own: &OwnUsage) -> FrameUsage {
        if self.config.calc_period_secs > 0 {
            own.settled
        } else {
            own.at(&self.frame, self.now)
        }
    }

    /// A partition list (`a,b`) in Slurm's `part_ptr_list` order: by
    /// `PriorityTier`, highest first (`priority_sort_part_tier`); equal
    /// tiers keep the order given (a stable sort: Slurm's `list_sort` is a
    /// `qsort`, which glibc does by insertion for lists this short). `None`
    /// when the order does not change. Slurm sorts the list at submission
    /// (`get_part_list`) and re-sorts every job's when a partition's tier
    /// changes (`sort_all_jobs_partition_lists`), rebuilding the partition
    /// string and repointing a pending job's primary partition to the head
    /// (`rebuild_job_part_list`).
    pub fn tier_ordered(&self, list: &str) -> Option<String> {
        if !is_list(list) {
            return None;
        }
        let mut sorted: Vec<&str> = list_items(list).collect();
        sorted.sort_by_key(|p| {
            std::cmp::Reverse(self.partitions.get(*p).map_or(0, |p| p.priority_tier))
        });
        let sorted = sorted.join(",");
        (sorted != list).then_some(sorted)
    }

    /// Put a pending or held job's partition list in tier order (a running
    /// job keeps the partition it runs in first: Slurm repoints only a
    /// pending job's `part_ptr`).
    fn order_partitions(&mut self, job_id: &str) {
        let Some(job) = self.jobs.get(job_id) else {
            return;
        };
        if matches!(job.phase, JobPhase::Running { .. }) {
            return;
        }
        if let Some(sorted) = job
            .spec
            .partition
            .as_deref()
            .and_then(|l| self.tier_ordered(l))
        {
            self.job_mut(job_id).expect("present").spec.partition = Some(sorted);
        }
    }

    /// The jobs listing partition `name` among several.
    pub fn jobs_listing_partition<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> {
        self.jobs
            .values()
            .filter(move |job| {
                job.spec
                    .partition
                    .as_deref()
                    .is_some_and(|l| is_list(l) && list_items(l).any(|p| p == name))
            })
            .map(|job| job.id.as_str())
    }

    /// A job's QOS as Slurm's priority takes it: of several, the one with the
    /// highest priority (the first listed among equals), which Slurm makes
    /// a pending job's `qos_ptr`; `""` when none.
    pub fn primary_qos<'a>(&self, spec: &'a JobSpec) -> &'a str {
        match spec.qos.as_deref() {
            Some(list) if is_list(list) => qos_by_priority(&self.qos, list)[0],
            other => first_item(other),
        }
    }

    /// Slurm's `INCR_ONLY` for one pair of a pending job: the pair's
    /// `computed` priority, or its remembered floor if that is higher (the
    /// floors of a job with `pairs` pairs, by index; none remembered, or
    /// remembered for another number of pairs: `computed`). Both engines
    /// call it.
    pub fn pair_priority_with_floor(
        &self,
        job: &str,
        index: usize,
        pairs: usize,
        computed: u64,
    ) -> u64 {
        match self.pair_floor.get(job) {
            Some(floors) if floors.len() == pairs => computed.max(floors[index]),
            _ => computed,
        }
    }

    /// Remember one pending job's pair priorities (evaluated now, floors
    /// applied) as its new pair floors: the larger of each and the floor.
    pub fn remember_pair_priorities(&mut self, job: &str, priorities: &[u64]) {
        let floors = self.pair_floor.entry(job.to_string()).or_default();
        if floors.len() != priorities.len() {
            floors.clear();
            floors.resize(priorities.len(), 0);
        }
        for (floor, &priority) in floors.iter_mut().zip(priorities) {
            *floor = (*floor).max(priority);
        }
    }

    /// Does `INCR_ONLY` keep a floor for `job`: is it still active and not
    /// running (pending or held)?
    pub fn keeps_incr_only_floor(&self, job: &str) -> bool {
        self.jobs
            .get(job)
            .is_some_and(|j| !matches!(j.phase, JobPhase::Running { .. }))
    }

    /// Forget the pair floors of every job that is not pending or held.
    pub fn forget_pair_floors_of_unqueued_jobs(&mut self) {
        let kept: BTreeMap<String, Vec<u64>> = std::mem::take(&mut self.pair_floor)
            .into_iter()
            .filter(|(id, _)| self.keeps_incr_only_floor(id))
            .collect();
        self.pair_floor = kept;
    }

    /// A job's (partition, QOS) pairs in Slurm's `priority_array` order:
    /// its partitions in [`Job::partitions`]' order, each with its QOS in
    /// [`State::primary_qos`]' order (Slurm's `_priority_each_partition`
    /// over `part_ptr_list`, `_priority_each_qos` over `qos_list`). The first
    /// pair is the job's own (primary) one; a job with one partition and one
    /// QOS has that pair only.
    pub fn job_pairs<'a>(&self, job: &'a Job) -> Vec<(&'a str, &'a str)> {
        let qos: Vec<&str> = match job.spec.qos.as_deref() {
            Some(list) => qos_by_priority(&self.qos, list),
            None => vec![""],
        };
        job.partitions()
            .flat_map(|p| qos.iter().map(move |q| (p, *q)))
            .collect()
    }

    /// Slurm's weighted TRES of a job counting `counts` (0 for a TRES it
    /// does not count) against `totals` (its partition's, else the
    /// cluster's), in `PriorityWeightTRES` order, the TRES weighted 0 left
    /// out.
    pub fn slurm_tres_inputs<'a>(
        &'a self,
        counts: &TresCounts,
        totals: Option<&TresCounts>,
    ) -> Vec<SlurmTresInput<'a>> {
        self.config
            .weight_tres
            .weights
            .iter()
            .filter(|(_, weight)| *weight != 0.0)
            .map(|(name, weight)| SlurmTresInput {
                name,
                weight: *weight,
                count: counts.get(name).copied().unwrap_or(0.0),
                total: totals
                    .and_then(|t| t.get(name))
                    .or_else(|| self.cluster.tres.get(name))
                    .copied(),
            })
            .collect()
    }

    /// The billing mode the flags select.
    pub fn billing_mode(&self) -> BillingMode {
        if self.config.flags.max_tres_gres {
            BillingMode::MaxTresGres
        } else if self.config.flags.max_tres {
            BillingMode::MaxTres
        } else {
            BillingMode::Sum
        }
    }

    /// The billable TRES per second a job charges while it runs on `tres`:
    /// its partition's `TRESBillingWeights` (CPUs without), times its QOS's
    /// `UsageFactor` (of several, the first partition and the primary QOS:
    /// the pair a pending job's own priority is computed with).
    ///
    /// Under `UsageModel=flux`, flux-accounting's rate instead: the nodes
    /// (1 when the TRES name none), cores and GPUs times their
    /// `FluxNodeWeight`, `FluxCoreWeight` and `FluxGpuWeight`.
    pub fn billable_rate(&self, spec: &JobSpec, tres: &TresCounts) -> f64 {
        if self.config.usage_model == UsageModel::Flux {
            let count = |name: &str| tres.get(name).copied();
            return self.config.flux_usage.rate(
                count("node").unwrap_or(1.0),
                count("cpu").unwrap_or(0.0),
                count("gres/gpu").unwrap_or(0.0),
            );
        }
        let weights = self
            .partitions
            .get(first_item(spec.partition.as_deref()))
            .map(|p| p.billing_weights.clone())
            .unwrap_or_default();
        let usage_factor = self
            .qos
            .get(self.primary_qos(spec))
            .map_or(1.0, |q| q.usage_factor);
        billable_tres(tres, &weights, self.billing_mode()) * usage_factor
    }
}

#[cfg(test)]
mod tests;
