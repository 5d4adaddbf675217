//! The jobs whose priority clears a threshold, counted from bounds instead
//! of evaluated one by one ([`Queue::count_clearing`], the counted
//! `position` of `PriorityReader::count_ahead`).
//!
//! # What is kept
//! Beside its job sets, each user association keeps its ranked jobs of each
//! rank class per (account, partition) in a vector sorted by `key_hi`
//! (highest first): the order statistics. A job event inserts or removes one
//! entry there (a binary search and a shift of the user's jobs of that
//! account and partition); a usage event touches none. The queue keeps the
//! largest `key_hi − key_lo` of any job it indexed (never lowered: a bound
//! of every job's error) and the age-cap times of its uncapped jobs.
//!
//! # How a threshold is counted
//! A job of class `c` with key `k` whose user's factor is `f` has at `now`
//! an exact sum between `lo(k)` and `hi(k)` ([`CountBounds`]), both
//! monotone in `k`; Slurm's integer priority (the sum truncated) is above
//! `P` when the sum is at least `P + 1`, and below `P` when it is below `P`.
//! So per sorted vector, two binary searches split its jobs into those
//! surely above `P` (a [`SurePrefix`], counted whole), a band that must be
//! evaluated exactly (their priority is `P` or the bounds are too loose to
//! tell; ties at `P` are decided by submit time and id by the caller), and
//! those surely below. Users are visited only where their best job can
//! reach `P`: the user order stops at the first that cannot; the sorted
//! tree (Fair Tree) is descended group by group, members by their
//! subtree's best key, each bounded by its first user's factor (the
//! highest of its subtree), and a group is left at the first member whose
//! bound with the group's factor cannot reach `P`. A group's user members
//! are first counted together (`groups`: their jobs in the group's own
//! vectors, bounded by the group's range of factors, from its first user's
//! to its block's last position's); only when one of their jobs may be in
//! the band is each user opened, and otherwise only the group's account
//! members are visited (`FairTree::account_members`). The walk only
//! gathers the users to open; their vectors are split after it, on every
//! core when there are many (`Queue::count_users`: a what-if's window opens
//! thousands, each a few cache misses). Cost: the groups
//! whose best job can reach `P`, a look at the ends of each (group,
//! account, partition) vector (a binary search where it straddles `P`),
//! the users of the groups with a job in the band, and the band; not the
//! jobs ahead.
//!
//! A paged count (`top --offset`, [`Queue::count_window`]) counts a window
//! of priorities instead of one threshold (the jobs surely above its top
//! counted, every other that may reach its bottom in the band) and takes a
//! sorted tree's member whose every job is surely above the window whole,
//! from the subtree's job count and lowest key kept up the tree
//! (`fair_tree::SubtreeJobs`), without opening it: such a count names no
//! account or partition of those jobs, which `position` needs, so it is
//! asked for only by the page.
//!
//! A record still in the uncapped class after its age cap passed (its row's
//! flag not yet flipped) is over-estimated by `lo` as well as `hi`: the
//! count declines (`None`) while any is, as it does for a job whose key is
//! not finite (Flux's expedited jobs); the caller then reads the slow way.

use std::cmp::Reverse;
use std::collections::BTreeSet;

use rayon::prelude::*;

use fairflow_model::Time;

use super::{Queue, Ranked, UserJobs, CAPPED, UNCAPPED};
use crate::priority::crossings::age_cap_at;

use crate::priority::fair_tree::{enters_tied, SubtreeJobs};
use crate::priority::record::{from_ordered_bits, key_with_term, PriorityRecord, RELATIVE_SLACK};
use crate::thresholds::{self, Threshold};
use crate::types::{AccountId, AssocId, JobId, JobIdSet, NameId, NodeId, ROOT};

mod groups;

pub(super) use groups::GroupCounts;

/// One user association's ranked jobs of one class in one account and
/// partition, highest `key_hi` first.
#[derive(Debug, Default)]
pub(super) struct CountedJobs {
    account: AccountId,
    partition: NameId,
    jobs: Vec<Ranked>,
}

impl UserJobs {
    /// Enter a ranked job (its [`counted_cell`]) in its (account,
    /// partition) vector.
    pub(super) fn insert_counted(&mut self, class: usize, (cell, entry): (Cell, Ranked)) {
        enter(&mut self.counted[class], cell, entry);
    }

