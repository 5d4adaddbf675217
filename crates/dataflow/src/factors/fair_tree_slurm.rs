//! Fair Tree with Slurm's own tie handling (`FairTreeTies=slurm`, the
//! default) in the dataflow, bit-identical to
//! `fairflow_oracle::fairshare::fair_tree_slurm` (see its definition: `f64`
//! `LevelFS` in Slurm's order of operations, exact `f64` equality, tied
//! accounts never merged but walked newest first, a tie carried only into
//! the ranking of users).
//!
//! # Stages (fed by the Fair Tree records gated to this rule, so idle otherwise)
//! 1. **Placements.** Groups are the fair-share children of one association
//!    (no merging, so no iteration to find them). A `reduce` per group sorts
//!    its members (`formula::slurm_sibling_order`; "newest first" is the
//!    larger `NodeId`: the tree feed interns accounts in creation order (the
//!    book's `Account::created`) and a re-created one gets a new id)
//!    and gives each a [`SlurmPlacement`]:
//!    the users in the members before it (`prefix`), whether it is first,
//!    whether its `LevelFS` equals the previous member's (or `NO_VAL` for
//!    the first: `prev_level_fs` starts there), and for a user the same three
//!    for the first user of its run of tied users. `FairShare=parent`
//!    accounts are members (`LevelFS` `NO_VAL`, no users).
//! 2. **Walks.** A `reduce` per user over its direct ancestors' placements
//!    (the closure joined with them; `parent` accounts are skipped, they are
//!    not fair-share ancestors) follows Slurm's walk down its chain: the
//!    group it is in starts at `start = Σ prefix`, its position is
//!    `p = start + prefix`, and a group is entered tied when its account is
//!    tied (`local tie || (first && entered tied)`). Slurm gives a user
//!    `rank = rnt = N − p` unless tied, and a tied user the rank last
//!    assigned: the rank of the first user of its run, `N − (start +
//!    run_prefix)`, if that one is not tied, else that of the user just
//!    before it in the walk, at position `start + run_prefix − 1` (none
//!    before: `N`). So each user is either resolved, `j` with rank `N − j`,
//!    or refers to a position.
//! 3. **References.** An `iterate` resolves the references by position
//!    (positions are the walk's `0..N`, one user each): a round per chain
//!    link, and a chain crosses one tied group entry per link, so it is as
//!    long as a chain of tied accounts, not as a run of tied users.
//!
//! # Cost
//! As the documented rule's path sums: a usage event re-sorts the groups on
//! its path and re-walks the users below the members whose placement moved;
//! references are re-resolved only where a walk or a referenced value
//! changed.

use differential_dataflow::operators::iterate::Iterate;
use differential_dataflow::VecCollection;
use fairflow_model::formula::{slurm_level_fs, slurm_sibling_order, SLURM_PARENT_ACCOUNT_LEVEL_FS};

use super::{group_members, GroupItem, NodeRec, Own};
use crate::types::{Diff, Epoch, NodeId, ROOT};

/// Where a member stands in its group, for Slurm's walk.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
)]
pub struct SlurmPlacement {
    /// Users in the members before it.
    pub prefix: u64,
    /// Is it the group's first member?
    pub first: bool,
    /// Is its `LevelFS` equal to the previous member's (`NO_VAL` for the first)?
    pub local_tie: bool,
    /// A user: `prefix` of the first user of its run of tied users.
    pub run_prefix: u64,
    /// A user: is the first user of its run the group's first member?
    pub run_first: bool,
    /// A user: is the first user of its run tied to its predecessor?
    pub run_local_tie: bool,
    /// Is it a user association?
    pub user: bool,
    /// Is it a `FairShare=parent` account (not a fair-share ancestor)?
    pub parent_account: bool,
}

/// A user's place in Slurm's walk: resolved (`j`, rank `N − j`) or the rank
/// of the user at another position.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum Walk {
    /// Its rank is `N − j`.
    Resolved {
        /// Its own position in the walk.
        position: u64,
        /// Its rank is `N − j`.
        j: u64,
    },
    /// Its rank is the rank of the user at `target`.
    Refers {
        /// Its own position in the walk.
        position: u64,
        /// The position whose rank it takes.
        target: u64,
    },
}

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
) -> VecCollection<'s, Epoch, (NodeId, SlurmPlacement), Diff> {
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
        .reduce(|_group, items, output| place_group(items, output))
        .map(|(_group, placed)| placed)
}

/// Sort one group as Slurm does and place its members.
fn place_group(items: &[(&GroupItem, Diff)], output: &mut Vec<((NodeId, SlurmPlacement), Diff)>) {
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
        output.push(((node, placement), 1));
        prefix += member.weight;
        prev = level_fs;
        prev_user = member.user;
    }
}

/// A user's walk from its own and its direct ancestors' placements,
/// `(distance, placement)`; `None` until its own placement is there.
pub(super) fn walk(path: &[(&(u32, SlurmPlacement), Diff)]) -> Option<Walk> {
    let mut entries: Vec<(u32, SlurmPlacement)> = path
        .iter()
        .filter(|(_, count)| *count > 0)
        .map(|(entry, _)| **entry)
        .collect();
    // Top first.
    entries.sort_by_key(|(distance, _)| std::cmp::Reverse(*distance));
    let (own_distance, own) = *entries.last()?;
    if own_distance != 0 || !own.user {
        return None;
    }
    let (mut start, mut entered_tied) = (0u64, false);
    for (_, ancestor) in &entries[..entries.len() - 1] {
        if ancestor.parent_account {
            continue;
        }
        entered_tied = ancestor.local_tie || (ancestor.first && entered_tied);
        start += ancestor.prefix;
    }
    let position = start + own.prefix;
    let run_start = start + own.run_prefix;
    let run_tied = own.run_local_tie || (own.run_first && entered_tied);
    Some(match (run_tied, run_start) {
        (false, _) => Walk::Resolved {
            position,
            j: run_start,
        },
        (true, 0) => Walk::Resolved { position, j: 0 },
        (true, _) => Walk::Refers {
            position,
            target: run_start - 1,
        },
    })
}

/// Each user's `j` (rank `N − j`), resolving the references by position.
pub(super) fn resolve<'s>(
    scope: timely::dataflow::Scope<'s, Epoch>,
    walks: VecCollection<'s, Epoch, (NodeId, Walk), Diff>,
) -> VecCollection<'s, Epoch, (NodeId, u64), Diff> {
    let resolved = walks.clone().flat_map(|(user, walk)| match walk {
        Walk::Resolved { position, j } => Some((position, (user, j))),
        Walk::Refers { .. } => None,
    });
    let refers = walks.flat_map(|(user, walk)| match walk {
        Walk::Refers { position, target } => Some((target, (user, position))),
        Walk::Resolved { .. } => None,
    });
    Iterate::<Epoch, (u64, (NodeId, u64)), Diff>::iterate(scope, |subgraph, by_position| {
        let resolved = resolved.enter(subgraph);
        refers
            .enter(subgraph)
            .arrange_by_key()
            .join_core(
                by_position.arrange_by_key(),
                |_target, &(user, position), &(_, j)| Some((position, (user, j))),
            )
            .concat(resolved)
    })
    .map(|(_, (user, j))| (user, j))
}
