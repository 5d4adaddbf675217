//! Fair Tree under the documented tie rule: groups, placements, path sums.
//!
//! The documented ranking is a depth-first walk of *groups*: a group's members are
//! sorted by exact level fair-share (`LevelFs`, descending; users first on
//! ties) into blocks of equal `LF`; a block's users are ranked, then the
//! fair-share children of the block's accounts form one merged child group.
//! - **Group keys.** A group is keyed by its *representative*: root for root's
//!   children; for the group below block `B`, the smallest account id in `B`.
//!   Which group an association is in depends on the blocks above it, so the
//!   keys are found by an `iterate` whose rounds go one level deeper (a fixed
//!   point after `depth` rounds on a load; afterwards only when a tie among
//!   accounts appears or disappears). Only accounts enter the loop (users
//!   never key a group); the placements are computed once, outside it.
//! - **Placements.** A `reduce` per group sorts its members and gives each a
//!   [`Placement`]: its block, the *weight* (users in the subtree, a user 1) of
//!   the blocks before its own (`prefix`), and the number of users in its
//!   block. A usage event re-sorts the groups on its path; a placement
//!   changes only where the order moved. A member's `LevelFs` needs its
//!   fair-share parent's usage and level shares: the group's input holds
//!   each member's own part and, once, each of its members' parents' part
//!   (a [`GroupItem`]), so a usage event changes one parent item and one
//!   member item per group on its path (the loop's groups likewise), not
//!   every member below the parents whose usage moved.
//! - **Ranks by path sums.** For a user `u` under fair-share ancestors
//!   `a_1 .. a_k`, with `(b_i, prefix_i, users_i)` their placements and
//!   `(b, prefix)` its own, the walk's position is
//!   `offset = Σ (prefix_i + users_i)` (where its group starts),
//!   `X = offset + prefix − [b = 0]·D`, where `D` (how far the group's first
//!   block is tied back to users ranked before it) is
//!   `D_0 = 0, D_i = users_i + [b_i = 0]·D_{i−1}`; its rank is `N − X` and its
//!   factor `rank / N` (`N`: user associations). This is exactly the oracle's
//!   counter: a block's users share the rank of its first user, and a group
//!   entered "tied" (its block had users, or was first in a group entered
//!   tied) gives its first block the last assigned rank. The sums run
//!   top-down (`stages::down_the_tree` over the fair-share parents): each
//!   ranked account's `(offset, D)` from its parent's, then each user's `X`
//!   from its parent's, so a placement change reaches the users below it
//!   (the users whose rank really moved) and a chain of depth `d` holds `d`
//!   states, not a path of `d` placements per user.

use differential_dataflow::operators::iterate::Iterate;
use differential_dataflow::operators::CountTotal;
use differential_dataflow::VecCollection;
use fairflow_model::formula::{rank_factor, LevelFs};

use super::groups::{group_members, GroupItem, Member, Own};
use super::{counted, NodeRec};
use crate::stages::down_the_tree;
use crate::types::{ByKey, Diff, Epoch, NodeId, TouchCounter, ROOT};

/// Where a ranked association stands in its group.
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
pub struct Placement {
    /// Its block of equal `LF` (0 first).
    pub block: u32,
    /// The weight of the blocks before its own.
    pub prefix: u64,
    /// User associations in its block.
    pub users_in_block: u64,
    /// For an account: the key of the group below its block (the smallest
    /// account id in the block).
    pub rep: NodeId,
    /// Is it a user association?
    pub user: bool,
}