    /// Take a ranked job (its [`counted_cell`]) out of its (account,
    /// partition) vector.
    pub(super) fn remove_counted(&mut self, class: usize, (cell, entry): (Cell, Ranked)) {
        leave(&mut self.counted[class], cell, entry);
    }

    /// The user's ranked jobs of `class`: how many, and the lowest
    /// `key_hi` (what its node carries up the sorted tree).
    pub(super) fn counted_jobs(&self, class: usize) -> SubtreeJobs {
        let mut own = SubtreeJobs::default();
        for vector in &self.counted[class] {
            own.jobs += vector.jobs.len() as u64;
            if let Some(&(Reverse(key), _)) = vector.jobs.last() {
                own.lowest_key = own.lowest_key.min(key);
            }
        }
        own
    }

    /// Every counted entry of `class`: `((account, partition), entry)`.
    pub(super) fn counted_entries(
        &self,
        class: usize,
    ) -> impl Iterator<Item = (Cell, Ranked)> + '_ {
        self.counted[class].iter().flat_map(|vector| {
            let cell = (vector.account, vector.partition);
            vector.jobs.iter().map(move |&entry| (cell, entry))
        })
    }
}

/// The (account, partition) of a counted vector.
pub(super) type Cell = (AccountId, NameId);

/// A ranked job's vector and entry in the counted vectors (its user's and
/// its group's).
pub(super) fn counted_cell(record: &PriorityRecord, job: JobId) -> (Cell, Ranked) {
    let cell = (record.row.account, record.row.partition);
    (cell, (Reverse(record.key_hi), job))
}

/// Enter `entry` in the (account, partition) vector of `vectors`.
fn enter(vectors: &mut Vec<CountedJobs>, (account, partition): Cell, entry: Ranked) {
    let at = match vectors
        .iter()
        .position(|v| v.account == account && v.partition == partition)
    {
        Some(at) => at,
        None => {
            vectors.push(CountedJobs {
                account,
                partition,
                jobs: Vec::new(),
            });
            vectors.len() - 1
        }
    };
    let jobs = &mut vectors[at].jobs;
    if let Err(index) = jobs.binary_search(&entry) {
        jobs.insert(index, entry);
    }
}

/// Take `entry` out of the (account, partition) vector of `vectors`.
fn leave(vectors: &mut Vec<CountedJobs>, (account, partition): Cell, entry: Ranked) {
    let Some(at) = vectors
        .iter()
        .position(|v| v.account == account && v.partition == partition)
    else {
        return;
    };
    if let Ok(index) = vectors[at].jobs.binary_search(&entry) {
        vectors[at].jobs.remove(index);
    }
    if vectors[at].jobs.is_empty() {
        vectors.swap_remove(at);
    }
}

/// What the counted read keeps queue-wide (see the module documentation).
#[derive(Debug, Default)]
pub(super) struct CountIndex {
    /// The largest `key_hi − key_lo` of any job indexed (never lowered).
    margin: f64,
    /// The age-cap times of the uncapped ranked jobs.
    age_caps: BTreeSet<(Time, JobId)>,
    /// Per Fair Tree group, its users' jobs together (`groups`).
    pub(super) groups: GroupCounts,
}

impl CountIndex {
    /// Note a ranked job of class `class`.
    pub(super) fn insert(&mut self, record: &PriorityRecord, class: usize) {
        let margin = from_ordered_bits(record.key_hi) - from_ordered_bits(record.key_lo);
        self.margin = if margin.is_finite() {
            self.margin.max(margin)
        } else {
            f64::INFINITY
        };
        if let Some(at) = self.age_cap(record, class) {
            self.age_caps.insert((at, record.job()));
        }
    }

    /// Forget a ranked job of class `class`.
    pub(super) fn remove(&mut self, record: &PriorityRecord, class: usize) {
        if let Some(at) = self.age_cap(record, class) {
            self.age_caps.remove(&(at, record.job()));
        }
    }

    fn age_cap(&self, record: &PriorityRecord, class: usize) -> Option<Time> {
        if class != UNCAPPED {
            return None;
        }
        age_cap_at(&record.context.globals.params, &record.row)
    }

    /// Do the bounds hold at `now` (no key without a finite bound, no
    /// uncapped record past its cap)?
    fn bounds_hold(&self, now: Time) -> bool {
        self.margin.is_finite() && self.age_caps.first().is_none_or(|&(at, _)| at > now)
    }
}

