//! One book of what happened: the cluster's [`State`] (the association tree,
//! shares, each association's own usage in exact frame units, jobs, QOS,
//! partitions, the cluster, Moab's credential usage) together with the rules
//! that decide which events are possible ([`Book::check`], in `check`).
//! [`Book::apply`] checks an event and applies it; a rejected event changes
//! nothing.
//!
//! Both engines read this one book. The oracle aggregates over it from
//! scratch; the incremental engine's driver asks it what a batch changed
//! ([`Book::take_changes`], [`Changes`]) and keeps only its interning and
//! what it has sent to the dataflow.
//!
//! **Architecture invariant:** every rule about events lives here once (the
//! checks in `check`, the effects in [`State::apply`]); no engine applies an
//! event itself. The book's derived indexes (child-account and running-job
//! counts) are rebuilt from the state on restore, so a snapshot is just the
//! state and the last event's time.

#![warn(missing_docs)]

mod changes;
mod check;
pub mod flux_bins;
pub mod name_map;
mod restore_error;
mod rules;
mod share_trial;
mod sluids;
pub mod snapshot;
pub mod state;

use std::collections::BTreeMap;

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use fairflow_ingest::{LogLine, Rejection};
use fairflow_model::event::Op;
use fairflow_model::{Config, Event, Sluid, Time};

use crate::check::Resolved;
use crate::sluids::SluidIndex;

pub use changes::{AssocKey, Changes};
pub use name_map::NameMap;
pub use restore_error::RestoreError;
pub use share_trial::ShareTrial;
pub use state::{Job, JobPhase, State};

/// Where a job is in its life, as the checks see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Waiting in the queue.
    Pending,
    /// In the queue, held.
    Held,
    /// Running.
    Running,
}

impl Phase {
    /// The phase of `job`.
    fn of(job: &Job) -> Phase {
        match job.phase {
            JobPhase::Pending => Phase::Pending,
            JobPhase::Held => Phase::Held,
            JobPhase::Running { .. } => Phase::Running,
        }
    }
}

/// The book; see the crate documentation. Two books are equal when they
/// hold the same state (whatever their [`Checked`] versions).
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(try_from = "BookParts")]
pub struct Book {
    state: State,
    /// The time of the last accepted event (`None` before the first).
    last_event_at: Option<Time>,
    /// Accounts with child accounts, and how many.
    child_accounts: BTreeMap<String, u32>,
    /// User associations with running jobs, and how many.
    running: BTreeMap<(String, String), u32>,
    /// The user associations, by account: how many an account has
    /// ([`Book::users_in`]), and [`Book::has_assoc`] (which the check of
    /// every usage event and job asks) without building an owned key.
    users_by_account: HashMap<String, HashSet<String>>,
    /// Which active job each SLUID names (`sluids`).
    sluids: SluidIndex,
    /// What changed since the last [`Book::take_changes`], when tracked.
    changes: Option<Changes>,
    /// Counts the changes to the state (events and time), so that a
    /// [`Checked`] token is known to be current.
    version: u64,
}

impl PartialEq for Book {
    fn eq(&self, other: &Book) -> bool {
        self.state == other.state
            && self.last_event_at == other.last_event_at
            && self.child_accounts == other.child_accounts
            && self.running == other.running
            && self.users_by_account == other.users_by_account
            && self.changes == other.changes
    }
}

/// An event [`Book::check`] found possible, for [`Book::apply_checked`]:
/// valid while the book's state is the one it was checked against. It holds
/// what the check resolved for the apply (`check::Resolved`).
#[derive(Debug, Clone, PartialEq)]
#[must_use = "apply the event with Book::apply_checked"]
pub struct Checked {
    version: u64,
    resolved: Resolved,
}

/// What a book serialises: the state and the last event's time; the indexes
/// are derived again (and the state checked) when it is read back.
#[derive(serde::Deserialize)]
struct BookParts {
    state: State,
    last_event_at: Option<Time>,
}

