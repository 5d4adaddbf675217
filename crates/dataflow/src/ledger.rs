//! The driver's ledger: what the engine needs to turn accepted events into
//! input deltas for the dataflow, kept independently of the oracle's `State`.
//!
//! It interns every association (account or user association) as a
//! [`NodeId`], remembers each one's current parent edge and shares (so that a
//! change can retract exactly the old record), each association's own settled
//! usage in exact frame units (`fairflow_model::usage`), the running jobs'
//! `(rate, accrual start)`, the pending jobs (for the billable rate at start),
//! the decay frame and the next usage-reset boundary.
//!
//! # Usage semantics
//! An association's *visible* own usage at `now` is
//! - with `PriorityCalcPeriod = 0` (continuous): `settled + Σ rate·(G(now) − G(since))`
//!   over its running jobs, which equals the oracle's
//!   `settled + rate·G(now) − rate_offset` because `G` is a non-decreasing integer clock;
//! - with a period `P > 0`: `settled`, where running jobs' accrual is settled up
//!   to each period boundary as time passes.
//!
//! Events are applied one at a time in log order (time advancing first:
//! resets, then re-base, then period settlement; a half-life change first
//! settles continuous accrual in the old frame, then re-bases), so every
//! rounding happens at the same event as in the oracle. After a batch, [`Ledger::take_deltas`]
//! compares each touched association against what was last sent to the
//! dataflow and returns the differences.

use std::collections::{BTreeMap, BTreeSet};

use fairflow_model::config::ResetPeriod;
use fairflow_model::event::{JobSpec, Op};
use fairflow_model::reset::{next_reset_after, reset_at_or_before};
use fairflow_model::tres::{billable_tres, BillingMode, TresCounts, WeightList};
use fairflow_model::usage::{fixed_rate, DecayFrame, FrameUsage};
use fairflow_model::{Config, Event, Shares, Time};

use crate::factors::FsParams;

/// An interned association: an account or a user association.
pub type NodeId = u32;

/// `root`'s id.
pub const ROOT: NodeId = 0;

/// One association as the ledger knows it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct NodeRecord {
    /// The account (for a user association, the account it is in).
    pub account: String,
    /// The user, for a user association.
    pub user: Option<String>,
    /// The direct parent; `None` for root.
    pub parent: Option<NodeId>,
    /// `FairShare`.
    pub shares: Shares,
    /// Does it exist now (removed associations keep their id, dead)?
    pub alive: bool,
    /// Own settled usage (usage events, ended jobs, settled accrual), frame units.
    pub settled: FrameUsage,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
enum JobPhase {
    Pending,
    Held,
    Running { since: Time, rate: u128 },
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct JobRecord {
    account: String,
    user: String,
    spec: JobSpec,
    phase: JobPhase,
}

/// What was last sent to the dataflow for one association.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Sent {
    alive: bool,
    parent: Option<NodeId>,
    shares: Option<Shares>,
    usage: FrameUsage,
}

/// A user association's `(id, (account, user))`.
pub type UserName = (NodeId, (String, String));

/// Input deltas for one batch, each with its DD diff.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Deltas {
    /// `(child, parent)` edges.
    pub edges: Vec<((NodeId, NodeId), i128)>,
    /// `(node, shares)`; every live association has exactly one.
    pub shares: Vec<((NodeId, Shares), i128)>,
    /// Own-usage changes in frame units, in the diff.
    pub usage: Vec<(NodeId, i128)>,
    /// User associations (as opposed to accounts) appearing and disappearing.
    pub users: Vec<(NodeId, i128)>,
    /// The same, with their `(account, user)` names.
    pub user_names: Vec<(UserName, i128)>,
    /// The fair-share parameters (on a configuration change).
    pub fs_params: Vec<(FsParams, i128)>,
}

impl Deltas {
    /// Number of input records.
    pub fn len(&self) -> usize {
        self.edges.len()
            + self.shares.len()
            + self.usage.len()
            + self.users.len()
            + self.user_names.len()
            + self.fs_params.len()
    }

