//! The ranked pending queue, kept outside the arrangements: the priority
//! dataflow's output updates (records and facts, exchanged to one worker)
//! are captured after each batch and applied here, to an index in which the
//! fair-share term meets the job records per user association, so that a
//! usage event changes no job record and no job entry.
//!
//! # What is kept
//! - every active job's [`PriorityRecord`], by job id (ids are dense);
//! - every user association's fair-share factor (the `Fairshare` facts) and
//!   the other facts (Moab's read-time context);
//! - per user association and rank class (uncapped, capped; see
//!   [`super::record`]), its ranked jobs by `key_hi` (highest first): the
//!   order of a user's jobs does not depend on its factor, which is the same
//!   for all of them;
//! - per rank class, the user associations by the key of their best job with
//!   the user's fair-share term added ([`PriorityRecord::key_with_fairshare`]),
//!   for the algorithms whose factors are sent per user;
//! - under classic and depth-oblivious, every association's classic
//!   inputs ([`super::classic`]), from which it evaluates every user's
//!   factor into the factors above after a batch that changed any;
//! - under Fair Tree with Slurm's ties, the sorted tree instead
//!   ([`super::fair_tree`]): placements per group, the best job per subtree,
//!   ranks derived when read; its users are not in the user order;
//! - the ranked jobs by submit time (the tie order at the model's floor).
//!
//! # What an update costs
//! A job event changes its record: `O(log n)` in its user's set, and the
//! user's entry in the user order when its best job changed. A fair-share
//! change of a user association re-keys its two entries in the user order:
//! `O(log users)`, whatever its number of jobs. Under Fair Tree a usage
//! event changes the placements of the members that moved in the groups
//! on its path and no user entry: the slot facts are consolidated apart
//! from the other facts, sorted by node, and a slot that moves within its
//! group is replaced in place (two position changes, applied with the
//! group's others in one merge when there are many; no user re-entered).
//! A change of the
//! configuration or of a normalisation maximum changes every record (every
//! normalised factor moves), as it must.
//!
//! Reading: [`Queue::candidates`] (`candidates`, the search);
//! [`Queue::count_clearing`] (`count`, the jobs whose priority clears a
//! threshold, counted per user from order statistics: each user's jobs are
//! also kept per account and partition in sorted vectors, one binary
//! search per vector instead of one evaluation per job).

use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::sync::Arc;

use super::classic::ClassicTree;
use super::combo::{Combo, JobContext};
use super::fair_tree::{Best, FairTree, TreeSlot};
use super::inputs::{ordered_submit, Fact, JobRow};
use super::record::{key_with_term, ordered_bits, PriorityRecord, RankClass};
use crate::thresholds::{self, Threshold};
use crate::types::{grow, AssocId, Epoch, JobId, NodeId, TouchCounter};

mod candidates;
mod count;

pub use count::{CountBounds, SurePrefix};

/// The updates the priority dataflow emitted since the last
/// [`Queue::absorb`], as captured on the worker that reads.
#[derive(Debug, Default)]
pub struct Captured {
    /// Job row updates (this shard's).
    pub rows: Vec<(JobRow, Epoch, isize)>,
    /// Combination context updates (every combination's).
    pub contexts: Vec<((Combo, Arc<JobContext>), Epoch, isize)>,
    /// Record updates: `((job, record), time, diff)`, made by the reader
    /// from the rows and contexts (`PriorityReader::join_rows`).
    pub records: Vec<((JobId, PriorityRecord), Epoch, isize)>,
    /// Fact updates.
    pub facts: Vec<(Fact, Epoch, isize)>,
    /// A lower bound of the times of `rows` and `contexts`, kept by the
    /// capture as it appends (`None`: not known), so that a shard that
    /// absorbs its records as their times complete
    /// (`PriorityReader::absorb_records_before`) sees at a glance that
    /// none has, instead of moving every pending update at each step.
    pub pending_from: Option<Epoch>,
}

impl Captured {
    /// Note the times of updates about to be appended to `rows` or
    /// `contexts` (see [`Captured::pending_from`]).
    pub fn note_pending(&mut self, times: impl Iterator<Item = Epoch>) {
        let earliest = times.min();
        let was_empty = self.rows.is_empty() && self.contexts.is_empty();
        self.pending_from = match (was_empty, self.pending_from, earliest) {
            (_, _, None) => self.pending_from,
            (true, _, Some(t)) => Some(t),
            (false, Some(from), Some(t)) => Some(from.min(t)),
            (false, None, Some(_)) => None,
        };
    }
}

/// The capture buffer shared by the capturing operators and the reader
/// (one worker thread).
pub type Capture = Rc<RefCell<Captured>>;

/// Users re-keyed in one absorb from which the user orders are rebuilt
/// whole (when they are also a quarter of the entered users). Crossed in
/// tests by `tests/thresholds.rs` (thousands of users).
const BULK_REFRESH_MIN_USERS: usize = 4096;

/// The fair-share weight `w_fs` of the records (one configuration, so
/// the same in every record), once read in an absorb.
type FairshareWeight = Option<f64>;

/// The rank classes a job can be ranked in, as indexes.
const UNCAPPED: usize = 0;
const CAPPED: usize = 1;

fn class_index(class: RankClass) -> Option<usize> {
    match class {
        RankClass::Uncapped => Some(UNCAPPED),
        RankClass::Capped => Some(CAPPED),
        RankClass::Unranked => None,
    }
}

/// An entry of a job set or of a user order: `Reverse(ordered key)` first,
/// so that ascending order is highest key first.
type Ranked = (Reverse<u64>, u32);

/// One user association's ranked jobs, per class, and the keys under which
/// it is entered in the user orders.
#[derive(Debug, Default)]
struct UserJobs {
    jobs: [BTreeSet<Ranked>; 2],
    /// Each set's first entry, kept beside it: re-keying every user after
    /// a classic usage event reads this, not the sets' nodes.
    best: [Option<Ranked>; 2],
    entered: [Option<u64>; 2],
    /// The same jobs per account and partition, in sorted vectors (the
    /// order statistics of [`Queue::count_clearing`]).
    counted: [Vec<count::CountedJobs>; 2],
}

