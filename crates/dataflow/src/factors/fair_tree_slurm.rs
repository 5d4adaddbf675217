//! Fair Tree with Slurm's own tie handling (`FairTreeTies=slurm`, the
//! default) in the dataflow, bit-identical to
//! `fairflow_oracle::fairshare::fair_tree_slurm` (see its definition: `f64`
//! `LevelFS` in Slurm's order of operations, exact `f64` equality, tied
//! accounts never merged but walked newest first, a tie carried only into
//! the ranking of users).
//!
//! # Placements (fed by the Fair Tree records gated to this rule, so idle otherwise)
//! Groups are the fair-share children of one association (no merging, so no
//! iteration to find them). A `reduce` per group sorts its members
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

use differential_dataflow::VecCollection;
use fairflow_model::formula::{slurm_level_fs, slurm_sibling_order, SLURM_PARENT_ACCOUNT_LEVEL_FS};

use super::{group_members, GroupItem, NodeRec, Own};
use crate::priority::fair_tree::{SlurmPlacement, TreeSlot};
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
    members
        .concat(parents)
        .reduce(|&group, items, output| place_group(group, items, output))
        .map(|(_group, placed)| placed)
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
