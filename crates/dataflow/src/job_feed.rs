//! The driver's job feed (integration note of [`crate::priority`], steps 2
//! and 3): each job's last sent [`JobRow`], the [`Crossings`] of begin times
//! and age caps, and the last sent priority [`PFact`]s, from which each batch
//! sends only differences. The jobs, QOS, partitions and associations are
//! the book's (`fairflow_book::Book`): this feed reads them, it applies no
//! event itself. The fair-share factors are not facts sent from here: the
//! dataflow computes them ([`crate::factors`]).
//!
//! Costs: per batch, only the jobs the book says changed and the jobs whose
//! crossing is due are re-derived and compared with what was sent; a
//! `config` event re-derives every job (crossings and rows move). The facts
//! are grouped by [`Subject`] (the configuration, the cluster, one account,
//! one user association, one QOS, one partition, Moab's usage facts); only
//! the subjects a batch changed are re-derived and compared with what was
//! sent. A change of an account's priority or parent re-derives the
//! effective association priority of its subtree when the account's own
//! effective priority moved (an association inherits through the lowest
//! moved account on its chain; the subtrees are found in one pass over the
//! associations per batch, however many accounts moved); a share change
//! re-derives nothing but the account. Under Moab the credential-usage facts
//! are re-derived every batch (`O(credentials + running jobs)`).
//!
//! The two aggregations this feed needs are its own, written apart from the
//! oracle's: the effective association priority (the nearest priority up the
//! account chain) and Moab's credential usage.
//!
//! A job submitted to several partitions or several QOS is sent as one row,
//! its primary pair (under Slurm its highest-priority QOS, so a QOS change
//! re-derives the rows of the jobs with several QOS); [`identify`] adds the
//! other (partition, QOS) pairs to each result read, from the record's
//! evaluated factors.

use std::collections::{BTreeMap, BTreeSet};

use fairflow_book::{Changes, JobPhase, State};
use fairflow_model::event::is_list;
use fairflow_model::job_priority::{
    slurm_pair_factors_from_job, slurm_pair_priority, SlurmPairInputs, SlurmPairNorms,
    SlurmRawFactors, SlurmWeights,
};
use fairflow_model::priority_formula::FLUX_URGENCY_DEFAULT;
use fairflow_model::report::{JobPriority, PairPriority};
use fairflow_model::PriorityModel;

use crate::names::{JobIds, JobNames, Names};
use crate::priority::crossings::{age_capped_at, begun_at, next_crossing, Crossings};
use crate::priority::{
    tres_bits, AssocRef, Combo, ComboDeltas, ComboRefs, Fact as PFact, JobRow, MoabRow,
    PartitionRec, Phase, PriorityParams,
};
use crate::types::{AssocId, JobId, NameId};

/// Input changes for the priority dataflow.
#[derive(Debug, Clone, Default)]
pub struct JobDeltas {
    /// Job row retractions (`-1`) and insertions (`+1`).
    pub jobs: Vec<(JobRow, isize)>,
    /// Fact retractions and insertions.
    pub facts: Vec<(PFact, isize)>,
    /// Combinations the rows start (`+1`) or stop (`-1`) naming
    /// ([`crate::priority::ComboRefs`]).
    pub combos: Vec<(Combo, isize)>,
    /// (Partition, job category) pairs the rows start or stop naming.
    pub partition_refs: Vec<((NameId, u8), isize)>,
}

