//! Fair Tree with Slurm's own tie handling (`FairTreeTies=slurm`, the
//! default) in the dataflow, bit-identical to
//! `fairflow_oracle::fairshare::fair_tree_slurm` (see its definition: `f64`
//! `LevelFS` in Slurm's order of operations, exact `f64` equality, tied
//! accounts never merged but walked newest first, a tie carried only into
//! the ranking of users).
//!
//! # Placements (fed by the Fair Tree records gated to this rule, so idle otherwise)
//! Groups are the fair-share children of one association (no merging, so no
//! iteration to find them). A stateful stage routed by group
//! (`stages::per_batch_routed`: each worker holds its groups' items and
//! each group's members in their last order with the placements it sent)
//! re-places each group a batch touches and sends only the placements that
//! changed. The members whose items changed are taken out of the kept
//! order, sorted among themselves and merged back; the others keep their
//! order (re-checked, and sorted only if `f64` rounding moved one, when the
//! parent's part changed their `LevelFS`). The order is
//! `formula::slurm_sibling_order` ("newest first" is the larger `NodeId`:
//! the tree feed interns accounts in creation order (the book's
//! `Account::created`) and a re-created one gets a new id) and gives each a
//! [`SlurmPlacement`]: the users in the members before it (`prefix`),
//! whether it is first, whether its `LevelFS` equals the previous member's
//! (or `NO_VAL` for the first: `prev_level_fs` starts there), and for a user
//! the same three for the first user of its run of tied users.
//! `FairShare=parent` accounts are members (`LevelFS` `NO_VAL`, no users).
//!
//! The placements leave the dataflow as they are (a [`TreeSlot`] per
//! association): ranks are not materialised per user. The queue keeps the
//! sorted tree and derives a user's rank from its ancestors' placements when
//! it reads one (`priority::fair_tree`, where Slurm's walk is written out).
//!
//! # Cost
//! A usage event re-places the groups on its path: `O(m log m + n)` for a
//! group of `n` members of which `m` changed (one `LevelFS` and one
//! comparison per kept member, since the parent's usage moved them all;
//! no hashing or sorting of the kept members, which stay where they are in
//! the group's vector: a member keeps its usage as `f64` and its share
//! fraction, so its new `LevelFS` is two divisions, and only the kept
//! members after the first changed one move, once, when the changed ones
//! are merged in from the back). A placement is sent only
//! where it changed (the members between a moved member's old and new
//! positions, and ties that appeared or ended), and no user below them is
//! re-derived.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use differential_dataflow::consolidation::consolidate;
use differential_dataflow::VecCollection;
use fairflow_model::formula::{
    share_fraction, slurm_level_fs_of, slurm_sibling_order, SLURM_PARENT_ACCOUNT_LEVEL_FS,
};
use fairflow_model::Shares;
use rustc_hash::FxHashMap as HashMap;

use super::{GroupItem, NodeRec, Own};
use crate::priority::fair_tree::{SlurmPlacement, TreeSlot};
use crate::stages::per_batch_routed;
use crate::types::{Diff, Epoch, NodeId, ROOT};

/// Slurm's `LevelFS` of a member (`FairShare=parent`: a user `+inf`, an
/// account `NO_VAL`), from its share fraction and both usages already
/// converted to `f64` (`formula::slurm_level_fs_of`).
fn member_level_fs(
    member: &super::Member,
    share_fraction: f64,
    usage: f64,
    parent_usage: f64,
) -> f64 {
    if member.shares.is_parent() {
        if member.user {
            f64::INFINITY
        } else {
            SLURM_PARENT_ACCOUNT_LEVEL_FS
        }
    } else {
        slurm_level_fs_of(share_fraction, usage, parent_usage)
    }
}

