//! The search over the queue: the ranked jobs in non-increasing order of
//! their upper bound at a read's time ([`Queue::candidates`]).
//!
//! A best-first merge (the threshold algorithm of Fagin, Lotem and Naor
//! over the users): a heap holds the head of each class's user order and
//! the next job of each user taken from it, each with its upper bound at
//! `now`; a user's bound is exactly its best job's bound, so candidates come
//! out in non-increasing bound order and the reader stops as soon as the
//! next bound cannot reach the `k`-th priority. Under Fair Tree the heap
//! also holds tree members, bounded by their subtree's best key and their
//! first user's factor (the search down the sorted tree, see
//! [`super::fair_tree`]); an opened group enters it as one entry that
//! yields its members from two orders in turn, by best key and by place
//! (`OpenGroup`: the threshold algorithm again, within the group): a wide
//! group costs the members whose bounds reach the top of the heap, not all
//! of them, and where its members' best keys are close (a group of large
//! accounts) the factors falling along its order stop it.

use std::cmp::{Ordering as CmpOrdering, Reverse};
use std::collections::{btree_set, BinaryHeap};
use std::iter::Peekable;

use fairflow_model::Time;

use super::{best_job, Queue, Ranked, CAPPED, UNCAPPED};
use crate::priority::fair_tree::{enters_tied, Best, SlurmPlacement};
use crate::priority::record::{from_ordered_bits, key_with_term, PriorityRecord};
use crate::types::{AssocId, NodeId, ROOT};

impl Queue {
    /// The ranked jobs in non-increasing order of their upper bound at
    /// `now` (see the module documentation).
    pub fn candidates(&self, now: Time) -> Candidates<'_> {
        let mut candidates = Candidates {
            queue: self,
            now,
            heap: BinaryHeap::new(),
            cursors: Vec::new(),
            groups: Vec::new(),
            members: Vec::new(),
            shift: [0.0, 0.0],
            fairshare_weight: 0.0,
            pushed: 0,
        };
        // One configuration: every record weighs the factor alike.
        candidates.fairshare_weight = self.any_record().map_or(0.0, |r| r.fairshare_term(1.0));
        candidates.shift = self.time_shifts(now);
        for class in [UNCAPPED, CAPPED] {
            candidates.push_cursor(Source::Users(class), self.by_user[class].iter().peekable());
        }
        if self.tree.is_active() {
            let top_factor = self.tree.factor_at(0).unwrap_or(1.0);
            for class in [UNCAPPED, CAPPED] {
                candidates.push_member(Member {
                    class,
                    node: ROOT,
                    assoc: None,
                    start: 0,
                    factor: top_factor,
                    tight: true,
                    placement: SlurmPlacement::default(),
                    in_tied: false,
                });
            }
        }
        candidates
    }

    /// What passing time adds to the bound of a job of each rank class at
    /// `now` ([`PriorityRecord::time_shift`]): every uncapped record moves
    /// by the same amount (one configuration), capped ones not at all.
    pub fn time_shifts(&self, now: Time) -> [f64; 2] {
        let any_uncapped = self.by_user[UNCAPPED]
            .first()
            .and_then(|&(_, assoc)| best_job(&self.users, assoc, UNCAPPED))
            .or_else(|| self.tree.best_of(ROOT, UNCAPPED));
        let uncapped = any_uncapped
            .and_then(|(_, job)| self.record(job))
            .map_or(0.0, |record| record.time_shift(now));
        [uncapped, 0.0]
    }
}

/// Where a cursor's candidates come from.
#[derive(Debug, Clone, Copy)]
enum Source {
    /// A class's user order.
    Users(usize),
    /// One user association's jobs of a class, with its factor.
    Jobs { class: usize, factor: f64 },
}

impl Source {
    /// The rank class its candidates are in.
    fn class(self) -> usize {
        match self {
            Source::Users(class) | Source::Jobs { class, .. } => class,
        }
    }
}

/// A member of the sorted tree in the search: its subtree's best job in
/// `class`, bounded with `factor` (its first user's factor when `tight`,
/// else its group's, an upper bound of it).
#[derive(Debug, Clone, Copy)]
struct Member {
    class: usize,
    node: NodeId,
    assoc: Option<AssocId>,
    /// The position of its first user in the walk.
    start: u64,
    factor: f64,
    tight: bool,
    /// Its placement in its group (the root: the default, never tied).
    placement: SlurmPlacement,
    /// Was its group entered tied (Slurm's walk, carried down the search)?
    in_tied: bool,
}