impl JobDeltas {
    /// Records in the deltas.
    pub fn len(&self) -> usize {
        self.jobs.len() + self.facts.len() + self.combos.len() + self.partition_refs.len()
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

/// The rows sent, by job id: active jobs' ids are dense, so a vector (a hash
/// map would spend about as much again on empty buckets at a million jobs).
#[derive(Debug, Default)]
struct SentRows(Vec<Option<JobRow>>);

impl SentRows {
    fn get(&self, id: JobId) -> Option<&JobRow> {
        self.0.get(id as usize).and_then(Option::as_ref)
    }

    fn remove(&mut self, id: JobId) -> Option<JobRow> {
        self.0.get_mut(id as usize).and_then(Option::take)
    }

    fn insert(&mut self, id: JobId, row: JobRow) {
        let slot = id as usize;
        if self.0.len() <= slot {
            self.0.resize_with(slot + 1, || None);
        }
        self.0[slot] = Some(row);
    }

    /// The ids with a row sent.
    fn ids(&self) -> impl Iterator<Item = JobId> + '_ {
        self.0
            .iter()
            .enumerate()
            .filter(|(_, row)| row.is_some())
            .map(|(id, _)| JobId::try_from(id).expect("ids are u32"))
    }
}

/// The user association a row counts a pending job for (ticket-based's
/// active associations): pending rows only.
fn pending_assoc(row: &JobRow) -> Option<AssocId> {
    (row.phase == Phase::Pending).then_some(row.assoc)
}

/// What was last sent to the priority inputs; see the module documentation.
#[derive(Debug, Default)]
pub struct JobFeed {
    /// The active jobs' ids.
    job_ids: JobIds,
    sent_jobs: SentRows,
    /// Per subject, the facts sent (sorted; a subject has a handful, so a
    /// vector, not a set whose every node has room for eleven).
    sent_facts: BTreeMap<Subject, Vec<PFact>>,
    /// Subjects to re-derive at the next send.
    dirty_subjects: BTreeSet<Subject>,
    /// Accounts whose parent or own priority changed: their subtrees'
    /// association priorities are re-derived at the next send if the
    /// account's effective priority moved. An association's effective
    /// priority changes only if the lowest moved account on its chain (up
    /// to the first own priority) changes its own, so the subtrees of the
    /// moved accounts whose effective priority stayed keep theirs.
    dirty_subtrees: BTreeSet<String>,
    /// Re-derive every subject at the next send.
    all_subjects_dirty: bool,
    crossings: Crossings,
    /// Jobs to re-derive at the next send.
    dirty: BTreeSet<String>,
    /// Re-derive every job at the next send.
    all_dirty: bool,
    /// The active jobs with several QOS: a QOS priority change may change
    /// their primary QOS (Slurm sorts a job's QOS by priority).
    multi_qos: BTreeSet<String>,
    /// The active jobs with several partitions or several QOS (named from
    /// the book, which adds their pairs: [`identify`]).
    paired: BTreeSet<String>,
    /// A QOS changed since the last send.
    qos_changed: bool,
    /// How many sent rows name each combination and partition pair.
    combo_refs: ComboRefs,
}

impl JobFeed {
    /// A feed that has sent nothing, publishing job names in `names`.
    pub fn new(names: JobNames) -> Self {
        JobFeed {
            job_ids: JobIds::new(names),
            ..JobFeed::default()
        }
    }

    /// The combinations and (partition, category) pairs that `rows` (the
    /// row deltas about to be sent) make named or unnamed by every sent row
    /// ([`ComboRefs::deltas`]).
    pub fn combo_deltas(&mut self, rows: &[(JobRow, isize)]) -> ComboDeltas {
        self.combo_refs.deltas(rows)
    }

    /// The id of the active job `name`.
    pub fn job_id(&self, name: &str) -> Option<JobId> {
        self.job_ids.get(name)
    }

    /// Name a result's user, account, partition and QOS from the row last
    /// sent for its job (interned ids: no lookup in the book's million-job
    /// map), the names [`identify`] gives. `false`, naming nothing, when no
    /// row was sent for it or the job has several partitions or QOS (its
    /// pairs come from the book: call [`identify`]).
    pub fn identify_from_rows(&self, names: &Names, priority: &mut JobPriority) -> bool {
        let Some(row) = self
            .job_id(&priority.job)
            .and_then(|id| self.sent_jobs.get(id))
        else {
            return false;
        };
        if self.paired.contains(&priority.job) {
            return false;
        }
        let (Some((account, user)), Some(partition), Some(qos)) = (
            names.assocs.name(row.assoc),
            names.labels.name(row.partition),
            names.labels.name(row.qos),
        ) else {
            return false;
        };
        priority.user.clone_from(user);
        priority.account.clone_from(account);
        priority.partition.clone_from(partition);
        priority.qos.clone_from(qos);
        true
    }