impl UserJobs {
    fn insert(&mut self, class: usize, entry: Ranked) {
        self.jobs[class].insert(entry);
        if self.best[class].is_none_or(|best| entry < best) {
            self.best[class] = Some(entry);
        }
    }

    fn remove(&mut self, class: usize, entry: &Ranked) {
        self.jobs[class].remove(entry);
        if self.best[class].as_ref() == Some(entry) {
            self.best[class] = self.jobs[class].first().copied();
        }
    }
}

/// The queue index; see the module documentation.
#[derive(Debug, Default)]
pub struct Queue {
    records: Vec<Option<PriorityRecord>>,
    live: usize,
    /// Factor bits by user association (absent: 0, the oracle's default).
    fairshare: Vec<Option<u64>>,
    /// The facts other than fair-share factors, with their counts.
    facts: BTreeMap<Fact, isize>,
    users: Vec<UserJobs>,
    /// The users not placed in `tree`, by best key with their factor.
    by_user: [BTreeSet<Ranked>; 2],
    /// Fair Tree with Slurm's ties: the sorted tree.
    tree: FairTree,
    /// Classic and depth-oblivious: every association's classic inputs;
    /// the factors it evaluates are kept in `fairshare`.
    classic: ClassicTree,
    fifo: BTreeSet<(u64, JobId)>,
    /// What the counted read needs beyond the job sets (`count`).
    count: count::CountIndex,
    /// Job and user entries changed by the current `absorb`.
    entries_changed: u64,
}

/// Sum the diffs of equal updates; keep the non-zero ones.
fn consolidate<D: Ord>(mut updates: Vec<(D, isize)>) -> Vec<(D, isize)> {
    updates.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out: Vec<(D, isize)> = Vec::with_capacity(updates.len());
    for (data, diff) in updates {
        match out.last_mut() {
            Some((last, sum)) if *last == data => *sum += diff,
            _ => out.push((data, diff)),
        }
    }
    out.retain(|(_, diff)| *diff != 0);
    out
}

/// Consolidated tree-slot updates, sorted by node, then slot, so that
/// [`FairTree::apply`] finds each node's updates together. A batch of usage
/// events moves thousands of slots, each one or two updates of its node:
/// a comparison sort of them was the largest part of the queue's work, so
/// they are ordered by a counting sort on the (dense) node ids, and only a
/// node's own updates are compared.
fn consolidate_slots(updates: Vec<(NodeId, TreeSlot, isize)>) -> Vec<(NodeId, TreeSlot, isize)> {
    let Some(last) = updates.iter().map(|&(node, _, _)| node as usize).max() else {
        return updates;
    };
    // `next[node]`: where the node's next update goes in node order.
    let mut next: Vec<usize> = vec![0; last + 2];
    for &(node, _, _) in &updates {
        next[node as usize + 1] += 1;
    }
    for index in 1..next.len() {
        next[index] += next[index - 1];
    }
    let mut in_order: Vec<usize> = vec![0; updates.len()];
    for (index, &(node, _, _)) in updates.iter().enumerate() {
        let at = &mut next[node as usize];
        in_order[*at] = index;
        *at += 1;
    }
    let mut out: Vec<(NodeId, TreeSlot, isize)> = Vec::with_capacity(updates.len());
    for run in in_order.chunk_by(|&a, &b| updates[a].0 == updates[b].0) {
        let first = out.len();
        out.extend(run.iter().map(|&index| updates[index]));
        if run.len() > 1 {
            out[first..].sort_unstable_by_key(|update| update.1);
            let mut kept = first;
            for read in first + 1..out.len() {
                if out[kept].1 == out[read].1 {
                    out[kept].2 += out[read].2;
                } else {
                    kept += 1;
                    out[kept] = out[read];
                }
            }
            out.truncate(kept + 1);
        }
    }
    out.retain(|(_, _, diff)| *diff != 0);
    out
}

impl Queue {
    /// An empty queue.
    pub fn new() -> Self {
        Queue::default()
    }

    /// Apply the captured updates (everything up to the batch the probe
    /// passed); counts the job and user entries it changed in `touched`.
    pub fn absorb(&mut self, captured: &mut Captured, touched: &TouchCounter) {
        let mut changed_users: Vec<AssocId> = Vec::new();
        if !captured.facts.is_empty() {
            // Tree slots (most of a usage batch's facts under Fair Tree) are
            // consolidated apart, by node: see `consolidate_slots`.
            let mut slots: Vec<(NodeId, TreeSlot, isize)> = Vec::new();
            let mut others: Vec<(Fact, isize)> = Vec::new();
            for (fact, _, diff) in captured.facts.drain(..) {
                match fact {
                    Fact::TreeSlot { node, slot } => slots.push((node, slot, diff)),
                    fact => others.push((fact, diff)),
                }
            }
            let slots = consolidate_slots(slots);
            let facts = consolidate(others);
            // Classic: the inputs first, then every user's factor from them
            // (one pass over the tree), applied with the facts below.
            for (fact, diff) in &facts {
                if let Fact::ClassicNode { node, inputs } = fact {
                    self.classic.apply(*node, inputs, *diff);
                }
            }
            let classic_changes = self.classic.evaluate();
            // Retractions first: a changed factor is a retraction and an insertion.
            for (fact, diff) in facts.iter().filter(|(_, d)| *d < 0) {
                self.apply_fact(fact, *diff, &mut changed_users);
            }
            for &(assoc, old, _) in &classic_changes {
                if let Some(bits) = old {
                    self.apply_factor(assoc, bits, -1, &mut changed_users);
                }
            }
            for (fact, diff) in facts.iter().filter(|(_, d)| *d > 0) {
                self.apply_fact(fact, *diff, &mut changed_users);
            }
            for &(assoc, _, new) in &classic_changes {
                if let Some(bits) = new {
                    self.apply_factor(assoc, bits, 1, &mut changed_users);
                }
            }
            if !slots.is_empty() {
                // The placed or unplaced users are refreshed below, which
                // enters their jobs in the tree or the user order.
                let (changed, moved) = self.tree.apply(&slots);
                #[cfg(test)]
                self.tree.assert_first_users_fresh();
                self.entries_changed += changed;
                changed_users.extend(moved);
            }
        }
        if !captured.records.is_empty() {
            self.apply_records(std::mem::take(&mut captured.records), &mut changed_users);
        }
        changed_users.sort_unstable();
        changed_users.dedup();
        let entered = self.by_user[UNCAPPED].len() + self.by_user[CAPPED].len();
        // The fair-share weight, read from the first record the refresh needs.
        let mut weight = FairshareWeight::default();
        let bulk =
            changed_users.len() >= BULK_REFRESH_MIN_USERS && changed_users.len() * 4 >= entered;
        if !changed_users.is_empty() {
            thresholds::decide(Threshold::BulkUserRefresh, bulk);
        }
        if bulk {
            // Most users moved (a classic usage event changes every
            // factor): re-key them all, then rebuild the user orders from
            // sorted entries, instead of a removal and an insertion each.
            let mut rebuild = false;
            for user in changed_users {
                let (changed, moved) = self.refresh_user_entries(user, &mut weight);
                self.entries_changed += changed;
                rebuild |= moved;
            }
            if rebuild {
                self.rebuild_user_orders();
            }
        } else {
            for user in changed_users {
                self.entries_changed += self.refresh_user(user, &mut weight);
            }
        }
        touched.add(std::mem::take(&mut self.entries_changed));
    }

