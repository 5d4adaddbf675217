//! The driver's job-priority bookkeeping (integration note of [`crate::priority`],
//! steps 2 and 3): each job's last sent [`JobRow`], the [`Crossings`] of
//! begin times and age caps, and the last sent priority [`PFact`]s, from which
//! each batch sends only differences.
//!
//! The job attributes (queue entry time, held spans, starts, allocated TRES,
//! wallclock accuracy, Moab credential usage) follow the oracle's job semantics
//! exactly by applying every accepted event to a `fairflow_oracle::State`,
//! kept here as the job book: one semantics, not two. The fair-share factors
//! are *not* the oracle's: the engine passes the core's `user_factors`.
//!
//! Costs: per batch, only the jobs an event named (submit, update, hold,
//! release, cancel, start, end, requeue) and the jobs whose crossing is due
//! are re-derived and compared with what was sent; a `config` event or an
//! association's removal re-derives every job (crossings and rows move).
//! The facts are grouped by [`Subject`] (the configuration, the cluster, one
//! account, one user association, one QOS, one partition, Moab's usage
//! facts); an event marks the subjects it can change, and only those are
//! re-derived and compared with what was sent. A change of an account's
//! priority or parent re-derives the effective association priority of its
//! subtree (found in one pass over the associations per batch, however many
//! accounts moved); a share change re-derives nothing but the account. Under
//! Moab the credential-usage facts are re-derived every batch
//! (`O(credentials)`). The fair-share factors are not facts sent from here:
//! the dataflow computes them ([`crate::factors`]).

use std::collections::{BTreeMap, BTreeSet};

use fairflow_model::event::Op;
use fairflow_model::{Config, Event, PriorityModel, Time};
use fairflow_oracle::priority::moab::credential_usage;
use fairflow_oracle::priority::slurm::assoc_priority;
use fairflow_oracle::state::JobPhase;
use fairflow_oracle::State;

use crate::priority::crossings::{age_capped_at, begun_at, next_crossing, Crossings};
use crate::priority::{tres_bits, Fact as PFact, JobRow, PartitionRec, Phase, PriorityParams};

/// Fair-share factors by `(account, user)`.
pub type UserFactors = BTreeMap<(String, String), f64>;

/// Input changes for the priority dataflow.
#[derive(Debug, Clone, Default)]
pub struct JobDeltas {
    /// Job row retractions (`-1`) and insertions (`+1`).
    pub jobs: Vec<(JobRow, isize)>,
    /// Fact retractions and insertions.
    pub facts: Vec<(PFact, isize)>,
}

impl JobDeltas {
    /// Records in the deltas.
    pub fn len(&self) -> usize {
        self.jobs.len() + self.facts.len()
    }

    /// Nothing to send?
    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty() && self.facts.is_empty()
    }
}

/// What a group of priority facts is about.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Subject {
    /// The priority configuration.
    Config,
    /// The cluster's size.
    Cluster,
    /// One account: its effective association priority and own priority.
    Account(String),
    /// One user association: its effective association priority.
    User(String, String),
    /// One QOS.
    Qos(String),
    /// One partition.
    Partition(String),
    /// Moab's credential usage and wallclock accuracy.
    Moab,
}

/// The job book and what was last sent to the priority inputs.
///
/// It serialises (for [`crate::Engine::snapshot`]) only the book: a
/// deserialised one has sent nothing and scheduled no crossing, so call
/// [`JobLedger::resend_replacing`] before its next send.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct JobLedger {
    state: State,
    #[serde(skip)]
    sent_jobs: BTreeMap<String, JobRow>,
    #[serde(skip)]
    sent_facts: BTreeMap<Subject, BTreeSet<PFact>>,
    /// Subjects to re-derive at the next send.
    #[serde(skip)]
    dirty_subjects: BTreeSet<Subject>,
    /// Accounts whose whole subtree's association priorities to re-derive.
    #[serde(skip)]
    dirty_subtrees: BTreeSet<String>,
    /// Re-derive every subject at the next send.
    #[serde(skip)]
    all_subjects_dirty: bool,
    #[serde(skip)]
    crossings: Crossings,
    /// Jobs to re-derive at the next send.
    #[serde(skip)]
    dirty: BTreeSet<String>,
    /// Re-derive every job at the next send.
    #[serde(skip)]
    all_dirty: bool,
}