/// Every member's placement, from the Fair Tree records.
pub(super) fn place<'s>(
    records: VecCollection<'s, Epoch, (NodeId, NodeRec), Diff>,
) -> VecCollection<'s, Epoch, (NodeId, TreeSlot), Diff> {
    // Every association but root is a member of its fair-share parent's group.
    let members = records.clone().flat_map(|(node, record)| {
        let weight = match (record.user, record.shares.is_parent()) {
            (true, _) => 1,
            (false, true) => 0,
            (false, false) => record.users_below,
        };
        let own = Own {
            shares: record.shares,
            usage: record.usage,
            user: record.user,
            assoc: record.assoc,
            weight,
        };
        record
            .fs_parent
            .filter(|_| node != ROOT)
            .map(|parent| (parent, GroupItem::Member { node, parent, own }))
    });
    let parents = records.flat_map(|(node, record)| {
        (!record.user).then_some((
            node,
            GroupItem::Parent {
                parent: node,
                usage: record.usage,
                child_level: record.child_level,
            },
        ))
    });
    per_batch_routed(
        members.concat(parents),
        "SlurmPlacements",
        |(group, _)| u64::from(*group),
        {
            let mut groups = Groups::default();
            move |changes, out| groups.apply(changes, out)
        },
    )
}

/// The groups a worker holds, by group (see [`Group`]).
#[derive(Default)]
struct Groups {
    groups: HashMap<NodeId, Group>,
}

/// One group: its items (members and their parents' parts, with their
/// counts), the parents' parts last used, and its members in Slurm's
/// sibling order, each with the placement last sent for it. A batch
/// re-places the group from that kept order ([`Group::update`]) and sends
/// the difference from what was sent (as the `reduce` it replaces did,
/// without replaying the group's history of inputs and outputs).
#[derive(Default)]
struct Group {
    items: BTreeMap<GroupItem, Diff>,
    /// `(parent, usage, level shares)` of the parents present, by parent.
    parts: Vec<(NodeId, u128, u64)>,
    /// The members in Slurm's sibling order.
    order: Vec<Placed>,
}

/// A member in its group's order: its sort key and the placement sent.
#[derive(Clone, Copy)]
struct Placed {
    node: NodeId,
    /// Its fair-share parent (whose part gives its level shares and its
    /// parent's usage).
    parent: NodeId,
    member: super::Member,
    /// Its own usage as `f64` and its share fraction (of its level
    /// shares), kept so that a move of its parent's usage re-derives its
    /// `LevelFS` with two divisions.
    usage_f64: f64,
    share_fraction: f64,
    level_fs: f64,
    /// The placement last sent (none yet: a member new to the group).
    sent: Option<TreeSlot>,
}

impl Placed {
    fn new(node: NodeId, parent: NodeId, own: Own, part: (u128, u64)) -> Placed {
        let member = super::Member::of(own, part);
        let usage_f64 = member.usage as f64;
        let share_fraction = share_fraction(member.shares.raw(), member.level_shares);
        Placed {
            node,
            parent,
            member,
            usage_f64,
            share_fraction,
            level_fs: member_level_fs(&member, share_fraction, usage_f64, part.0 as f64),
            sent: None,
        }
    }

    /// Its key in [`slurm_sibling_order`].
    fn order_key(&self) -> (f64, bool, u64) {
        (self.level_fs, self.member.user, u64::from(self.node))
    }

    /// Its parent's part moved to `(usage, level shares)` (`usage_f64`:
    /// the usage converted): re-derive its `LevelFS`.
    fn repart(&mut self, (usage, level_shares): (u128, u64), usage_f64: f64) {
        if level_shares != self.member.level_shares {
            self.member.level_shares = level_shares;
            self.share_fraction = share_fraction(self.member.shares.raw(), level_shares);
        }
        self.member.parent_usage = usage;
        self.level_fs =
            member_level_fs(&self.member, self.share_fraction, self.usage_f64, usage_f64);
    }
}

/// Slurm's sibling order ([`slurm_sibling_order`]: `LevelFS` descending,
/// users first, newest first). Total: ties end at the node id.
fn sibling_order(a: &Placed, b: &Placed) -> Ordering {
    slurm_sibling_order(a.order_key(), b.order_key())
}

/// The smallest [`Own`] (a lower bound of a node's member items).
const LEAST_OWN: Own = Own {
    shares: Shares::Value(0),
    usage: 0,
    user: false,
    assoc: None,
    weight: 0,
};

