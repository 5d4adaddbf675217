//! Each node's whole subtree of ranked jobs, per rank class, kept up the
//! tree as jobs and members move ([`SubtreeJobs`]): how many jobs, and a
//! lower bound of their `key_hi`. A paged count (`Queue::count_window`)
//! takes a member whose every job is surely above its window whole from
//! these, without opening it, so that a count visits the members that
//! straddle its threshold, not every group.
//!
//! A placed user's entry is set from its own jobs (`set_user_jobs`: its
//! count and its lowest key, exact) and the change carried up its attached
//! groups: the count exactly (`O(depth)`), the lowest key only lowered. A
//! member attached to or detached from a group carries its subtree's
//! count in or out the same way. So every count is exact and every lowest
//! key is at most the lowest key below it (a job that leaves does not
//! raise it): a bound that is loose only after jobs left, which makes a
//! count open a member it could have taken whole, never the converse.

use super::FairTree;
use crate::types::{grow, AssocId, NodeId};

/// A subtree's ranked jobs of one class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubtreeJobs {
    /// How many.
    pub jobs: u64,
    /// At most the lowest `key_hi` among them (`u64::MAX`: none seen).
    pub lowest_key: u64,
}

impl Default for SubtreeJobs {
    fn default() -> Self {
        SubtreeJobs {
            jobs: 0,
            lowest_key: u64::MAX,
        }
    }
}

impl FairTree {
    /// A node's [`SubtreeJobs`] of `class` (none: no job seen).
    pub fn subtree_jobs(&self, node: NodeId, class: usize) -> SubtreeJobs {
        self.nodes
            .get(node as usize)
            .map_or_else(SubtreeJobs::default, |n| n.jobs[class])
    }

    /// Set a placed user association's own jobs of `class` and carry the
    /// change up its groups (nothing for a user not placed: its node is
    /// detached, and set again when it is placed).
    pub fn set_user_jobs(&mut self, assoc: AssocId, class: usize, own: SubtreeJobs) {
        let Some(node) = self.node_of(assoc) else {
            return;
        };
        let entry = &mut grow(&mut self.nodes, node as usize).jobs[class];
        let old = std::mem::replace(entry, own);
        if old == own {
            return;
        }
        let group = self.nodes[node as usize].attached;
        self.carry_jobs(
            group,
            class,
            own.jobs as i64 - old.jobs as i64,
            own.lowest_key,
        );
    }

    /// Carry a member's subtree into (`into`) or out of its group `group`
    /// and every group above it.
    pub(super) fn carry_member_jobs(&mut self, node: NodeId, group: NodeId, into: bool) {
        for class in 0..2 {
            let member = self.subtree_jobs(node, class);
            let delta = if into {
                member.jobs as i64
            } else {
                -(member.jobs as i64)
            };
            let lowest = if into { member.lowest_key } else { u64::MAX };
            self.carry_jobs(Some(group), class, delta, lowest);
        }
    }

    /// Add `delta` jobs of `class` to `from` and every group above it,
    /// lowering their lowest key to `lowest`.
    fn carry_jobs(&mut self, mut from: Option<NodeId>, class: usize, delta: i64, lowest: u64) {
        // A chain is never longer than the nodes (bounded all the same).
        for _ in 0..=self.nodes.len() {
            let Some(group) = from else { return };
            let entry = &mut grow(&mut self.nodes, group as usize).jobs[class];
            debug_assert!(
                delta >= 0 || entry.jobs >= delta.unsigned_abs(),
                "a count below 0"
            );
            entry.jobs = entry.jobs.saturating_add_signed(delta);
            entry.lowest_key = entry.lowest_key.min(lowest);
            from = self.nodes[group as usize].attached;
        }
    }
}
