//! The driver's job feed (integration note of [`crate::priority`], steps 2
//! and 3): each job's last sent [`JobRow`], the [`Crossings`] of begin times
//! and age caps, and the last sent priority [`Fact`]s, from which each batch
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
//!
//! Parts: `facts` (the facts by subject), `rows` (a job's row) and
//! `identify` (naming a read's results, their pairs).

mod facts;
mod identify;
mod rows;

use std::collections::{BTreeMap, BTreeSet};

use fairflow_book::{Changes, Job, State};
use fairflow_model::event::is_list;
use fairflow_model::report::JobPriority;
use fairflow_model::PriorityModel;

#[cfg(test)]
pub use facts::facts_of;
pub use facts::Subject;
pub use identify::{identify, queue_marks};
pub use rows::row_of;

use crate::names::{JobIds, JobNames, Names};
use crate::priority::crossings::{age_capped_at, begun_at, next_crossing, Crossings};
use crate::priority::{
    AssocRef, Combo, ComboDeltas, ComboRefs, Fact, JobRow, Phase, PriorityParams,
};
use crate::types::{AssocId, JobId, NameId};
use facts::{all_subjects, subject_facts, subtree_subjects, AccountPriorities};

/// Input changes for the priority dataflow.
#[derive(Debug, Clone, Default)]
pub struct JobDeltas {
    /// Job row retractions (`-1`) and insertions (`+1`).
    pub jobs: Vec<(JobRow, isize)>,
    /// Fact retractions and insertions.
    pub facts: Vec<(Fact, isize)>,
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
    sent_facts: BTreeMap<Subject, Vec<Fact>>,
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

    /// The names of the active jobs by id (the table the readers of this
    /// process share).
    pub fn job_names(&self) -> &JobNames {
        self.job_ids.names()
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

    /// The partition of the row last sent for a job (`None`: no row sent).
    pub fn sent_partition(&self, id: JobId) -> Option<NameId> {
        self.sent_jobs.get(id).map(|row| row.partition)
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
        let mut deltas = Vec::new();
        if std::mem::take(&mut self.all_dirty) {
            // Every job of the state in name order (the order the set gives
            // the others), without copying a million names into the set;
            // then, with the others, the jobs sent that the state no longer
            // has (named before any is interned: ids are reused only from
            // the next batch on).
            jobs.extend(
                (self.sent_jobs.ids())
                    .filter_map(|id| job_names.get(id).map(|name| name.to_string())),
            );
            jobs.retain(|name| !state.jobs.contains_key(name));
            self.job_ids.reserve_for(state.jobs.len());
            for (name, job) in state.jobs.iter() {
                self.job_delta(name, Some(job), state, names, &params, &mut deltas);
            }
        }
        for name in jobs {
            let job = state.jobs.get(&name).map(|job| &**job);
            self.job_delta(&name, job, state, names, &params, &mut deltas);
        }
        deltas
    }

    /// Job `name`'s row difference (`job`: the state's job of that name, if
    /// any), pushed to `deltas`; its crossings scheduled or cancelled.
    fn job_delta(
        &mut self,
        name: &str,
        job: Option<&Job>,
        state: &State,
        names: &mut Names,
        params: &PriorityParams,
        deltas: &mut Vec<(JobRow, isize)>,
    ) {
        let now = state.now;
        if job.is_some_and(|j| j.spec.qos.as_deref().is_some_and(is_list)) {
            self.multi_qos.insert(name.to_string());
        } else {
            self.multi_qos.remove(name);
        }
        if job.is_some_and(|j| j.has_pairs()) {
            self.paired.insert(name.to_string());
        } else {
            self.paired.remove(name);
        }
        let row = job.map(|job| {
            let id = self.job_ids.intern(name);
            let mut row = row_of(state, job, id, names, params);
            row.begun = begun_at(&row, now);
            row.age_capped = age_capped_at(params, &row, now);
            row
        });
        let Some(id) = self.job_ids.get(name) else {
            return;
        };
        let old = self.sent_jobs.get(id);
        if old == row.as_ref() {
            if let Some(row) = &row {
                self.crossings.schedule(id, next_crossing(params, row, now));
            }
            return;
        }
        if let Some(old) = self.sent_jobs.remove(id) {
            deltas.push((old, -1));
        }
        match row {
            Some(row) => {
                self.crossings
                    .schedule(id, next_crossing(params, &row, now));
                deltas.push((row.clone(), 1));
                self.sent_jobs.insert(id, row);
            }
            None => {
                self.crossings.cancel(id);
                self.job_ids.release(name);
            }
        }
    }

    /// The facts' differences from what was sent, for the subjects marked
    /// since the last send.
    pub fn fact_deltas(&mut self, state: &State, names: &mut Names) -> Vec<(Fact, isize)> {
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
            let sent: BTreeSet<Fact> = self
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
                Fact::AssocPriority {
                    of: AssocRef::Account(_),
                    priority,
                } => Some(*priority),
                _ => None,
            })
    }
}