impl JobLedger {
    /// An empty book under `config`.
    pub fn new(config: Config) -> Self {
        JobLedger {
            state: State::new(config),
            sent_jobs: BTreeMap::new(),
            sent_facts: BTreeMap::new(),
            dirty_subjects: BTreeSet::new(),
            dirty_subtrees: BTreeSet::new(),
            all_subjects_dirty: true,
            crossings: Crossings::new(),
            dirty: BTreeSet::new(),
            all_dirty: false,
        }
    }

    /// The book (the oracle's state of jobs, QOS, partitions, associations).
    pub fn state(&self) -> &State {
        &self.state
    }

    /// Apply one accepted event.
    pub fn apply(&mut self, event: &Event) {
        let account_before = match &event.op {
            Op::Account { name, .. } => self
                .state
                .accounts
                .get(name)
                .map(|a| (a.parent.clone(), a.priority)),
            _ => None,
        };
        self.state.apply(event);
        self.mark_subjects(&event.op, account_before);
        match &event.op {
            Op::Submit { job, .. }
            | Op::Update { job, .. }
            | Op::Hold { job }
            | Op::Release { job }
            | Op::Cancel { job }
            | Op::Start { job, .. }
            | Op::End { job }
            | Op::Requeue { job } => {
                self.dirty.insert(job.clone());
            }
            Op::Config { .. } | Op::RemoveUser { .. } => self.all_dirty = true,
            _ => {}
        }
    }

    /// Mark the fact subjects `op` can change; `account_before` is an
    /// account event's `(parent, priority)` before it applied.
    fn mark_subjects(&mut self, op: &Op, account_before: Option<(Option<String>, Option<i64>)>) {
        match op {
            Op::Config { .. } | Op::RemoveAccount { .. } | Op::RemoveUser { .. } => {
                self.all_subjects_dirty = true;
            }
            Op::Cluster { .. } => {
                self.dirty_subjects.insert(Subject::Cluster);
            }
            Op::Account { name, .. } => {
                let after = self
                    .state
                    .accounts
                    .get(name)
                    .map(|a| (a.parent.clone(), a.priority));
                if account_before.is_some() && account_before != after {
                    self.dirty_subtrees.insert(name.clone());
                }
                self.dirty_subjects.insert(Subject::Account(name.clone()));
            }
            Op::User { account, user, .. } => {
                self.dirty_subjects
                    .insert(Subject::User(account.clone(), user.clone()));
            }
            Op::Qos { name, .. } => {
                self.dirty_subjects.insert(Subject::Qos(name.clone()));
            }
            Op::Partition { name, .. } => {
                self.dirty_subjects.insert(Subject::Partition(name.clone()));
            }
            _ => {}
        }
    }

    /// Take over the priority inputs `previous` fed (a restore): what it
    /// sent becomes what this book sent (rows and facts are keyed by names,
    /// not ids), every job is re-derived at the next send and its crossing
    /// scheduled afresh, so the next sends bring the inputs to this book.
    pub fn resend_replacing(&mut self, previous: &mut JobLedger) {
        self.sent_jobs = std::mem::take(&mut previous.sent_jobs);
        self.sent_facts = std::mem::take(&mut previous.sent_facts);
        self.crossings = Crossings::new();
        self.dirty.clear();
        self.all_dirty = true;
        self.all_subjects_dirty = true;
        previous.crossings = Crossings::new();
        previous.dirty.clear();
        previous.all_dirty = true;
        previous.all_subjects_dirty = true;
    }

    /// Move the book's time forward to `t` (a query's `--at`).
    pub fn advance_to(&mut self, t: Time) {
        self.state.advance_to(t);
    }