    /// Does an active job have several (partition, QOS) pairs?
    pub fn any_paired(&self) -> bool {
        !self.paired.is_empty()
    }

    /// The partitions the sent rows name (each active job's primary one).
    pub fn named_partitions<'a>(&'a self, names: &'a Names) -> impl Iterator<Item = &'a str> {
        self.combo_refs
            .partitions()
            .filter_map(|id| names.labels.name(id).map(String::as_str))
    }

    /// Mark what the book's `changes` make stale.
    pub fn note(&mut self, changes: &Changes) {
        self.dirty.extend(changes.jobs.iter().cloned());
        if changes.all_jobs || changes.config {
            self.all_dirty = true;
        }
        if changes.config || changes.removed {
            self.all_subjects_dirty = true;
        }
        if changes.cluster {
            self.dirty_subjects.insert(Subject::Cluster);
        }
        self.dirty_subtrees
            .extend(changes.moved_accounts.iter().cloned());
        self.dirty_subjects
            .extend(changes.accounts.iter().cloned().map(Subject::Account));
        self.dirty_subjects.extend(
            changes
                .users
                .iter()
                .map(|(account, user)| Subject::User(account.clone(), user.clone())),
        );
        self.dirty_subjects
            .extend(changes.qos.iter().cloned().map(Subject::Qos));
        self.qos_changed |= !changes.qos.is_empty();
        self.dirty_subjects
            .extend(changes.partitions.iter().cloned().map(Subject::Partition));
    }

    /// Every sent pending row's user association with its count of pending
    /// jobs (ticket-based's active associations), for the tree dataflow a
    /// configuration switch moves to or from ticket-based.
    pub fn pending_by_assoc(&self, sign: i128) -> Vec<(AssocId, i128)> {
        let mut counts: BTreeMap<AssocId, i128> = BTreeMap::new();
        for row in self.sent_jobs.0.iter().flatten() {
            if let Some(assoc) = pending_assoc(row) {
                *counts.entry(assoc).or_default() += sign;
            }
        }
        counts.into_iter().collect()
    }

    /// The changes of ticket-based's pending-job counts that the row
    /// changes `jobs` (one batch's [`JobDeltas::jobs`]) make.
    pub fn pending_deltas(jobs: &[(JobRow, isize)]) -> Vec<(AssocId, i128)> {
        jobs.iter()
            .filter_map(|(row, diff)| Some((pending_assoc(row)?, *diff as i128)))
            .collect()
    }

    /// Retract everything sent and re-derive everything at the next send (a
    /// restore): the next [`JobFeed::job_deltas`] and
    /// [`JobFeed::fact_deltas`] bring the inputs to the new book.
    pub fn replace_all(&mut self) {
        self.crossings = Crossings::new();
        self.dirty.clear();
        self.all_dirty = true;
        self.all_subjects_dirty = true;
    }