/// The factor a member is read with where its exact one is not found: a
/// user 0, an account its bound so far.
fn fallback_factor(member: &Member) -> f64 {
    match member.assoc {
        Some(_) => 0.0,
        None => member.factor,
    }
}

/// An opened group of the sorted tree in the search. Its members are
/// entered from two orders, in turn (the threshold algorithm over the
/// group): by the best key in their subtree (its ranked set) and by their
/// place in the group (its members by label, whose first users' factors
/// never increase along it). A member not yet entered from either has a
/// key at most the next by key and a factor at most `factor`, so the
/// group's bound is their sum: it falls with the keys where the members'
/// keys spread, and with the factors where the group is wide.
#[derive(Debug, Clone, Copy)]
struct OpenGroup {
    class: usize,
    /// The group (its account's node).
    node: NodeId,
    /// The position of the group's first user in the walk.
    start: u64,
    /// An upper bound of the factor of every member from `next_in_order`
    /// on (at first, the group's first user's factor; then the factor of
    /// the last member entered by place).
    factor: f64,
    /// Was the group entered tied?
    tied: bool,
    /// The first member (index in the group's order) not yet entered by
    /// place.
    next_in_order: usize,
    /// Is the next member entered by place (else by key)?
    by_place: bool,
}

impl OpenGroup {
    /// One of its members as the search enters it: bounded with the
    /// group's factor (not yet tight), where Slurm's walk places it.
    fn member(&self, node: NodeId, placement: SlurmPlacement, assoc: Option<AssocId>) -> Member {
        Member {
            class: self.class,
            node,
            assoc,
            start: self.start + placement.prefix,
            factor: self.factor,
            tight: false,
            placement,
            in_tied: self.tied,
        }
    }
}

/// Members a group's entry by place may pass over (members with no job in
/// the class, or entered by key already) before it yields its turn.
const PLACE_SKIPS: usize = 8;

/// What a heap entry stands for: indices into the search's cursors,
/// groups and members, so that an entry is small (the heap moves entries
/// at every pop).
#[derive(Debug, Clone, Copy)]
enum Item {
    Cursor(usize),
    /// The next member of an opened group.
    Group(usize),
    /// A member of the sorted tree (`Candidates::members`).
    Member(usize),
}

struct HeapEntry {
    bound: f64,
    seq: u64,
    item: Item,
}

impl PartialEq for HeapEntry {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == CmpOrdering::Equal
    }
}

impl Eq for HeapEntry {}

impl PartialOrd for HeapEntry {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}

impl Ord for HeapEntry {
    fn cmp(&self, other: &Self) -> CmpOrdering {
        // Highest bound first; earlier entries first on ties (determinism).
        self.bound
            .total_cmp(&other.bound)
            .then_with(|| other.seq.cmp(&self.seq))
    }
}

/// An opened group's members, best first.
type GroupMembers<'q> = Peekable<Box<dyn Iterator<Item = (NodeId, Best)> + 'q>>;