/// [`BookParts`] by reference (serialising a book copies nothing).
#[derive(serde::Serialize)]
struct BookPartsRef<'a> {
    state: &'a State,
    last_event_at: Option<Time>,
}

impl serde::Serialize for Book {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        BookPartsRef {
            state: &self.state,
            last_event_at: self.last_event_at,
        }
        .serialize(serializer)
    }
}

impl TryFrom<BookParts> for Book {
    type Error = RestoreError;

    fn try_from(parts: BookParts) -> Result<Self, RestoreError> {
        Book::from_state(parts.state, parts.last_event_at)
    }
}

impl Default for Book {
    fn default() -> Self {
        Book::new(Config::default())
    }
}

/// The effects of one event on the book's time-driven state, to tell what
/// time passing changed.
#[derive(PartialEq)]
struct Clockwork {
    frame: fairflow_model::usage::DecayFrame,
    next_reset: Option<Time>,
    last_reset_at: Option<Time>,
    accrual_settled_to: Time,
    now: Time,
    flux_period_end: Option<Time>,
}

impl Book {
    /// A book holding only `root`, under `config` (the configuration in force
    /// before the first event), at time 0.
    pub fn new(config: Config) -> Self {
        Book {
            state: State::new(config),
            last_event_at: None,
            child_accounts: BTreeMap::new(),
            running: BTreeMap::new(),
            users_by_account: HashMap::default(),
            sluids: SluidIndex::default(),
            changes: None,
            version: 0,
        }
    }

    /// A book over an existing state (a restore): the state is checked (every
    /// parent exists, the tree has no cycle, every job's association exists)
    /// and the indexes are derived from it.
    pub fn from_state(state: State, last_event_at: Option<Time>) -> Result<Book, RestoreError> {
        match state.accounts.get("root") {
            Some(root) if root.parent.is_none() => {}
            _ => return Err(RestoreError::NoRoot),
        }
        let mut child_accounts: BTreeMap<String, u32> = BTreeMap::new();
        for (name, account) in &state.accounts {
            if name == "root" {
                continue;
            }
            let Some(parent) = account.parent.as_deref() else {
                return Err(RestoreError::NoParent(name.clone()));
            };
            if !state.accounts.contains_key(parent) {
                return Err(RestoreError::UnknownParent {
                    account: name.clone(),
                    parent: parent.to_string(),
                });
            }
            *child_accounts.entry(parent.to_string()).or_default() += 1;
        }
        // Every account reaches root in fewer steps than there are accounts.
        let mut reaches_root: BTreeMap<&str, bool> = BTreeMap::new();
        reaches_root.insert("root", true);
        for name in state.accounts.keys() {
            let mut chain = Vec::new();
            let mut current = name.as_str();
            loop {
                if reaches_root.contains_key(current) {
                    break;
                }
                if chain.len() > state.accounts.len() {
                    return Err(RestoreError::Cycle(name.clone()));
                }
                chain.push(current);
                current = state.accounts[current].parent.as_deref().expect("checked");
            }
            reaches_root.extend(chain.into_iter().map(|c| (c, true)));
        }
        let mut users_by_account: HashMap<String, HashSet<String>> = HashMap::default();
        for (account, user) in state.users.keys() {
            if !state.accounts.contains_key(account) {
                return Err(RestoreError::AssocOfUnknownAccount(account.clone()));
            }
            users_by_account
                .entry(account.clone())
                .or_default()
                .insert(user.clone());
        }
        let mut running: BTreeMap<(String, String), u32> = BTreeMap::new();
        for (id, job) in &state.jobs {
            let key = (job.account.clone(), job.user.clone());
            if !state.users.contains_key(&key) {
                return Err(RestoreError::JobOfUnknownAssoc(id.clone()));
            }
            if job.id != *id {
                return Err(RestoreError::JobMisfiled(id.clone()));
            }
            if matches!(job.phase, JobPhase::Running { .. }) {
                *running.entry(key).or_default() += 1;
            }
        }
        let sluids = SluidIndex::of(&state.jobs)?;
        Ok(Book {
            state,
            last_event_at,
            child_accounts,
            running,
            users_by_account,
            sluids,
            changes: None,
            version: 0,
        })
    }

