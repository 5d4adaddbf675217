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
//! [`SlotPlacement`]: its order *label*, whether its `LevelFS` equals the
//! previous member's (or `NO_VAL` for the first: `Placing` starts there),
//! and for a user the label of the first user of its run of tied users.
//!
//! # Labels
//! Order labels, maintained as members move (`labels`).
//!
//! The placements leave the dataflow as they are (a [`TreeSlot`] per
//! association): ranks are not materialised per user. The queue keeps the
//! sorted tree and derives a user's rank from its ancestors' placements when
//! it reads one (`priority::fair_tree`, where Slurm's walk is written out).
//!
//! # Cost
//! A usage event re-places the groups on its path. A group whose adjacent
//! members are all *scale-safe* (their exact `share / usage` ratios
//! identical, or far apart beyond `f64` rounding, or constants a ratio
//! cannot cross; `pair_scale_safe`) with one parent whose usage stays
//! positive keeps its order whatever that usage: when few members changed,
//! only they move, each to where a binary search finds it, and only the
//! members whose label or predecessor changed are placed again
//! (`Group::update_span`): a scan of node ids plus `O(m log n)` `LevelFS`.
//! Otherwise (near ties, several parents, a parent usage of 0, many changed
//! members): `O(m log m + n)` for a group of `n` members of which `m`
//! changed (one `LevelFS` and one comparison per kept member, since the
//! parent's usage moved them all; no hashing or sorting of the kept
//! members, which stay where they are in the group's vector: a member keeps
//! its usage as `f64` and its share fraction, so its new `LevelFS` is two
//! divisions, and only the kept members after the first changed one move,
//! once, when the changed ones are merged in from the back). A placement is
//! sent only where it changed (a moved member, a relabelled window, ties
//! that appeared or ended, a run whose first user changed), and no user
//! below them is re-derived.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use differential_dataflow::consolidation::consolidate;
use differential_dataflow::VecCollection;
use fairflow_model::formula::{slurm_sibling_order, SLURM_PARENT_ACCOUNT_LEVEL_FS};
use rustc_hash::FxHashMap as HashMap;

use super::groups::{GroupItem, Own};
use super::NodeRec;
use crate::priority::fair_tree::TreeSlot;
use crate::stages::per_batch_routed;
use crate::thresholds::{self, Threshold};
use crate::types::{Diff, Epoch, FrameUsage, NodeId, ROOT};

mod labels;
mod placed;