/// The ranked jobs in non-increasing bound order, lazily (see
/// [`Queue::candidates`]).
pub struct Candidates<'q> {
    queue: &'q Queue,
    now: Time,
    heap: BinaryHeap<HeapEntry>,
    cursors: Vec<(Source, Peekable<btree_set::Iter<'q, Ranked>>)>,
    groups: Vec<(OpenGroup, GroupMembers<'q>)>,
    /// The tree members entered (the heap holds their indices).
    members: Vec<Member>,
    shift: [f64; 2],
    /// The fair-share weight of the configuration (of every record).
    fairshare_weight: f64,
    pub(super) pushed: u64,
}

impl<'q> Candidates<'q> {
    fn push(&mut self, bound: f64, item: Item) {
        self.pushed += 1;
        self.heap.push(HeapEntry {
            bound,
            seq: self.pushed,
            item,
        });
    }

    fn push_cursor(&mut self, source: Source, mut iter: Peekable<btree_set::Iter<'q, Ranked>>) {
        let Some(bound) = iter.peek().map(|&&entry| self.bound_of(source, entry)) else {
            return;
        };
        let cursor = self.cursors.len();
        self.cursors.push((source, iter));
        self.push(bound, Item::Cursor(cursor));
    }

    fn push_member(&mut self, member: Member) {
        let Some((key, _)) = self.queue.tree.best_of(member.node, member.class) else {
            return;
        };
        let bound = self.key_bound(key, member.factor, member.class);
        let index = self.members.len();
        self.members.push(member);
        self.push(bound, Item::Member(index));
    }

    /// The upper bound at `now` of a job of `class` whose rank key is `key`
    /// with the fair-share factor `factor` ([`PriorityRecord::upper_bound`]
    /// from the key an index holds: no record is read).
    fn key_bound(&self, key: u64, factor: f64, class: usize) -> f64 {
        self.unshifted_bound(key, factor) + self.shift[class]
    }

    /// [`Candidates::key_bound`] without the time shift.
    fn unshifted_bound(&self, key: u64, factor: f64) -> f64 {
        key_with_term(key, self.fairshare_weight * factor)
    }

    /// Enter an opened group again with the bound of the members it has
    /// not entered: the next best key with the group's factor (none left
    /// by key: every member with a job in the class was entered).
    fn push_group_head(&mut self, index: usize) {
        let open = self.groups[index].0;
        if let Some(&(_, (key, _))) = self.groups[index].1.peek() {
            let bound = self.key_bound(key, open.factor, open.class);
            self.push(bound, Item::Group(index));
        }
    }

    /// An opened group at the top of the heap: enter its next member by
    /// place or by key, in turn (see [`OpenGroup`]), and the group again.
    fn advance_group(&mut self, index: usize) {
        let by_place = self.groups[index].0.by_place;
        self.groups[index].0.by_place = !by_place;
        if by_place && self.enter_by_place(index) {
            self.push_group_head(index);
            return;
        }
        let (open, members) = &mut self.groups[index];
        let open = *open;
        let Some((node, _)) = members.next() else {
            return;
        };
        self.push_group_head(index);
        let Some((at, (node, placement, assoc))) = self.queue.tree.member(node) else {
            return;
        };
        if at < open.next_in_order {
            // Entered by place already.
            return;
        }
        // At the top of the heap with the bound it was entered with:
        // opened at once.
        self.expand(open.member(node, placement, assoc));
    }

    /// Enter an opened group's next member by place with its exact factor,
    /// which then bounds every member after it (false: none is left).
    fn enter_by_place(&mut self, index: usize) -> bool {
        let tree = &self.queue.tree;
        let open = self.groups[index].0;
        let end = tree.group_len(open.node);
        let mut at = open.next_in_order;
        let mut entered = None;
        while at < end && at < open.next_in_order + PLACE_SKIPS && entered.is_none() {
            let member = tree.member_at(open.node, at);
            at += 1;
            let Some((node, placement, assoc)) = member else {
                continue;
            };
            let Some((key, job)) = tree.best_of(node, open.class) else {
                continue;
            };
            // Entered by key already: its entry is before the next by key.
            let by_key_before = match self.groups[index].1.peek() {
                Some(&(head, (head_key, head_job))) => {
                    (Reverse(key), job, node) < (Reverse(head_key), head_job, head)
                }
                None => true,
            };
            if by_key_before {
                continue;
            }
            let mut member = open.member(node, placement, assoc);
            let exact = self.exact_factor(&member);
            member.factor = exact.unwrap_or_else(|| fallback_factor(&member));
            member.tight = true;
            entered = Some((member, exact));
        }
        let open = &mut self.groups[index].0;
        let moved = at != open.next_in_order;
        open.next_in_order = at;
        if let Some((member, exact)) = entered {
            // Members after it stand no higher in the walk.
            if let Some(exact) = exact {
                open.factor = open.factor.min(exact);
            }
            self.push_member(member);
        }
        moved
    }

    /// A member's exact factor: its first user's (a user: its own).
    /// `None` only where the tree is not consistent (no first user found).
    fn exact_factor(&self, member: &Member) -> Option<f64> {
        let tree = &self.queue.tree;
        match member.assoc {
            Some(_) => {
                let group_start = member.start - member.placement.prefix;
                tree.factor_in_group(group_start, member.in_tied, &member.placement)
            }
            None => {
                let opens_tied = enters_tied(&member.placement, member.in_tied);
                tree.first_user_factor(member.node, member.start, opens_tied)
            }
        }
    }

    fn bound_of(&self, source: Source, entry: Ranked) -> f64 {
        self.key_space_bound(source, entry) + self.shift[source.class()]
    }

    /// The bound of the next candidate (`None`: no ranked job is left).
    pub fn peek_bound(&self) -> Option<f64> {
        self.heap.peek().map(|entry| entry.bound)
    }

    /// The next candidate: its record and its user's fair-share factor.
    pub fn next_candidate(&mut self) -> Option<(&'q PriorityRecord, f64)> {
        loop {
            let entry = self.heap.pop()?;
            match entry.item {
                Item::Cursor(cursor) => {
                    if let Some(found) = self.advance(cursor, entry.bound) {
                        return Some(found);
                    }
                }
                Item::Group(index) => self.advance_group(index),
                Item::Member(index) => self.expand(self.members[index]),
            }
        }
    }

    /// Per rank class, an upper bound without the time shift (add
    /// [`Queue::time_shifts`] at any later `now`) on every job not yet
    /// returned: the largest bound left in the heap, each computed from the
    /// key its index holds exactly as the heap's bound was, less the shift.
    /// `-inf` for a class with nothing left. Valid for as long as no
    /// fair-share factor and no record changes (the bounds of the jobs
    /// behind an entry hold at every time: passing time moves every job of
    /// a class alike).
    pub fn unread_key_bounds(&mut self) -> [f64; 2] {
        let mut out = [f64::NEG_INFINITY; 2];
        for entry in self.heap.iter() {
            let (class, bound) = match &entry.item {
                Item::Cursor(cursor) => {
                    let (source, iter) = &mut self.cursors[*cursor];
                    let source = *source;
                    let Some(&&head) = iter.peek() else {
                        continue;
                    };
                    (source.class(), self.key_space_bound(source, head))
                }
                Item::Group(index) => {
                    let (open, members) = &mut self.groups[*index];
                    let open = *open;
                    let Some(&(_, (key, _))) = members.peek() else {
                        continue;
                    };
                    (open.class, self.unshifted_bound(key, open.factor))
                }
                Item::Member(index) => {
                    let member = &self.members[*index];
                    let Some((key, _)) = self.queue.tree.best_of(member.node, member.class) else {
                        continue;
                    };
                    (member.class, self.unshifted_bound(key, member.factor))
                }
            };
            out[class] = out[class].max(bound);
        }
        out
    }

    /// [`Candidates::bound_of`] without the time shift.
    fn key_space_bound(&self, source: Source, (Reverse(key), _): Ranked) -> f64 {
        match source {
            Source::Users(_) => from_ordered_bits(key),
            Source::Jobs { factor, .. } => self.unshifted_bound(key, factor),
        }
    }

    /// Take a cursor's head: a job is a candidate; a user joins with its jobs.
    fn advance(&mut self, cursor: usize, bound: f64) -> Option<(&'q PriorityRecord, f64)> {
        let (source, iter) = &mut self.cursors[cursor];
        let source = *source;
        let &(_, id) = iter.next().expect("a cursor in the heap has a head");
        if let Some(&&next) = iter.peek() {
            let next_bound = self.bound_of(source, next);
            self.push(next_bound, Item::Cursor(cursor));
        }
        let queue = self.queue;
        match source {
            Source::Users(class) => {
                let jobs = &queue.users[id as usize].jobs[class];
                let factor = queue.fairshare_of(id);
                self.push_cursor(Source::Jobs { class, factor }, jobs.iter().peekable());
                None
            }
            Source::Jobs { factor, .. } => {
                let record = queue.records[id as usize]
                    .as_ref()
                    .expect("an indexed job has a record");
                debug_assert_eq!(
                    bound.to_bits(),
                    record.upper_bound(self.now, factor).to_bits(),
                    "a job's bound from its key is its record's"
                );
                Some((record, factor))
            }
        }
    }

    /// A tree member at the top of the heap: tighten its bound to its first
    /// user's factor, then open it (a user: its jobs; an account: its group).
    fn expand(&mut self, mut member: Member) {
        let queue = self.queue;
        let tree = &queue.tree;
        // The walk's state where the member stands: no walk back up from
        // the root to find a factor.
        let opens_tied = enters_tied(&member.placement, member.in_tied);
        if !member.tight {
            let exact = self
                .exact_factor(&member)
                .unwrap_or_else(|| fallback_factor(&member));
            member.tight = true;
            if exact != member.factor {
                member.factor = exact;
                self.push_member(member);
                return;
            }
        }
        if let Some(assoc) = member.assoc {
            let jobs = &queue.users[assoc as usize].jobs[member.class];
            let source = Source::Jobs {
                class: member.class,
                factor: member.factor,
            };
            self.push_cursor(source, jobs.iter().peekable());
            return;
        }
        // The group's members are read lazily, best first: a wide group
        // costs the members whose bounds reach the top of the heap, not all.
        let open = OpenGroup {
            class: member.class,
            node: member.node,
            start: member.start,
            factor: member.factor,
            tied: opens_tied,
            next_in_order: 0,
            by_place: true,
        };
        let members: Box<dyn Iterator<Item = (NodeId, Best)> + 'q> =
            Box::new(tree.members(member.node, member.class));
        self.groups.push((open, members.peekable()));
        self.push_group_head(self.groups.len() - 1);
    }
}