    /// Apply the records' updates, each job's net change (retractions
    /// first); the users whose entries may have moved go into `changed`.
    fn apply_records(
        &mut self,
        mut updates: Vec<((JobId, PriorityRecord), Epoch, isize)>,
        changed_users: &mut Vec<AssocId>,
    ) {
        updates.sort_by_key(|((job, _), _, _)| *job);
        let mut start = 0;
        while start < updates.len() {
            let job = (updates[start].0).0;
            let end = start + updates[start..].partition_point(|((j, _), _, _)| *j == job);
            // The net change of this job's records (equal records summed).
            let mut net: Vec<(&PriorityRecord, isize)> = Vec::new();
            for ((_, record), _, diff) in &updates[start..end] {
                match net.iter_mut().find(|(r, _)| *r == record) {
                    Some((_, sum)) => *sum += diff,
                    None => net.push((record, *diff)),
                }
            }
            for (record, _) in net.iter().filter(|(_, d)| *d < 0) {
                self.remove_record(job, record, changed_users);
            }
            for (record, _) in net.iter().filter(|(_, d)| *d > 0) {
                self.insert_record(job, (*record).clone(), changed_users);
            }
            start = end;
        }
    }

    /// Rebuild both user orders from the users' entered keys (a bulk
    /// build from sorted entries).
    fn rebuild_user_orders(&mut self) {
        for (class, order) in self.by_user.iter_mut().enumerate() {
            let mut entries: Vec<Ranked> = self
                .users
                .iter()
                .enumerate()
                .filter_map(|(assoc, user)| {
                    user.entered[class].map(|key| (Reverse(key), assoc as AssocId))
                })
                .collect();
            entries.sort_unstable();
            *order = entries.into_iter().collect();
        }
    }

    /// Apply one consolidated fact other than a tree slot (those are
    /// applied together, [`FairTree::apply`]).
    fn apply_fact(&mut self, fact: &Fact, diff: isize, changed_users: &mut Vec<AssocId>) {
        debug_assert!(!matches!(fact, Fact::TreeSlot { .. }), "slots are apart");
        if let Fact::Fairshare { assoc, factor_bits } = fact {
            self.apply_factor(*assoc, *factor_bits, diff, changed_users);
            return;
        }
        if let Fact::ClassicNode { .. } = fact {
            // Applied to `classic` before the other facts.
            return;
        }
        let count = self.facts.entry(fact.clone()).or_insert(0);
        *count += diff;
        if *count == 0 {
            self.facts.remove(fact);
        }
    }

    /// Apply one update of a user association's factor bits.
    fn apply_factor(
        &mut self,
        assoc: AssocId,
        factor_bits: u64,
        diff: isize,
        changed_users: &mut Vec<AssocId>,
    ) {
        let slot = grow(&mut self.fairshare, assoc as usize);
        if diff > 0 {
            *slot = Some(factor_bits);
        } else if *slot == Some(factor_bits) {
            *slot = None;
        }
        changed_users.push(assoc);
    }

    fn remove_record(&mut self, job: JobId, record: &PriorityRecord, changed: &mut Vec<AssocId>) {
        let Some(slot) = self.records.get_mut(job as usize) else {
            return;
        };
        if slot.as_ref() != Some(record) {
            // Already replaced by its successor.
            return;
        }
        *slot = None;
        self.live -= 1;
        self.unindex(job, record, changed);
    }

    fn insert_record(&mut self, job: JobId, record: PriorityRecord, changed: &mut Vec<AssocId>) {
        let slot = grow(&mut self.records, job as usize);
        match slot.take() {
            // A successor arrived before its predecessor's retraction.
            Some(old) => self.unindex(job, &old, changed),
            None => self.live += 1,
        }
        if let Some(class) = class_index(record.class) {
            let user = grow(&mut self.users, record.row.assoc as usize);
            user.insert(class, (Reverse(record.key_hi), job));
            user.insert_counted(class, &record, job);
            self.count.insert(&record, class);
            self.fifo
                .insert((ordered_submit(record.row.submit_at), job));
            self.entries_changed += 1;
            changed.push(record.row.assoc);
        }
        self.records[job as usize] = Some(record);
    }