impl Groups {
    fn apply(
        &mut self,
        mut changes: Vec<((NodeId, GroupItem), Diff)>,
        out: &mut Vec<((NodeId, TreeSlot), Diff)>,
    ) {
        // Sorted by group, then item: a group's changes are one run, its
        // members' by node.
        consolidate(&mut changes);
        let mut rest = &changes[..];
        while let Some(&((group_id, _), _)) = rest.first() {
            let (mine, later) = rest.split_at(rest.partition_point(|((g, _), _)| *g == group_id));
            rest = later;
            let group = self.groups.entry(group_id).or_default();
            let mut changed: Vec<NodeId> = Vec::new();
            for &((_, item), diff) in mine {
                if let GroupItem::Member { node, .. } = item {
                    changed.push(node);
                }
                let count = group.items.entry(item).or_insert(0);
                *count += diff;
                if *count == 0 {
                    group.items.remove(&item);
                }
            }
            changed.dedup();
            group.update(group_id, &changed, out);
            if group.items.is_empty() {
                self.groups.remove(&group_id);
            }
        }
        // Sent as placed, group by group: the queue sorts the slots by node
        // (`priority::queue`), a cheaper sort than one of whole slots here.
    }
}

impl Group {
    /// The parents' parts present (positive counts), by parent; of two
    /// items of one parent the larger (as `group_members` reads them).
    fn parent_parts(&self) -> Vec<(NodeId, u128, u64)> {
        let mut parts: Vec<(NodeId, u128, u64)> = Vec::new();
        let first_parent = GroupItem::Parent {
            parent: NodeId::MIN,
            usage: 0,
            child_level: 0,
        };
        // Parent items sort after every member item.
        for (item, count) in self.items.range(first_parent..) {
            if let Some(part) = item.present_parent(*count) {
                match parts.last_mut() {
                    Some(last) if last.0 == part.0 => *last = part,
                    _ => parts.push(part),
                }
            }
        }
        parts
    }

    /// The members a node's present items make (one in a consistent
    /// state), each whose parent's part is present.
    fn members_of(&self, node: NodeId, parts: &[(NodeId, u128, u64)], into: &mut Vec<Placed>) {
        let from = GroupItem::Member {
            node,
            parent: NodeId::MIN,
            own: LEAST_OWN,
        };
        for (item, count) in self.items.range(from..) {
            let GroupItem::Member {
                node: of,
                parent,
                own,
            } = *item
            else {
                break;
            };
            if of != node {
                break;
            }
            if *count > 0 {
                if let Some(part) = part_of(parts, parent) {
                    into.push(Placed::new(node, parent, own, part));
                }
            }
        }
    }

