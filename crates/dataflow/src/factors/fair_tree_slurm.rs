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
use std::collections::hash_map::Entry;

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

/// The groups a worker holds: each group's items (members and their
/// parents' parts, with their counts) and the placements last sent for it.
/// A batch re-sorts each group it touches and sends the difference from
/// what was sent (as the `reduce` it replaces did, without replaying the
/// group's history of inputs and outputs).
#[derive(Default)]
struct Groups {
    groups: HashMap<NodeId, Group>,
    /// How many batches were applied (marks the placements a batch kept).
    batches: u64,
}

#[derive(Default)]
struct Group {
    items: BTreeMap<GroupItem, Diff>,
    /// The placements sent, by node, with each member's position in the
    /// last sort.
    placed: HashMap<NodeId, Placed>,
}

/// A member's placement as last sent.
struct Placed {
    slot: TreeSlot,
    /// Its position in the group's last sort.
    position: u32,
    /// The batch that last placed it.
    batch: u64,
}

impl Groups {
    fn apply(
        &mut self,
        mut changes: Vec<((NodeId, GroupItem), Diff)>,
        out: &mut Vec<((NodeId, TreeSlot), Diff)>,
    ) {
        consolidate(&mut changes);
        self.batches += 1;
        let batch = self.batches;
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
        for group_id in touched {
            let group = self.groups.get_mut(&group_id).expect("touched just now");
            let items: Vec<(&GroupItem, Diff)> = group
                .items
                .iter()
                .map(|(item, count)| (item, *count))
                .collect();
            let sorted = sort_members(&group.placed, group_members(&items));
            let mut kept = 0usize;
            let before = group.placed.len();
            for (position, (node, slot)) in place_group(group_id, &sorted).enumerate() {
                let position = u32::try_from(position).expect("fewer than 2^32 members");
                match group.placed.entry(node) {
                    Entry::Occupied(mut held) => {
                        let held = held.get_mut();
                        if held.batch != batch {
                            kept += 1;
                        }
                        if held.slot != slot {
                            out.push(((node, held.slot), -1));
                            out.push(((node, slot), 1));
                            held.slot = slot;
                        }
                        held.position = position;
                        held.batch = batch;
                    }
                    Entry::Vacant(vacant) => {
                        out.push(((node, slot), 1));
                        vacant.insert(Placed {
                            slot,
                            position,
                            batch,
                        });
                    }
                }
            }
            if kept < before {
                // Members that left the group: retract their placements.
                group.placed.retain(|&node, held| {
                    let stays = held.batch == batch;
                    if !stays {
                        out.push(((node, held.slot), -1));
                    }
                    stays
                });
            }
            if group.items.is_empty() {
                self.groups.remove(&group_id);
            }
        }
        // Sent in `(node, slot)` order: the queue consolidates the captured
        // facts with a stable sort, which then finds them already in order
        // (a sort of the facts as sent, in sorted-position order, was the
        // largest part of its work on a batch of 1,000 usage events).
        out.sort_unstable_by_key(|(fact, _)| *fact);
    }
}

/// The members in Slurm's sibling order, with their `LevelFS`. The sort
/// starts from the order of the group's last sort (members new to the
/// group last): a batch moves few members of a group, so the stable sort
/// mostly finds runs already in order, and it sorts small keys, not members.
/// The order is total (ties end at the node id), so the result does not
/// depend on where the sort starts.
fn sort_members(
    placed: &HashMap<NodeId, Placed>,
    members: Vec<(NodeId, super::Member)>,
) -> Vec<(f64, NodeId, super::Member)> {
    let mut by_last: Vec<Option<usize>> = vec![None; placed.len()];
    let mut fresh = Vec::new();
    for (index, (node, _)) in members.iter().enumerate() {
        match placed.get(node).map(|held| held.position as usize) {
            Some(position) if position < by_last.len() && by_last[position].is_none() => {
                by_last[position] = Some(index);
            }
            _ => fresh.push(index),
        }
    }
    let mut keys: Vec<(f64, bool, NodeId, usize)> = by_last
        .into_iter()
        .flatten()
        .chain(fresh)
        .map(|index| {
            let (node, member) = &members[index];
            (member_level_fs(member), member.user, *node, index)
        })
        .collect();
    keys.sort_by(|a, b| {
        slurm_sibling_order((a.0, a.1, u64::from(a.2)), (b.0, b.1, u64::from(b.2)))
    });
    keys.into_iter()
        .map(|(level_fs, _, node, index)| (level_fs, node, members[index].1))
        .collect()
}

/// Place the members of one group, sorted as Slurm sorts them
/// ([`sort_members`]), in that order.
fn place_group(
    group: NodeId,
    sorted: &[(f64, NodeId, super::Member)],
) -> impl Iterator<Item = (NodeId, TreeSlot)> + '_ {
    let mut prefix = 0u64;
    let mut prev = SLURM_PARENT_ACCOUNT_LEVEL_FS;
    let mut prev_user = false;
    let mut run = (0u64, false, false);
    sorted
        .iter()
        .enumerate()
        .map(move |(i, &(level_fs, node, member))| {
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
                assoc: member.assoc,
            };
            prefix += member.weight;
            prev = level_fs;
            prev_user = member.user;
            (node, slot)
        })
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