    /// Take a job's record out of its user's ranked jobs and the submit-time order.
    fn unindex(&mut self, job: JobId, old: &PriorityRecord, changed: &mut Vec<AssocId>) {
        if let Some(class) = class_index(old.class) {
            let user = &mut self.users[old.row.assoc as usize];
            user.remove(class, &(Reverse(old.key_hi), job));
            user.remove_counted(class, old, job);
            self.count.remove(old, class);
            self.fifo.remove(&(ordered_submit(old.row.submit_at), job));
            self.entries_changed += 1;
            changed.push(old.row.assoc);
        }
    }

    /// Re-key a user association's entries in the user orders; returns how
    /// many entries changed.
    fn refresh_user(&mut self, assoc: AssocId, weight: &mut FairshareWeight) -> u64 {
        let Some(previous) = self.users.get(assoc as usize).map(|user| user.entered) else {
            return 0;
        };
        let (changed, _) = self.refresh_user_entries(assoc, weight);
        let now = self.users[assoc as usize].entered;
        for class in [UNCAPPED, CAPPED] {
            if previous[class] == now[class] {
                continue;
            }
            if let Some(old) = previous[class] {
                self.by_user[class].remove(&(Reverse(old), assoc));
            }
            if let Some(new) = now[class] {
                self.by_user[class].insert((Reverse(new), assoc));
            }
        }
        changed
    }

    /// Re-derive a user association's best jobs: a placed user's in the
    /// tree, the others' keys in `UserJobs::entered` (not in the user
    /// orders: the caller moves them, or rebuilds the orders). Returns the
    /// entries changed and whether an entered key moved.
    ///
    /// An entered key is [`PriorityRecord::key_with_fairshare`] of the best
    /// job, made here from the job set's `key_hi` and `weight` (every
    /// record carries the one configuration), so that re-keying the users
    /// after a classic usage event reads no job record but the first.
    fn refresh_user_entries(
        &mut self,
        assoc: AssocId,
        weight: &mut FairshareWeight,
    ) -> (u64, bool) {
        if self.users.get(assoc as usize).is_none() {
            return (0, false);
        }
        let bests = [UNCAPPED, CAPPED].map(|class| best_job(&self.users, assoc, class));
        let mut changed = 0;
        // A placed user is entered in the tree, the others in the user order.
        let mut wanted = [None, None];
        if self.tree.node_of(assoc).is_some() {
            for (class, best) in bests.into_iter().enumerate() {
                changed += self.tree.set_user_best(assoc, class, best);
            }
        } else {
            let fairshare = self.fairshare_of(assoc);
            for (want, best) in wanted.iter_mut().zip(bests) {
                *want = best.map(|(key_hi, job)| {
                    let weight = *weight.get_or_insert_with(|| {
                        self.records[job as usize]
                            .as_ref()
                            .expect("an indexed job has a record")
                            .fairshare_term(1.0)
                    });
                    ordered_bits(key_with_term(key_hi, weight * fairshare))
                });
            }
        }
        let user = &mut self.users[assoc as usize];
        let mut moved = false;
        for (class, want) in wanted.into_iter().enumerate() {
            if user.entered[class] != want {
                user.entered[class] = want;
                changed += 1;
                moved = true;
            }
        }
        (changed, moved)
    }

    /// A user association's fair-share factor (0 when none is known, as
    /// in the oracle).
    pub fn fairshare_of(&self, assoc: AssocId) -> f64 {
        if let Some(node) = self.tree.node_of(assoc) {
            return self.tree.factor_of_node(node).unwrap_or(0.0);
        }
        self.fairshare
            .get(assoc as usize)
            .copied()
            .flatten()
            .map_or(0.0, f64::from_bits)
    }

    /// One user association's entry of [`Queue::fairshare_factors`]
    /// (`None`: it has none), without the walk of the whole tree: a user
    /// placed in the sorted tree (Fair Tree) has its walk's factor, any
    /// other the factor the dataflow sent.
    pub fn fairshare_factor(&self, assoc: AssocId) -> Option<f64> {
        let placed = self.tree.node_of(assoc);
        if let Some(factor) = placed.and_then(|node| self.tree.factor_of_node(node)) {
            return Some(factor);
        }
        self.fairshare
            .get(assoc as usize)
            .copied()
            .flatten()
            .map(f64::from_bits)
    }

    /// [`Queue::fairshare_factors`] as a dense table by association id
    /// (`None`: no entry), built without a map.
    pub fn fairshare_factors_dense(&self) -> Vec<Option<f64>> {
        let mut dense: Vec<Option<f64>> = self
            .fairshare
            .iter()
            .map(|bits| bits.map(f64::from_bits))
            .collect();
        for (assoc, factor) in self.tree.all_factors() {
            *grow(&mut dense, assoc as usize) = Some(factor);
        }
        dense
    }

    /// Every user association's factor that the dataflow sent
    /// ([`Queue::fairshare_factors_dense`]'s entries).
    pub fn fairshare_factors(&self) -> BTreeMap<AssocId, f64> {
        self.fairshare_factors_dense()
            .into_iter()
            .enumerate()
            .filter_map(|(assoc, factor)| Some((assoc as AssocId, factor?)))
            .collect()
    }

    /// Every user association's factor by id (0: none), for a pass over
    /// every record (one walk of the tree instead of one per job).
    pub fn factor_table(&self) -> Vec<f64> {
        self.fairshare_factors_dense()
            .into_iter()
            .map(|factor| factor.unwrap_or(0.0))
            .collect()
    }

    /// The facts other than fair-share factors (Moab's read-time context).
    pub fn facts(&self) -> Vec<Fact> {
        self.facts.keys().cloned().collect()
    }

    /// One job's record, if the job is active.
    pub fn record(&self, job: JobId) -> Option<&PriorityRecord> {
        self.records.get(job as usize)?.as_ref()
    }

    /// Every active job's record, in id order.
    pub fn records(&self) -> impl Iterator<Item = &PriorityRecord> {
        self.records.iter().flatten()
    }

    /// The number of active jobs' records.
    pub fn len(&self) -> usize {
        self.live
    }