    /// The state.
    pub fn state(&self) -> &State {
        &self.state
    }

    /// The id of the job a user named by `key`: `key` itself when an active
    /// job has that id (an id that reads as a SLUID stays its job's), else
    /// the job whose SLUID `key` is (in any case Slurm reads), else `key`
    /// (which then names no job).
    pub fn resolve_job<'a>(&'a self, key: &'a str) -> &'a str {
        if self.sluids_held() && !self.state.jobs.contains_key(key) {
            if let Some(id) = Sluid::parse(key).ok().and_then(|s| self.sluids.job(s)) {
                return id;
            }
        }
        key
    }

    /// The active job holding `sluid`, if any.
    pub fn job_of_sluid(&self, sluid: Sluid) -> Option<&str> {
        self.sluids.job(sluid)
    }

    /// The SLUID of the active job `id`, if it has one.
    pub fn sluid_of(&self, id: &str) -> Option<Sluid> {
        self.state.jobs.get(id).and_then(|job| job.spec.sluid)
    }

    /// Every (SLUID, job) of the active jobs, in SLUID order.
    pub fn sluids(&self) -> impl Iterator<Item = (Sluid, &str)> {
        self.sluids.iter()
    }

    /// Give jobs their SLUIDs (a restore: the snapshot carries them after
    /// the book), replacing any they had; an unknown job or a SLUID given
    /// twice is an error and changes nothing.
    pub fn set_sluids(&mut self, sluids: Vec<(Sluid, String)>) -> Result<(), RestoreError> {
        let mut jobs = self.state.jobs.clone();
        for (_, id) in self.sluids.iter() {
            if let Some(job) = jobs.get_mut(id) {
                std::sync::Arc::make_mut(job).spec.sluid = None;
            }
        }
        for (sluid, id) in sluids {
            let Some(job) = jobs.get_mut(&id) else {
                return Err(RestoreError::SluidOfInactiveJob { sluid, job: id });
            };
            std::sync::Arc::make_mut(job).spec.sluid = Some(sluid);
        }
        self.sluids = SluidIndex::of(&jobs)?;
        self.state.jobs = jobs;
        Ok(())
    }

    /// The active jobs' SLUIDs, by job id.
    pub fn sluids_by_job(&self) -> BTreeMap<String, Sluid> {
        (self.sluids.iter())
            .map(|(sluid, job)| (job.to_string(), sluid))
            .collect()
    }

    /// Does any active job hold a SLUID?
    pub fn sluids_held(&self) -> bool {
        !self.sluids.is_empty()
    }

    /// Convert a book read from a format-2 snapshot to this build's frame
    /// units (`State::convert_binary_frame_units`).
    pub(crate) fn convert_binary_frame_units(&mut self) {
        self.state.convert_binary_frame_units();
    }

    /// Give the partitions their `PriorityTier`s as a snapshot stores them
    /// (every job's list already in their order); a tier of an undefined
    /// partition is an error.
    pub(crate) fn set_partition_tiers(
        &mut self,
        tiers: BTreeMap<String, u16>,
    ) -> Result<(), RestoreError> {
        for (name, tier) in tiers {
            let Some(partition) = self.state.partitions.get_mut(&name) else {
                return Err(RestoreError::TierOfUndefinedPartition(name));
            };
            partition.priority_tier = tier;
        }
        Ok(())
    }

    /// Restore `INCR_ONLY`'s pair floors (a snapshot's): each for a known job.
    pub(crate) fn set_pair_floors(
        &mut self,
        pair_floors: BTreeMap<String, Vec<u64>>,
    ) -> Result<(), RestoreError> {
        if let Some(job) = pair_floors
            .keys()
            .find(|job| !self.state.jobs.contains_key(*job))
        {
            return Err(RestoreError::PairFloorsOfInactiveJob(job.clone()));
        }
        self.state.pair_floor = pair_floors;
        Ok(())
    }

