//! The state of the book: the association tree, each association's own usage
//! in exact frame units, QOS, partitions, the cluster, and the jobs.
//! [`State::apply`] takes an event [`crate::Book::check`] accepted (it is the
//! one place an event's effects are written); time advancing applies usage
//! resets and re-bases the decay frame (see `fairflow_model::usage`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use fairflow_model::config::{ResetPeriod, UsageModel};
use fairflow_model::event::{is_list, list_items, JobSpec, Op};
use fairflow_model::job_priority::SlurmTresInput;
use fairflow_model::moab::Credential;
use fairflow_model::tres::{billable_tres, BillingMode, TresCounts, WeightList};
use fairflow_model::usage::{fixed_rate, DecayFrame, FrameUsage, OwnUsage};
use fairflow_model::{Config, Event, Shares, Time};

use fairflow_model::reset::{next_reset_after, reset_at_or_before};

use crate::flux_bins::{BinKey, BinParams, FluxBins};
use crate::name_map::NameMap;

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
        /// When accrual (re)started: the start, or the last re-base.
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
    /// Every running job's accrual start is at or after this time (the last
    /// settlement), so settling to an earlier boundary is a no-op.
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

    /// The own usage of an association (`user` `None`: the account itself).
    pub fn own_usage_mut(&mut self, account: &str, user: Option<&str>) -> &mut OwnUsage {
        match user {
            None => {
                &mut self
                    .accounts
                    .get_mut(account)
                    .expect("validated account")
                    .usage
            }
            Some(user) => {
                &mut self
                    .users
                    .get_mut(&(account.to_string(), user.to_string()))
                    .expect("validated association")
                    .usage
            }
        }
    }

    /// Move time forward to `t`: apply the usage resets whose boundaries pass,
    /// then re-base the frame if it is too far behind. Never moves backwards.
    pub fn advance_to(&mut self, t: Time) {
        if t < self.now {
            return;
        }
        let params = BinParams::of(&self.config);
        if let Some(bins) = &mut self.flux_bins {
            if bins.update(t, params) {
                self.settle_flux_bins();
            }
        }
        if let Some(first) = self.next_reset.filter(|b| *b <= t) {
            let period = self.config.usage_reset_period;
            // The last boundary passed, in closed form (no walk over the gap).
            let boundary = reset_at_or_before(period, t)
                .filter(|b| *b >= first)
                .unwrap_or(first);
            self.reset_usage_at(boundary);
            self.next_reset = next_reset_after(period, boundary);
        }
        if self.frame.needs_rebase(t) {
            self.rebase(DecayFrame::new(self.frame.half_life_secs, t), t);
        }
        self.settle_accrual_to_boundary(t);
        self.now = t;
    }

    /// Move all usage into the frame `next`, keeping every decayed value as of
    /// `t`: settled usage is converted, and running jobs' accrual offsets are
    /// recomputed in the new frame (their accrual start does not move).
    fn rebase(&mut self, next: DecayFrame, t: Time) {
        let old = self.frame;
        self.convert_usage(|usage| old.rebased(usage, &next, t));
        self.frame = next;
        self.recompute_rate_offsets();
    }

    /// Convert a state whose usage is in the frame units of snapshot format 2
    /// (`2^-20` TRES-seconds) to this build's (`2^-20 · 5^-6`): every settled
    /// value times `5^6`, exactly, and the running jobs' accrual offsets
    /// recomputed on this build's clock.
    pub(crate) fn convert_binary_frame_units(&mut self) {
        let fives = 5u128.pow(fairflow_model::usage::FRAME_FIVES);
        self.convert_usage(|usage| usage.saturating_mul(fives));
        self.recompute_rate_offsets();
    }

    /// Convert every settled usage value (associations' and Moab's
    /// credentials') with `convert`; the accrual offsets are cleared for the
    /// caller to recompute ([`State::recompute_rate_offsets`]).
    fn convert_usage(&mut self, convert: impl Fn(FrameUsage) -> FrameUsage) {
        let own = |usage: &mut OwnUsage| {
            usage.settled = convert(usage.settled);
            usage.rate_offset = 0;
        };
        self.accounts.values_mut().for_each(|a| own(&mut a.usage));
        self.users.values_mut().for_each(|u| own(&mut u.usage));
        self.credential_usage
            .values_mut()
            .for_each(|u| *u = convert(*u));
    }

    /// Recompute every association's `rate_offset` from its running jobs.
    fn recompute_rate_offsets(&mut self) {
        let frame = self.frame;
        let mut offsets: BTreeMap<(String, String), u128> = BTreeMap::new();
        for job in self.jobs.values() {
            if let JobPhase::Running { since, rate } = job.phase {
                *offsets
                    .entry((job.account.clone(), job.user.clone()))
                    .or_default() += rate * frame.clock(since);
            }
        }
        self.users.for_each_mut(|key, assoc| {
            assoc.usage.rate_offset = offsets.get(key).copied().unwrap_or(0);
        });
    }

    /// With a `PriorityCalcPeriod`, settle every running job's accrual up to
    /// the latest period boundary `<= t` (accrual becomes visible only there).
    /// Settling is exact at any time: `G` is an integer clock, so the pieces
    /// telescope to the same sum.
    fn settle_accrual_to_boundary(&mut self, t: Time) {
        if let Some(boundary) = self.config.calc_period_boundary(t) {
            self.settle_accrual_to(boundary);
        }
    }

    /// Settle every running job's accrual up to `boundary`, in the current frame.
    fn settle_accrual_to(&mut self, boundary: Time) {
        if boundary <= self.accrual_settled_to {
            // Every running job started or was settled at or after it.
            return;
        }
        self.accrual_settled_to = boundary;
        let frame = self.frame;
        let mut settled: Vec<((String, String), u128, u128, u128)> = Vec::new();
        if !self.running_index.complete {
            self.running_index = RunningIndex {
                ids: self
                    .jobs
                    .iter()
                    .filter(|(_, job)| matches!(job.phase, JobPhase::Running { .. }))
                    .map(|(id, _)| id.clone())
                    .collect(),
                complete: true,
            };
        }
        let jobs = &mut self.jobs;
        // One pass in id order: jobs no longer running leave the index, the
        // others are settled (one lookup each).
        self.running_index.ids.retain(|id| {
            let Some(job) = jobs.get_mut(id).map(Arc::make_mut) else {
                return false;
            };
            let JobPhase::Running { since, rate } = &mut job.phase else {
                return false;
            };
            if *since < boundary {
                let accrued = frame.accrued(*rate, *since, boundary);
                let offset_change = (*rate * frame.clock(*since), *rate * frame.clock(boundary));
                settled.push((
                    (job.account.clone(), job.user.clone()),
                    accrued,
                    offset_change.0,
                    offset_change.1,
                ));
                *since = boundary;
            }
            true
        });
        for (key, accrued, old_offset, new_offset) in settled {
            let usage = &mut self
                .users
                .get_mut(&key)
                .expect("a running job's association exists")
                .usage;
            usage.settled += accrued;
            usage.rate_offset = usage.rate_offset - old_offset + new_offset;
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

    /// Zero all usage at `t`; running jobs accrue again from `t`.
    fn reset_usage_at(&mut self, t: Time) {
        let next = DecayFrame::new(self.frame.half_life_secs, t);
        let zero = |usage: &mut OwnUsage| {
            usage.settled = 0;
            usage.rate_offset = usage.rate * next.clock(t);
        };
        self.accounts.values_mut().for_each(|a| zero(&mut a.usage));
        self.users.values_mut().for_each(|u| zero(&mut u.usage));
        let running: Vec<String> = self
            .jobs
            .values()
            .filter(|job| matches!(job.phase, JobPhase::Running { .. }))
            .map(|job| job.id.clone())
            .collect();
        for id in running {
            if let Some(Job {
                phase: JobPhase::Running { since, .. },
                ..
            }) = self.job_mut(&id)
            {
                *since = t;
            }
        }
        self.credential_usage.clear();
        self.last_reset_at = Some(t);
        self.frame = next;
        if let Some(bins) = &mut self.flux_bins {
            bins.bins.clear();
        }
    }

    /// Set every association's settled usage to the sum of its bins (under
    /// `UsageModel=flux`).
    fn settle_flux_bins(&mut self) {
        let Some(bins) = &self.flux_bins else {
            return;
        };
        self.accounts.for_each_mut(|name, account| {
            account.usage.settled = bins.total(&(name.clone(), None));
        });
        self.users.for_each_mut(|(account, user), assoc| {
            assoc.usage.settled = bins.total(&(account.clone(), Some(user.clone())));
        });
    }

    /// Charge `usage` (frame units) to an association under
    /// `UsageModel=flux`, as a job completing at `t` (flux-accounting's
    /// update), or into bin `period` as it is.
    fn charge_flux(&mut self, key: BinKey, usage: FrameUsage, t: Time, period: Option<u32>) {
        let params = BinParams::of(&self.config);
        let bins = self.flux_bins.as_mut().expect("UsageModel=flux");
        match period {
            Some(period) => bins.charge_into(&key, period as usize, usage, params.count),
            None => bins.charge_completed(&key, usage, t, params),
        }
        let total = bins.total(&key);
        self.own_usage_mut(&key.0, key.1.as_deref()).settled = total;
    }

    /// A job's usage ending at `t` as flux-accounting counts it: its weighted
    /// rate times its run (from its start, or from when `UsageModel=flux` came
    /// into force if later), rounded to five decimals.
    fn flux_job_usage(&self, job_id: &str, t: Time) -> FrameUsage {
        let job = &self.jobs[job_id];
        let since = self.flux_bins.as_ref().map_or(Time::MIN, |b| b.since);
        let from = job.started_at.unwrap_or(t).max(since);
        let rate = self.billable_rate(
            &job.spec,
            job.allocated.as_ref().unwrap_or(&TresCounts::default()),
        );
        fairflow_model::usage::flux_job_usage(rate * (t - from).max(0) as f64)
    }

    /// Bring `UsageModel=flux` into force at `t` (a `config` event, or a
    /// snapshot of an older format restored): what running jobs accrued so
    /// far is settled, usage is kept as of `t` without continuous decay, each
    /// association's usage becomes its bin 0, and running jobs stop accruing
    /// (their usage counts when they end, from `t`).
    pub(crate) fn enter_flux_usage(&mut self, t: Time) {
        self.settle_accrual_to(t);
        let old = self.frame;
        let next = DecayFrame::new(0, t);
        self.convert_usage(|usage| old.rebased(usage, &next, t));
        self.frame = next;
        let period_end = self
            .config
            .flux_bins
            .period_end
            .unwrap_or(t + self.config.decay_half_life_secs);
        let mut bins = FluxBins::new(period_end, t);
        let count = BinParams::of(&self.config).count;
        let own = self
            .accounts
            .iter()
            .map(|(name, a)| ((name.clone(), None), a.usage.settled))
            .chain(
                self.users
                    .iter()
                    .map(|((a, u), assoc)| ((a.clone(), Some(u.clone())), assoc.usage.settled)),
            );
        for (key, usage) in own.filter(|(_, usage)| *usage > 0) {
            bins.charge_into(&key, 0, usage, count);
        }
        self.flux_bins = Some(bins);
        self.restart_running_accrual(t);
    }

    /// Leave `UsageModel=flux` at `t`: the bins go (each association keeps
    /// their sum), usage decays continuously again from `t`, and running jobs
    /// accrue at Slurm's rate from `t`.
    fn leave_flux_usage(&mut self, t: Time) {
        self.flux_bins = None;
        let old = self.frame;
        let next = DecayFrame::new(self.config.frame_half_life_secs(), t);
        self.convert_usage(|usage| old.rebased(usage, &next, t));
        self.frame = next;
        self.restart_running_accrual(t);
    }

    /// Every running job accrues from `t` at the rate of the usage model in
    /// force (none under `UsageModel=flux`), and each association's rate and
    /// offset follow.
    fn restart_running_accrual(&mut self, t: Time) {
        let flux = self.config.usage_model == UsageModel::Flux;
        let rates: Vec<(String, u128)> = self
            .jobs
            .values()
            .filter(|job| matches!(job.phase, JobPhase::Running { .. }))
            .map(|job| {
                let rate = if flux {
                    0
                } else {
                    let allocated = job.allocated.clone().unwrap_or_default();
                    fixed_rate(self.billable_rate(&job.spec, &allocated))
                };
                (job.id.clone(), rate)
            })
            .collect();
        let mut per_assoc: BTreeMap<(String, String), u128> = BTreeMap::new();
        for (id, rate) in rates {
            let job = self.job_mut(&id).expect("listed above");
            job.phase = JobPhase::Running { since: t, rate };
            *per_assoc
                .entry((job.account.clone(), job.user.clone()))
                .or_default() += rate;
        }
        self.users.for_each_mut(|key, assoc| {
            assoc.usage.rate = per_assoc.get(key).copied().unwrap_or(0);
        });
        self.accrual_settled_to = self.accrual_settled_to.max(t);
        self.recompute_rate_offsets();
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

    /// Stop a running job's accrual at `t`, settling what it accrued.
    fn stop_accrual(&mut self, job_id: &str, t: Time) {
        let job = self.jobs.get(job_id).expect("validated job");
        let JobPhase::Running { since, rate } = job.phase else {
            unreachable!("validated: the job is running")
        };
        let (account, user) = (job.account.clone(), job.user.clone());
        let frame = self.frame;
        let usage = self.own_usage_mut(&account, Some(&user));
        usage.settled += frame.accrued(rate, since, t);
        usage.rate -= rate;
        usage.rate_offset -= rate * frame.clock(since);
        let job = &self.jobs[job_id];
        let from = job
            .started_at
            .unwrap_or(t)
            .max(self.last_reset_at.unwrap_or(Time::MIN));
        let accrued = accrued_between(&frame, rate, from, t);
        for credential in job.extra_credentials() {
            *self
                .credential_usage
                .get_or_insert_with(credential, FrameUsage::default) += accrued;
        }
    }

    /// A `config` event under `UsageModel=flux`: a new half-life, span or
    /// decay factor empties every bin (flux-accounting's `edit-config`
    /// clears the bins); `FluxHalfLifePeriodEnd` restarts the period clock.
    fn reconfigure_flux_bins(
        &mut self,
        t: Time,
        period_end_given: bool,
        (old_params, old_bins): (BinParams, fairflow_model::config::FluxUsageBins),
    ) {
        let params = BinParams::of(&self.config);
        let bins = self.flux_bins.as_mut().expect("UsageModel=flux");
        if params != old_params
            || self.config.flux_bins.reset_period_secs != old_bins.reset_period_secs
        {
            bins.bins.clear();
        }
        if period_end_given {
            bins.period_end = self.config.flux_bins.period_end;
            // The clock restarts: the next update reads it afresh.
            bins.updated_at = None;
            let _ = bins.update(t, params);
        }
        self.settle_flux_bins();
    }

    /// Under `UsageModel=flux`, charge a running job's whole usage as it ends
    /// (or is requeued) at `t`.
    fn charge_flux_job(&mut self, job_id: &str, t: Time) {
        if self.flux_bins.is_some() {
            let usage = self.flux_job_usage(job_id, t);
            let job = &self.jobs[job_id];
            let key = (job.account.clone(), Some(job.user.clone()));
            self.charge_flux(key, usage, t, None);
        }
    }

    /// Apply an event [`crate::Book::check`] accepted (through
    /// [`crate::Book::apply`], which also keeps the book's indexes).
    pub(crate) fn apply(&mut self, event: &Event) {
        let t = event.t;
        self.advance_to(t);
        match &event.op {
            Op::Account {
                name,
                parent,
                shares,
                priority,
            } => {
                if !self.accounts.contains_key(name) {
                    self.accounts_created += 1;
                }
                let created = self.accounts_created;
                let entry = self.accounts.get_or_insert_with(name.clone(), || Account {
                    parent: Some("root".to_string()),
                    shares: Shares::Value(1),
                    priority: None,
                    usage: OwnUsage::default(),
                    created,
                });
                if let Some(parent) = parent {
                    entry.parent = Some(parent.clone());
                }
                if let Some(shares) = shares {
                    entry.shares = *shares;
                }
                if priority.is_some() {
                    entry.priority = *priority;
                }
            }
            Op::User {
                user,
                account,
                shares,
                priority,
            } => {
                let entry = self
                    .users
                    .get_or_insert_with((account.clone(), user.clone()), || UserAssoc {
                        shares: Shares::Value(1),
                        priority: None,
                        usage: OwnUsage::default(),
                    });
                if let Some(shares) = shares {
                    entry.shares = *shares;
                }
                if priority.is_some() {
                    entry.priority = *priority;
                }
            }
            Op::RemoveAccount { name } => {
                // Usage history stays with the ancestors: the parent absorbs it.
                let removed = self.accounts.remove(name).expect("validated account");
                let parent = removed.parent.expect("root is never removed");
                self.own_usage_mut(&parent, None).add(&removed.usage);
                if let Some(bins) = &mut self.flux_bins {
                    bins.absorb(&(name.clone(), None), &(parent, None));
                }
            }
            Op::RemoveUser { user, account } => {
                let theirs: Vec<String> = self
                    .jobs
                    .values()
                    .filter(|j| j.account == *account && j.user == *user)
                    .map(|j| j.id.clone())
                    .collect();
                for id in theirs {
                    self.jobs.remove(&id);
                }
                let removed = self
                    .users
                    .remove(&(account.clone(), user.clone()))
                    .expect("validated association");
                self.own_usage_mut(account, None).add(&removed.usage);
                if let Some(bins) = &mut self.flux_bins {
                    let key = (account.clone(), Some(user.clone()));
                    bins.absorb(&key, &(account.clone(), None));
                }
            }
            Op::Usage {
                account,
                user,
                amount,
                period,
            } => {
                let value = self.frame.point_usage(*amount, t);
                if self.flux_bins.is_some() {
                    self.charge_flux((account.clone(), user.clone()), value, t, *period);
                } else {
                    self.own_usage_mut(account, user.as_deref()).settled += value;
                }
                *self.credential_usage.get_or_insert_with(
                    (Credential::Group, account.clone()),
                    FrameUsage::default,
                ) += value;
            }
            Op::ResetUsage => self.reset_usage_at(t),
            Op::Submit {
                job,
                user,
                account,
                spec,
                submitted,
            } => {
                let submit_at = submitted.unwrap_or(t);
                self.jobs.insert(
                    job.clone(),
                    Arc::new(Job {
                        id: job.clone(),
                        user: user.clone(),
                        account: account.clone(),
                        spec: spec.clone(),
                        submit_at,
                        queued_at: submit_at,
                        allocated: None,
                        phase: JobPhase::Pending,
                        start_count: 0,
                        started_at: None,
                        held_spans: Vec::new(),
                        held_since: None,
                    }),
                );
                self.priority_floor.remove(job);
                self.pair_floor.remove(job);
                self.order_partitions(job);
            }
            Op::Update { job, account, spec } => {
                let entry = Arc::make_mut(self.jobs.get_mut(job).expect("validated job"));
                entry.spec.apply(spec);
                if let Some(account) = account {
                    entry.account = account.clone();
                }
                self.order_partitions(job);
            }
            Op::Hold { job } => {
                let entry = Arc::make_mut(self.jobs.get_mut(job).expect("validated job"));
                entry.phase = JobPhase::Held;
                entry.held_since = Some(t);
            }
            Op::Release { job } => {
                let entry = Arc::make_mut(self.jobs.get_mut(job).expect("validated job"));
                entry.phase = JobPhase::Pending;
                if let Some(held_at) = entry.held_since.take() {
                    entry.held_spans.push((held_at, t));
                }
            }
            Op::Cancel { job } => {
                self.jobs.remove(job);
                self.expedited.remove(job);
            }
            Op::Start { job, tres } => {
                let entry = &self.jobs[job];
                let allocated = tres
                    .clone()
                    .or_else(|| entry.spec.tres.clone())
                    .unwrap_or_default();
                // Under `UsageModel=flux` a job charges nothing while it runs:
                // its whole usage counts when it ends (`charge_flux_job`).
                let rate = if self.flux_bins.is_some() {
                    0
                } else {
                    fixed_rate(self.billable_rate(&entry.spec, &allocated))
                };
                let (account, user) = (entry.account.clone(), entry.user.clone());
                let clock = self.frame.clock(t);
                let usage = self.own_usage_mut(&account, Some(&user));
                usage.rate += rate;
                usage.rate_offset += rate * clock;
                let entry = Arc::make_mut(self.jobs.get_mut(job).expect("validated job"));
                entry.phase = JobPhase::Running { since: t, rate };
                entry.allocated = Some(allocated);
                if self.running_index.complete {
                    self.running_index.ids.insert(job.clone());
                }
                entry.start_count += 1;
                entry.started_at = Some(t);
                self.priority_floor.remove(job);
                self.pair_floor.remove(job);
                self.expedited.remove(job);
            }
            Op::End { job } => {
                self.expedited.remove(job);
                self.charge_flux_job(job, t);
                self.stop_accrual(job, t);
                let ended = &self.jobs[job];
                if let (Some(started_at), Some(limit_secs)) =
                    (ended.started_at, ended.spec.time_limit_secs)
                {
                    let cpus = ended
                        .allocated
                        .as_ref()
                        .and_then(|a| a.get("cpu").copied())
                        .unwrap_or(1.0);
                    let entry = self
                        .wallclock_accuracy
                        .entry(ended.user.clone())
                        .or_default();
                    entry.0 += cpus * (t - started_at) as f64;
                    entry.1 += cpus * limit_secs as f64;
                }
                self.jobs.remove(job);
            }
            Op::Requeue { job, expedite } => {
                if *expedite {
                    self.expedited.insert(job.clone());
                }
                self.charge_flux_job(job, t);
                self.stop_accrual(job, t);
                let entry = Arc::make_mut(self.jobs.get_mut(job).expect("validated job"));
                entry.phase = JobPhase::Pending;
                entry.queued_at = t;
                if let Some(delay) = self.config.requeue_delay_secs {
                    entry.spec.begin = fairflow_model::priority_formula::slurm_requeue_begin(
                        entry.spec.begin,
                        t,
                        delay,
                    );
                }
                // A new stay in the queue: earlier holds are before it.
                entry.held_spans.clear();
                entry.held_since = None;
                self.order_partitions(job);
            }
            Op::Config { set } => {
                let next = self.config.patched(set).expect("validated config");
                let old_half_life = self.config.frame_half_life_secs();
                let old_period = self.config.usage_reset_period;
                let old_calc_period = self.config.calc_period_secs;
                let old_model = self.config.usage_model;
                let old_bins = (BinParams::of(&self.config), self.config.flux_bins.clone());
                self.config = next;
                if self.config.usage_model != old_model {
                    match self.config.usage_model {
                        UsageModel::Flux => self.enter_flux_usage(t),
                        UsageModel::Slurm => self.leave_flux_usage(t),
                    }
                } else if self.config.usage_model == UsageModel::Flux {
                    let period_end_given = set
                        .keys()
                        .any(|k| k.eq_ignore_ascii_case("FluxHalfLifePeriodEnd"));
                    self.reconfigure_flux_bins(t, period_end_given, old_bins);
                } else if self.config.frame_half_life_secs() != old_half_life {
                    // With continuous accrual, what running jobs accrued so far
                    // decayed at the old half-life: settle it in the old frame
                    // first, or the re-base would re-integrate it at the new one.
                    // (With a calc period, the accrual since the last boundary is
                    // charged at the new half-life, as Slurm's next cycle does.)
                    if old_calc_period <= 0 {
                        self.settle_accrual_to(t);
                    }
                    self.rebase(DecayFrame::new(self.config.frame_half_life_secs(), t), t);
                }
                let period_given = set
                    .keys()
                    .any(|k| k.eq_ignore_ascii_case("PriorityUsageResetPeriod"));
                if period_given || self.config.usage_reset_period != old_period {
                    if self.config.usage_reset_period == ResetPeriod::Now {
                        self.reset_usage_at(t);
                    }
                    self.next_reset = next_reset_after(self.config.usage_reset_period, t);
                }
            }
            Op::Qos {
                name,
                priority,
                usage_factor,
            } => {
                let entry = self.qos.entry(name.clone()).or_default();
                if let Some(p) = priority {
                    entry.priority = *p;
                }
                if let Some(f) = usage_factor {
                    entry.usage_factor = *f;
                }
            }
            Op::Partition {
                name,
                priority_job_factor,
                tres_billing_weights,
                priority,
                tres,
                max_time_secs,
                priority_tier,
            } => {
                self.pair_floor.clear();
                let entry = self.partitions.entry(name.clone()).or_default();
                if let Some(p) = priority_job_factor {
                    entry.priority_job_factor = *p;
                }
                if let Some(w) = tres_billing_weights {
                    entry.billing_weights = w.clone();
                }
                if let Some(p) = priority {
                    entry.priority = *p;
                }
                if tres.is_some() {
                    entry.tres = tres.clone();
                }
                if max_time_secs.is_some() {
                    entry.max_time_secs = *max_time_secs;
                }
                if let Some(tier) = priority_tier {
                    let changed = std::mem::replace(&mut entry.priority_tier, *tier) != *tier;
                    if changed {
                        let listing: Vec<String> = self
                            .jobs_listing_partition(name)
                            .map(str::to_string)
                            .collect();
                        for job in listing {
                            self.order_partitions(&job);
                        }
                    }
                }
            }
            Op::Cluster { nodes, tres } => {
                self.cluster = Cluster {
                    nodes: *nodes,
                    tres: tres.clone(),
                };
            }
            Op::Tick => {}
        }
        self.now = t;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Book;
    use fairflow_ingest::reader::read_events;

    struct Replayed {
        state: State,
    }

    fn replay(log: &str) -> Replayed {
        let mut book = Book::new(Config::default());
        for line in read_events(log.as_bytes()) {
            let line = line.unwrap();
            let number = line.line;
            let event = line.event.unwrap();
            book.apply(number, &event).unwrap();
        }
        Replayed {
            state: book.state().clone(),
        }
    }

    fn user_usage_tres_secs(state: &State, account: &str, user: &str) -> f64 {
        let own = state.users[&(account.to_string(), user.to_string())].usage;
        state
            .frame
            .to_tres_secs(state.visible_usage(&own), state.now)
    }

    const SETUP: &str = r#"{"op":"config","t":1000,"set":{"PriorityDecayHalfLife":0}}
{"op":"user","t":1000,"user":"u","account":"root"}
{"op":"submit","t":1000,"job":"1","user":"u","account":"root","tres":{"cpu":4}}
{"op":"start","t":1010,"job":"1"}
"#;

    #[test]
    fn under_flux_usage_a_job_charges_its_rounded_usage_when_it_ends_and_models_switch() {
        use fairflow_model::usage::FRAME_UNITS_PER_TRES_SEC as NS;
        let log = r#"{"op":"config","t":0,"set":{"UsageModel":"flux","FluxNodeWeight":0.3,"FluxCoreWeight":0.001}}
{"op":"user","t":0,"user":"u","account":"root"}
{"op":"submit","t":0,"job":"1","user":"u","account":"root","tres":{"node":3,"cpu":7}}
{"op":"start","t":10,"job":"1"}
{"op":"tick","t":15}
"#;
        // While it runs, nothing is charged.
        let r = replay(log);
        assert_eq!(user_usage_tres_secs(&r.state, "root", "u"), 0.0);
        // Ending at 17: (3 * 0.3 + 7 * 0.001) * 7 = 6.349 in f64
        // (6.348999999999999), rounded to five decimals as Python does: 6.349 =
        // 634_900 hundred-thousandths.
        let ended = format!("{log}{{\"op\":\"end\",\"t\":17,\"job\":\"1\"}}\n");
        let r = replay(&ended);
        let own = r.state.users[&("root".to_string(), "u".to_string())].usage;
        assert_eq!(own.settled, 634_900 * (NS / 100_000));
        // Back to Slurm's usage model at 20: the usage stays (decaying from
        // 20), a job started then accrues its CPUs per second.
        let back = format!(
            "{ended}{}",
            r#"{"op":"config","t":20,"set":{"UsageModel":"slurm","PriorityDecayHalfLife":0}}
{"op":"submit","t":20,"job":"2","user":"u","account":"root","tres":{"cpu":2}}
{"op":"start","t":20,"job":"2"}
{"op":"tick","t":30}
"#
        );
        let r = replay(&back);
        assert!(r.state.flux_bins.is_none());
        // 6.349 + 2 CPUs * 10 s = 26.349.
        let usage = user_usage_tres_secs(&r.state, "root", "u");
        assert!((usage - 26.349).abs() < 1e-9, "{usage}");
    }

    #[test]
    fn continuous_accrual_is_visible_at_any_time() {
        // 4 CPUs from 1010 to 1110, no decay: 400 CPU-seconds.
        let r = replay(&format!("{SETUP}{{\"op\":\"tick\",\"t\":1110}}\n"));
        assert_eq!(user_usage_tres_secs(&r.state, "root", "u"), 400.0);
    }

    #[test]
    fn a_calc_period_makes_accrual_visible_at_its_boundaries() {
        let log = format!(
            "{}{SETUP}{{\"op\":\"tick\",\"t\":1190}}\n",
            r#"{"op":"config","t":900,"set":{"PriorityCalcPeriod":"1:00"}}"#.to_string() + "\n"
        );
        // Boundaries every 60 s: 1020, 1080, ... The last one <= 1190 is 1140:
        // 4 CPUs from 1010 to 1140 = 520 CPU-seconds.
        let r = replay(&log);
        assert_eq!(user_usage_tres_secs(&r.state, "root", "u"), 520.0);
        // The job ending at 1195 settles exactly 4 * 185 = 740.
        let r = replay(&format!(
            "{log}{{\"op\":\"end\",\"t\":1195,\"job\":\"1\"}}\n"
        ));
        let own = r.state.users[&("root".to_string(), "u".to_string())].usage;
        // 740 TRES-seconds are 740 · 2^20 · 5^6 = 12_124_160_000_000 frame units.
        assert_eq!(own.settled, 12_124_160_000_000);
        assert_eq!((own.rate, own.rate_offset), (0, 0));
    }

    #[test]
    fn a_copy_shares_the_jobs_and_each_side_changes_only_its_own() {
        let apply = |book: &mut Book, log: &str| {
            for line in read_events(log.as_bytes()) {
                let line = line.unwrap();
                book.apply(line.line, &line.event.unwrap()).unwrap();
            }
        };
        let mut book = Book::new(Config::default());
        apply(
            &mut book,
            &format!(
                "{SETUP}{}",
                r#"{"op":"submit","t":1010,"job":"2","user":"u","account":"root"}
{"op":"submit","t":1010,"job":"3","user":"u","account":"root"}
"#
            ),
        );
        let mut copy = book.clone();
        let shared =
            |a: &Book, b: &Book, id: &str| Arc::ptr_eq(&a.state.jobs[id], &b.state.jobs[id]);
        assert!(["1", "2", "3"].iter().all(|id| shared(&book, &copy, id)));
        apply(
            &mut book,
            r#"{"op":"start","t":1020,"job":"2"}
{"op":"end","t":1030,"job":"1"}
{"op":"submit","t":1030,"job":"4","user":"u","account":"root"}
"#,
        );
        apply(&mut copy, r#"{"op":"hold","t":1040,"job":"3"}"#);
        // The copy kept its jobs as they were, but for its own hold.
        let ids = |b: &Book| b.state.jobs.keys().cloned().collect::<Vec<_>>();
        assert_eq!(ids(&copy), ["1", "2", "3"]);
        assert!(copy.state.jobs["2"].is_pending());
        assert!(matches!(
            copy.state.jobs["1"].phase,
            JobPhase::Running { .. }
        ));
        assert_eq!(copy.state.jobs["3"].phase, JobPhase::Held);
        // The book has its events' changes and not the copy's hold.
        assert_eq!(ids(&book), ["2", "3", "4"]);
        assert!(matches!(
            book.state.jobs["2"].phase,
            JobPhase::Running { since: 1020, .. }
        ));
        assert!(book.state.jobs["3"].is_pending());
        assert!(!shared(&book, &copy, "2") && !shared(&book, &copy, "3"));
    }
}