    /// Nothing to send?
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The ledger; see the module documentation.
///
/// It serialises (for [`crate::Engine::snapshot`]) without what was sent to
/// the dataflow: a deserialised ledger has sent nothing, so call
/// [`Ledger::resend_replacing`] before its next [`Ledger::take_deltas`].
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Ledger {
    config: Config,
    frame: DecayFrame,
    now: Time,
    next_reset: Option<Time>,
    accounts: BTreeMap<String, NodeId>,
    users: BTreeMap<(String, String), NodeId>,
    nodes: Vec<NodeRecord>,
    #[serde(skip)]
    sent: Vec<Sent>,
    jobs: BTreeMap<String, JobRecord>,
    /// `(node, job)` for every running job.
    running: BTreeSet<(NodeId, String)>,
    qos_usage_factor: BTreeMap<String, f64>,
    partition_weights: BTreeMap<String, WeightList>,
    /// Every running job's accrual start is at or after this time (the
    /// last settlement), so settling to an earlier boundary is a no-op.
    accrual_settled_to: Time,
    #[serde(skip)]
    dirty: BTreeSet<NodeId>,
    #[serde(skip)]
    all_dirty: bool,
    #[serde(skip)]
    sent_fs_params: Option<FsParams>,
    /// Retractions of another ledger's records, sent first by the next
    /// [`Ledger::take_deltas`] ([`Ledger::resend_replacing`]).
    #[serde(skip)]
    retractions: Deltas,
}

impl Ledger {
    /// Only `root`, under `config`, at time 0 (as the oracle starts).
    pub fn new(config: Config) -> Self {
        let frame = DecayFrame::new(config.decay_half_life_secs, 0);
        let mut ledger = Ledger {
            config,
            frame,
            now: 0,
            next_reset: None,
            accounts: BTreeMap::new(),
            users: BTreeMap::new(),
            nodes: Vec::new(),
            sent: Vec::new(),
            jobs: BTreeMap::new(),
            running: BTreeSet::new(),
            qos_usage_factor: BTreeMap::new(),
            partition_weights: BTreeMap::new(),
            dirty: BTreeSet::new(),
            all_dirty: false,
            sent_fs_params: None,
            accrual_settled_to: Time::MIN,
            retractions: Deltas::default(),
        };
        let root = ledger.intern("root", None, None);
        debug_assert_eq!(root, ROOT);
        ledger
    }

    fn intern(&mut self, account: &str, user: Option<&str>, parent: Option<NodeId>) -> NodeId {
        let id = NodeId::try_from(self.nodes.len()).expect("fewer than 2^32 associations");
        self.nodes.push(NodeRecord {
            account: account.to_string(),
            user: user.map(str::to_string),
            parent,
            shares: Shares::Value(1),
            alive: true,
            settled: 0,
        });
        self.sent.push(Sent::default());
        match user {
            None => self.accounts.insert(account.to_string(), id),
            Some(user) => self
                .users
                .insert((account.to_string(), user.to_string()), id),
        };
        self.dirty.insert(id);
        id
    }

    /// The configuration in force.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The decay frame usage is expressed in.
    pub fn frame(&self) -> DecayFrame {
        self.frame
    }

    /// The time of the last event.
    pub fn now(&self) -> Time {
        self.now
    }

    /// Every association ever interned (dead ones have `alive == false`).
    pub fn nodes(&self) -> &[NodeRecord] {
        &self.nodes
    }

    /// Live accounts by name.
    pub fn accounts(&self) -> &BTreeMap<String, NodeId> {
        &self.accounts
    }

    /// Live user associations by `(account, user)`.
    pub fn users(&self) -> &BTreeMap<(String, String), NodeId> {
        &self.users
    }

    /// The ids of the jobs the ledger follows (pending, held, running), in order.
    pub fn job_ids(&self) -> impl Iterator<Item = &String> {
        self.jobs.keys()
    }

    fn account_id(&self, name: &str) -> NodeId {
        *self.accounts.get(name).expect("validated account")
    }

    fn assoc_id(&self, account: &str, user: Option<&str>) -> NodeId {
        match user {
            None => self.account_id(account),
            Some(user) => *self
                .users
                .get(&(account.to_string(), user.to_string()))
                .expect("validated association"),
        }
    }