    /// Restore the jobs marked for expedited requeue (a snapshot's; not in
    /// the serialised state): each must be an active job.
    pub(crate) fn set_expedited(
        &mut self,
        expedited: std::collections::BTreeSet<String>,
    ) -> Result<(), RestoreError> {
        if let Some(job) = expedited
            .iter()
            .find(|job| !self.state.jobs.contains_key(*job))
        {
            return Err(RestoreError::ExpeditedInactiveJob(job.clone()));
        }
        self.state.expedited = expedited;
        Ok(())
    }

    /// Restore the usage model (a snapshot's; not in the serialised
    /// configuration).
    pub(crate) fn set_usage_model(
        &mut self,
        usage_model: fairflow_model::config::UsageModel,
        flux_usage: fairflow_model::config::FluxUsageWeights,
    ) {
        self.state.config.usage_model = usage_model;
        self.state.config.flux_usage = flux_usage;
    }

    /// Restore flux-accounting's bin parameters and the bins (a snapshot's;
    /// not in the serialised state). A book under `UsageModel=flux` without
    /// bins (format 5) has its usage put in bin 0 as of its time; bins of an
    /// association that does not exist, or under Slurm's usage model, are an error.
    pub(crate) fn set_flux_bins(
        &mut self,
        config: fairflow_model::config::FluxUsageBins,
        bins: Option<flux_bins::FluxBins>,
    ) -> Result<(), RestoreError> {
        use fairflow_model::config::UsageModel;
        self.state.config.flux_bins = config;
        match (self.state.config.usage_model, bins) {
            (UsageModel::Slurm, None) => Ok(()),
            (UsageModel::Slurm, Some(_)) => Err(RestoreError::BinsUnderSlurmUsage),
            (UsageModel::Flux, None) => {
                let now = self.state.now;
                self.state.enter_flux_usage(now);
                Ok(())
            }
            (UsageModel::Flux, Some(bins)) => {
                if let Some((account, user)) = bins.bins.keys().find(|(account, user)| match user {
                    None => !self.state.accounts.contains_key(account),
                    Some(user) => !self.has_assoc(account, user),
                }) {
                    return Err(RestoreError::BinsOfUnknownAssoc {
                        account: account.clone(),
                        user: user.clone().unwrap_or_default(),
                    });
                }
                self.state.flux_bins = Some(bins);
                Ok(())
            }
        }
    }

    /// `INCR_ONLY`: remember a pending job's pair priorities evaluated now
    /// (`State::remember_pair_priorities`); the other part of the state an
    /// engine writes itself.
    pub fn remember_pair_priorities(&mut self, job: &str, priorities: &[u64]) {
        self.state.remember_pair_priorities(job, priorities);
    }

    /// `INCR_ONLY`: forget the pair floors of jobs no longer queued.
    pub fn forget_pair_floors_of_unqueued_jobs(&mut self) {
        self.state.forget_pair_floors_of_unqueued_jobs();
    }

    /// The `INCR_ONLY` memory (the oracle's remembered priorities), the one
    /// part of the state an engine writes itself.
    pub fn priority_floor_mut(&mut self) -> &mut BTreeMap<String, u64> {
        &mut self.state.priority_floor
    }

    /// The time of the last accepted event (`None` before the first).
    pub fn last_event_at(&self) -> Option<Time> {
        self.last_event_at
    }

    /// The phase of an active job.
    pub fn job_phase(&self, job: &str) -> Option<Phase> {
        self.state.jobs.get(job).map(|j| Phase::of(j))
    }

    /// Does this user association exist?
    pub fn has_assoc(&self, account: &str, user: &str) -> bool {
        self.users_by_account
            .get(account)
            .is_some_and(|users| users.contains(user))
    }

    /// How many child accounts `account` has.
    pub fn child_accounts(&self, account: &str) -> u32 {
        self.child_accounts.get(account).copied().unwrap_or(0)
    }