    /// Re-place the group after its items changed: `changed` are the
    /// members whose items changed (sorted). The members kept (all others)
    /// stay in their last order, in place, their `LevelFS` re-derived when
    /// a parent's part changed (a usage event changes its group's parent's
    /// usage, so every member's `LevelFS`); that order is checked (one
    /// comparison per member) and sorted only if `f64` rounding reordered
    /// it. The changed members are sorted among themselves and merged in
    /// (moving only the kept members after the first of them). Placements
    /// are then recomputed in one pass in order and only those that differ
    /// from what was sent are sent. When the set of parents changes (the
    /// group appears, or a tree change), every member is re-derived from
    /// the items.
    fn update(
        &mut self,
        group_id: NodeId,
        changed: &[NodeId],
        out: &mut Vec<((NodeId, TreeSlot), Diff)>,
    ) {
        let parts = self.parent_parts();
        let parents_changed = parts != self.parts;
        let rebuild = parts
            .iter()
            .map(|part| part.0)
            .ne(self.parts.iter().map(|part| part.0));
        // The placements sent to members taken out of the order, by node.
        let mut taken: Vec<(NodeId, TreeSlot)> = Vec::new();
        let mut kept_in_order = true;
        let mut fresh: Vec<Placed> = Vec::new();
        if rebuild {
            taken.extend(
                self.order
                    .drain(..)
                    .filter_map(|placed| Some((placed.node, placed.sent?))),
            );
            for (item, count) in &self.items {
                if let (GroupItem::Member { node, parent, own }, true) = (*item, *count > 0) {
                    if let Some(part) = part_of(&parts, parent) {
                        fresh.push(Placed::new(node, parent, own, part));
                    }
                }
            }
        } else {
            // Each parent's usage converted once for all its members.
            let parent_usage_f64: Vec<f64> =
                parts.iter().map(|&(_, usage, _)| usage as f64).collect();
            let mut previous: Option<(f64, bool, u64)> = None;
            self.order.retain_mut(|placed| {
                let part = if parents_changed {
                    part_index(&parts, placed.parent)
                        .map(|index| (index, (parts[index].1, parts[index].2)))
                } else {
                    Some((0, (placed.member.parent_usage, placed.member.level_shares)))
                };
                match part {
                    Some((index, part)) if changed.binary_search(&placed.node).is_err() => {
                        if part != (placed.member.parent_usage, placed.member.level_shares) {
                            placed.repart(part, parent_usage_f64[index]);
                        }
                        let key = placed.order_key();
                        if let Some(last) = previous {
                            kept_in_order &= slurm_sibling_order(last, key) == Ordering::Less;
                        }
                        previous = Some(key);
                        true
                    }
                    _ => {
                        taken.extend(placed.sent.map(|slot| (placed.node, slot)));
                        false
                    }
                }
            });
            for &node in changed {
                self.members_of(node, &parts, &mut fresh);
            }
        }
        if !kept_in_order {
            self.order.sort_by(sibling_order);
        }
        fresh.sort_by(sibling_order);
        taken.sort_unstable_by_key(|&(node, _)| node);
        let mut taken_back = vec![false; taken.len()];
        for placed in &mut fresh {
            if let Ok(index) = taken.binary_search_by_key(&placed.node, |&(node, _)| node) {
                debug_assert!(!taken_back[index], "one member per node");
                taken_back[index] = true;
                placed.sent = Some(taken[index].1);
            }
        }
        // Merge the changed members into the kept ones in place, from the
        // back: each kept member after the first changed one moves once.
        if !fresh.is_empty() {
            let kept = self.order.len();
            self.order.extend_from_slice(&fresh);
            let (mut i, mut j, mut k) = (kept, fresh.len(), self.order.len());
            while j > 0 {
                k -= 1;
                if i > 0 && sibling_order(&self.order[i - 1], &fresh[j - 1]) == Ordering::Greater {
                    i -= 1;
                    self.order[k] = self.order[i];
                } else {
                    j -= 1;
                    self.order[k] = fresh[j];
                }
            }
        }
        // Place them in order.
        let mut placing = Placing::new(group_id);
        for placed in &mut self.order {
            let slot = placing.place(placed);
            match placed.sent {
                Some(sent) if sent == slot => {}
                Some(sent) => {
                    out.push(((placed.node, sent), -1));
                    out.push(((placed.node, slot), 1));
                }
                None => out.push(((placed.node, slot), 1)),
            }
            placed.sent = Some(slot);
        }
        // Members that left the group: retract their placements.
        for (&(node, slot), back) in taken.iter().zip(taken_back) {
            if !back {
                out.push(((node, slot), -1));
            }
        }
        self.parts = parts;
    }
}

/// A parent's part `(usage, level shares)`, if present.
fn part_of(parts: &[(NodeId, u128, u64)], parent: NodeId) -> Option<(u128, u64)> {
    part_index(parts, parent).map(|index| (parts[index].1, parts[index].2))
}

/// Where a parent's part is in `parts` (sorted by parent), if present.
fn part_index(parts: &[(NodeId, u128, u64)], parent: NodeId) -> Option<usize> {
    parts.binary_search_by_key(&parent, |part| part.0).ok()
}

/// Placing the members of one group, in Slurm's sibling order: the users
/// before the next member, the previous member's `LevelFS` and kind, and
/// the current run of tied users.
struct Placing {
    group: NodeId,
    first: bool,
    prefix: u64,
    prev: f64,
    prev_user: bool,
    run: (u64, bool, bool),
}

impl Placing {
    fn new(group: NodeId) -> Self {
        Placing {
            group,
            first: true,
            prefix: 0,
            prev: SLURM_PARENT_ACCOUNT_LEVEL_FS,
            prev_user: false,
            run: (0, false, false),
        }
    }