    /// The job rows' differences from what was sent, at the book's time.
    pub fn job_deltas(&mut self) -> Vec<(JobRow, isize)> {
        let now = self.state.now;
        let params = PriorityParams::from_config(&self.state.config);
        let mut ids = std::mem::take(&mut self.dirty);
        ids.extend(self.crossings.due(now));
        if std::mem::take(&mut self.all_dirty) {
            ids.extend(self.sent_jobs.keys().cloned());
            ids.extend(self.state.jobs.keys().cloned());
        }
        let mut deltas = Vec::new();
        for id in ids {
            let row = self.state.jobs.get(&id).map(|job| {
                let mut row = row_of(job);
                row.begun = begun_at(&row, now);
                row.age_capped = age_capped_at(&params, &row, now);
                row
            });
            let old = self.sent_jobs.get(&id);
            if old == row.as_ref() {
                if let Some(row) = &row {
                    self.crossings
                        .schedule(&id, next_crossing(&params, row, now));
                }
                continue;
            }
            if let Some(old) = self.sent_jobs.remove(&id) {
                deltas.push((old, -1));
            }
            match row {
                Some(row) => {
                    self.crossings
                        .schedule(&id, next_crossing(&params, &row, now));
                    deltas.push((row.clone(), 1));
                    self.sent_jobs.insert(id, row);
                }
                None => self.crossings.cancel(&id),
            }
        }
        deltas
    }

    /// The facts' differences from what was sent, for the subjects marked
    /// since the last send.
    pub fn fact_deltas(&mut self) -> Vec<(PFact, isize)> {
        let mut subjects = std::mem::take(&mut self.dirty_subjects);
        if std::mem::take(&mut self.all_subjects_dirty) {
            subjects.extend(self.sent_facts.keys().cloned());
            subjects.extend(all_subjects(&self.state));
        }
        let dirty_subtrees = std::mem::take(&mut self.dirty_subtrees);
        if !dirty_subtrees.is_empty() {
            subjects.extend(subtree_subjects(&self.state, &dirty_subtrees));
        }
        if self.state.config.model == PriorityModel::Moab {
            subjects.insert(Subject::Moab);
        }
        let mut deltas = Vec::new();
        for subject in subjects {
            let facts = subject_facts(&self.state, &subject);
            let sent = self.sent_facts.remove(&subject).unwrap_or_default();
            deltas.extend(sent.difference(&facts).map(|f| (f.clone(), -1)));
            deltas.extend(facts.difference(&sent).map(|f| (f.clone(), 1)));
            if !facts.is_empty() {
                self.sent_facts.insert(subject, facts);
            }
        }
        deltas
    }
}

/// Every subject `state` has facts about.
fn all_subjects(state: &State) -> Vec<Subject> {
    let mut subjects = vec![Subject::Config, Subject::Cluster, Subject::Moab];
    subjects.extend(state.accounts.keys().cloned().map(Subject::Account));
    subjects.extend(
        state
            .users
            .keys()
            .map(|(account, user)| Subject::User(account.clone(), user.clone())),
    );
    subjects.extend(state.qos.keys().cloned().map(Subject::Qos));
    subjects.extend(state.partitions.keys().cloned().map(Subject::Partition));
    subjects
}

/// The accounts and user associations at or below any of `roots` (one pass
/// over the associations, memoised up the account chains).
fn subtree_subjects(state: &State, roots: &BTreeSet<String>) -> Vec<Subject> {
    let mut below: BTreeMap<&str, bool> = roots.iter().map(|r| (r.as_str(), true)).collect();
    for name in state.accounts.keys() {
        let mut chain = Vec::new();
        let mut current = Some(name.as_str());
        let found = loop {
            let Some(account) = current else { break false };
            if let Some(&known) = below.get(account) {
                break known;
            }
            chain.push(account);
            current = state
                .accounts
                .get(account)
                .and_then(|a| a.parent.as_deref());
        };
        for account in chain {
            below.insert(account, found);
        }
    }
    let mut subjects: Vec<Subject> = below
        .iter()
        .filter(|(_, &inside)| inside)
        .map(|(name, _)| Subject::Account(name.to_string()))
        .collect();
    subjects.extend(
        state
            .users
            .keys()
            .filter(|(account, _)| below.get(account.as_str()).copied().unwrap_or(false))
            .map(|(account, user)| Subject::User(account.clone(), user.clone())),
    );
    subjects
}