/// The bounds of a job's exact sum at one time, from its key and its
/// user's factor (see the module documentation).
#[derive(Debug, Clone, Copy)]
pub struct CountBounds {
    /// The fair-share weight (one configuration).
    fairshare_weight: f64,
    /// The queue's error bound ([`CountIndex::margin`]).
    margin: f64,
    /// What time adds per class, with its error bound.
    shift: [f64; 2],
}

impl CountBounds {
    /// An upper bound of the sum (the search's bound, `Candidates`).
    pub fn hi(&self, key: u64, factor: f64, class: usize) -> f64 {
        key_with_term(key, self.fairshare_weight * factor) + self.shift[class]
    }

    /// A lower bound of the sum: the key less the queue's margin, the term
    /// and the shift less their error bounds, and a relative slack for the
    /// rounding of these additions.
    pub fn lo(&self, key: u64, factor: f64, class: usize) -> f64 {
        let key = from_ordered_bits(key);
        let term = self.fairshare_weight * factor;
        let shift = self.shift[class];
        let slack = RELATIVE_SLACK * (key.abs() + term.abs() + shift.abs()) + RELATIVE_SLACK;
        key - self.margin + term + shift - 2.0 * slack
    }
}

/// Jobs of one (user, account, partition) vector whose priority is surely
/// above the threshold: a prefix of the vector.
#[derive(Debug, Clone, Copy)]
pub struct SurePrefix<'q> {
    /// The jobs' account.
    pub account: AccountId,
    /// The jobs' partition.
    pub partition: NameId,
    /// The jobs' rank class (an index of `Queue::time_shifts`).
    pub class: usize,
    /// The user's fair-share factor (`own_factor`), or a lower bound of
    /// the factors of the users whose jobs these are (a group's vector).
    pub factor: f64,
    /// Is `factor` the jobs' user's own (one user's vector)?
    pub own_factor: bool,
    /// The jobs, highest key first (the last has the lowest bounds).
    pub jobs: &'q [Ranked],
}

/// What [`Queue::count_clearing`] found.
#[derive(Debug)]
pub struct Counted<'q> {
    /// The bounds the count was made with.
    pub bounds: CountBounds,
    /// The jobs surely above the threshold, by vector.
    pub sure: Vec<SurePrefix<'q>>,
    /// Jobs surely above the threshold counted by whole subtrees (only
    /// when the count was asked to: not in `sure`).
    pub whole: u64,
    /// The jobs to evaluate exactly, with their user's factor.
    pub band: Vec<(&'q PriorityRecord, f64)>,
}

/// The fewest users the walk of a count finds for which they are counted
/// on every core ([`Queue::count_users`]).
const PARALLEL_USERS_FROM: usize = 1024;

/// Users counted per task of the pool.
const USERS_PER_TASK: usize = 256;

/// What some users' vectors gave ([`Queue::count_users`]): sure prefixes
/// and band jobs, as in [`Counted`].
type UsersFound<'q> = (Vec<SurePrefix<'q>>, Vec<(&'q PriorityRecord, f64)>);

/// A count under way: the window and what was found.
struct Counting<'q> {
    /// Jobs surely above this priority are counted whole.
    above: f64,
    /// Jobs that may reach this priority (and are not counted whole) are
    /// the band; the others are left.
    reach: f64,
    counted: Counted<'q>,
    /// Groups whose users were counted whole (`count_group_users`).
    groups_whole: u64,
    /// May a member's whole subtree be counted ([`SubtreeJobs`])?
    whole_subtrees: bool,
    /// Jobs left out of the band.
    left_out: Option<&'q JobIdSet>,
    /// The users the walk found, with their class and factor (counted
    /// after it, [`Queue::count_users`]).
    users: Vec<(AssocId, usize, f64)>,
}

