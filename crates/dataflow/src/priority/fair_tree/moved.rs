//! The users whose factor a reorder of some groups can change
//! ([`FairTree::users_a_reorder_moves`]): what the live what-if reads on
//! each side of a share change instead of every user's factor.
//!
//! # Why these and no others
//! A reorder that keeps every member in its group with its weight (a share
//! change: only the order of the changed association's siblings moves)
//! keeps every group's block of walk positions where it was, so a user
//! outside the reordered groups' blocks keeps its position, and with it
//! its rank, unless that rank is taken from an earlier position: a user
//! tied to the user before its run takes that user's rank
//! ([`super::placement`]). References only point back, and a user whose
//! walk is resolved depends on nothing before it; so after a block, the
//! users up to the first resolved one may follow a rank from inside it,
//! and none after. Positions before a block depend on nothing in it.
//!
//! Within a reordered group the same holds of a span of its members: only
//! the members whose slot the reorder sends move, each from one order label
//! to another, and every other member keeps its label. A member whose label
//! is below every label the moved ones leave or take has the same members
//! before it on both sides, and so does one above them all (the moved ones
//! are before it on both sides, with the same weights): its prefix, and
//! every rank below it, stays. So only the members whose label lies within
//! that span ([`Reordered`]), and the users after it whose run of tied
//! users starts within it (their run's prefix may move), can change, with
//! the tied followers of the users they end at. A share change of a
//! top-level account among a thousand others so reads the users of the
//! accounts it passes, not the whole tree.

use super::placement::Walk;
use super::{FairTree, TreeSlot};
use crate::types::{AssocId, NodeId, ROOT};

/// A group a reorder touches, and the span of order labels (inclusive)
/// its moved members leave or take: the members whose prefix can move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reordered {
    /// The group.
    pub group: NodeId,
    /// The lowest label a moved member leaves or takes.
    pub low: u64,
    /// The highest.
    pub high: u64,
}

impl FairTree {
    /// The user nodes whose factor can differ once `reordered` groups are
    /// reordered (every member kept in its group with its weight: see the
    /// module documentation): the users below each group's members within
    /// its span and the users after them that may take a rank from inside
    /// it. Read before the reorder and again after, the same list. `None`
    /// when more than `limit` users (the caller reads every factor instead)
    /// or a group is not placed.
    pub fn users_a_reorder_moves(
        &self,
        reordered: &[Reordered],
        limit: usize,
    ) -> Option<Vec<NodeId>> {
        let mut users: Vec<NodeId> = Vec::new();
        for span in reordered {
            let (start, _) = self.block_of(span.group)?;
            let end = self.users_in_span(span, &mut users, limit)?;
            self.followers(start + end, &mut users, limit)?;
        }
        users.sort_unstable();
        users.dedup();
        Some(users)
    }

    /// Add the users of the members of `span`'s group whose label lies in
    /// the span, then of the user members after it whose run of tied users
    /// starts in it, to `users`; the users before the first member after
    /// them (where their followers start, from the group's start). `None`
    /// past `limit` or when the group is not placed.
    fn users_in_span(
        &self,
        span: &Reordered,
        users: &mut Vec<NodeId>,
        limit: usize,
    ) -> Option<u64> {
        let group = self.groups.get(span.group as usize)?;
        let mut at = group.index_of(span.low);
        while let Some(&(label, member, weight)) = group.by_label.get(at) {
            let slot = self.slot(member);
            let run_in_span = slot.is_some_and(|slot| {
                let placement = slot.placement;
                placement.user && (span.low..=span.high).contains(&placement.run_label)
            });
            if label > span.high && !run_in_span {
                break;
            }
            at += 1;
            // Members that stand for no user take no position.
            let Some(slot) = slot.filter(|_| weight > 0) else {
                continue;
            };
            if slot.placement.user {
                users.push(member);
            } else {
                self.users_below(member, users, limit)?;
            }
            if users.len() > limit {
                return None;
            }
        }
        Some(group.users_before(at))
    }