/// The documented Fair Tree rule's factors: the walk, top-down: each ranked
/// account's walk state from its fair-share parent's, then each user's
/// position from its parent's state (no walk over every ancestor per user),
/// and its rank factor.
pub(super) fn factors<'s>(
    scope: timely::dataflow::Scope<'s, Epoch>,
    records: VecCollection<'s, Epoch, (NodeId, NodeRec), Diff>,
    fs_parent_by_node: ByKey<'s, NodeId, NodeId>,
    users: VecCollection<'s, Epoch, NodeId, Diff>,
    touched: &TouchCounter,
) -> VecCollection<'s, Epoch, (NodeId, u64), Diff> {
    let root_state = records
        .clone()
        .flat_map(|(node, _)| (node == ROOT).then_some((node, WalkState::default())));
    let placements = counted(place(scope, records), touched);
    let placed = placements
        .arrange_by_key()
        .join_core(fs_parent_by_node, |&node, &placement, &parent| {
            Some((node, (parent, placement)))
        });
    let states = down_the_tree(
        placed.clone().filter(|(_, (_, placement))| !placement.user),
        root_state,
        |state: &WalkState, placement: &Placement| Some(state.enter(placement)),
    );
    let positions = counted(
        placed
            .filter(|(_, (_, placement))| placement.user)
            .map(|(user, (parent, placement))| (parent, (user, placement)))
            .arrange_by_key()
            .join_core(
                states.arrange_by_key(),
                |_parent, &(user, placement), state| Some((user, state.position(&placement))),
            ),
        touched,
    );
    let user_count = users.map(|_| ()).count_total_core::<Diff>();
    positions
        .map(|(user, position)| ((), (user, position)))
        .arrange_by_key()
        .join_core(
            user_count.arrange_by_key(),
            |_unit, &(user, position), &count| {
                let n = u64::try_from(count).ok()?;
                Some((user, rank_factor(n.saturating_sub(position), n).to_bits()))
            },
        )
}

/// The items of every group: each member (a fair-share child of an
/// association whose group-below key is known) and each such parent's part,
/// keyed by the group. `$group_of` is `(account, key of the group below its
/// block)`, root's `(root, root)`, arranged; `$children` the ranked
/// `(parent, (node, Own))` and `$parent_parts` the `(account, (usage, level
/// shares))`, arranged. A macro because the loop's arrangements (entered
/// traces) and the outer ones have different types.
macro_rules! group_items {
    ($group_of:expr, $children:expr, $parent_parts:expr) => {{
        let group_of = $group_of;
        let members = group_of
            .clone()
            .join_core($children, |&parent, &group, &(node, own)| {
                Some((group, GroupItem::Member { node, parent, own }))
            });
        let parents =
            group_of.join_core($parent_parts, |&parent, &group, &(usage, child_level)| {
                Some((
                    group,
                    GroupItem::Parent {
                        parent,
                        usage,
                        child_level,
                    },
                ))
            });
        members.concat(parents)
    }};
}

/// The Fair Tree placements of every ranked association (see the module
/// documentation): the groups' keys by an `iterate` over accounts, then a
/// `reduce` per group.
fn place<'s>(
    scope: timely::dataflow::Scope<'s, Epoch>,
    records: VecCollection<'s, Epoch, (NodeId, NodeRec), Diff>,
) -> VecCollection<'s, Epoch, (NodeId, Placement), Diff> {
    // Ranked: every association but root and `FairShare=parent` accounts,
    // by fair-share parent.
    let ranked = records.clone().flat_map(|(node, record)| {
        let is_ranked = node != ROOT && (record.user || !record.shares.is_parent());
        let own = Own {
            shares: record.shares,
            usage: record.usage,
            user: record.user,
            assoc: record.assoc,
            weight: if record.user { 1 } else { record.users_below },
        };
        record
            .fs_parent
            .filter(|_| is_ranked)
            .map(|parent| (parent, (node, own)))
    });
    // Every account (root included) as a possible fair-share parent.
    let parent_parts = records
        .clone()
        .flat_map(|(node, record)| {
            (!record.user).then_some((node, (record.usage, record.child_level)))
        })
        .arrange_by_key();
    let account_children = ranked
        .clone()
        .filter(|(_, (_, own))| !own.user)
        .arrange_by_key();
    let children = ranked.arrange_by_key();
    let root = records.flat_map(|(node, _)| (node == ROOT).then_some((node, node)));
    // Only the accounts' group keys are found by iteration (users never key a
    // group, and a block's tied accounts do not depend on its users), so the
    // loop's reduce sees only account members and its output (the
    // representatives) changes only when a tie among accounts does.
    let root_for_loop = root.clone();
    let parent_parts_for_loop = parent_parts.clone();
    let representatives =
        Iterate::<Epoch, (NodeId, NodeId), Diff>::iterate(scope, |subgraph, representatives| {
            let children = account_children.enter(subgraph);
            let parent_parts = parent_parts_for_loop.enter(subgraph);
            let root = root_for_loop.enter(subgraph);
            let group_of = representatives.concat(root).arrange_by_key();
            group_items!(group_of, children, parent_parts)
                .reduce(|_group, items, output| represent_group(items, output))
                .map(|(_group, represented)| represented)
        });
    let group_of = representatives.concat(root).arrange_by_key();
    group_items!(group_of, children, parent_parts)
        .reduce(|_group, items, output| place_group(items, output))
        .map(|(_group, placed)| placed)
}

