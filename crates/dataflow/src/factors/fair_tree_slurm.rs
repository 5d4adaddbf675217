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
//! A usage event re-places the groups on its path. A group whose adjacent
//! members are all *scale-safe* (their exact `share / usage` ratios
//! identical, or far apart beyond `f64` rounding, or constants a ratio
//! cannot cross; `pair_scale_safe`) with one parent whose usage stays
//! positive keeps its order whatever that usage: when few members changed,
//! only they move, each to where a binary search finds it, and only the
//! span between their old and new places is placed again
//! (`Group::update_span`): a scan of node ids plus `O(m log n)` `LevelFS`
//! and the span. Otherwise (near ties, several parents, a parent usage of
//! 0, many changed members): `O(m log m + n)` for a
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
    /// A group's parents' parts last replaced, kept for the next group's
    /// (no allocation per group in a batch).
    spare_parts: Vec<(NodeId, u128, u64)>,
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
    /// Their node ids, in the same order: what a span update scans to find
    /// the changed members (a few bytes each, where a member is ~150).
    nodes: Vec<NodeId>,
    /// Is every adjacent pair of members [`pair_scale_safe`]? Then a move of the
    /// (one) parent's usage cannot reorder the members or make or break a
    /// tie, and an update places only the span its changed members cross
    /// ([`Group::update_span`]).
    scale_safe: bool,
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
    /// How its `LevelFS` follows its parent's usage (from the two above).
    scaling: Scaling,
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
            scaling: Scaling::of(&member, share_fraction, usage_f64),
            level_fs: member_level_fs(&member, share_fraction, usage_f64, part.0 as f64),
            sent: None,
        }
    }

    /// Its key in [`slurm_sibling_order`].
    fn order_key(&self) -> (f64, bool, u64) {
        (self.level_fs, self.member.user, u64::from(self.node))
    }

    /// Bring its `LevelFS` to its parent's current part, if it was derived
    /// at another (`usage_f64`: the usage converted).
    fn bring_to(&mut self, part: (u128, u64), usage_f64: f64) {
        if part != (self.member.parent_usage, self.member.level_shares) {
            self.repart(part, usage_f64);
        }
    }

    /// Its parent's part moved to `(usage, level shares)` (`usage_f64`:
    /// the usage converted): re-derive its `LevelFS`.
    fn repart(&mut self, (usage, level_shares): (u128, u64), usage_f64: f64) {
        if level_shares != self.member.level_shares {
            self.member.level_shares = level_shares;
            self.share_fraction = share_fraction(self.member.shares.raw(), level_shares);
            self.scaling = Scaling::of(&self.member, self.share_fraction, self.usage_f64);
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
    fn parent_parts_into(&self, parts: &mut Vec<(NodeId, u128, u64)>) {
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
        spare_parts: &mut Vec<(NodeId, u128, u64)>,
        out: &mut Vec<((NodeId, TreeSlot), Diff)>,
    ) {
        let mut parts = std::mem::take(spare_parts);
        self.parent_parts_into(&mut parts);
        let parents_changed = parts != self.parts;
        let rebuild = parts
            .iter()
            .map(|part| part.0)
            .ne(self.parts.iter().map(|part| part.0));
        // One parent, its level shares as before, its usage positive before
        // and after (at 0 every `LevelFS` is `+inf`, whatever the ratios).
        if let ([part], [last]) = (&parts[..], &self.parts[..]) {
            // Few changed members: each costs a scan of the node ids and
            // its span; many are cheaper merged in one pass.
            let few = changed.len() * SPAN_UPDATE_MAX_SHARE
                <= self.order.len().max(SPAN_UPDATE_MAX_SHARE);
            if few
                && !rebuild
                && self.scale_safe
                && part.2 == last.2
                && part.1 > 0
                && last.1 > 0
                && self.update_span(group_id, changed, *part, out)
            {
                *spare_parts = std::mem::replace(&mut self.parts, parts);
                return;
            }
        }
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
                        placed.bring_to(part, parent_usage_f64[index]);
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
        let taken_back = take_back(&mut taken, &mut fresh);
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
        retract_taken(&taken, &taken_back, out);
        *spare_parts = std::mem::replace(&mut self.parts, parts);
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
    /// members between its two places shift by one); a new one is
    /// inserted, a leaving one removed. Placing starts at the first
    /// position that changed (from the previous member's slot, which did
    /// not) and stops, once past the last member whose neighbours changed,
    /// at the first slot that is as sent: every later member keeps its
    /// neighbours, so its prefix, tie and run too.
    /// The new adjacent pairs are all in the placed span, so the group stays
    /// scale-safe if they are. Returns false, having changed nothing, when
    /// a node has two members (the full path places those).
    fn update_span(
        &mut self,
        group_id: NodeId,
        changed: &[NodeId],
        part: (NodeId, u128, u64),
        out: &mut Vec<((NodeId, TreeSlot), Diff)>,
    ) -> bool {
        let current = (part.1, part.2);
        let usage_f64 = part.1 as f64;
        debug_assert_eq!(self.nodes.len(), self.order.len());
        // The first position whose member (or predecessor) changed, and the
        // members left after the last such position's successor.
        let mut first_changed = usize::MAX;
        let mut untouched_tail = usize::MAX;
        let mut fresh: Vec<Placed> = Vec::new();
        for &node in changed {
            self.members_of(node, &[part], &mut fresh);
        }
        if fresh.windows(2).any(|pair| pair[0].node == pair[1].node) {
            // Two members for one node (not a consistent state): the full
            // path, which places whatever the items say.
            return false;
        }
        let mut taken: Vec<(NodeId, TreeSlot)> = Vec::new();
        let mut fresh = fresh.into_iter().peekable();
        for &node in changed {
            let was = self.nodes.iter().position(|&n| n == node);
            let now = fresh.next_if(|placed| placed.node == node);
            let len = self.order.len();
            match (was, now) {
                (Some(was), Some(mut placed)) => {
                    // Moved: only the members between its two places shift.
                    placed.sent = self.order[was].sent;
                    let to = self.place_of(&placed, Some(was), current, usage_f64);
                    if to <= was {
                        self.order[to..=was].rotate_right(1);
                        self.nodes[to..=was].rotate_right(1);
                    } else {
                        self.order[was..=to].rotate_left(1);
                        self.nodes[was..=to].rotate_left(1);
                    }
                    self.order[to] = placed;
                    first_changed = first_changed.min(to.min(was));
                    untouched_tail = untouched_tail.min(len.saturating_sub(to.max(was) + 2));
                }
                (Some(was), None) => {
                    let placed = self.order.remove(was);
                    self.nodes.remove(was);
                    taken.extend(placed.sent.map(|slot| (node, slot)));
                    first_changed = first_changed.min(was);
                    untouched_tail = untouched_tail.min(len.saturating_sub(was + 2));
                }
                (None, Some(placed)) => {
                    let to = self.place_of(&placed, None, current, usage_f64);
                    self.nodes.insert(to, node);
                    self.order.insert(to, placed);
                    first_changed = first_changed.min(to);
                    untouched_tail = untouched_tail.min(len.saturating_sub(to + 1));
                }
                (None, None) => {}
            }
        }
        debug_assert!(
            fresh.next().is_none(),
            "every fresh member is a changed node"
        );
        // The first member's tie is with `NO_VAL` (`Placing::new`), which a
        // ratio scaled by the new usage could meet: re-place from there if it
        // changed.
        if let Some(head) = self.order.first_mut() {
            head.bring_to(current, usage_f64);
            let tied = head.level_fs == SLURM_PARENT_ACCOUNT_LEVEL_FS;
            if head
                .sent
                .is_some_and(|sent| sent.placement.local_tie != tied)
            {
                first_changed = 0;
            }
        }
        let len = self.order.len();
        if first_changed < len {
            let must_place_through = len - 1 - untouched_tail.min(len - 1);
            let mut placing = match first_changed.checked_sub(1) {
                None => Placing::new(group_id),
                Some(before) => {
                    let before = &mut self.order[before];
                    before.bring_to(current, usage_f64);
                    Placing::after(group_id, before)
                }
            };
            for index in first_changed..len {
                if index > 0 {
                    self.scale_safe &= pair_scale_safe(&self.order[index - 1], &self.order[index]);
                }
                let placed = &mut self.order[index];
                placed.bring_to(current, usage_f64);
                let as_sent = send_placement(placed, &mut placing, out);
                if as_sent && index >= must_place_through {
                    break;
                }
            }
        }
        for (node, slot) in taken {
            out.push(((node, slot), -1));
        }
        true
    }

    /// Where `placed` goes in the order at the parent's `current` part
    /// (`usage_f64`: its usage converted), the member at `skip` (its old
    /// place, if it has one) left out: a binary search, each member it
    /// compares with brought to the current part first.
    fn place_of(
        &mut self,
        placed: &Placed,
        skip: Option<usize>,
        current: (u128, u64),
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

/// How a member's `LevelFS` follows its parent's usage `P > 0`: a constant
/// (`FairShare=parent`; no shares: 0; no usage: `+inf`), or
/// `share fraction / (usage / P)`, the ratio `share fraction / usage`
/// scaled by `P` (within a few ulps).
#[derive(Clone, Copy)]
enum Scaling {
    Constant(f64),
    Ratio(f64),
}

impl Scaling {
    fn of(member: &super::Member, share_fraction: f64, usage_f64: f64) -> Scaling {
        if member.shares.is_parent() {
            Scaling::Constant(member_level_fs(member, 0.0, 0.0, 0.0))
        } else if share_fraction == 0.0 {
            Scaling::Constant(0.0)
        } else if usage_f64 == 0.0 {
            Scaling::Constant(f64::INFINITY)
        } else {
            Scaling::Ratio(share_fraction / usage_f64)
        }
    }
}

/// A span update is taken when at most one member in this many changed
/// (or one in a group of fewer).
const SPAN_UPDATE_MAX_SHARE: usize = 16;

/// How far apart two members' ratios must be for every positive parent
/// usage to order them as the ratios do and never tie them: far beyond the
/// few ulps by which `f64` rounding can move a `LevelFS`.
const SCALE_MARGIN: f64 = 1e-9;

/// Does `a`, placed just before `b`, stay before it, tied exactly as now,
/// at every positive usage of their parent? Constants keep their order;
/// `+inf` stays above and 0 below every ratio; a finite constant (a
/// `FairShare=parent` account's `NO_VAL`) can be crossed by a ratio; two
/// members with the same share fraction and usage always tie; other ratios
/// keep their order if they are more than [`SCALE_MARGIN`] apart.
fn pair_scale_safe(a: &Placed, b: &Placed) -> bool {
    match (a.scaling, b.scaling) {
        (Scaling::Constant(_), Scaling::Constant(_)) => true,
        (Scaling::Constant(x), Scaling::Ratio(_)) => x == f64::INFINITY,
        (Scaling::Ratio(_), Scaling::Constant(y)) => y == 0.0,
        (Scaling::Ratio(x), Scaling::Ratio(y)) => {
            (a.share_fraction == b.share_fraction && a.usage_f64 == b.usage_f64)
                || x > y * (1.0 + SCALE_MARGIN)
        }
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

    /// Placing from just after `previous`, whose slot (as sent) is right.
    fn after(group: NodeId, previous: &Placed) -> Self {
        let sent = previous.sent.expect("a kept member was placed");
        let placement = sent.placement;
        Placing {
            group,
            first: false,
            prefix: placement.prefix + previous.member.weight,
            prev: previous.level_fs,
            prev_user: previous.member.user,
            run: (
                placement.run_prefix,
                placement.run_first,
                placement.run_local_tie,
            ),
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
        user_with(node, 1, usage, diff)
    }

    /// Root's part: its usage, and 4 level shares (four users of one share).
    fn root(usage: u128, diff: Diff) -> ((NodeId, GroupItem), Diff) {
        root_part(usage, 4, diff)
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
    type Sent = (NodeId, SentPlacement, Diff);

    /// `(prefix, first, local_tie, run_prefix, run_first, run_local_tie)`.
    type SentPlacement = (u64, bool, bool, u64, bool, bool);

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
    fn a_group_updated_batch_by_batch_sends_what_a_group_built_at_once_would_hold() {
        // Forty users of root whose shares and usage are drawn so that many
        // `share / usage` ratios are equal in exact arithmetic (usage a
        // multiple of shares: `LevelFS` values a few ulps apart, which a move
        // of root's usage can reorder or tie) or identical (same shares and
        // usage: always tied); users come and go, root's own usage moves.
        // After every batch, the placements sent so far (summed) must be
        // exactly what a group fed the final items at once sends: whichever
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
        let mut groups = Groups::default();
        let mut sent: std::collections::BTreeMap<(NodeId, SentPlacement), Diff> =
            std::collections::BTreeMap::new();
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
            for (node, (p, diff)) in sent_in_full(&mut groups, changes)
                .into_iter()
                .map(|(node, placement, diff)| (node, (placement, diff)))
            {
                let count = sent.entry((node, p)).or_insert(0);
                *count += diff;
                if *count == 0 {
                    sent.remove(&(node, p));
                }
            }
            let mut fresh = Groups::default();
            let expected: Vec<Sent> = sent_in_full(&mut fresh, group_items(&users, own_usage, 1));
            let held: Vec<Sent> = sent
                .iter()
                .map(|(&(node, placement), &diff)| (node, placement, diff))
                .collect();
            assert_eq!(held, expected);
        }
    }
}