    /// The number of ranked jobs (pending, eligible, not held).
    pub fn ranked_len(&self) -> usize {
        self.fifo.len()
    }

    /// Does the queue hold no record?
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Any active job's record (they all carry the same configuration).
    pub fn any_record(&self) -> Option<&PriorityRecord> {
        if self.is_empty() {
            return None;
        }
        self.records().next()
    }

    /// How many ranked jobs a user association has.
    pub fn ranked_jobs_of(&self, assoc: AssocId) -> u64 {
        self.users.get(assoc as usize).map_or(0, |user| {
            user.jobs.iter().map(|jobs| jobs.len() as u64).sum()
        })
    }

    /// A user association's ranked jobs (every rank class).
    pub fn ranked_job_ids_of(&self, assoc: AssocId) -> impl Iterator<Item = JobId> + '_ {
        (self.users.get(assoc as usize).into_iter())
            .flat_map(|user| user.jobs.iter().flatten().map(|(_, job)| *job))
    }

    /// The ranked jobs by submit time (earliest first; the same second by
    /// job id), as `(order-preserving submit time, job)`.
    pub fn by_submit(&self) -> impl Iterator<Item = (u64, JobId)> + '_ {
        self.fifo.iter().copied()
    }
}

/// A ranked record's class as an index of [`Queue::time_shifts`] (`None`:
/// not ranked).
pub fn rank_class_index(record: &PriorityRecord) -> Option<usize> {
    class_index(record.class)
}