    /// How many user associations `account` has.
    pub fn users_in(&self, account: &str) -> usize {
        self.users_by_account.get(account).map_or(0, HashSet::len)
    }

    /// How many running jobs a user association has.
    pub fn running_jobs_of(&self, account: &str, user: &str) -> u32 {
        self.running
            .get(&(account.to_string(), user.to_string()))
            .copied()
            .unwrap_or(0)
    }

    /// The user associations with running jobs.
    pub fn running_assocs(&self) -> impl Iterator<Item = &(String, String)> {
        self.running.keys()
    }

    /// Start (or stop) recording what changes, for [`Book::take_changes`].
    pub fn track_changes(&mut self, on: bool) {
        self.changes = on.then(Changes::everything);
    }

    /// What changed since the last call (everything, the first time after
    /// tracking started); empty when changes are not tracked.
    pub fn take_changes(&mut self) -> Changes {
        match &mut self.changes {
            Some(changes) => std::mem::take(changes),
            None => Changes::default(),
        }
    }

    /// Check `event` and apply it, or reject it changing nothing.
    pub fn apply(&mut self, line: u64, event: &Event) -> Result<(), Rejection> {
        let checked = self.check(line, event)?;
        self.apply_checked(line, event, checked)
    }

    /// Apply `event`, which [`Book::check`] accepted (`checked`): checked
    /// again only if the book changed since.
    pub fn apply_checked(
        &mut self,
        line: u64,
        event: &Event,
        checked: Checked,
    ) -> Result<(), Rejection> {
        let resolved = if checked.version == self.version {
            checked.resolved
        } else {
            self.check_rules(line, event)?
        };
        self.apply_effects(event, resolved);
        self.version += 1;
        Ok(())
    }

    /// Check and apply one line of a log (a line that did not parse is
    /// rejected as it is).
    pub fn apply_line(&mut self, line: LogLine) -> Result<Event, Rejection> {
        let event = line.event?;
        self.apply(line.line, &event)?;
        Ok(event)
    }

    /// Move time forward to `t` without an event (a query's `--at`): usage
    /// resets, re-bases and calc-period settlements that fall due apply.
    /// Earlier times change nothing.
    pub fn advance_to(&mut self, t: Time) {
        self.version += 1;
        let before = self.clockwork();
        self.state.advance_to(t);
        self.note_time(&before);
    }

    fn clockwork(&self) -> Clockwork {
        Clockwork {
            frame: self.state.frame,
            next_reset: self.state.next_reset,
            last_reset_at: self.state.last_reset_at,
            accrual_settled_to: self.state.accrual_settled_to,
            now: self.state.now,
            flux_period_end: self.state.flux_bins.as_ref().and_then(|b| b.period_end),
        }
    }

    /// Record what time passing changed: a reset or re-base moves every
    /// association's usage; a settlement or (with continuous accrual) any
    /// time passing moves the usage of every association with running jobs.
    fn note_time(&mut self, before: &Clockwork) {
        let Some(changes) = &mut self.changes else {
            return;
        };
        let state = &self.state;
        if state.frame != before.frame
            || state.next_reset != before.next_reset
            || state.last_reset_at != before.last_reset_at
            || state.flux_bins.as_ref().and_then(|b| b.period_end) != before.flux_period_end
        {
            changes.all_assocs = true;
        }
        let settled = state.accrual_settled_to != before.accrual_settled_to;
        let accruing = state.now > before.now && state.config.calc_period_secs <= 0;
        if settled || accruing {
            changes
                .assocs
                .extend(self.running.keys().map(|(a, u)| AssocKey::user(a, u)));
        }
    }