/// The facts about one subject.
fn subject_facts(state: &State, subject: &Subject) -> BTreeSet<PFact> {
    let mut facts = BTreeSet::new();
    match subject {
        Subject::Config => {
            facts.insert(PFact::Config(PriorityParams::from_config(&state.config)));
        }
        Subject::Cluster => {
            facts.insert(PFact::Cluster {
                nodes: state.cluster.nodes,
                tres: tres_bits(&state.cluster.tres),
            });
        }
        Subject::Account(name) => {
            if let Some(account) = state.accounts.get(name) {
                facts.insert(PFact::AssocPriority {
                    account: name.clone(),
                    user: None,
                    priority: assoc_priority(state, name, None),
                });
                if let Some(priority) = account.priority {
                    facts.insert(PFact::AccountPriority {
                        account: name.clone(),
                        priority,
                    });
                }
            }
        }
        Subject::User(account, user) => {
            if state.users.contains_key(&(account.clone(), user.clone())) {
                facts.insert(PFact::AssocPriority {
                    account: account.clone(),
                    user: Some(user.clone()),
                    priority: assoc_priority(state, account, Some(user)),
                });
            }
        }
        Subject::Qos(name) => {
            if let Some(qos) = state.qos.get(name) {
                facts.insert(PFact::Qos {
                    name: name.clone(),
                    priority: qos.priority,
                });
            }
        }
        Subject::Partition(name) => {
            if let Some(p) = state.partitions.get(name) {
                facts.insert(PFact::Partition {
                    name: name.clone(),
                    rec: PartitionRec {
                        job_factor: p.priority_job_factor,
                        priority: p.priority,
                        max_time_secs: p.max_time_secs,
                        tres: p.tres.as_ref().map(tres_bits),
                    },
                });
            }
        }
        Subject::Moab => {
            if state.config.model == PriorityModel::Moab {
                let usage = credential_usage(state);
                facts.insert(PFact::MoabUsageTotal(usage.total));
                for ((kind, name), usage) in usage.by_credential {
                    facts.insert(PFact::MoabUsage { kind, name, usage });
                }
                for (user, (used, requested)) in &state.wallclock_accuracy {
                    facts.insert(PFact::WallclockAccuracy {
                        user: user.clone(),
                        used_bits: used.to_bits(),
                        requested_bits: requested.to_bits(),
                    });
                }
            }
        }
    }
    facts
}

/// Every priority fact of `state`, with `factors` as the user associations'
/// fair-share factors.
pub fn facts_of(state: &State, factors: &UserFactors) -> BTreeSet<PFact> {
    let mut facts: BTreeSet<PFact> = all_subjects(state)
        .iter()
        .flat_map(|subject| subject_facts(state, subject))
        .collect();
    for ((account, user), factor) in factors {
        facts.insert(PFact::Fairshare {
            account: account.clone(),
            user: user.clone(),
            factor_bits: factor.to_bits(),
        });
    }
    facts
}

/// A job's row with the driver-kept flags (`begun`, `age_capped`) unset.
pub fn row_of(job: &fairflow_oracle::state::Job) -> JobRow {
    let phase = match job.phase {
        JobPhase::Pending => Phase::Pending,
        JobPhase::Held => Phase::Held,
        JobPhase::Running { .. } => Phase::Running,
    };
    let tres = match (&job.phase, &job.allocated) {
        (JobPhase::Running { .. }, Some(allocated)) => allocated.clone(),
        _ => job.spec.tres.clone().unwrap_or_default(),
    };
    JobRow {
        id: job.id.clone(),
        user: job.user.clone(),
        account: job.account.clone(),
        partition: job.partition().to_string(),
        qos: job.qos().to_string(),
        phase,
        submit_at: job.submit_at,
        queued_at: job.queued_at,
        begin: job.spec.begin,
        begun: false,
        age_capped: false,
        start_count: job.start_count,
        tres: tres_bits(&tres),
        time_limit_secs: job.spec.time_limit_secs,
        nice: job.spec.nice,
        site_factor: job.spec.site_factor,
        urgency: job.spec.urgency,
        user_priority: job.spec.user_priority,
        group: job.spec.group.clone(),
        bypass_count: job.spec.bypass_count,
        deadline: job.spec.deadline,
        soft_policy_violation: job.spec.soft_policy_violation,
        attributes: job.spec.attributes.clone(),
        started_at: job.started_at,
        held_spans: job.held_spans.clone(),
        held_since: job.held_since,
    }
}