    /// The next member's slot.
    fn place(&mut self, placed: &Placed) -> TreeSlot {
        let (level_fs, member) = (placed.level_fs, &placed.member);
        let first = std::mem::replace(&mut self.first, false);
        let local_tie = self.prev == level_fs;
        if member.user && !(local_tie && self.prev_user) {
            self.run = (self.prefix, first, local_tie);
        }
        let placement = SlurmPlacement {
            prefix: self.prefix,
            first,
            local_tie,
            run_prefix: self.run.0,
            run_first: self.run.1,
            run_local_tie: self.run.2,
            user: member.user,
            parent_account: !member.user && member.shares.is_parent(),
        };
        self.prefix += member.weight;
        self.prev = level_fs;
        self.prev_user = member.user;
        TreeSlot {
            group: self.group,
            weight: member.weight,
            placement,
            assoc: member.assoc,
        }
    }
}

#[cfg(test)]
mod tests {
    use fairflow_model::Shares;

    use super::{GroupItem, Groups, Own};
    use crate::types::{Diff, NodeId, ROOT};

    /// A user of root's group with one share and `usage`.
    fn user(node: NodeId, usage: u128, diff: Diff) -> ((NodeId, GroupItem), Diff) {
        let own = Own {
            shares: Shares::Value(1),
            usage,
            user: true,
            assoc: Some(node),
            weight: 1,
        };
        let member = GroupItem::Member {
            node,
            parent: ROOT,
            own,
        };
        ((ROOT, member), diff)
    }

    /// Root's part: its usage, and 4 level shares (four users of one share).
    fn root(usage: u128, diff: Diff) -> ((NodeId, GroupItem), Diff) {
        let parent = GroupItem::Parent {
            parent: ROOT,
            usage,
            child_level: 4,
        };
        ((ROOT, parent), diff)
    }

    /// `(node, prefix, diff)` of each placement sent, sorted.
    fn sent(
        groups: &mut Groups,
        changes: Vec<((NodeId, GroupItem), Diff)>,
    ) -> Vec<(NodeId, u64, Diff)> {
        let mut out = Vec::new();
        groups.apply(changes, &mut out);
        let mut sent: Vec<(NodeId, u64, Diff)> = out
            .into_iter()
            .map(|((node, slot), diff)| (node, slot.placement.prefix, diff))
            .collect();
        sent.sort_unstable();
        sent
    }

    /// `(node, (prefix, first, local_tie, run_prefix, run_first,
    /// run_local_tie), diff)` of each placement sent, sorted.
    type Sent = (NodeId, (u64, bool, bool, u64, bool, bool), Diff);

    fn sent_in_full(groups: &mut Groups, changes: Vec<((NodeId, GroupItem), Diff)>) -> Vec<Sent> {
        let mut out = Vec::new();
        groups.apply(changes, &mut out);
        let mut sent: Vec<Sent> = out
            .into_iter()
            .map(|((node, slot), diff)| {
                let p = slot.placement;
                let placement = (
                    p.prefix,
                    p.first,
                    p.local_tie,
                    p.run_prefix,
                    p.run_first,
                    p.run_local_tie,
                );
                (node, placement, diff)
            })
            .collect();
        sent.sort_unstable();
        sent
    }