    /// The job rows' differences from what was sent, at the state's time.
    pub fn job_deltas(&mut self, state: &State, names: &mut Names) -> Vec<(JobRow, isize)> {
        self.job_ids.next_batch();
        let now = state.now;
        let params = PriorityParams::from_config(&state.config);
        let mut jobs = std::mem::take(&mut self.dirty);
        let due = self.crossings.due(now);
        let job_names = self.job_ids.names().clone();
        jobs.extend(
            due.into_iter()
                .filter_map(|id| job_names.get(id).map(|name| name.to_string())),
        );
        if std::mem::take(&mut self.qos_changed) {
            jobs.extend(self.multi_qos.iter().cloned());
        }
        if std::mem::take(&mut self.all_dirty) {
            jobs.extend(
                self.sent_jobs
                    .ids()
                    .filter_map(|id| job_names.get(id).map(|name| name.to_string())),
            );
            jobs.extend(state.jobs.keys().cloned());
        }
        let mut deltas = Vec::new();
        for name in jobs {
            let job = state.jobs.get(&name);
            if job.is_some_and(|j| j.spec.qos.as_deref().is_some_and(is_list)) {
                self.multi_qos.insert(name.clone());
            } else {
                self.multi_qos.remove(&name);
            }
            if job.is_some_and(|j| j.has_pairs()) {
                self.paired.insert(name.clone());
            } else {
                self.paired.remove(&name);
            }
            let row = job.map(|job| {
                let id = self.job_ids.intern(&name);
                let mut row = row_of(state, job, id, names, &params);
                row.begun = begun_at(&row, now);
                row.age_capped = age_capped_at(&params, &row, now);
                row
            });
            let Some(id) = self.job_ids.get(&name) else {
                continue;
            };
            let old = self.sent_jobs.get(id);
            if old == row.as_ref() {
                if let Some(row) = &row {
                    self.crossings
                        .schedule(id, next_crossing(&params, row, now));
                }
                continue;
            }
            if let Some(old) = self.sent_jobs.remove(id) {
                deltas.push((old, -1));
            }
            match row {
                Some(row) => {
                    self.crossings
                        .schedule(id, next_crossing(&params, &row, now));
                    deltas.push((row.clone(), 1));
                    self.sent_jobs.insert(id, row);
                }
                None => {
                    self.crossings.cancel(id);
                    self.job_ids.release(&name);
                }
            }
        }
        deltas
    }

    /// The facts' differences from what was sent, for the subjects marked
    /// since the last send.
    pub fn fact_deltas(&mut self, state: &State, names: &mut Names) -> Vec<(PFact, isize)> {
        let mut subjects = std::mem::take(&mut self.dirty_subjects);
        if std::mem::take(&mut self.all_subjects_dirty) {
            subjects.extend(self.sent_facts.keys().cloned());
            subjects.extend(all_subjects(state));
        }
        let mut account_priorities = AccountPriorities::default();
        // A moved account's subtree inherits through it: only the subtrees
        // whose root's effective priority moved are re-derived (the roots
        // themselves are dirty subjects of their own).
        let moved_roots: BTreeSet<String> = std::mem::take(&mut self.dirty_subtrees)
            .into_iter()
            .filter(|root| {
                !state.accounts.contains_key(root)
                    || self.sent_account_effective_priority(root)
                        != Some(account_priorities.of(state, root))
            })
            .collect();
        if !moved_roots.is_empty() {
            subjects.extend(subtree_subjects(state, &moved_roots));
        }
        if state.config.model == PriorityModel::Moab {
            subjects.insert(Subject::Moab);
        }
        let mut deltas = Vec::new();
        for subject in subjects {
            let facts = subject_facts(state, &subject, names, &mut account_priorities);
            let sent: BTreeSet<PFact> = self
                .sent_facts
                .remove(&subject)
                .unwrap_or_default()
                .into_iter()
                .collect();
            deltas.extend(sent.difference(&facts).map(|f| (f.clone(), -1)));
            deltas.extend(facts.difference(&sent).map(|f| (f.clone(), 1)));
            if !facts.is_empty() {
                self.sent_facts.insert(subject, facts.into_iter().collect());
            }
        }
        deltas
    }