impl Queue {
    /// The ranked jobs whose integer (Slurm) priority at `now` is surely
    /// above `priority` and those that must be evaluated to tell (see the
    /// module documentation); `None` when the bounds do not hold at `now`.
    pub fn count_clearing(&self, now: Time, priority: u64) -> Option<Counted<'_>> {
        self.count_window(now, (priority, priority), false, None)
    }

    /// [`Queue::count_clearing`] over a window of priorities `(reach,
    /// above)`, `reach <= above`: the jobs surely above `above` counted
    /// whole, the band every other job that may reach `reach` (the jobs of
    /// priority in the window among them, for the paged read); one
    /// threshold is the window `(P, P)`. `reach` 0 takes every job that is
    /// not counted whole (a sum may be below 0). With `whole_subtrees`, a
    /// sorted tree's member whose every job is surely above `above` is
    /// counted whole ([`SubtreeJobs`]) into [`Counted::whole`] instead of
    /// by vector (no prefixes: no account or partition of those jobs). The
    /// jobs of `left_out` are left out of the band (not looked up): a
    /// what-if's changed jobs, none of which is surely above the window.
    pub fn count_window<'q>(
        &'q self,
        now: Time,
        (reach, above): (u64, u64),
        whole_subtrees: bool,
        left_out: Option<&'q JobIdSet>,
    ) -> Option<Counted<'q>> {
        if !self.count.bounds_hold(now) {
            return None;
        }
        let fairshare_weight = self.any_record().map_or(0.0, |r| r.fairshare_term(1.0));
        let bounds = CountBounds {
            fairshare_weight,
            margin: self.count.margin,
            shift: self.time_shifts(now),
        };
        let mut counting = Counting {
            above: above as f64,
            reach: if reach == 0 {
                f64::NEG_INFINITY
            } else {
                reach as f64
            },
            counted: Counted {
                bounds,
                sure: Vec::new(),
                whole: 0,
                band: Vec::new(),
            },
            groups_whole: 0,
            whole_subtrees,
            left_out,
            users: Vec::new(),
        };
        for class in [UNCAPPED, CAPPED] {
            for &(Reverse(entered), assoc) in &self.by_user[class] {
                if from_ordered_bits(entered) + bounds.shift[class] < counting.reach {
                    break;
                }
                self.count_user(&mut counting, assoc, class, self.fairshare_of(assoc));
            }
            if self.tree.is_active() {
                let top_factor = self.tree.factor_at(0).unwrap_or(1.0);
                self.count_group(&mut counting, class, (ROOT, 0, false), top_factor);
            }
        }
        self.count_users(&mut counting);
        if self.tree.is_active() {
            thresholds::decide(Threshold::GroupUsersWhole, counting.groups_whole > 0);
        }
        Some(counting.counted)
    }

    /// Count one user association's jobs of `class` with its factor: once
    /// the walk is done ([`Queue::count_users`]).
    fn count_user(&self, counting: &mut Counting<'_>, assoc: AssocId, class: usize, factor: f64) {
        counting.users.push((assoc, class, factor));
    }

    /// Count the users the walk found ([`Queue::count_user`]): on every
    /// core when there are many (a what-if's window: thousands, each a few
    /// cache misses), else on this thread (a threshold's: a task's wake-up
    /// would cost more than it saves).
    fn count_users<'q>(&'q self, counting: &mut Counting<'q>) {
        let users = std::mem::take(&mut counting.users);
        let window = (counting.counted.bounds, counting.above, counting.reach);
        let left_out = counting.left_out;
        if users.len() < PARALLEL_USERS_FROM {
            let counted = &mut counting.counted;
            for &user in &users {
                let found = (&mut counted.sure, &mut counted.band);
                self.count_one_user(window, left_out, user, found);
            }
            return;
        }
        let parts: Vec<UsersFound<'q>> = (users.par_chunks(USERS_PER_TASK))
            .map(|chunk| {
                let mut found = UsersFound::default();
                for &user in chunk {
                    self.count_one_user(window, left_out, user, (&mut found.0, &mut found.1));
                }
                found
            })
            .collect();
        for (sure, band) in parts {
            counting.counted.sure.extend(sure);
            counting.counted.band.extend(band);
        }
    }

    /// Split one user association's vectors of `class` with its factor by
    /// the window `(bounds, above, reach)` into sure prefixes and band jobs
    /// (pushed onto the two vectors given), the jobs of
    /// `left_out` left out of the band.
    fn count_one_user<'q>(
        &'q self,
        (bounds, above, reach): (CountBounds, f64, f64),
        left_out: Option<&JobIdSet>,
        (assoc, class, factor): (AssocId, usize, f64),
        (sure_found, band_found): (
            &mut Vec<SurePrefix<'q>>,
            &mut Vec<(&'q PriorityRecord, f64)>,
        ),
    ) {
        let Some(user) = self.users.get(assoc as usize) else {
            return;
        };
        for vector in &user.counted[class] {
            let jobs = &vector.jobs;
            let (sure, maybe) = split(
                jobs,
                |key| bounds.lo(key, factor, class) >= above + 1.0,
                |key| bounds.hi(key, factor, class) >= reach,
            );
            if sure > 0 {
                sure_found.push(SurePrefix {
                    account: vector.account,
                    partition: vector.partition,
                    class,
                    factor,
                    own_factor: true,
                    jobs: &jobs[..sure],
                });
            }
            for &(_, job) in jobs.get(sure..maybe).unwrap_or(&[]) {
                if left_out.is_some_and(|left_out| left_out.contains(job)) {
                    continue;
                }
                if let Some(record) = self.record(job) {
                    band_found.push((record, factor));
                }
            }
        }
    }

    /// Count the members of a sorted tree's group (`group`: its node, the
    /// walk's position of its first user, whether it is entered tied),
    /// whose members' factors are at most `group_factor`.
    fn count_group<'q>(
        &'q self,
        counting: &mut Counting<'q>,
        class: usize,
        (group, start, tied): (NodeId, u64, bool),
        group_factor: f64,
    ) {
        let bounds = counting.counted.bounds;
        let users_whole = self.count_group_users(counting, class, (group, start), group_factor);
        // Users counted together: only the accounts are left to open.
        let members: Box<dyn Iterator<Item = _>> = if users_whole {
            Box::new(self.tree.account_members(group, class))
        } else {
            Box::new(self.tree.members(group, class))
        };
        for (node, (key, _)) in members {
            if bounds.hi(key, group_factor, class) < counting.reach {
                break;
            }
            let Some((_, (node, placement, assoc))) = self.tree.member(node) else {
                continue;
            };
            if self.count_member_whole(counting, class, node, start + placement.prefix) {
                continue;
            }
            match assoc {
                Some(assoc) => {
                    let factor = self
                        .tree
                        .factor_in_group(start, tied, &placement)
                        .unwrap_or(0.0);
                    if bounds.hi(key, factor, class) >= counting.reach {
                        self.count_user(counting, assoc, class, factor);
                    }
                }
                None => {
                    let member_start = start + placement.prefix;
                    let opens_tied = enters_tied(&placement, tied);
                    let factor = self
                        .tree
                        .first_user_factor(node, member_start, opens_tied)
                        .unwrap_or(group_factor);
                    if bounds.hi(key, factor, class) >= counting.reach {
                        let member = (node, member_start, opens_tied);
                        self.count_group(counting, class, member, factor);
                    }
                }
            }
        }
    }
}

