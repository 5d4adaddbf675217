//! One group of the queue's Fair Tree: its members by order label with the
//! users before each, and per rank class its members by the best job in
//! their subtree (all of them, and its account members alone).
//!
//! # Labels, not prefixes
//! A member's `SlotPlacement` holds an order *label*, not its position:
//! the members of a group in Slurm's sibling order have increasing labels,
//! and a member that moves takes a label between its new neighbours' while
//! the others keep theirs (order maintenance, in the placement stage). A
//! usage event that moves an account across a thousand siblings so sends
//! its own slot and its neighbours', not the thousand shifted slots. Each
//! group here keeps its members by label with the users before each
//! (`Group::users_before`, rebuilt when the group is settled), and a
//! member's `SlurmPlacement` (its prefix, whether it is first, its run's
//! prefix and ties) is derived from that when the search or a walk reads
//! it (`FairTree::placement`).

use std::cmp::Reverse;
use std::collections::BTreeSet;

use crate::thresholds::{self, Threshold};
use crate::types::{JobId, NodeId};

/// An entry of a group's members by best job: highest key first.
pub(super) type Ranked = (Reverse<u64>, JobId, NodeId);

/// A member in its group's order: `(label, member, weight)`.
pub(super) type Positioned = (u64, NodeId, u64);

/// A change of a group's members by label, made by `FairTree::apply`:
/// `(label, member, weight, placed)` (`placed` false: a removal, which
/// holds only if the label still maps to the member).
pub(super) type PositionChange = (u64, NodeId, u64, bool);

/// One group: its members by label, the users before each, and, per rank
/// class, its members by the best job in their subtree.
#[derive(Debug, Default)]
pub(super) struct Group {
    /// Every member, by label (unique).
    pub(super) by_label: Vec<Positioned>,
    /// `users_before[i]`: the users the members `by_label[..i]` stand for
    /// (one more entry than `by_label`; rebuilt when settled).
    pub(super) users_before: Vec<u64>,
    /// The changes of `by_label` made by the current `FairTree::apply`,
    /// in the order made.
    pub(super) pending: Vec<PositionChange>,
    pub(super) ranked: [BTreeSet<Ranked>; 2],
    /// `ranked` without the user members: what a count reads of a group
    /// whose users it counted together (`FairTree::account_members`).
    pub(super) ranked_accounts: [BTreeSet<Ranked>; 2],
}

/// Pending position changes of a group up to which each is applied alone
/// (a binary search and a shift) rather than all in one merge.
const POSITION_CHANGES_ONE_BY_ONE: usize = 4;

impl Group {
    /// Where a label is (or would be) in `by_label`.
    pub(super) fn index_of(&self, label: u64) -> usize {
        self.by_label.partition_point(|&(l, _, _)| l < label)
    }

    /// The users before the member at `index` of `by_label`.
    pub(super) fn users_before(&self, index: usize) -> u64 {
        self.users_before.get(index).copied().unwrap_or(0)
    }

    /// The users its members stand for.
    pub(super) fn users(&self) -> u64 {
        self.users_before.last().copied().unwrap_or(0)
    }

    /// Its first member that stands for users: `(users before it, member)`
    /// (always 0 users: only members that stand for none come before it).
    pub(super) fn first_positioned(&self) -> Option<(u64, NodeId)> {
        let at = self
            .users_before
            .get(1..)?
            .partition_point(|&users| users == 0);
        let &(_, node, _) = self.by_label.get(at)?;
        Some((self.users_before(at), node))
    }

    /// The member standing at `within` users into the group: `(users
    /// before it, member)`.
    pub(super) fn covering(&self, within: u64) -> Option<(u64, NodeId)> {
        let at = self
            .users_before
            .get(1..)?
            .partition_point(|&users| users <= within);
        let &(_, node, _) = self.by_label.get(at)?;
        Some((self.users_before(at), node))
    }

    /// Apply the pending changes, each as if alone in the order made: one
    /// by one (a binary search and a shift each) when they are few, else in
    /// one merge of the members with the changes sorted by label (each
    /// label's changes still in the order made); then rebuild the users
    /// before each member from the first that changed.
    pub(super) fn settle(&mut self) {
        let pending = std::mem::take(&mut self.pending);
        let mut from = self.by_label.len();
        let one_by_one = pending.len() <= POSITION_CHANGES_ONE_BY_ONE;
        if !pending.is_empty() {
            thresholds::decide(Threshold::GroupPositionsMerged, !one_by_one);
        }
        if one_by_one {
            for (label, node, weight, placed) in pending {
                let at = self.index_of(label);
                let held = self.by_label.get(at).filter(|&&(l, _, _)| l == label);
                match (placed, held) {
                    (true, Some(_)) => self.by_label[at] = (label, node, weight),
                    (true, None) => self.by_label.insert(at, (label, node, weight)),
                    (false, Some(&(_, member, _))) if member == node => {
                        self.by_label.remove(at);
                    }
                    (false, _) => continue,
                }
                from = from.min(at);
            }
        } else {
            let mut order: Vec<usize> = (0..pending.len()).collect();
            order.sort_unstable_by_key(|&made| (pending[made].0, made));
            let before = std::mem::take(&mut self.by_label);
            self.by_label.reserve(before.len() + pending.len());
            let mut before = before.into_iter().peekable();
            for run in order.chunk_by(|&a, &b| pending[a].0 == pending[b].0) {
                let label = pending[run[0]].0;
                while let Some(entry) = before.next_if(|&(l, _, _)| l < label) {
                    self.by_label.push(entry);
                }
                from = from.min(self.by_label.len());
                let mut held = before
                    .next_if(|&(l, _, _)| l == label)
                    .map(|(_, node, weight)| (node, weight));
                for &(_, node, weight, placed) in run.iter().map(|&made| &pending[made]) {
                    if placed {
                        held = Some((node, weight));
                    } else if held.is_some_and(|(member, _)| member == node) {
                        held = None;
                    }
                }
                if let Some((node, weight)) = held {
                    self.by_label.push((label, node, weight));
                }
            }
            self.by_label.extend(before);
        }
        self.users_before.truncate(from + 1);
        if self.users_before.is_empty() {
            self.users_before.push(0);
        }
        let mut users = self.users_before[from.min(self.users_before.len() - 1)];
        for &(_, _, weight) in &self.by_label[from.min(self.by_label.len())..] {
            users += weight;
            self.users_before.push(users);
        }
    }
}
