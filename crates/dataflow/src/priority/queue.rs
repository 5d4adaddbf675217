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

pub use count::{CountBounds, Counted, SurePrefix};

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
    /// The Fair Tree group its jobs are also entered in (its tree slot's
    /// group when placed; `count::GroupCounts`).
    counted_in: Option<NodeId>,
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
            let (cell, entry) = count::counted_cell(&record, job);
            user.insert_counted(class, (cell, entry));
            if let Some(group) = user.counted_in {
                self.count.groups.insert(group, class, cell, entry);
            }
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
            let (cell, entry) = count::counted_cell(old, job);
            user.remove_counted(class, (cell, entry));
            if let Some(group) = user.counted_in {
                self.count.groups.remove(group, class, cell, entry);
            }
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
        self.move_counted_group(assoc);
        let bests = [UNCAPPED, CAPPED].map(|class| best_job(&self.users, assoc, class));
        let mut changed = 0;
        // A placed user is entered in the tree, the others in the user order.
        let mut wanted = [None, None];
        if self.tree.node_of(assoc).is_some() {
            for (class, best) in bests.into_iter().enumerate() {
                changed += self.tree.set_user_best(assoc, class, best);
                let own = self.users[assoc as usize].counted_jobs(class);
                self.tree.set_user_jobs(assoc, class, own);
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

    /// Enter a user association's ranked jobs in the group of its tree
    /// slot (out of the one they were in), when that changed: the user was
    /// placed or unplaced.
    fn move_counted_group(&mut self, assoc: AssocId) {
        let group = self.tree.group_of_user(assoc);
        let user = &mut self.users[assoc as usize];
        let was = std::mem::replace(&mut user.counted_in, group);
        if was == group {
            return;
        }
        for class in [UNCAPPED, CAPPED] {
            for (cell, entry) in user.counted_entries(class) {
                if let Some(old) = was {
                    self.count.groups.remove(old, class, cell, entry);
                }
                if let Some(new) = group {
                    self.count.groups.insert(new, class, cell, entry);
                }
            }
        }
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

    /// About `count` active jobs' records, spread evenly over the job ids
    /// (an estimate's sample; every record when there are fewer).
    pub fn sample_records(&self, count: usize) -> impl Iterator<Item = &PriorityRecord> {
        let stride = (self.records.len() / count.max(1)).max(1);
        self.records.iter().step_by(stride).flatten()
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

    /// The sorted tree (Fair Tree with Slurm's ties; inactive otherwise).
    pub fn tree(&self) -> &FairTree {
        &self.tree
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
mod tests;