/// The accounts of one group with their block's representative (the
/// smallest account id among the accounts of equal `LF`).
fn represent_group(items: &[(&GroupItem, Diff)], output: &mut Vec<((NodeId, NodeId), Diff)>) {
    let mut sorted: Vec<(LevelFs, NodeId)> = group_members(items)
        .iter()
        .map(|(node, member)| (member.level_fs(), *node))
        .collect();
    sorted.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let mut start = 0;
    while start < sorted.len() {
        let end = start
            + sorted[start..]
                .iter()
                .take_while(|(lf, _)| *lf == sorted[start].0)
                .count();
        let representative = sorted[start].1;
        for &(_, node) in &sorted[start..end] {
            output.push(((node, representative), 1));
        }
        start = end;
    }
}

/// Sort one group and place its members.
fn place_group(items: &[(&GroupItem, Diff)], output: &mut Vec<((NodeId, Placement), Diff)>) {
    let mut sorted: Vec<(LevelFs, NodeId, Member)> = group_members(items)
        .into_iter()
        .map(|(node, member)| (member.level_fs(), node, member))
        .collect();
    // LF descending, users first on equal LF, then id (the order inside a
    // block changes no rank).
    sorted.sort_by(|a, b| {
        b.0.cmp(&a.0)
            .then_with(|| b.2.user.cmp(&a.2.user))
            .then_with(|| a.1.cmp(&b.1))
    });
    let mut prefix = 0u64;
    let mut start = 0;
    let mut block = 0u32;
    while start < sorted.len() {
        let end = start
            + sorted[start..]
                .iter()
                .take_while(|(lf, _, _)| *lf == sorted[start].0)
                .count();
        let slice = &sorted[start..end];
        let users_in_block = slice.iter().filter(|(_, _, m)| m.user).count() as u64;
        let weight: u64 = slice.iter().map(|(_, _, m)| m.weight).sum();
        let rep = slice
            .iter()
            .filter(|(_, _, m)| !m.user)
            .map(|(_, node, _)| *node)
            .min()
            .unwrap_or(ROOT);
        for &(_, node, member) in slice {
            let placement = Placement {
                block,
                prefix,
                users_in_block,
                rep,
                user: member.user,
            };
            output.push(((node, placement), 1));
        }
        prefix += weight;
        block += 1;
        start = end;
    }
}

/// The documented rule's walk after an account (see the module
/// documentation): `offset`, where the group below its block starts, and
/// `tied`, how far that group's first block is tied back (`D`).
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
struct WalkState {
    offset: u64,
    tied: u64,
}

impl WalkState {
    /// The state below an account placed `placement` in the group this
    /// state leads into.
    fn enter(&self, placement: &Placement) -> WalkState {
        WalkState {
            offset: self.offset + placement.prefix + placement.users_in_block,
            tied: placement.users_in_block + if placement.block == 0 { self.tied } else { 0 },
        }
    }

    /// The position `X` (rank `N − X`) of a user placed `placement` in the
    /// group this state leads into.
    fn position(&self, placement: &Placement) -> u64 {
        let back = if placement.block == 0 { self.tied } else { 0 };
        (self.offset + placement.prefix).saturating_sub(back)
    }
}