    /// Move time forward to `t`: usage resets whose boundaries passed, then a
    /// re-base if the frame is too far behind, then period settlement.
    pub fn advance_to(&mut self, t: Time) {
        if t < self.now {
            return;
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
        self.settle_to_period_boundary(t);
        if t > self.now && self.config.calc_period_secs <= 0 {
            // Continuous accrual: every running job's association changes.
            let touched: Vec<NodeId> = self.running.iter().map(|(n, _)| *n).collect();
            self.dirty.extend(touched);
        }
        self.now = t;
    }

    /// Settled usage moves into the frame `next` (same decayed value at `t`);
    /// running jobs keep their accrual start and accrue in the new frame.
    fn rebase(&mut self, next: DecayFrame, t: Time) {
        let old = self.frame;
        for node in self.nodes.iter_mut().filter(|n| n.alive) {
            node.settled = old.rebased(node.settled, &next, t);
        }
        self.frame = next;
        self.all_dirty = true;
    }

    fn reset_usage_at(&mut self, t: Time) {
        self.frame = DecayFrame::new(self.frame.half_life_secs, t);
        for node in self.nodes.iter_mut() {
            node.settled = 0;
        }
        for job in self.jobs.values_mut() {
            if let JobPhase::Running { since, .. } = &mut job.phase {
                *since = t;
            }
        }
        self.all_dirty = true;
    }

    fn settle_to_period_boundary(&mut self, t: Time) {
        let period = self.config.calc_period_secs;
        if period <= 0 {
            return;
        }
        self.settle_accrual_to(t.div_euclid(period) * period);
    }

    /// Settle every running job's accrual up to `boundary` in the current
    /// frame; accrual restarts there.
    fn settle_accrual_to(&mut self, boundary: Time) {
        if boundary <= self.accrual_settled_to {
            // Every running job started or was settled at or after it.
            return;
        }
        self.accrual_settled_to = boundary;
        let frame = self.frame;
        let mut settled: Vec<(NodeId, u128)> = Vec::new();
        for (node, job_id) in &self.running {
            let job = self.jobs.get_mut(job_id).expect("running job exists");
            if let JobPhase::Running { since, rate } = &mut job.phase {
                if *since < boundary {
                    settled.push((*node, frame.accrued(*rate, *since, boundary)));
                    *since = boundary;
                }
            }
        }
        for (node, accrued) in settled {
            let settled = &mut self.nodes[node as usize].settled;
            *settled = settled.saturating_add(accrued);
            self.dirty.insert(node);
        }
    }

    fn billing_mode(&self) -> BillingMode {
        if self.config.flags.max_tres_gres {
            BillingMode::MaxTresGres
        } else if self.config.flags.max_tres {
            BillingMode::MaxTres
        } else {
            BillingMode::Sum
        }
    }

    fn billable_rate(&self, spec: &JobSpec, tres: &TresCounts) -> f64 {
        let weights = spec
            .partition
            .as_ref()
            .and_then(|p| self.partition_weights.get(p))
            .cloned()
            .unwrap_or_default();
        let usage_factor = spec
            .qos
            .as_ref()
            .and_then(|q| self.qos_usage_factor.get(q))
            .copied()
            .unwrap_or(1.0);
        billable_tres(tres, &weights, self.billing_mode()) * usage_factor
    }

    fn stop_accrual(&mut self, job_id: &str, t: Time) {
        let job = &self.jobs[job_id];
        let JobPhase::Running { since, rate } = job.phase else {
            unreachable!("validated: the job is running")
        };
        let node = self.assoc_id(&job.account, Some(&job.user));
        let accrued = self.frame.accrued(rate, since, t);
        let settled = &mut self.nodes[node as usize].settled;
        *settled = settled.saturating_add(accrued);
        self.running.remove(&(node, job_id.to_string()));
        self.dirty.insert(node);
    }

    /// Apply an event the validator accepted.
    pub fn apply(&mut self, event: &Event) {
        let t = event.t;
        self.advance_to(t);
        match &event.op {
            Op::Account {
                name,
                parent,
                shares,
                ..
            } => {
                let id = match self.accounts.get(name) {
                    Some(&id) => id,
                    None => self.intern(name, None, Some(ROOT)),
                };
                if let Some(parent) = parent {
                    let parent_id = self.account_id(parent);
                    self.nodes[id as usize].parent = Some(parent_id);
                }
                if let Some(shares) = shares {
                    self.nodes[id as usize].shares = *shares;
                }
                self.dirty.insert(id);
            }
            Op::User {
                user,
                account,
                shares,
                ..
            } => {
                let key = (account.clone(), user.clone());
                let id = match self.users.get(&key) {
                    Some(&id) => id,
                    None => {
                        let parent = self.account_id(account);
                        self.intern(account, Some(user), Some(parent))
                    }
                };
                if let Some(shares) = shares {
                    self.nodes[id as usize].shares = *shares;
                }
                self.dirty.insert(id);
            }
            Op::RemoveAccount { name } => {
                let id = self.accounts.remove(name).expect("validated account");
                self.absorb_into_parent(id);
            }
            Op::RemoveUser { user, account } => {
                self.jobs
                    .retain(|_, j| !(j.account == *account && j.user == *user));
                let id = self
                    .users
                    .remove(&(account.clone(), user.clone()))
                    .expect("validated association");
                self.absorb_into_parent(id);
            }
            Op::Usage {
                account,
                user,
                amount,
            } => {
                let value = self.frame.point_usage(*amount, t);
                let id = self.assoc_id(account, user.as_deref());
                let settled = &mut self.nodes[id as usize].settled;
                *settled = settled.saturating_add(value);
                self.dirty.insert(id);
            }
            Op::ResetUsage => self.reset_usage_at(t),
            Op::Submit {
                job,
                user,
                account,
                spec,
            } => {
                self.jobs.insert(
                    job.clone(),
                    JobRecord {
                        account: account.clone(),
                        user: user.clone(),
                        spec: spec.clone(),
                        phase: JobPhase::Pending,
                    },
                );
            }
            Op::Update { job, account, spec } => {
                let entry = self.jobs.get_mut(job).expect("validated job");
                entry.spec.apply(spec);
                if let Some(account) = account {
                    entry.account = account.clone();
                }
            }
            Op::Hold { job } => {
                self.jobs.get_mut(job).expect("validated job").phase = JobPhase::Held
            }
            Op::Release { job } => {
                self.jobs.get_mut(job).expect("validated job").phase = JobPhase::Pending
            }
            Op::Cancel { job } => {
                self.jobs.remove(job);
            }
            Op::Start { job, tres } => {
                let entry = &self.jobs[job];
                let allocated = tres
                    .clone()
                    .or_else(|| entry.spec.tres.clone())
                    .unwrap_or_default();
                let rate = fixed_rate(self.billable_rate(&entry.spec, &allocated));
                let node = self.assoc_id(&entry.account, Some(&entry.user));
                self.jobs.get_mut(job).expect("validated job").phase =
                    JobPhase::Running { since: t, rate };
                self.running.insert((node, job.clone()));
                self.dirty.insert(node);
            }
            Op::End { job } => {
                self.stop_accrual(job, t);
                self.jobs.remove(job);
            }
            Op::Requeue { job } => {
                self.stop_accrual(job, t);
                self.jobs.get_mut(job).expect("validated job").phase = JobPhase::Pending;
            }
            Op::Config { set } => {
                let next = self.config.patched(set).expect("validated config");
                let old_half_life = self.config.decay_half_life_secs;
                let old_period = self.config.usage_reset_period;
                let old_calc_period = self.config.calc_period_secs;
                self.config = next;
                if self.config.decay_half_life_secs != old_half_life {
                    // Continuous accrual so far decayed at the old half-life:
                    // settle it in the old frame before the re-base (with a
                    // calc period, accrual since the last boundary is charged
                    // at the new half-life).
                    if old_calc_period <= 0 {
                        self.settle_accrual_to(t);
                    }
                    self.rebase(DecayFrame::new(self.config.decay_half_life_secs, t), t);
                }
                if self.config.calc_period_secs != old_calc_period {
                    // Visibility of accrual changes for every running job.
                    self.all_dirty = true;
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
                name, usage_factor, ..
            } => {
                let entry = self.qos_usage_factor.entry(name.clone()).or_insert(1.0);
                if let Some(f) = usage_factor {
                    *entry = *f;
                }
            }
            Op::Partition {
                name,
                tres_billing_weights,
                ..
            } => {
                let entry = self.partition_weights.entry(name.clone()).or_default();
                if let Some(w) = tres_billing_weights {
                    *entry = w.clone();
                }
            }
            Op::Cluster { .. } | Op::Tick => {}
        }
        self.now = t;
    }

    /// A removed association's settled usage stays with its parent account.
    fn absorb_into_parent(&mut self, id: NodeId) {
        let record = &mut self.nodes[id as usize];
        record.alive = false;
        let settled = std::mem::take(&mut record.settled);
        let parent = record.parent.expect("root is never removed");
        let parent_settled = &mut self.nodes[parent as usize].settled;
        *parent_settled = parent_settled.saturating_add(settled);
        self.dirty.insert(id);
        self.dirty.insert(parent);
    }

    /// An association's own usage as visible at `now`, in frame units.
    pub fn visible_usage(&self, id: NodeId) -> FrameUsage {
        let node = &self.nodes[id as usize];
        if !node.alive {
            return 0;
        }
        let mut usage = node.settled;
        if self.config.calc_period_secs <= 0 {
            let now_clock = self.frame.clock(self.now);
            let lower = (id, String::new());
            for (_, job_id) in self.running.range(lower..).take_while(|(n, _)| *n == id) {
                if let JobPhase::Running { since, rate } = self.jobs[job_id].phase {
                    let accrued = rate.saturating_mul(now_clock - self.frame.clock(since));
                    usage = usage.saturating_add(accrued);
                }
            }
        }
        usage
    }

    /// The input deltas that bring the dataflow from what was last sent to
    /// the ledger's current state, for every association touched since.
    pub fn take_deltas(&mut self) -> Deltas {
        let dirty: Vec<NodeId> = if std::mem::take(&mut self.all_dirty) {
            self.dirty.clear();
            (0..self.nodes.len())
                .map(|i| NodeId::try_from(i).expect("fits"))
                .collect()
        } else {
            std::mem::take(&mut self.dirty).into_iter().collect()
        };
        let mut deltas = std::mem::take(&mut self.retractions);
        for id in dirty {
            let node = &self.nodes[id as usize];
            let now = Sent {
                alive: node.alive,
                parent: node.parent.filter(|_| node.alive),
                shares: Some(node.shares).filter(|_| node.alive),
                usage: self.visible_usage(id),
            };
            let before = self.sent[id as usize];
            if let (true, Some(user)) = (before.alive != now.alive, &node.user) {
                let diff = if now.alive { 1 } else { -1 };
                deltas.users.push((id, diff));
                let name = (node.account.clone(), user.clone());
                deltas.user_names.push(((id, name), diff));
            }
            if before.parent != now.parent {
                if let Some(p) = before.parent {
                    deltas.edges.push(((id, p), -1));
                }
                if let Some(p) = now.parent {
                    deltas.edges.push(((id, p), 1));
                }
            }
            if before.shares != now.shares {
                if let Some(s) = before.shares {
                    deltas.shares.push(((id, s), -1));
                }
                if let Some(s) = now.shares {
                    deltas.shares.push(((id, s), 1));
                }
            }
            if before.usage != now.usage {
                // Saturating: absurd amounts (beyond 2^127 frame units) must
                // not panic; the validator does not bound `amount`.
                let as_diff = |usage: FrameUsage| i128::try_from(usage).unwrap_or(i128::MAX);
                let change = as_diff(now.usage).saturating_sub(as_diff(before.usage));
                deltas.usage.push((id, change));
            }
            self.sent[id as usize] = now;
        }
        let fs_params = FsParams::from_config(&self.config);
        if self.sent_fs_params != Some(fs_params) {
            if let Some(old) = self.sent_fs_params.replace(fs_params) {
                deltas.fs_params.push((old, -1));
            }
            deltas.fs_params.push((fs_params, 1));
        }
        deltas
    }
}

impl Ledger {
    /// Take over the dataflow inputs `previous` fed: the next
    /// [`Ledger::take_deltas`] retracts every record `previous` sent and
    /// sends every record of this ledger, as one batch (a restore; node ids
    /// of the two ledgers need not agree). `previous` is left having sent
    /// nothing.
    pub fn resend_replacing(&mut self, previous: &mut Ledger) {
        let mut retractions = std::mem::take(&mut previous.retractions);
        for (id, sent) in std::mem::take(&mut previous.sent).into_iter().enumerate() {
            let id = NodeId::try_from(id).expect("fewer than 2^32 associations");
            let node = &previous.nodes[id as usize];
            if let (true, Some(user)) = (sent.alive, &node.user) {
                retractions.users.push((id, -1));
                let name = (node.account.clone(), user.clone());
                retractions.user_names.push(((id, name), -1));
            }
            if let Some(p) = sent.parent {
                retractions.edges.push(((id, p), -1));
            }
            if let Some(s) = sent.shares {
                retractions.shares.push(((id, s), -1));
            }
            if sent.usage != 0 {
                let usage = i128::try_from(sent.usage).unwrap_or(i128::MAX);
                retractions.usage.push((id, -usage));
            }
        }
        if let Some(params) = previous.sent_fs_params.take() {
            retractions.fs_params.push((params, -1));
        }
        previous.sent = vec![Sent::default(); previous.nodes.len()];
        previous.dirty.clear();
        previous.all_dirty = true;
        self.retractions = retractions;
        self.sent = vec![Sent::default(); self.nodes.len()];
        self.sent_fs_params = None;
        self.dirty.clear();
        self.all_dirty = true;
    }

    /// Is this ledger internally consistent (every id it names exists, every
    /// running job is a running job of a live association)? A deserialised
    /// ledger is checked before use, so that a damaged snapshot is refused
    /// instead of panicking later.
    pub fn check_consistent(&self) -> Result<(), String> {
        let count = self.nodes.len();
        let known = |id: NodeId| (id as usize) < count;
        if count == 0 || self.nodes[ROOT as usize].parent.is_some() {
            return Err("the ledger has no root".into());
        }
        for (i, node) in self.nodes.iter().enumerate().skip(1) {
            match node.parent {
                Some(p) if known(p) && (p as usize) != i => {}
                _ => return Err(format!("association {i} has no valid parent")),
            }
            // Every association reaches root (no cycle): at most `count` steps up.
            let mut at = i;
            let mut steps = 0;
            while let Some(parent) = self.nodes[at].parent {
                at = parent as usize;
                steps += 1;
                if steps > count {
                    return Err(format!("association {i} is in a cycle"));
                }
            }
        }
        for (name, &id) in &self.accounts {
            if !known(id) || self.nodes[id as usize].user.is_some() {
                return Err(format!("account {name} names a bad id {id}"));
            }
        }
        for ((account, user), &id) in &self.users {
            if !known(id) || self.nodes[id as usize].user.as_deref() != Some(user.as_str()) {
                return Err(format!("association {account}/{user} names a bad id {id}"));
            }
        }
        for job in self.jobs.values() {
            if !self
                .users
                .contains_key(&(job.account.clone(), job.user.clone()))
            {
                return Err(format!(
                    "a job of {}/{} has no association",
                    job.account, job.user
                ));
            }
        }
        for (node, job) in &self.running {
            let running = self
                .jobs
                .get(job)
                .is_some_and(|j| matches!(j.phase, JobPhase::Running { .. }));
            if !known(*node) || !running {
                return Err(format!("running job {job} is not running"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_usage_event_becomes_one_usage_delta() {
        let mut ledger = Ledger::new(Config {
            decay_half_life_secs: 0,
            ..Config::default()
        });
        let first = ledger.take_deltas();
        assert_eq!(first.shares, vec![((ROOT, Shares::Value(1)), 1)]);
        let event = |op| Event { t: 10, op };
        ledger.apply(&event(Op::Account {
            name: "a".into(),
            parent: None,
            shares: Some(Shares::Value(5)),
            priority: None,
        }));
        ledger.apply(&event(Op::Usage {
            account: "a".into(),
            user: None,
            amount: 3.0,
        }));
        let deltas = ledger.take_deltas();
        assert_eq!(deltas.edges, vec![((1, ROOT), 1)]);
        assert_eq!(deltas.shares, vec![((1, Shares::Value(5)), 1)]);
        // No decay: 3 TRES-seconds are 3 * 2^20 frame units.
        assert_eq!(deltas.usage, vec![(1, 3 << 20)]);
        assert!(ledger.take_deltas().is_empty());
    }
}