impl Queue {
    /// Count a member's whole subtree of `class` (its block of walk
    /// positions starting at `member_start`) when every one of its jobs is
    /// surely above the count's top (its lowest key with the block's
    /// lowest factor); `false` (nothing counted) otherwise, or when the
    /// count does not take whole subtrees.
    fn count_member_whole(
        &self,
        counting: &mut Counting<'_>,
        class: usize,
        node: NodeId,
        member_start: u64,
    ) -> bool {
        if !counting.whole_subtrees {
            return false;
        }
        let SubtreeJobs { jobs, lowest_key } = self.tree.subtree_jobs(node, class);
        if jobs == 0 {
            return false;
        }
        let block = if self.tree.is_user(node) {
            1
        } else {
            self.tree.group_users(node)
        };
        let lowest_factor = self.tree.lowest_factor_in_block(member_start, block);
        let bounds = counting.counted.bounds;
        if bounds.lo(lowest_key, lowest_factor, class) < counting.above + 1.0 {
            return false;
        }
        counting.counted.whole += jobs;
        true
    }

    /// Count the jobs of `class` of a group's user members whole, from the
    /// group's vectors (`groups`), when none of them is in the band: every
    /// user of the group (`start`: the walk's position of its first) stands
    /// in its block of positions, so its factor is at most `group_factor`
    /// and at least that of the block's last position (ranks never increase
    /// along the walk). `false` (nothing counted) when a job may be in the
    /// band or the group keeps no vectors: the caller opens each user.
    fn count_group_users<'q>(
        &'q self,
        counting: &mut Counting<'q>,
        class: usize,
        (group, start): (NodeId, u64),
        group_factor: f64,
    ) -> bool {
        let Some(vectors) = self.count.groups.vectors(group, class) else {
            return false;
        };
        let users = self.tree.group_users(group);
        let lowest_factor = self.tree.lowest_factor_in_block(start, users);
        let bounds = counting.counted.bounds;
        let (above, reach) = (counting.above, counting.reach);
        let first = counting.counted.sure.len();
        for vector in vectors {
            let jobs = &vector.jobs;
            let (sure, maybe) = split(
                jobs,
                |key| bounds.lo(key, lowest_factor, class) >= above + 1.0,
                |key| bounds.hi(key, group_factor, class) >= reach,
            );
            if maybe > sure {
                counting.counted.sure.truncate(first);
                return false;
            }
            if sure > 0 {
                counting.counted.sure.push(SurePrefix {
                    account: vector.account,
                    partition: vector.partition,
                    class,
                    factor: lowest_factor,
                    own_factor: false,
                    jobs: &jobs[..sure],
                });
            }
        }
        counting.groups_whole += 1;
        true
    }
}