/// A user association's best job in a class.
fn best_job(users: &[UserJobs], assoc: AssocId, class: usize) -> Option<Best> {
    let (Reverse(key), job) = users.get(assoc as usize)?.best[class]?;
    Some((key, job))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::priority::combo::{Globals, KeyCtx};
    use crate::priority::inputs::{Phase, PriorityParams};
    use crate::priority::record::build_record;
    use crate::types::ROOT;

    /// Fair-share weight 1,000 and no other weight: a job's sum is
    /// `1000 · f(u) − nice` (site 0), every job in the capped class.
    fn context() -> Arc<JobContext> {
        let params = PriorityParams {
            weight_fairshare: 1_000,
            weight_age: 0,
            weight_assoc: 0,
            weight_job_size: 0,
            weight_partition: 0,
            weight_qos: 0,
            ..PriorityParams::default()
        };
        Arc::new(JobContext {
            ctx: KeyCtx::default(),
            globals: Arc::new(Globals {
                params,
                max_assoc: 0,
                max_qos: 0,
                max_partition: 1,
                cluster_nodes: 1,
                cluster_tres: Vec::new(),
            }),
        })
    }

    pub(super) fn record(job: JobId, assoc: AssocId, nice: i64) -> PriorityRecord {
        let row = JobRow {
            job,
            assoc,
            phase: Phase::Pending,
            begun: true,
            nice,
            nodes_bits: 1f64.to_bits(),
            cpus_bits: 1f64.to_bits(),
            ..JobRow::default()
        };
        build_record(&row, &context())
    }

    pub(super) fn fairshare(assoc: AssocId, factor: f64) -> Fact {
        Fact::Fairshare {
            assoc,
            factor_bits: factor.to_bits(),
        }
    }

    /// The jobs in candidate order at time 0.
    fn order(queue: &Queue) -> Vec<JobId> {
        let mut candidates = queue.candidates(0);
        std::iter::from_fn(|| candidates.next_candidate().map(|(r, _)| r.job())).collect()
    }

    #[test]
    fn a_fairshare_change_reorders_users_without_touching_a_record() {
        let touched = TouchCounter::new();
        let mut queue = Queue::new();
        let mut captured = Captured {
            records: vec![
                ((1, record(1, 1, 0)), 1, 1),
                ((2, record(2, 2, 0)), 1, 1),
                ((3, record(3, 2, 10)), 1, 1),
            ],
            facts: vec![(fairshare(1, 0.25), 1, 1), (fairshare(2, 0.75), 1, 1)],
            ..Captured::default()
        };
        queue.absorb(&mut captured, &touched);
        // 750 (job 2), 740 (job 3: nice 10), 250 (job 1).
        assert_eq!(order(&queue), vec![2, 3, 1]);
        assert_eq!(touched.take(), 3 + 2, "three job entries, two user entries");

        // User 1's factor 0.25 -> 1.0: 1000 beats 750; only its entry moves.
        let mut captured = Captured {
            records: Vec::new(),
            facts: vec![(fairshare(1, 0.25), 2, -1), (fairshare(1, 1.0), 2, 1)],
            ..Captured::default()
        };
        queue.absorb(&mut captured, &touched);
        assert_eq!(order(&queue), vec![1, 2, 3]);
        assert_eq!(touched.take(), 1, "user 1's one entry");
        assert_eq!(queue.fairshare_of(1), 1.0);
    }

    /// A slot of the sorted tree: labelled `label` in `group`; `tie`: its
    /// `LevelFS` equals the previous member's (a user's run then starts at
    /// the user labelled `run`).
    fn slot(
        group: NodeId,
        label: u64,
        weight: u64,
        assoc: Option<AssocId>,
        tie: bool,
        run: u64,
    ) -> TreeSlot {
        use super::super::fair_tree::SlotPlacement;
        TreeSlot {
            group,
            weight,
            placement: SlotPlacement {
                label,
                local_tie: tie,
                run_label: run,
                user: assoc.is_some(),
                parent_account: false,
            },
            assoc,
        }
    }

    fn tree_fact(node: NodeId, slot: TreeSlot) -> Fact {
        Fact::TreeSlot { node, slot }
    }

    /// Fair Tree kept as placements: root -> A (node 1: users u1, u2) and B
    /// (node 2: user u3); N = 3. Ranks by hand from Slurm's walk: in order
    /// A, B the positions are u1 0, u2 1, u3 2, ranks 3, 2, 1, factors 1,
    /// 2/3, 1/3; priorities (weight 1,000, minus nice) 1000 (job 1, u1),
    /// 666 (job 2, u2), 333 + 500 = 833 (job 3, u3, nice -500).
    #[test]
    fn fair_tree_ranks_come_from_placements_and_a_reorder_touches_no_user() {
        let touched = TouchCounter::new();
        let mut queue = Queue::new();
        let (a, b, u1, u2, u3) = (1, 2, 3, 4, 5);
        let mut captured = Captured {
            records: vec![
                ((1, record(1, 1, 0)), 1, 1),
                ((2, record(2, 2, 0)), 1, 1),
                ((3, record(3, 3, -500)), 1, 1),
            ],
            facts: vec![
                (tree_fact(a, slot(ROOT, 10, 2, None, false, 10)), 1, 1),
                (tree_fact(b, slot(ROOT, 20, 1, None, false, 20)), 1, 1),
                (tree_fact(u1, slot(a, 10, 1, Some(1), false, 10)), 1, 1),
                (tree_fact(u2, slot(a, 20, 1, Some(2), false, 20)), 1, 1),
                (tree_fact(u3, slot(b, 10, 1, Some(3), false, 10)), 1, 1),
            ],
            ..Captured::default()
        };
        queue.absorb(&mut captured, &touched);
        assert_eq!(queue.fairshare_of(1), 1.0);
        assert_eq!(queue.fairshare_of(2), 2.0 / 3.0);
        assert_eq!(queue.fairshare_of(3), 1.0 / 3.0);
        assert_eq!(order(&queue), vec![1, 3, 2]);
        let all = queue.fairshare_factors();
        assert_eq!(all.get(&2), Some(&(2.0 / 3.0)));
        touched.take();

        // B moves before A (a label below A's): u3 at 0 (1.0), u1 at 1
        // (2/3), u2 at 2 (1/3): 1500 (job 3), 666 (job 1), 333 (job 2).
        // Only B's slot changes: A keeps its label.
        let mut captured = Captured {
            records: Vec::new(),
            facts: vec![
                (tree_fact(b, slot(ROOT, 20, 1, None, false, 20)), 2, -1),
                (tree_fact(b, slot(ROOT, 5, 1, None, false, 5)), 2, 1),
            ],
            ..Captured::default()
        };
        queue.absorb(&mut captured, &touched);
        assert_eq!(touched.take(), 1, "one slot, no user entry");
        assert_eq!(order(&queue), vec![3, 1, 2]);
        assert_eq!(queue.fairshare_of(3), 1.0);
        assert_eq!(queue.fairshare_of(1), 2.0 / 3.0);
        assert_eq!(queue.fairshare_of(2), 1.0 / 3.0);

        // u2 ties with u1 (its run starts at u1): it takes u1's rank 2.
        let mut captured = Captured {
            records: Vec::new(),
            facts: vec![
                (tree_fact(u2, slot(a, 20, 1, Some(2), false, 20)), 3, -1),
                (tree_fact(u2, slot(a, 20, 1, Some(2), true, 10)), 3, 1),
            ],
            ..Captured::default()
        };
        queue.absorb(&mut captured, &touched);
        assert_eq!(queue.fairshare_of(2), 2.0 / 3.0);
        assert_eq!(queue.fairshare_factors().get(&2), Some(&(2.0 / 3.0)));
        // Job 3 (1500) first, then jobs 1 and 2 (666 each, equal bounds).
        let got = order(&queue);
        assert_eq!(got[0], 3);
        assert_eq!(
            got[1..].iter().copied().collect::<BTreeSet<_>>(),
            BTreeSet::from([1, 2])
        );
    }

    /// One account under root (node 1) with 1,000 users (nodes 2 to 1,001,
    /// associations 1 to 1,000, labelled in that order, no ties), one job
    /// each with the same key: by Slurm's walk user `i` (0-based) has rank
    /// `1000 − i`, so with weight 1,000 job `i + 1` has priority `1000 −
    /// i`. Every member's best key is the same, so the group's order by key
    /// says nothing; entering members by place too, the first ten jobs come
    /// out after a few dozen entries, not after every member.
    #[test]
    fn a_wide_group_with_equal_keys_is_read_by_place() {
        let touched = TouchCounter::new();
        let mut queue = Queue::new();
        let users: u32 = 1_000;
        let account = 1;
        let mut facts = vec![(
            tree_fact(account, slot(ROOT, 10, u64::from(users), None, false, 10)),
            1,
            1,
        )];
        let mut records = Vec::new();
        for i in 0..users {
            let (node, assoc, label) = (2 + i, 1 + i, 10 * u64::from(1 + i));
            facts.push((
                tree_fact(node, slot(account, label, 1, Some(assoc), false, label)),
                1,
                1,
            ));
            records.push(((assoc, record(assoc, assoc, 0)), 1, 1));
        }
        let mut captured = Captured {
            records,
            facts,
            ..Captured::default()
        };
        queue.absorb(&mut captured, &touched);
        let mut candidates = queue.candidates(0);
        let first_ten: Vec<(JobId, f64)> = (0..10)
            .map(|_| {
                let (record, factor) = candidates.next_candidate().expect("a candidate");
                (record.job(), factor)
            })
            .collect();
        let expected: Vec<(JobId, f64)> = (0..10)
            .map(|i| (1 + i, f64::from(users - i) / f64::from(users)))
            .collect();
        assert_eq!(first_ten, expected);
        assert!(
            candidates.pushed < 100,
            "{} heap entries for ten jobs of a group of 1,000",
            candidates.pushed
        );
    }

    /// The search's contract on random sorted trees as they change (moves,
    /// ties that come and go, wide and deep groups, accounts with no user):
    /// every ranked job comes out once, with its user's exact factor (the
    /// walk up from the user, [`FairTree::factor_of_node`], not the
    /// search's own tightening), in non-increasing order of its bound.
    #[test]
    fn the_search_yields_every_job_once_in_bound_order_with_exact_factors() {
        use crate::tests::random_tree::{xorshift, RandomTree};
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        for _tree in 0..60 {
            let touched = TouchCounter::new();
            let mut random = RandomTree::new(&mut seed, 60);
            let mut queue = Queue::new();
            // Each user node `n` is association `n`, with 0 to 3 jobs whose
            // nice spreads their keys over less than the factors do.
            let mut records = Vec::new();
            let mut job: JobId = 0;
            for node in 0..random.users.len() {
                if !random.users[node] {
                    continue;
                }
                for _ in 0..xorshift(&mut seed, 4) {
                    job += 1;
                    let nice = xorshift(&mut seed, 200) as i64 - 100;
                    records.push(((job, record(job, node as AssocId, nice)), 1, 1));
                }
            }
            let jobs = records.len();
            for round in 0..20 {
                let facts = random
                    .updates()
                    .into_iter()
                    .map(|(node, slot, diff)| (tree_fact(node, slot), 1 + round, diff))
                    .collect();
                let mut captured = Captured {
                    records: std::mem::take(&mut records),
                    facts,
                    ..Captured::default()
                };
                queue.absorb(&mut captured, &touched);
                let mut candidates = queue.candidates(0);
                let mut seen = BTreeSet::new();
                let mut last = f64::INFINITY;
                while let Some((record, factor)) = candidates.next_candidate() {
                    assert!(seen.insert(record.job()), "job {} twice", record.job());
                    let node = queue.tree.node_of(record.row.assoc).expect("a placed user");
                    assert_eq!(Some(factor), queue.tree.factor_of_node(node));
                    let bound = record.upper_bound(0, factor);
                    assert!(bound <= last, "bound {bound} after {last}");
                    last = bound;
                }
                assert_eq!(seen.len(), jobs);
                random.move_some(&mut seed);
            }
        }
    }

    /// Three users of root's group, u1, u2, u3 labelled 10, 20, 30
    /// (positions 0, 1, 2; ranks 3, 2, 1 by Slurm's walk: factors 1, 2/3,
    /// 1/3). u1 moves to the end (label 40) across the two others, which
    /// keep their labels and move up one place each: u2 at 0 (1), u3 at 1
    /// (2/3), u1 at 2 (1/3); with weight 1,000 the jobs rank 2 (1000), 3
    /// (666), 1 (333). Then a user labelled 25 joins between u2 and u3
    /// (N = 4: u2 1, the new one 3/4, u3 1/2, u1 1/4) and u2 leaves (N = 3:
    /// the new one 1, u3 2/3, u1 1/3), neither touching another slot.
    #[test]
    fn a_slot_moved_across_others_is_moved_in_place() {
        let touched = TouchCounter::new();
        let mut queue = Queue::new();
        let (u1, u2, u3, u4) = (1, 2, 3, 4);
        let mut captured = Captured {
            records: vec![
                ((1, record(1, 1, 0)), 1, 1),
                ((2, record(2, 2, 0)), 1, 1),
                ((3, record(3, 3, 0)), 1, 1),
            ],
            facts: vec![
                (tree_fact(u3, slot(ROOT, 30, 1, Some(3), false, 30)), 1, 1),
                (tree_fact(u1, slot(ROOT, 10, 1, Some(1), false, 10)), 1, 1),
                (tree_fact(u2, slot(ROOT, 20, 1, Some(2), false, 20)), 1, 1),
            ],
            ..Captured::default()
        };
        queue.absorb(&mut captured, &touched);
        assert_eq!(order(&queue), vec![1, 2, 3]);
        assert_eq!(queue.fairshare_of(2), 2.0 / 3.0);
        touched.take();

        let mut captured = Captured {
            records: Vec::new(),
            facts: vec![
                (tree_fact(u1, slot(ROOT, 40, 1, Some(1), false, 40)), 2, 1),
                (tree_fact(u1, slot(ROOT, 10, 1, Some(1), false, 10)), 2, -1),
            ],
            ..Captured::default()
        };
        queue.absorb(&mut captured, &touched);
        assert_eq!(touched.take(), 1, "one slot, no user entry");
        assert_eq!(queue.fairshare_of(2), 1.0);
        assert_eq!(queue.fairshare_of(3), 2.0 / 3.0);
        assert_eq!(queue.fairshare_of(1), 1.0 / 3.0);
        assert_eq!(order(&queue), vec![2, 3, 1]);
        let all = queue.fairshare_factors();
        assert_eq!(all.get(&1), Some(&(1.0 / 3.0)));

        let mut captured = Captured {
            records: vec![((4, record(4, 4, 0)), 3, 1)],
            facts: vec![(tree_fact(u4, slot(ROOT, 25, 1, Some(4), false, 25)), 3, 1)],
            ..Captured::default()
        };
        queue.absorb(&mut captured, &touched);
        assert_eq!(queue.fairshare_of(2), 1.0);
        assert_eq!(queue.fairshare_of(4), 0.75);
        assert_eq!(queue.fairshare_of(3), 0.5);
        assert_eq!(queue.fairshare_of(1), 0.25);
        assert_eq!(order(&queue), vec![2, 4, 3, 1]);
        let mut captured = Captured {
            records: Vec::new(),
            facts: vec![(tree_fact(u2, slot(ROOT, 20, 1, Some(2), false, 20)), 4, -1)],
            ..Captured::default()
        };
        queue.absorb(&mut captured, &touched);
        assert_eq!(queue.fairshare_of(4), 1.0);
        assert_eq!(queue.fairshare_of(3), 2.0 / 3.0);
        assert_eq!(queue.fairshare_of(1), 1.0 / 3.0);
    }

    #[test]
    fn the_pending_time_bound_is_never_above_a_captured_update() {
        let row = |job| JobRow {
            job,
            ..JobRow::default()
        };
        let mut captured = Captured::default();
        // Appended to an empty capture: the earliest time appended.
        captured.note_pending([7, 5].into_iter());
        captured.rows.extend([(row(1), 7, 1), (row(2), 5, 1)]);
        assert_eq!(captured.pending_from, Some(5));
        // A later append lowers it, never raises it.
        captured.note_pending([9].into_iter());
        captured.rows.push((row(3), 9, 1));
        assert_eq!(captured.pending_from, Some(5));
        captured.note_pending([4].into_iter());
        captured.rows.push((row(4), 4, 1));
        assert_eq!(captured.pending_from, Some(4));
        // An empty append changes nothing.
        captured.note_pending(std::iter::empty());
        assert_eq!(captured.pending_from, Some(4));
        // Not known stays not known while anything is pending...
        captured.pending_from = None;
        captured.note_pending([8].into_iter());
        captured.rows.push((row(5), 8, 1));
        assert_eq!(captured.pending_from, None);
        // ...and a stale bound left after the capture was emptied is replaced.
        captured.rows.clear();
        captured.pending_from = Some(1);
        captured.note_pending([6].into_iter());
        assert_eq!(captured.pending_from, Some(6));
    }

    #[test]
    fn slot_updates_are_consolidated_by_node_then_slot() {
        // `early` sorts before `late` (label 0 before 1). Node 2: `early`
        // retracted and inserted again (net nothing), `late` inserted;
        // node 5: `early` retracted, `late` inserted twice; node 9: `early`.
        let early = slot(ROOT, 0, 1, Some(1), false, 0);
        let late = slot(ROOT, 1, 1, Some(1), false, 1);
        let updates = vec![
            (5, late, 1),
            (2, early, -1),
            (5, early, -1),
            (9, early, 1),
            (2, late, 1),
            (2, early, 1),
            (5, late, 1),
        ];
        assert_eq!(
            consolidate_slots(updates),
            vec![(2, late, 1), (5, early, -1), (5, late, 2), (9, early, 1)]
        );
        assert_eq!(consolidate_slots(Vec::new()), Vec::new());
    }

    #[test]
    fn a_successor_before_its_predecessors_retraction_leaves_one_record() {
        let touched = TouchCounter::new();
        let mut queue = Queue::new();
        let mut captured = Captured {
            records: vec![((7, record(7, 1, 0)), 1, 1)],
            facts: vec![(fairshare(1, 0.5), 1, 1)],
            ..Captured::default()
        };
        queue.absorb(&mut captured, &touched);
        // The new record first, then the old one's retraction, in one batch.
        let mut captured = Captured {
            records: vec![((7, record(7, 1, 5)), 2, 1), ((7, record(7, 1, 0)), 2, -1)],
            facts: Vec::new(),
            ..Captured::default()
        };
        queue.absorb(&mut captured, &touched);
        assert_eq!(queue.records().count(), 1);
        assert_eq!(queue.record(7).map(|r| r.row.nice), Some(5));
        assert_eq!(order(&queue), vec![7]);
        // Equal updates that cancel change nothing.
        let mut captured = Captured {
            records: vec![((7, record(7, 1, 9)), 3, 1), ((7, record(7, 1, 9)), 3, -1)],
            facts: Vec::new(),
            ..Captured::default()
        };
        queue.absorb(&mut captured, &touched);
        assert_eq!(queue.record(7).map(|r| r.row.nice), Some(5));
    }

    /// A classic association's inputs fact (dampening 1).
    fn classic_node(
        node: NodeId,
        fs_parent: Option<NodeId>,
        child_level: u64,
        user: Option<AssocId>,
    ) -> Fact {
        Fact::ClassicNode {
            node,
            inputs: Box::new(crate::priority::classic::ClassicNode {
                fs_parent,
                shares: fairflow_model::Shares::Value(1),
                usage: 0,
                child_level,
                child_usage: 0,
                user,
                dampening_factor: 1,
                depth_oblivious: false,
            }),
        }
    }

    #[test]
    fn switching_between_classic_and_sent_factors_in_one_batch_keeps_the_new_ones() {
        // Classic: root with users 1 and 2 (one share each, level shares 2),
        // no usage: S = 1/2, UE = UN = 0, F = 2^0 = 1 for both.
        let classic = [
            classic_node(0, None, 2, None),
            classic_node(1, Some(0), 0, Some(1)),
            classic_node(2, Some(0), 0, Some(2)),
        ];
        let touched = TouchCounter::new();
        let mut queue = Queue::new();
        let mut captured = Captured {
            records: vec![((1, record(1, 1, 0)), 1, 1), ((2, record(2, 2, 0)), 1, 1)],
            facts: classic.iter().map(|fact| (fact.clone(), 1, 1)).collect(),
            ..Captured::default()
        };
        queue.absorb(&mut captured, &touched);
        assert_eq!(queue.fairshare_of(1), 1.0);
        assert_eq!(queue.fairshare_of(2), 1.0);
        // Another algorithm in one batch: user 1's sent factor equals its
        // classic one (1.0) and must stay; user 2's is 0.5.
        let mut captured = Captured {
            records: Vec::new(),
            facts: classic
                .iter()
                .map(|fact| (fact.clone(), 2, -1))
                .chain([(fairshare(1, 1.0), 2, 1), (fairshare(2, 0.5), 2, 1)])
                .collect(),
            ..Captured::default()
        };
        queue.absorb(&mut captured, &touched);
        assert_eq!(queue.fairshare_of(1), 1.0);
        assert_eq!(queue.fairshare_of(2), 0.5);
        assert_eq!(order(&queue), vec![1, 2]);
        // And back to classic: both 1.0 again.
        let mut captured = Captured {
            records: Vec::new(),
            facts: classic
                .iter()
                .map(|fact| (fact.clone(), 3, 1))
                .chain([(fairshare(1, 1.0), 3, -1), (fairshare(2, 0.5), 3, -1)])
                .collect(),
            ..Captured::default()
        };
        queue.absorb(&mut captured, &touched);
        assert_eq!(queue.fairshare_of(1), 1.0);
        assert_eq!(queue.fairshare_of(2), 1.0);
        assert!(
            queue.facts().is_empty(),
            "classic inputs are not read-time facts"
        );
    }
}
