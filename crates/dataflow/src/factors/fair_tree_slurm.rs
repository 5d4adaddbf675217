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
//! (`stages::per_batch_routed`: each worker holds its groups' items and the
//! placements it sent) re-sorts each group a batch touches and sends only
//! the placements that changed; it sorts the members
//! (`formula::slurm_sibling_order`; "newest first" is the larger `NodeId`:
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
//! A usage event re-sorts the groups on its path; a placement changes only
//! where the order moved (the members between a moved member's old and new
//! positions), and no user below them is re-derived.

use std::collections::BTreeMap;

use differential_dataflow::consolidation::consolidate;
use differential_dataflow::VecCollection;
use fairflow_model::formula::{slurm_level_fs, slurm_sibling_order, SLURM_PARENT_ACCOUNT_LEVEL_FS};
use rustc_hash::FxHashMap as HashMap;

use super::{group_members, GroupItem, NodeRec, Own};
use crate::priority::fair_tree::{SlurmPlacement, TreeSlot};
use crate::stages::per_batch_routed;
use crate::types::{Diff, Epoch, NodeId, ROOT};

/// Slurm's `LevelFS` of a member (`FairShare=parent`: a user `+inf`, an
/// account `NO_VAL`).
fn member_level_fs(member: &super::Member) -> f64 {
    if member.shares.is_parent() {
        if member.user {
            f64::INFINITY
        } else {
            SLURM_PARENT_ACCOUNT_LEVEL_FS
        }
    } else {
        slurm_level_fs(
            member.shares.raw(),
            member.level_shares,
            member.usage,
            member.parent_usage,
        )
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

/// The groups a worker holds: each group's items (members and their
/// parents' parts, with their counts) and the placements last sent for it.
/// A batch re-sorts each group it touches and sends the difference from
/// what was sent (as the `reduce` it replaces did, without replaying the
/// group's history of inputs and outputs).
#[derive(Default)]
struct Groups {
    groups: HashMap<NodeId, Group>,
}

#[derive(Default)]
struct Group {
    items: BTreeMap<GroupItem, Diff>,
    /// The placements sent, by node.
    placed: Vec<(NodeId, TreeSlot)>,
}

impl Groups {
    fn apply(
        &mut self,
        mut changes: Vec<((NodeId, GroupItem), Diff)>,
        out: &mut Vec<((NodeId, TreeSlot), Diff)>,
    ) {
        consolidate(&mut changes);
        let mut touched: Vec<NodeId> = Vec::new();
        for ((group, item), diff) in changes {
            touched.push(group);
            let items = &mut self.groups.entry(group).or_default().items;
            let count = items.entry(item).or_insert(0);
            *count += diff;
            if *count == 0 {
                items.remove(&item);
            }
        }
        touched.sort_unstable();
        touched.dedup();
        let mut placed = Vec::new();
        for group_id in touched {
            let group = self.groups.get_mut(&group_id).expect("touched just now");
            let items: Vec<(&GroupItem, Diff)> = group
                .items
                .iter()
                .map(|(item, count)| (item, *count))
                .collect();
            placed.clear();
            place_group(group_id, &items, &mut placed);
            let mut new: Vec<(NodeId, TreeSlot)> = placed.drain(..).map(|(slot, _)| slot).collect();
            new.sort_unstable();
            send_difference(&group.placed, &new, out);
            group.placed = new;
            if group.items.is_empty() {
                self.groups.remove(&group_id);
            }
        }
    }
}

/// Retract what is in `old` and not in `new`, insert what is in `new` and
/// not in `old` (both sorted).
fn send_difference<T: Ord + Clone>(old: &[T], new: &[T], out: &mut Vec<(T, Diff)>) {
    let (mut i, mut j) = (0, 0);
    while i < old.len() || j < new.len() {
        match (old.get(i), new.get(j)) {
            (Some(a), Some(b)) if a == b => {
                i += 1;
                j += 1;
            }
            (Some(a), Some(b)) if a < b => {
                out.push((a.clone(), -1));
                i += 1;
            }
            (Some(a), None) => {
                out.push((a.clone(), -1));
                i += 1;
            }
            (_, Some(b)) => {
                out.push((b.clone(), 1));
                j += 1;
            }
            (None, None) => unreachable!("the loop runs while one is left"),
        }
    }
}

/// Sort one group as Slurm does and place its members.
fn place_group(
    group: NodeId,
    items: &[(&GroupItem, Diff)],
    output: &mut Vec<((NodeId, TreeSlot), Diff)>,
) {
    let mut sorted: Vec<(f64, NodeId, super::Member)> = group_members(items)
        .into_iter()
        .map(|(node, member)| (member_level_fs(&member), node, member))
        .collect();
    sorted.sort_by(|a, b| {
        slurm_sibling_order(
            (a.0, a.2.user, u64::from(a.1)),
            (b.0, b.2.user, u64::from(b.1)),
        )
    });
    let mut prefix = 0u64;
    let mut prev = SLURM_PARENT_ACCOUNT_LEVEL_FS;
    let mut prev_user = false;
    let mut run = (0u64, false, false);
    for (i, &(level_fs, node, member)) in sorted.iter().enumerate() {
        let first = i == 0;
        let local_tie = prev == level_fs;
        if member.user && !(local_tie && prev_user) {
            run = (prefix, first, local_tie);
        }
        let placement = SlurmPlacement {
            prefix,
            first,
            local_tie,
            run_prefix: run.0,
            run_first: run.1,
            run_local_tie: run.2,
            user: member.user,
            parent_account: !member.user && member.shares.is_parent(),
        };
        let slot = TreeSlot {
            group,
            weight: member.weight,
            placement,
            assoc: None,
        };
        output.push(((node, slot), 1));
        prefix += member.weight;
        prev = level_fs;
        prev_user = member.user;
    }
}