/// A vector's (highest key first) split by a threshold: how many of its
/// first jobs are surely above (`sure_above`, true on a prefix) and how
/// many may reach the window (`reaches`, true on a prefix at least as
/// long: a job surely above reaches). The two ends are tried first: at a
/// threshold most vectors are wholly above it or wholly below, and are
/// then split without a search.
fn split(
    jobs: &[Ranked],
    sure_above: impl Fn(u64) -> bool,
    reaches: impl Fn(u64) -> bool,
) -> (usize, usize) {
    let (Some(&(Reverse(first), _)), Some(&(Reverse(last), _))) = (jobs.first(), jobs.last())
    else {
        return (0, 0);
    };
    if sure_above(last) {
        return (jobs.len(), jobs.len());
    }
    if !reaches(first) {
        return (0, 0);
    }
    let maybe = if reaches(last) {
        jobs.len()
    } else {
        jobs.partition_point(|&(Reverse(key), _)| reaches(key))
    };
    let sure = jobs[..maybe].partition_point(|&(Reverse(key), _)| sure_above(key));
    (sure, maybe)
}

#[cfg(test)]
mod tests {
    use super::super::tests::{fairshare, record};
    use super::*;
    use crate::priority::queue::Captured;
    use crate::types::TouchCounter;

    /// Fair-share weight 1,000 and nothing else but nice (every job capped):
    /// a job's sum is `1000 · f − nice`. User 1 (factor 0.5) has jobs 1, 2
    /// and 3 at 600, 500 and 100; user 2 (factor 0.25) jobs 4 and 5 at 550
    /// and 250. Counted against 499: 600 and 550 are surely above (at least
    /// 500, so priority 500 or more), 500 is the band (its lower bound is
    /// a hair below 500: it must be evaluated), 250 and 100 surely below.
    #[test]
    fn a_threshold_splits_each_user_into_sure_band_and_below_by_hand() {
        let touched = TouchCounter::new();
        let mut queue = Queue::new();
        let mut captured = Captured {
            records: vec![
                ((1, record(1, 1, -100)), 1, 1),
                ((2, record(2, 1, 0)), 1, 1),
                ((3, record(3, 1, 400)), 1, 1),
                ((4, record(4, 2, -300)), 1, 1),
                ((5, record(5, 2, 0)), 1, 1),
            ],
            facts: vec![(fairshare(1, 0.5), 1, 1), (fairshare(2, 0.25), 1, 1)],
            ..Captured::default()
        };
        queue.absorb(&mut captured, &touched);
        let counted = queue.count_clearing(0, 499).expect("bounds hold");
        let mut sure: Vec<(f64, Vec<JobId>)> = counted
            .sure
            .iter()
            .map(|prefix| (prefix.factor, prefix.jobs.iter().map(|&(_, j)| j).collect()))
            .collect();
        sure.sort_by(|a, b| a.0.total_cmp(&b.0));
        assert_eq!(sure, vec![(0.25, vec![4]), (0.5, vec![1])]);
        let band: Vec<(JobId, f64)> = counted.band.iter().map(|(r, f)| (r.job(), *f)).collect();
        assert_eq!(band, vec![(2, 0.5)]);
        // Against 99 every job clears 100 or more but job 3 (exactly 100,
        // the band); against 600 only job 1 is left, in the band.
        let counted = queue.count_clearing(0, 99).expect("bounds hold");
        let sure: u64 = counted.sure.iter().map(|p| p.jobs.len() as u64).sum();
        assert_eq!(sure, 4);
        assert_eq!(counted.band.len(), 1);
        assert_eq!(counted.band[0].0.job(), 3);
        let counted = queue.count_clearing(0, 600).expect("bounds hold");
        assert!(counted.sure.is_empty());
        let band: Vec<JobId> = counted.band.iter().map(|(r, _)| r.job()).collect();
        assert_eq!(band, vec![1]);
    }
}
