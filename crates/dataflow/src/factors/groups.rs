//! The groups both Fair Tree rules sort: a ranked association as a
//! [`Member`] of its group (its own part, [`Own`], with its fair-share
//! parent's usage and level shares), and the values a group's reduce sees
//! ([`GroupItem`]): each member once and each fair-share parent's part
//! once, so a usage event changes one item per parent on its path.

use fairflow_model::formula::LevelFs;
use fairflow_model::Shares;

use crate::types::{AssocId, Diff, FrameUsage, NodeId};

/// A ranked association as a member of its (possibly merged) group.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub(super) struct Member {
    pub(super) shares: Shares,
    pub(super) level_shares: u64,
    pub(super) usage: FrameUsage,
    pub(super) parent_usage: FrameUsage,
    pub(super) user: bool,
    /// A user association's interned name.
    pub(super) assoc: Option<AssocId>,
    /// A user 1, an account the users in its subtree.
    pub(super) weight: u64,
}

impl Member {
    pub(super) fn level_fs(&self) -> LevelFs {
        if self.shares.is_parent() {
            // Only `FairShare=parent` users are ranked.
            LevelFs::Infinite
        } else {
            LevelFs::of(
                self.shares.raw(),
                self.level_shares,
                self.usage,
                self.parent_usage,
            )
        }
    }
}

/// A ranked association's own part of a [`Member`] (its fair-share
/// parent's part arrives as a [`GroupItem::Parent`]).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub(super) struct Own {
    pub(super) shares: Shares,
    pub(super) usage: FrameUsage,
    pub(super) user: bool,
    /// A user association's interned name.
    pub(super) assoc: Option<AssocId>,
    /// A user 1, an account the users in its subtree.
    pub(super) weight: u64,
}

impl Member {
    /// A member from its own part and its parent's `(usage, level shares)`.
    pub(super) fn of(own: Own, (parent_usage, level_shares): (FrameUsage, u64)) -> Member {
        Member {
            shares: own.shares,
            level_shares,
            usage: own.usage,
            parent_usage,
            user: own.user,
            assoc: own.assoc,
            weight: own.weight,
        }
    }
}

/// One value of a Fair Tree group's reduce. A member's `LevelFs` needs its
/// fair-share parent's usage and level shares; they travel once per parent
/// (not once per member), so a usage event changes one item per parent on
/// its path instead of every member below those parents.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub(super) enum GroupItem {
    /// A ranked association of the group, with its fair-share parent.
    Member {
        node: NodeId,
        parent: NodeId,
        own: Own,
    },
    /// A fair-share parent of members of the group: its subtree usage and
    /// its fair-share children's level shares.
    Parent {
        parent: NodeId,
        usage: FrameUsage,
        child_level: u64,
    },
}

impl GroupItem {
    /// A parent's part `(parent, subtree usage, children's level shares)`
    /// if this is a parent item present `count` times (positive).
    pub(super) fn present_parent(&self, count: Diff) -> Option<(NodeId, FrameUsage, u64)> {
        match *self {
            GroupItem::Parent {
                parent,
                usage,
                child_level,
            } if count > 0 => Some((parent, usage, child_level)),
            _ => None,
        }
    }
}

/// The members of one group, with their parents' parts joined in: every
/// `(node, Member)` whose parent's item is present (positive counts only).
pub(super) fn group_members(items: &[(&GroupItem, Diff)]) -> Vec<(NodeId, Member)> {
    let parents: std::collections::BTreeMap<NodeId, (FrameUsage, u64)> = items
        .iter()
        .filter_map(|(item, count)| item.present_parent(*count))
        .map(|(parent, usage, child_level)| (parent, (usage, child_level)))
        .collect();
    items
        .iter()
        .filter(|(_, count)| *count > 0)
        .filter_map(|(item, _)| match **item {
            GroupItem::Member { node, parent, own } => {
                Some((node, Member::of(own, *parents.get(&parent)?)))
            }
            GroupItem::Parent { .. } => None,
        })
        .collect()
}