    #[test]
    fn a_member_moving_across_others_changes_only_the_slots_between() {
        // Six users of one share each under root (usage 100), used 10, 20,
        // ..., 60: the least used first, so user i has prefix i - 1, only
        // user 1 is first, and no two `LevelFS` are equal (each user starts
        // its own run).
        let mut groups = Groups::default();
        let mut load = vec![root(100, 1)];
        load.extend((1..=6).map(|node| user(node, u128::from(node) * 10, 1)));
        let loaded = sent_in_full(&mut groups, load);
        let expected: Vec<Sent> = (1..=6u32)
            .map(|node| {
                let prefix = u64::from(node) - 1;
                (
                    node,
                    (prefix, node == 1, false, prefix, node == 1, false),
                    1,
                )
            })
            .collect();
        assert_eq!(loaded, expected);
        // User 1 is charged 45 (55; root 145): the order is 2 (20), 3, 4,
        // 5 (50), 1 (55), 6 (60). User 1 moves from the front across four
        // users, each of which moves up one place (and 2 becomes first);
        // user 6, after the moved one, keeps its slot.
        let moved = sent_in_full(
            &mut groups,
            vec![root(100, -1), root(145, 1), user(1, 10, -1), user(1, 55, 1)],
        );
        assert_eq!(
            moved,
            vec![
                (1, (0, true, false, 0, true, false), -1),
                (1, (4, false, false, 4, false, false), 1),
                (2, (0, true, false, 0, true, false), 1),
                (2, (1, false, false, 1, false, false), -1),
                (3, (1, false, false, 1, false, false), 1),
                (3, (2, false, false, 2, false, false), -1),
                (4, (2, false, false, 2, false, false), 1),
                (4, (3, false, false, 3, false, false), -1),
                (5, (3, false, false, 3, false, false), 1),
                (5, (4, false, false, 4, false, false), -1),
            ]
        );
        // User 2 is charged 20 (40, as user 4; root 165): 3 (30) comes
        // first, then the tied 4 and 2 (newest, the larger id, first), then
        // 5, 1, 6 as before. User 2 ties with 4, a user just before it, so
        // it joins 4's run (run prefix 1); 5, 1 and 6 keep their slots.
        let tied = sent_in_full(
            &mut groups,
            vec![root(145, -1), root(165, 1), user(2, 20, -1), user(2, 40, 1)],
        );
        assert_eq!(
            tied,
            vec![
                (2, (0, true, false, 0, true, false), -1),
                (2, (2, false, true, 1, false, false), 1),
                (3, (0, true, false, 0, true, false), 1),
                (3, (1, false, false, 1, false, false), -1),
                (4, (1, false, false, 1, false, false), 1),
                (4, (2, false, false, 2, false, false), -1),
            ]
        );
    }

    #[test]
    fn members_are_placed_once_their_parent_arrives() {
        // Users 1 (usage 30) and 2 (usage 10) before root's part: no
        // placement; with root's part, 2 first (less used), then 1.
        let mut groups = Groups::default();
        assert_eq!(
            sent(&mut groups, vec![user(1, 30, 1), user(2, 10, 1)]),
            vec![]
        );
        assert_eq!(
            sent(&mut groups, vec![root(40, 1)]),
            vec![(1, 1, 1), (2, 0, 1)]
        );
        // Root's part leaves: both placements are retracted.
        assert_eq!(
            sent(&mut groups, vec![root(40, -1)]),
            vec![(1, 1, -1), (2, 0, -1)]
        );
    }

    #[test]
    fn a_batch_sends_only_the_placements_that_moved() {
        // Four users of one share each under root (usage 100): equal shares,
        // so the least usage comes first: 1 (10), 2 (20), 3 (30), 4 (40),
        // each user standing for one user, so the prefixes are 0, 1, 2, 3.
        let mut groups = Groups::default();
        let first = sent(
            &mut groups,
            vec![
                root(100, 1),
                user(1, 10, 1),
                user(2, 20, 1),
                user(3, 30, 1),
                user(4, 40, 1),
            ],
        );
        assert_eq!(first, vec![(1, 0, 1), (2, 1, 1), (3, 2, 1), (4, 3, 1)]);
        // User 2 is charged 15 (root 115): the order is 1 (10), 3 (30),
        // 2 (35), 4 (40); only 2 and 3 change places.
        let moved = sent(
            &mut groups,
            vec![root(100, -1), root(115, 1), user(2, 20, -1), user(2, 35, 1)],
        );
        assert_eq!(moved, vec![(2, 1, -1), (2, 2, 1), (3, 1, 1), (3, 2, -1)]);
        // User 3 leaves: its placement is retracted and 2 and 4 move up.
        let left = sent(&mut groups, vec![user(3, 30, -1)]);
        assert_eq!(
            left,
            vec![(2, 1, 1), (2, 2, -1), (3, 1, -1), (4, 2, 1), (4, 3, -1)]
        );
        // The same state loaded at once gives the same placements.
        let mut fresh = Groups::default();
        let loaded = sent(
            &mut fresh,
            vec![root(115, 1), user(1, 10, 1), user(2, 35, 1), user(4, 40, 1)],
        );
        assert_eq!(loaded, vec![(1, 0, 1), (2, 1, 1), (4, 2, 1)]);
    }
}