    /// The walk position of a group's first user: the sum of its
    /// ancestors' prefixes (the root's: 0), and the users of its block.
    fn block_of(&self, group: NodeId) -> Option<(u64, u64)> {
        let mut start = 0u64;
        let mut node = group;
        for _ in 0..=self.nodes.len() {
            if node == ROOT {
                return Some((start, self.group_users(group)));
            }
            start += self.placement(node)?.prefix;
            node = self.slot(node)?.group;
        }
        None
    }

    /// Add the users below `group` (its block) to `users`; `None` past
    /// `limit`.
    pub(crate) fn users_below(
        &self,
        group: NodeId,
        users: &mut Vec<NodeId>,
        limit: usize,
    ) -> Option<()> {
        let mut stack = vec![group];
        while let Some(at) = stack.pop() {
            let Some(members) = self.groups.get(at as usize) else {
                continue;
            };
            for &(_, member, weight) in &members.by_label {
                // Members that stand for no user take no position.
                let Some(slot) = self.slot(member).filter(|_| weight > 0) else {
                    continue;
                };
                if slot.placement.user {
                    users.push(member);
                } else {
                    stack.push(member);
                }
            }
            if users.len() > limit {
                return None;
            }
        }
        Some(())
    }

    /// Add the users from position `from` on whose walk refers back, up to
    /// the first whose walk is resolved; `None` past `limit`.
    fn followers(&self, from: u64, users: &mut Vec<NodeId>, limit: usize) -> Option<()> {
        for position in from..self.users {
            let user = self.user_at(position)?;
            match self.walk_of(user)? {
                Walk::Resolved(_) => return Some(()),
                Walk::Refers(_) => users.push(user),
            }
            if users.len() > limit {
                return None;
            }
        }
        Some(())
    }
}

impl FairTree {
    /// The factor of each placed user node of `users`, by its user
    /// association (`None`: not placed now).
    pub fn factors_of_users(&self, users: &[NodeId]) -> Vec<(AssocId, Option<f64>)> {
        (users.iter())
            .filter_map(|&user| Some((self.slot(user)?.assoc?, self.factor_of_node(user))))
            .collect()
    }
}

/// The groups that slot updates reorder, each with the span of labels its
/// moved members leave or take, when each node's slot moves within its
/// group with its weight and association (one slot retracted, one
/// inserted); `None` when any does otherwise (a member placed, removed,
/// moved to another group or weighed again: other groups' blocks move).
pub fn reordered_groups(mut slots: Vec<(NodeId, TreeSlot, isize)>) -> Option<Vec<Reordered>> {
    slots.sort_unstable_by_key(|&(node, slot, _)| (node, slot));
    let mut spans: Vec<Reordered> = Vec::new();
    for run in slots.chunk_by(|a, b| a.0 == b.0) {
        // Each slot's net difference.
        let mut net: Vec<(TreeSlot, isize)> = Vec::new();
        for &(_, slot, diff) in run {
            match net.last_mut() {
                Some((last, sum)) if *last == slot => *sum += diff,
                _ => net.push((slot, diff)),
            }
        }
        net.retain(|&(_, diff)| diff != 0);
        match net[..] {
            [] => {}
            [(a, da), (b, db)]
                if da + db == 0
                    && da.abs() == 1
                    && (a.group, a.weight, a.assoc) == (b.group, b.weight, b.assoc) =>
            {
                let (la, lb) = (a.placement.label, b.placement.label);
                spans.push(Reordered {
                    group: a.group,
                    low: la.min(lb),
                    high: la.max(lb),
                });
            }
            _ => return None,
        }
    }
    // One span per group: from its lowest label to its highest.
    spans.sort_unstable_by_key(|span| (span.group, span.low));
    let mut merged: Vec<Reordered> = Vec::with_capacity(spans.len());
    for span in spans {
        match merged.last_mut() {
            Some(last) if last.group == span.group => last.high = last.high.max(span.high),
            _ => merged.push(span),
        }
    }
    Some(merged)
}