    /// The effective association priority last sent for `account`.
    fn sent_account_effective_priority(&self, account: &str) -> Option<i64> {
        self.sent_facts
            .get(&Subject::Account(account.to_string()))?
            .iter()
            .find_map(|fact| match fact {
                PFact::AssocPriority {
                    of: AssocRef::Account(_),
                    priority,
                } => Some(*priority),
                _ => None,
            })
    }
}

/// An association's effective Slurm association priority: its own, else the
/// nearest account's up the chain, else 0.
fn effective_assoc_priority(
    state: &State,
    account: &str,
    user: Option<&str>,
    accounts: &mut AccountPriorities,
) -> i64 {
    let own = user.and_then(|user| {
        state
            .users
            .get(&(account.to_string(), user.to_string()))
            .and_then(|u| u.priority)
    });
    own.unwrap_or_else(|| accounts.of(state, account))
}

/// The accounts' effective priorities (own, else the nearest ancestor's,
/// else 0), memoised up the chains for one pass over the subjects: every
/// account is walked once, not once per account below it (a chain of depth
/// `d` costs `O(d)` lookups, not `d²/2`).
#[derive(Debug, Default)]
struct AccountPriorities(BTreeMap<String, i64>);

impl AccountPriorities {
    fn of(&mut self, state: &State, account: &str) -> i64 {
        let mut chain: Vec<&str> = Vec::new();
        let mut current = Some(account);
        let found = loop {
            let Some(name) = current else { break 0 };
            if let Some(&known) = self.0.get(name) {
                break known;
            }
            let Some(record) = state.accounts.get(name) else {
                break 0;
            };
            chain.push(name);
            if let Some(priority) = record.priority {
                break priority;
            }
            current = record.parent.as_deref();
        };
        for name in chain {
            self.0.insert(name.to_string(), found);
        }
        found
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
fn subject_facts(
    state: &State,
    subject: &Subject,
    names: &mut Names,
    account_priorities: &mut AccountPriorities,
) -> BTreeSet<PFact> {
    let mut facts = BTreeSet::new();
    match subject {
        Subject::Config => {
            facts.insert(PFact::Config(Box::new(PriorityParams::from_config(
                &state.config,
            ))));
        }
        Subject::Cluster => {
            facts.insert(PFact::Cluster {
                nodes: state.cluster.nodes,
                tres: tres_bits(&state.cluster.tres),
            });
        }
        Subject::Account(name) => {
            if let Some(account) = state.accounts.get(name) {
                let id = names.accounts.intern_str(name);
                facts.insert(PFact::AssocPriority {
                    of: AssocRef::Account(id),
                    priority: effective_assoc_priority(state, name, None, account_priorities),
                });
                if let Some(priority) = account.priority {
                    facts.insert(PFact::AccountPriority {
                        account: id,
                        priority,
                    });
                }
            }
        }
        Subject::User(account, user) => {
            let key = (account.clone(), user.clone());
            if state.users.contains_key(&key) {
                facts.insert(PFact::AssocPriority {
                    of: AssocRef::User(names.assocs.intern(&key)),
                    priority: effective_assoc_priority(
                        state,
                        account,
                        Some(user),
                        account_priorities,
                    ),
                });
            }
        }
        Subject::Qos(name) => {
            if let Some(qos) = state.qos.get(name) {
                facts.insert(PFact::Qos {
                    name: names.labels.intern_str(name),
                    priority: qos.priority,
                });
            }
        }
        Subject::Partition(name) => {
            if let Some(p) = state.partitions.get(name) {
                facts.insert(PFact::Partition {
                    name: names.labels.intern_str(name),
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
                let usage = state.moab_credential_usage();
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
/// fair-share factors by `(account, user)` (tests drive the priority
/// dataflow with these, apart from the engine).
#[cfg(test)]
pub fn facts_of(
    state: &State,
    factors: &BTreeMap<(String, String), f64>,
    names: &mut Names,
) -> BTreeSet<PFact> {
    let mut account_priorities = AccountPriorities::default();
    let mut facts: BTreeSet<PFact> = all_subjects(state)
        .iter()
        .flat_map(|subject| subject_facts(state, subject, names, &mut account_priorities))
        .collect();
    for (assoc, factor) in factors {
        facts.insert(PFact::Fairshare {
            assoc: names.assocs.intern(assoc),
            factor_bits: factor.to_bits(),
        });
    }
    facts
}

/// Name a priority result's user, account, partition and QOS from the book
/// (the dataflow's records carry only ids); under Slurm, a job in several
/// partitions or with several QOS gets its pairs ([`pairs_of`]).
pub fn identify(state: &State, priority: &mut JobPriority) {
    if let Some(job) = state.jobs.get(&priority.job) {
        priority.user.clone_from(&job.user);
        priority.account.clone_from(&job.account);
        job.partition().clone_into(&mut priority.partition);
        model_qos(state, job, priority.model).clone_into(&mut priority.qos);
        if priority.model == PriorityModel::Slurm && job.has_pairs() {
            priority.pairs = pairs_of(state, job, priority);
        }
    }
}

/// Mark a named result as the scheduler's queue ranks it: under Slurm its
/// partition's `PriorityTier` and whether the job is marked for expedited
/// requeue (the oracle's `priority::slurm` sets the same).
pub fn queue_marks(state: &State, priority: &mut JobPriority) {
    if priority.model == PriorityModel::Slurm {
        priority.priority_tier = state
            .partitions
            .get(&priority.partition)
            .map_or(0, |p| p.priority_tier);
        priority.expedited = state.expedited.contains(&priority.job);
    }
}

/// The QOS a model prices a job with: Slurm's primary QOS (the highest
/// priority of several), else the first listed.
fn model_qos<'a>(state: &State, job: &'a fairflow_book::Job, model: PriorityModel) -> &'a str {
    match model {
        PriorityModel::Slurm => state.primary_qos(&job.spec),
        _ => job.qos(),
    }
}

/// Slurm's (partition, QOS) pairs of a listed job from its own evaluated
/// factors (its record's, the primary pair's): per pair the partition, QOS
/// and TRES factors are replaced by the pair's
/// (`fairflow_model::job_priority::slurm_pair_factors_from_job`) and summed
/// in Slurm's per-pair order; a held job's pairs are 0; under `INCR_ONLY` a
/// pending job's pair is floored by the book's pair floor
/// (`State::pair_priority_with_floor`). Cost per read of
/// the job: `O(pairs + QOS + partitions)`.
///
/// The maxima are the ones the dataflow normalised the job's own factors
/// with: the largest QOS priority (at least 0) is over the defined QOS; the
/// largest partition factor over the defined partitions and those listed
/// jobs name undefined (factor 1) is taken as `max(defined, 1)`, which
/// gives every pair the same factor: each partition of a job in several is
/// defined (the book's rule), so a pair's partition factor is at most the
/// defined maximum, and where that maximum is 0 every such factor is 0
/// whatever the divisor; a single undefined partition (with several QOS)
/// is this listed job's, so the maximum is at least its factor 1.
fn pairs_of(state: &State, job: &fairflow_book::Job, own: &JobPriority) -> Vec<PairPriority> {
    let norms = SlurmPairNorms {
        weights: SlurmWeights::of(&state.config),
        raw: SlurmRawFactors::of(&state.config),
        max_partition: state
            .partitions
            .values()
            .map(|p| p.priority_job_factor)
            .fold(1, u32::max),
        max_qos: state.max_qos_priority(),
    };
    let counted = match (&job.phase, &job.allocated) {
        (JobPhase::Running { .. }, Some(allocated)) => allocated,
        _ => job.spec.tres.as_ref().unwrap_or(&EMPTY_TRES),
    };
    let site = job.spec.site_factor.unwrap_or(0);
    let nice = job.spec.nice.unwrap_or(0);
    let job_pairs = state.job_pairs(job);
    let pair_count = job_pairs.len();
    job_pairs
        .into_iter()
        .enumerate()
        .map(|(index, (partition_name, qos))| {
            let partition = state.partitions.get(partition_name);
            let tres = state.slurm_tres_inputs(counted, partition.and_then(|p| p.tres.as_ref()));
            let pair = SlurmPairInputs {
                partition_job_factor: partition.map_or(1, |p| p.priority_job_factor),
                tres: &tres,
                qos_priority: state.qos.get(qos).map_or(0, |q| q.priority),
            };
            let factors = slurm_pair_factors_from_job(&own.factors, &norms, &pair);
            let computed = slurm_pair_priority(&factors, site, nice);
            let priority = state.slurm_pair_priority_as_listed(
                &job.id,
                own.state,
                (index, pair_count),
                computed,
            );
            PairPriority {
                partition: partition_name.to_string(),
                qos: qos.to_string(),
                priority,
                factors,
                priority_tier: partition.map_or(0, |p| p.priority_tier),
            }
        })
        .collect()
}

/// A job's row with the driver-kept flags (`begun`, `age_capped`) unset:
/// interned ids and only what priority needs (under Moab, its credentials
/// and Moab's attributes too). A job in several partitions or with several
/// QOS is sent as its primary pair (its first partition; under Slurm its
/// highest-priority QOS, else its first): [`identify`] adds the other pairs.
pub fn row_of(
    state: &State,
    job: &fairflow_book::Job,
    id: JobId,
    names: &mut Names,
    params: &PriorityParams,
) -> JobRow {
    let phase = match job.phase {
        JobPhase::Pending => Phase::Pending,
        JobPhase::Held => Phase::Held,
        JobPhase::Running { .. } => Phase::Running,
    };
    let tres = match (&job.phase, &job.allocated) {
        (JobPhase::Running { .. }, Some(allocated)) => allocated,
        _ => job.spec.tres.as_ref().unwrap_or(&EMPTY_TRES),
    };
    let count = |name: &str, default: f64| tres.get(name).copied().unwrap_or(default).to_bits();
    let moab = (params.model == PriorityModel::Moab).then(|| {
        Box::new(MoabRow {
            id: job.id.clone(),
            user: job.user.clone(),
            account: job.account.clone(),
            partition: job.partition().to_string(),
            qos: job.qos().to_string(),
            tres: tres_bits(tres),
            group: job.spec.group.clone(),
            bypass_count: job.spec.bypass_count,
            deadline: job.spec.deadline,
            soft_policy_violation: job.spec.soft_policy_violation,
            attributes: job.spec.attributes.clone(),
            started_at: job.started_at,
            held_spans: job.held_spans.clone(),
            held_since: job.held_since,
            user_priority: job.spec.user_priority,
        })
    });
    JobRow {
        job: id,
        assoc: names
            .assocs
            .intern(&(job.account.clone(), job.user.clone())),
        account: names.accounts.intern_str(&job.account),
        partition: names.labels.intern_str(job.partition()),
        qos: names.labels.intern_str(model_qos(state, job, params.model)),
        phase,
        begun: false,
        age_capped: false,
        urgency: job.spec.urgency.unwrap_or(FLUX_URGENCY_DEFAULT),
        start_count: job.start_count,
        submit_at: job.submit_at,
        queued_at: job.queued_at,
        begin: job.spec.begin,
        nodes_bits: count("node", 1.0),
        cpus_bits: count("cpu", 1.0),
        weighted_tres: params
            .weight_tres
            .iter()
            .map(|(name, _)| count(name, 0.0))
            .collect(),
        time_limit_secs: job.spec.time_limit_secs.unwrap_or(0),
        nice: job.spec.nice.unwrap_or(0),
        site_factor: job.spec.site_factor.unwrap_or(0),
        user_priority: job.spec.user_priority.unwrap_or(0),
        moab,
    }
}

/// The TRES of a job that gives none.
static EMPTY_TRES: fairflow_model::tres::TresCounts = fairflow_model::tres::TresCounts::new();