use labels::{assign_labels, label_at, label_before, relabel_around, spread};
use placed::{pair_scale_safe, sibling_order, Placed, Placing, LEAST_OWN};

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
    /// A group's parents' parts last replaced, kept for the next group's
    /// (no allocation per group in a batch).
    spare_parts: Vec<(NodeId, FrameUsage, u64)>,
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
    parts: Vec<(NodeId, FrameUsage, u64)>,
    /// The members in Slurm's sibling order.
    order: Vec<Placed>,
    /// Their node ids, in the same order: what a span update scans to find
    /// the changed members (a few bytes each, where a member is ~150).
    nodes: Vec<NodeId>,
    /// Is every adjacent pair of members [`pair_scale_safe`]? Then a move of the
    /// (one) parent's usage cannot reorder the members or make or break a
    /// tie, and an update places only the span its changed members cross
    /// ([`Group::update_span`]).
    scale_safe: bool,
}

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
        let mut changed: Vec<NodeId> = Vec::new();
        while let Some(&((group_id, _), _)) = rest.first() {
            let (mine, later) = rest.split_at(rest.partition_point(|((g, _), _)| *g == group_id));
            rest = later;
            let group = self.groups.entry(group_id).or_default();
            changed.clear();
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
            group.update(group_id, &changed, &mut self.spare_parts, out);
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
    /// items of one parent the larger (as `group_members` reads them);
    /// into `parts`, cleared first.
    fn parent_parts_into(&self, parts: &mut Vec<(NodeId, FrameUsage, u64)>) {
        parts.clear();
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
    }

    /// The members a node's present items make (one in a consistent
    /// state), each whose parent's part is present.
    fn members_of(
        &self,
        node: NodeId,
        parts: &[(NodeId, FrameUsage, u64)],
        into: &mut Vec<Placed>,
    ) {
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
        spare_parts: &mut Vec<(NodeId, FrameUsage, u64)>,
        out: &mut Vec<((NodeId, TreeSlot), Diff)>,
    ) {
        let mut parts = std::mem::take(spare_parts);
        self.parent_parts_into(&mut parts);
        let parents_changed = parts != self.parts;
        let rebuild = parts
            .iter()
            .map(|part| part.0)
            .ne(self.parts.iter().map(|part| part.0));
        if self.try_update_span(group_id, changed, &parts, rebuild, out) {
            *spare_parts = std::mem::replace(&mut self.parts, parts);
            return;
        }
        // The placements sent to members taken out of the order, by node.
        let (mut taken, mut fresh) = if rebuild {
            self.take_every_member(&parts)
        } else {
            self.take_changed_members(changed, &parts, parents_changed)
        };
        fresh.sort_by(sibling_order);
        let taken_back = take_back(&mut taken, &mut fresh);
        self.merge_in(&fresh);
        assign_labels(&mut self.order);
        self.place_every_member(group_id, out);
        retract_taken(&taken, &taken_back, out);
        *spare_parts = std::mem::replace(&mut self.parts, parts);
    }

    /// [`Group::update_span`] if the group qualifies: one parent before and
    /// after (not `rebuild`), its level shares as before, its usage positive
    /// before and after (at 0 every `LevelFS` is `+inf`, whatever the
    /// ratios), few changed members, every pair scale-safe. False (nothing
    /// changed) otherwise.
    fn try_update_span(
        &mut self,
        group_id: NodeId,
        changed: &[NodeId],
        parts: &[(NodeId, FrameUsage, u64)],
        rebuild: bool,
        out: &mut Vec<((NodeId, TreeSlot), Diff)>,
    ) -> bool {
        let ([part], [last]) = (parts, &self.parts[..]) else {
            return false;
        };
        // Few changed members: each costs a scan of the node ids and
        // its span; many are cheaper merged in one pass.
        let few =
            changed.len() * SPAN_UPDATE_MAX_SHARE <= self.order.len().max(SPAN_UPDATE_MAX_SHARE);
        thresholds::decide(Threshold::GroupSpanTooWide, !few);
        few && !rebuild
            && self.scale_safe
            && part.2 == last.2
            && part.1 > 0
            && last.1 > 0
            && self.update_span(group_id, changed, *part, out)
    }

    /// Take every member out of the order and derive them all again from
    /// the items (the set of parents changed): `(placements sent to them,
    /// the members)`.
    fn take_every_member(
        &mut self,
        parts: &[(NodeId, FrameUsage, u64)],
    ) -> (Vec<(NodeId, TreeSlot)>, Vec<Placed>) {
        let taken = self
            .order
            .drain(..)
            .filter_map(|placed| Some((placed.node, placed.sent?)))
            .collect();
        let mut fresh = Vec::new();
        for (item, count) in &self.items {
            if let (GroupItem::Member { node, parent, own }, true) = (*item, *count > 0) {
                if let Some(part) = part_of(parts, parent) {
                    fresh.push(Placed::new(node, parent, own, part));
                }
            }
        }
        (taken, fresh)
    }

    /// Take the `changed` members (and those whose parent left) out of the
    /// order, bring the kept ones to their parent's part and re-sort them
    /// if `f64` rounding reordered them: `(placements sent to the members
    /// taken, the changed members derived again)`.
    fn take_changed_members(
        &mut self,
        changed: &[NodeId],
        parts: &[(NodeId, FrameUsage, u64)],
        parents_changed: bool,
    ) -> (Vec<(NodeId, TreeSlot)>, Vec<Placed>) {
        let mut taken: Vec<(NodeId, TreeSlot)> = Vec::new();
        let mut kept_in_order = true;
        let mut fresh: Vec<Placed> = Vec::new();
        // Each parent's usage converted once for all its members.
        let parent_usage_f64: Vec<f64> = parts.iter().map(|&(_, usage, _)| usage as f64).collect();
        let mut previous: Option<(f64, bool, u64)> = None;
        self.order.retain_mut(|placed| {
            let part = if parents_changed {
                part_index(parts, placed.parent)
                    .map(|index| (index, (parts[index].1, parts[index].2)))
            } else {
                Some((0, (placed.member.parent_usage, placed.member.level_shares)))
            };
            match part {
                Some((index, part)) if changed.binary_search(&placed.node).is_err() => {
                    placed.bring_to(part, parent_usage_f64[index]);
                    placed.anchored = true;
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
            self.members_of(node, parts, &mut fresh);
        }
        if !kept_in_order {
            // `f64` rounding reordered the kept members: their labels no
            // longer increase along the order, and none is anchored.
            self.order.sort_by(sibling_order);
            for placed in &mut self.order {
                placed.anchored = false;
            }
        }
        (taken, fresh)
    }

    /// Merge the changed members (sorted) into the kept ones in place, from
    /// the back: each kept member after the first changed one moves once.
    fn merge_in(&mut self, fresh: &[Placed]) {
        if fresh.is_empty() {
            return;
        }
        let kept = self.order.len();
        self.order.extend_from_slice(fresh);
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

    /// Place every member in order, sending what changed; note whether the
    /// group is scale-safe and its node ids.
    fn place_every_member(&mut self, group_id: NodeId, out: &mut Vec<((NodeId, TreeSlot), Diff)>) {
        let mut placing = Placing::new(group_id);
        let mut scale_safe = true;
        for index in 0..self.order.len() {
            if index > 0 {
                scale_safe &= pair_scale_safe(&self.order[index - 1], &self.order[index]);
            }
            send_placement(&mut self.order[index], &mut placing, out);
        }
        self.scale_safe = scale_safe;
        self.nodes.clear();
        self.nodes
            .extend(self.order.iter().map(|placed| placed.node));
    }

    /// [`Group::update`] when every adjacent pair of members is
    /// [`pair_scale_safe`] and the group has one parent, `part`, whose level
    /// shares did not change and whose usage is positive before and after.
    /// The kept members' order then holds at the new usage, so they are
    /// neither re-derived nor re-checked: each keeps the `LevelFS` of the
    /// parent usage it was last derived at (its `member.parent_usage`) and
    /// is brought to the current one only where it is compared or placed.
    /// Each changed member is found by a scan of the node ids and moved to
    /// where a binary search at the current usage finds its place (the
    /// members between its two places shift by one but keep their labels);
    /// a new one is inserted, a leaving one removed. A moved or new member
    /// takes a label between its new neighbours' (or a window around it is
    /// relabelled). Only the members whose neighbours or labels changed are
    /// placed again: from each, placing goes on while slots come out
    /// changed (a run of tied users whose first user changed), and stops at
    /// the first slot that is as sent, since every later member keeps its
    /// predecessor, its label, its tie and its run. The new adjacent pairs
    /// are all among the placed members, so the group stays scale-safe if
    /// they are. Returns false, having changed nothing, when a node has two
    /// members (the full path places those).
    fn update_span(
        &mut self,
        group_id: NodeId,
        changed: &[NodeId],
        part: (NodeId, FrameUsage, u64),
        out: &mut Vec<((NodeId, TreeSlot), Diff)>,
    ) -> bool {
        let current = (part.1, part.2);
        let usage_f64 = part.1 as f64;
        debug_assert_eq!(self.nodes.len(), self.order.len());
        let mut fresh: Vec<Placed> = Vec::new();
        for &node in changed {
            self.members_of(node, &[part], &mut fresh);
        }
        if fresh.windows(2).any(|pair| pair[0].node == pair[1].node) {
            // Two members for one node (not a consistent state): the full
            // path, which places whatever the items say.
            return false;
        }
        let (dirty, taken) = self.move_changed(changed, fresh, current, usage_f64);
        self.place_dirty(group_id, &dirty, current, usage_f64, out);
        for (node, slot) in taken {
            out.push(((node, slot), -1));
        }
        true
    }

    /// Move each changed member to its place at the parent's `current`
    /// part (insert a new one, remove a leaving one), relabelling around
    /// it: `(the members to place again, sorted by node; the placements of
    /// the members that left)`. A member is placed again when it moved or
    /// is new, or its predecessor changed.
    fn move_changed(
        &mut self,
        changed: &[NodeId],
        fresh: Vec<Placed>,
        current: (FrameUsage, u64),
        usage_f64: f64,
    ) -> (Vec<NodeId>, Vec<(NodeId, TreeSlot)>) {
        let mut dirty: Vec<NodeId> = Vec::new();
        let mut taken: Vec<(NodeId, TreeSlot)> = Vec::new();
        let mut fresh = fresh.into_iter().peekable();
        for &node in changed {
            let was = self.nodes.iter().position(|&n| n == node);
            let now = fresh.next_if(|placed| placed.node == node);
            match (was, now) {
                (Some(was), Some(mut placed)) => {
                    // Moved: only the members between its two places shift.
                    placed.sent = self.order[was].sent;
                    placed.label = self.order[was].label;
                    dirty.extend(self.nodes.get(was + 1));
                    let to = self.place_of(&placed, Some(was), current, usage_f64);
                    if to <= was {
                        self.order[to..=was].rotate_right(1);
                        self.nodes[to..=was].rotate_right(1);
                    } else {
                        self.order[was..=to].rotate_left(1);
                        self.nodes[was..=to].rotate_left(1);
                    }
                    self.order[to] = placed;
                    self.relabel_at(to, &mut dirty);
                }
                (Some(was), None) => {
                    let placed = self.order.remove(was);
                    self.nodes.remove(was);
                    taken.extend(placed.sent.map(|slot| (node, slot)));
                    dirty.extend(self.nodes.get(was));
                }
                (None, Some(placed)) => {
                    let to = self.place_of(&placed, None, current, usage_f64);
                    self.nodes.insert(to, node);
                    self.order.insert(to, placed);
                    self.relabel_at(to, &mut dirty);
                }
                (None, None) => {}
            }
        }
        debug_assert!(
            fresh.next().is_none(),
            "every fresh member is a changed node"
        );
        // The first member's tie is with `NO_VAL` (`Placing::new`), which a
        // ratio scaled by the new usage could meet: place it again if it
        // changed.
        if let Some(head) = self.order.first_mut() {
            head.bring_to(current, usage_f64);
            let tied = head.level_fs == SLURM_PARENT_ACCOUNT_LEVEL_FS;
            if head
                .sent
                .is_some_and(|sent| sent.placement.local_tie != tied)
            {
                dirty.push(head.node);
            }
        }
        dirty.sort_unstable();
        dirty.dedup();
        (dirty, taken)
    }

    /// Place again from each `dirty` member on, while slots come out
    /// changed (a run of tied users whose first user changed), stopping at
    /// the first slot that is as sent.
    fn place_dirty(
        &mut self,
        group_id: NodeId,
        dirty: &[NodeId],
        current: (FrameUsage, u64),
        usage_f64: f64,
        out: &mut Vec<((NodeId, TreeSlot), Diff)>,
    ) {
        let starts: Vec<usize> = if dirty.is_empty() {
            Vec::new()
        } else {
            (0..self.nodes.len())
                .filter(|&index| dirty.binary_search(&self.nodes[index]).is_ok())
                .collect()
        };
        let len = self.order.len();
        let mut starts = starts.into_iter().peekable();
        while let Some(start) = starts.next() {
            let mut placing = match start.checked_sub(1) {
                None => Placing::new(group_id),
                Some(before) => {
                    let before = &mut self.order[before];
                    before.bring_to(current, usage_f64);
                    Placing::after(group_id, before)
                }
            };
            let mut index = start;
            loop {
                if index > 0 {
                    self.scale_safe &= pair_scale_safe(&self.order[index - 1], &self.order[index]);
                }
                let placed = &mut self.order[index];
                placed.bring_to(current, usage_f64);
                let as_sent = send_placement(placed, &mut placing, out);
                index += 1;
                while starts.next_if(|&next| next < index).is_some() {}
                let next_dirty = starts.peek() == Some(&index);
                if index == len || (as_sent && !next_dirty) {
                    break;
                }
                if next_dirty {
                    starts.next();
                }
            }
        }
    }

    /// Give the member just moved to or inserted at `order[index]` a label
    /// between its neighbours' (its own if it still lies there; else their
    /// midpoint, [`spread`] over one member), or
    /// relabel a window around it; every member whose label or
    /// predecessor changed goes into `dirty`.
    fn relabel_at(&mut self, index: usize, dirty: &mut Vec<NodeId>) {
        dirty.push(self.nodes[index]);
        dirty.extend(self.nodes.get(index + 1));
        let (low, high) = (
            label_before(&self.order, index),
            label_at(&self.order, index + 1),
        );
        let label = self.order[index].label;
        if (label > low && label < high) || spread(&mut self.order, index, index + 1, low, high) {
            return;
        }
        let window = relabel_around(&mut self.order, index, index + 1, |_| true);
        dirty.extend_from_slice(&self.nodes[window]);
    }

    /// Where `placed` goes in the order at the parent's `current` part
    /// (`usage_f64`: its usage converted), the member at `skip` (its old
    /// place, if it has one) left out: a binary search, each member it
    /// compares with brought to the current part first.
    fn place_of(
        &mut self,
        placed: &Placed,
        skip: Option<usize>,
        current: (FrameUsage, u64),
        usage_f64: f64,
    ) -> usize {
        let len = self.order.len() - usize::from(skip.is_some());
        let (mut low, mut high) = (0, len);
        while low < high {
            let middle = low + (high - low) / 2;
            let index = match skip {
                Some(skip) if middle >= skip => middle + 1,
                _ => middle,
            };
            let other = &mut self.order[index];
            other.bring_to(current, usage_f64);
            if sibling_order(other, placed) == Ordering::Less {
                low = middle + 1;
            } else {
                high = middle;
            }
        }
        low
    }
}

/// Give each changed member the placement last sent for it, if it was
/// taken out of the order (`taken`, sorted here by node); which of `taken`
/// came back.
fn take_back(taken: &mut [(NodeId, TreeSlot)], fresh: &mut [Placed]) -> Vec<bool> {
    taken.sort_unstable_by_key(|&(node, _)| node);
    let mut taken_back = vec![false; taken.len()];
    for placed in fresh {
        if let Ok(index) = taken.binary_search_by_key(&placed.node, |&(node, _)| node) {
            debug_assert!(!taken_back[index], "one member per node");
            taken_back[index] = true;
            placed.sent = Some(taken[index].1);
            placed.label = taken[index].1.placement.label;
        }
    }
    taken_back
}

/// Members that left the group: retract their placements.
fn retract_taken(
    taken: &[(NodeId, TreeSlot)],
    taken_back: &[bool],
    out: &mut Vec<((NodeId, TreeSlot), Diff)>,
) {
    for (&(node, slot), back) in taken.iter().zip(taken_back) {
        if !back {
            out.push(((node, slot), -1));
        }
    }
}

/// Place the next member and send the difference from what was sent for
/// it; is its slot as sent?
fn send_placement(
    placed: &mut Placed,
    placing: &mut Placing,
    out: &mut Vec<((NodeId, TreeSlot), Diff)>,
) -> bool {
    let slot = placing.place(placed);
    let as_sent = placed.sent == Some(slot);
    match placed.sent {
        Some(_) if as_sent => {}
        Some(sent) => {
            out.push(((placed.node, sent), -1));
            out.push(((placed.node, slot), 1));
        }
        None => out.push(((placed.node, slot), 1)),
    }
    placed.sent = Some(slot);
    as_sent
}

/// A span update is taken when at most one member in this many changed
/// (or one in a group of fewer).
const SPAN_UPDATE_MAX_SHARE: usize = 16;

/// A parent's part `(usage, level shares)`, if present.
fn part_of(parts: &[(NodeId, FrameUsage, u64)], parent: NodeId) -> Option<(FrameUsage, u64)> {
    part_index(parts, parent).map(|index| (parts[index].1, parts[index].2))
}

/// Where a parent's part is in `parts` (sorted by parent), if present.
fn part_index(parts: &[(NodeId, FrameUsage, u64)], parent: NodeId) -> Option<usize> {
    parts.binary_search_by_key(&parent, |part| part.0).ok()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use differential_dataflow::consolidation::consolidate;
    use fairflow_model::Shares;

    use super::{GroupItem, Groups, Own};
    use crate::priority::fair_tree::TreeSlot;
    use crate::types::{Diff, NodeId, ROOT};

    /// A user of root's group with one share and `usage`.
    fn user(node: NodeId, usage: u128, diff: Diff) -> ((NodeId, GroupItem), Diff) {
        user_with(node, 1, usage, diff)
    }

    /// Root's part: its usage, and 4 level shares (four users of one share).
    fn root(usage: u128, diff: Diff) -> ((NodeId, GroupItem), Diff) {
        root_part(usage, 4, diff)
    }

    /// `(prefix, first, local_tie, run_prefix, run_first, run_local_tie)`:
    /// a member's placement as Slurm's walk reads it.
    type Placement = (u64, bool, bool, u64, bool, bool);

    /// The slots a receiver holds (the updates sent so far, summed), by node.
    #[derive(Default)]
    struct Held(BTreeMap<NodeId, TreeSlot>);

    impl Held {
        /// Apply one batch's updates: each retracts a slot held or inserts
        /// one for a node that holds none. Returns the nodes sent.
        fn take(&mut self, mut out: Vec<((NodeId, TreeSlot), Diff)>) -> Vec<NodeId> {
            consolidate(&mut out);
            for &((node, slot), diff) in out.iter().filter(|(_, diff)| *diff < 0) {
                assert_eq!(diff, -1);
                assert_eq!(
                    self.0.remove(&node),
                    Some(slot),
                    "a retraction of what is held"
                );
            }
            for &((node, slot), diff) in out.iter().filter(|(_, diff)| *diff > 0) {
                assert_eq!(diff, 1);
                assert!(self.0.insert(node, slot).is_none(), "one slot per node");
            }
            let mut nodes: Vec<NodeId> = out.iter().map(|&((node, _), _)| node).collect();
            nodes.dedup();
            nodes
        }

        /// Each member's placement, by node, derived from the labels as
        /// the queue derives it (`priority::fair_tree`): members in label
        /// order (the labels of a group unique), the users before each, the
        /// first; a user's run from the user its run label names.
        fn placements(&self) -> Vec<(NodeId, Placement)> {
            let mut by_label: Vec<(NodeId, u64, NodeId, TreeSlot)> = self
                .0
                .iter()
                .map(|(&node, &slot)| (slot.group, slot.placement.label, node, slot))
                .collect();
            by_label.sort_unstable_by_key(|&(group, label, _, _)| (group, label));
            let mut out = Vec::new();
            for group in by_label.chunk_by(|a, b| a.0 == b.0) {
                assert!(
                    group.windows(2).all(|pair| pair[0].1 < pair[1].1),
                    "labels are unique in a group"
                );
                let mut users_before = vec![0];
                for (_, _, _, slot) in group {
                    users_before.push(users_before.last().unwrap() + slot.weight);
                }
                for (index, &(_, _, node, slot)) in group.iter().enumerate() {
                    let p = slot.placement;
                    let run = group
                        .iter()
                        .position(|&(_, label, _, _)| label == p.run_label)
                        .expect("a run label names a member");
                    out.push((
                        node,
                        (
                            users_before[index],
                            index == 0,
                            p.local_tie,
                            users_before[run],
                            run == 0,
                            group[run].3.placement.local_tie,
                        ),
                    ));
                }
            }
            out.sort_unstable();
            out
        }
    }

    /// Apply a batch to `groups` and `held`: the nodes sent.
    fn batch(
        groups: &mut Groups,
        held: &mut Held,
        changes: Vec<((NodeId, GroupItem), Diff)>,
    ) -> Vec<NodeId> {
        let mut out = Vec::new();
        groups.apply(changes, &mut out);
        held.take(out)
    }

    /// The placements of a group fed `changes` at once.
    fn placed_at_once(changes: Vec<((NodeId, GroupItem), Diff)>) -> Vec<(NodeId, Placement)> {
        let mut held = Held::default();
        batch(&mut Groups::default(), &mut held, changes);
        held.placements()
    }

    #[test]
    fn a_member_moving_across_others_sends_only_its_own_slot() {
        // Six users of one share each under root (usage 100), used 10, 20,
        // ..., 60: the least used first, so user i has prefix i - 1, only
        // user 1 is first, and no two `LevelFS` are equal (each user starts
        // its own run).
        let (mut groups, mut held) = (Groups::default(), Held::default());
        let mut load = vec![root(100, 1)];
        load.extend((1..=6).map(|node| user(node, u128::from(node) * 10, 1)));
        assert_eq!(batch(&mut groups, &mut held, load), vec![1, 2, 3, 4, 5, 6]);
        let expected: Vec<(NodeId, Placement)> = (1..=6u32)
            .map(|node| {
                let prefix = u64::from(node) - 1;
                (node, (prefix, node == 1, false, prefix, node == 1, false))
            })
            .collect();
        assert_eq!(held.placements(), expected);
        // User 1 is charged 45 (55; root 145): the order is 2 (20), 3, 4,
        // 5 (50), 1 (55), 6 (60). User 1 moves from the front across four
        // users, each of which moves up one place (and 2 becomes first);
        // only user 1's slot is sent: the others keep their labels, and
        // their ties (none) with their new predecessors.
        let moved = batch(
            &mut groups,
            &mut held,
            vec![root(100, -1), root(145, 1), user(1, 10, -1), user(1, 55, 1)],
        );
        assert_eq!(moved, vec![1]);
        assert_eq!(
            held.placements(),
            vec![
                (1, (4, false, false, 4, false, false)),
                (2, (0, true, false, 0, true, false)),
                (3, (1, false, false, 1, false, false)),
                (4, (2, false, false, 2, false, false)),
                (5, (3, false, false, 3, false, false)),
                (6, (5, false, false, 5, false, false)),
            ]
        );
        // User 2 is charged 20 (40, as user 4; root 165): 3 (30) comes
        // first, then the tied 4 and 2 (newest, the larger id, first), then
        // 5, 1, 6 as before. User 2 ties with 4, a user just before it, so
        // it joins 4's run (run prefix 1): only its slot is sent.
        let tied = batch(
            &mut groups,
            &mut held,
            vec![root(145, -1), root(165, 1), user(2, 20, -1), user(2, 40, 1)],
        );
        assert_eq!(tied, vec![2]);
        assert_eq!(
            held.placements(),
            vec![
                (1, (4, false, false, 4, false, false)),
                (2, (2, false, true, 1, false, false)),
                (3, (0, true, false, 0, true, false)),
                (4, (1, false, false, 1, false, false)),
                (5, (3, false, false, 3, false, false)),
                (6, (5, false, false, 5, false, false)),
            ]
        );
    }

    #[test]
    fn members_are_placed_once_their_parent_arrives() {
        // Users 1 (usage 30) and 2 (usage 10) before root's part: no
        // placement; with root's part, 2 first (less used), then 1.
        let (mut groups, mut held) = (Groups::default(), Held::default());
        let early = batch(&mut groups, &mut held, vec![user(1, 30, 1), user(2, 10, 1)]);
        assert_eq!(early, Vec::<NodeId>::new());
        assert_eq!(batch(&mut groups, &mut held, vec![root(40, 1)]), vec![1, 2]);
        assert_eq!(
            held.placements(),
            vec![
                (1, (1, false, false, 1, false, false)),
                (2, (0, true, false, 0, true, false)),
            ]
        );
        // Root's part leaves: both placements are retracted.
        assert_eq!(
            batch(&mut groups, &mut held, vec![root(40, -1)]),
            vec![1, 2]
        );
        assert!(held.0.is_empty());
    }

    #[test]
    fn a_batch_sends_only_the_placements_that_moved() {
        // Four users of one share each under root (usage 100): equal shares,
        // so the least usage comes first: 1 (10), 2 (20), 3 (30), 4 (40),
        // each user standing for one user, so the prefixes are 0, 1, 2, 3.
        let (mut groups, mut held) = (Groups::default(), Held::default());
        let load = vec![
            root(100, 1),
            user(1, 10, 1),
            user(2, 20, 1),
            user(3, 30, 1),
            user(4, 40, 1),
        ];
        batch(&mut groups, &mut held, load);
        let prefixes = |held: &Held| -> Vec<(NodeId, u64)> {
            held.placements()
                .into_iter()
                .map(|(node, placement)| (node, placement.0))
                .collect()
        };
        assert_eq!(prefixes(&held), vec![(1, 0), (2, 1), (3, 2), (4, 3)]);
        // User 2 is charged 15 (root 115): the order is 1 (10), 3 (30),
        // 2 (35), 4 (40); 2 and 3 change places, and only 2 is sent.
        let moved = batch(
            &mut groups,
            &mut held,
            vec![root(100, -1), root(115, 1), user(2, 20, -1), user(2, 35, 1)],
        );
        assert_eq!(moved, vec![2]);
        assert_eq!(prefixes(&held), vec![(1, 0), (2, 2), (3, 1), (4, 3)]);
        // User 3 leaves: its placement is retracted and 2 and 4 move up,
        // keeping their slots.
        assert_eq!(
            batch(&mut groups, &mut held, vec![user(3, 30, -1)]),
            vec![3]
        );
        assert_eq!(prefixes(&held), vec![(1, 0), (2, 1), (4, 2)]);
        // The same state loaded at once gives the same placements.
        let at_once = placed_at_once(vec![
            root(115, 1),
            user(1, 10, 1),
            user(2, 35, 1),
            user(4, 40, 1),
        ]);
        assert_eq!(held.placements(), at_once);
    }

    #[test]
    fn many_moves_into_one_gap_relabel_a_window_and_keep_the_order() {
        // User 1 (usage 10) stays first; users 2..=120 start at usage
        // 1,000 times their id. Each step takes the last user and gives it
        // a usage below every user moved before it (but above user 1's),
        // so each lands in the gap just after user 1 that the one before
        // it halved: about sixty steps exhaust a gap of the label space,
        // and a window is relabelled. After every step the placements are
        // those of the same group loaded at once, and a step sends a few
        // slots (the prefixes of a hundred users shift each time).
        let items = |usages: &[(NodeId, u128)], diff: Diff| {
            let total: u128 = usages.iter().map(|&(_, usage)| usage).sum();
            let mut items = vec![root_part(total, usages.len() as u64, diff)];
            items.extend(usages.iter().map(|&(node, usage)| user(node, usage, diff)));
            items
        };
        let mut usages: Vec<(NodeId, u128)> = vec![(1, 10)];
        usages.extend((2..=120).map(|node| (node, u128::from(node) * 1_000)));
        let (mut groups, mut held) = (Groups::default(), Held::default());
        batch(&mut groups, &mut held, items(&usages, 1));
        // One step: change the usages, send the difference, and compare
        // with the group loaded at once; the slots sent.
        type Usages = Vec<(NodeId, u128)>;
        let mut step = |change: &dyn Fn(&mut Usages), context: &str| {
            let mut changes = items(&usages, -1);
            change(&mut usages);
            changes.extend(items(&usages, 1));
            let sent = batch(&mut groups, &mut held, changes).len();
            let at_once = placed_at_once(items(&usages, 1));
            assert_eq!(held.placements(), at_once, "{context}");
            sent
        };
        let mut sent = 0;
        for moved in 0..110u32 {
            sent += step(
                &|usages| usages[119 - moved as usize].1 = 500 - u128::from(moved),
                &format!("move {moved}"),
            );
        }
        assert!(sent < 110 * 3 + 300, "{sent} slots sent in 110 steps");
        // New users joining in the same gap (a new member: the full path,
        // since the level shares change) do the same.
        for joined in 0..110u32 {
            sent += step(
                &|usages| usages.push((200 + joined, 300 - u128::from(joined))),
                &format!("join {joined}"),
            );
        }
        assert!(sent < 220 * 3 + 600, "{sent} slots sent in 220 steps");
    }

    /// A user of root's group with `shares` and `usage`.
    fn user_with(
        node: NodeId,
        shares: u32,
        usage: u128,
        diff: Diff,
    ) -> ((NodeId, GroupItem), Diff) {
        let own = Own {
            shares: Shares::Value(shares),
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

    /// Root's part with `level` shares among its children.
    fn root_part(usage: u128, level: u64, diff: Diff) -> ((NodeId, GroupItem), Diff) {
        let parent = GroupItem::Parent {
            parent: ROOT,
            usage,
            child_level: level,
        };
        ((ROOT, parent), diff)
    }

    /// The items of root's group for `users` (`(shares, usage)` by node,
    /// absent: `None`) and root's own usage, with `diff`.
    fn group_items(
        users: &[Option<(u32, u128)>],
        own_usage: u128,
        diff: Diff,
    ) -> Vec<((NodeId, GroupItem), Diff)> {
        let present = || {
            users
                .iter()
                .enumerate()
                .filter_map(|(i, u)| Some((i, (*u)?)))
        };
        let level = present().map(|(_, (shares, _))| u64::from(shares)).sum();
        let usage = own_usage + present().map(|(_, (_, usage))| usage).sum::<u128>();
        let mut items = vec![root_part(usage, level, diff)];
        items.extend(
            present().map(|(i, (shares, usage))| user_with(i as NodeId + 1, shares, usage, diff)),
        );
        items
    }

    #[test]
    fn a_group_updated_batch_by_batch_holds_what_a_group_built_at_once_would() {
        // Forty users of root whose shares and usage are drawn so that many
        // `share / usage` ratios are equal in exact arithmetic (usage a
        // multiple of shares: `LevelFS` values a few ulps apart, which a move
        // of root's usage can reorder or tie) or identical (same shares and
        // usage: always tied); users come and go, root's own usage moves.
        // After every batch, the placements sent so far (summed) must read
        // exactly as those a group fed the final items at once sends
        // (labels differ; what they say of the order does not): whichever
        // path the update took (every member re-derived, or only the span
        // the changed ones cross), the result is the same.
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move |bound: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % bound
        };
        let mut users: Vec<Option<(u32, u128)>> = vec![None; 40];
        let mut own_usage: u128 = 0;
        let (mut groups, mut held) = (Groups::default(), Held::default());
        for _batch in 0..600 {
            let before = group_items(&users, own_usage, -1);
            // One to three users change: few enough, often, for a group
            // of forty to be updated over the span they cross.
            for _ in 0..=next(3) {
                let node = next(40) as usize;
                users[node] = match next(30) {
                    0 => None,
                    // The same shares and usage as another user: always tied.
                    1 | 2 => users[next(40) as usize],
                    // A ratio equal in exact arithmetic to other users' (usage
                    // a multiple of shares): `LevelFS` values ulps apart.
                    3 => {
                        let shares = [1, 2, 4, 5][next(4) as usize];
                        Some((shares, u128::from(shares) * u128::from(10 + 10 * next(3))))
                    }
                    4 | 5 => Some(([1, 2, 4, 5][next(4) as usize], 0)),
                    // Most often: a usage far from everyone else's.
                    _ => Some(([1, 2, 4, 5][next(4) as usize], u128::from(next(1 << 40)))),
                };
            }
            if next(2) == 0 {
                own_usage = u128::from(next(500));
            }
            let mut changes = before;
            changes.extend(group_items(&users, own_usage, 1));
            batch(&mut groups, &mut held, changes);
            let expected = placed_at_once(group_items(&users, own_usage, 1));
            assert_eq!(held.placements(), expected);
        }
    }
}