    /// Apply an event [`Book::check`] accepted, with what it `resolved`.
    fn apply_effects(&mut self, event: &Event, resolved: Resolved) {
        // What the indexes and the change record need from before the event.
        let before = self.clockwork();
        let account_before = match &event.op {
            Op::Account { name, .. } => self
                .state
                .accounts
                .get(name)
                .map(|a| (a.parent.clone(), a.priority)),
            _ => None,
        };
        let assoc_of_job = match &resolved {
            Resolved::JobAssoc { account, user } => Some((account.clone(), user.clone())),
            _ => None,
        };
        let sluids_before = self.sluids.before(&self.state, &event.op);
        // Only the change record needs the removed jobs' ids (a scan of the jobs).
        let removed_jobs: Vec<String> = match &event.op {
            Op::RemoveUser { user, account } if self.changes.is_some() => self
                .state
                .jobs
                .values()
                .filter(|j| j.account == *account && j.user == *user)
                .map(|j| j.id.clone())
                .collect(),
            _ => Vec::new(),
        };
        let removed_parent = match &resolved {
            Resolved::RemoveAccount { parent } => Some(parent.clone()),
            _ => None,
        };

        // The state first advances to the event's time, then applies it.
        self.state.advance_to(event.t);
        self.note_time(&before);
        let time_before = self.clockwork();
        self.state.apply(event, resolved);
        self.last_event_at = Some(event.t);

        self.update_indexes(
            &event.op,
            account_before.as_ref(),
            assoc_of_job.as_ref(),
            removed_parent.as_ref(),
        );
        self.sluids.after(&self.state, &event.op, sluids_before);

        // The change record.
        let Some(changes) = &mut self.changes else {
            return;
        };
        // A config event can settle, re-base or reset inside `apply`.
        if self.state.frame != time_before.frame
            || self.state.last_reset_at != time_before.last_reset_at
            || self.state.accrual_settled_to != time_before.accrual_settled_to
        {
            changes.all_assocs = true;
        }
        changes.note(
            &event.op,
            &self.state,
            account_before,
            assoc_of_job,
            removed_jobs,
            removed_parent,
        );
    }

    /// Keep the book's indexes (child accounts, users by account, running
    /// jobs by association) after `op` was applied, from what was read
    /// before it: the account's parent and priority, the association of the
    /// job it names, the removed account's parent.
    fn update_indexes(
        &mut self,
        op: &Op,
        account_before: Option<&(Option<String>, Option<i64>)>,
        assoc_of_job: Option<&(String, String)>,
        removed_parent: Option<&String>,
    ) {
        match op {
            Op::Account { name, .. } => {
                let old_parent = account_before.and_then(|(p, _)| p.clone());
                let new_parent = self.state.accounts[name].parent.clone();
                if account_before.is_none() || old_parent != new_parent {
                    if let Some(old) = old_parent.filter(|_| account_before.is_some()) {
                        self.uncount_child(&old);
                    }
                    if let Some(new) = new_parent {
                        *self.child_accounts.entry(new).or_default() += 1;
                    }
                }
            }
            Op::RemoveAccount { .. } => {
                if let Some(parent) = removed_parent {
                    self.uncount_child(parent);
                }
            }
            Op::User { user, account, .. } if !self.has_assoc(account, user) => {
                self.users_by_account
                    .entry(account.clone())
                    .or_default()
                    .insert(user.clone());
            }
            Op::RemoveUser { user, account } => {
                if let Some(users) = self.users_by_account.get_mut(account) {
                    users.remove(user);
                    if users.is_empty() {
                        self.users_by_account.remove(account);
                    }
                }
            }
            Op::Start { .. } => {
                if let Some(key) = assoc_of_job {
                    *self.running.entry(key.clone()).or_default() += 1;
                }
            }
            Op::End { .. } | Op::Requeue { .. } => {
                let Some(key) = assoc_of_job else { return };
                if let Some(count) = self.running.get_mut(key) {
                    *count -= 1;
                    if *count == 0 {
                        self.running.remove(key);
                    }
                }
            }
            _ => {}
        }
    }

    fn uncount_child(&mut self, parent: &str) {
        if let Some(count) = self.child_accounts.get_mut(parent) {
            *count -= 1;
            if *count == 0 {
                self.child_accounts.remove(parent);
            }
        }
    }
}
