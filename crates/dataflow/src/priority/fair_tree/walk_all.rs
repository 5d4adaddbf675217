//! Every placed user's factor at once ([`FairTree::all_factors`]: the
//! dense tables of `Queue::fairshare_factors_dense`, which the live
//! what-if reads before and after a proposal): Slurm's walk of the sorted
//! tree in position order, the root's members split in two halves walked
//! side by side on rayon's pool. A user tied to the user before its run
//! takes that user's rank (`Walk::Refers`, always an earlier position); a
//! reference from the second half into the first is resolved once both
//! are walked. Cost: one visit per placed member, most of it waiting for
//! the member's node (the walk's order is unrelated to node ids), halved
//! on two cores.

use std::ops::Range;

use fairflow_model::formula::rank_factor;

use super::placement::{enters_tied, walk_in_group, Walk};
use super::FairTree;
use crate::types::{AssocId, NodeId, ROOT};

/// A walked rank that refers to this position of the first half (the
/// position below the bit), resolved after both halves are walked.
const IN_FIRST_HALF: u64 = 1 << 63;

/// One half's walk: per position from its first, the walked rank (or an
/// [`IN_FIRST_HALF`] reference), and each user association's position.
struct Walked {
    ranks: Vec<u64>,
    users: Vec<(AssocId, usize)>,
}

impl FairTree {
    /// Every placed user association's factor, in position order (see the
    /// module documentation).
    pub fn all_factors(&self) -> Vec<(AssocId, f64)> {
        let n = self.users;
        let (first, mut second) = self.walk_halves();
        for rank in &mut second.ranks {
            if *rank & IN_FIRST_HALF != 0 {
                let target = *rank & !IN_FIRST_HALF;
                *rank = first.ranks.get(target as usize).copied().unwrap_or(target);
            }
        }
        let factor = |ranks: &[u64], at: usize| rank_factor(n.saturating_sub(ranks[at]), n);
        let mut out = Vec::with_capacity(first.users.len() + second.users.len());
        out.extend((first.users.iter()).map(|&(assoc, at)| (assoc, factor(&first.ranks, at))));
        out.extend((second.users.iter()).map(|&(assoc, at)| (assoc, factor(&second.ranks, at))));
        out
    }

    /// The two halves walked, the second's references to the first not yet
    /// resolved.
    fn walk_halves(&self) -> (Walked, Walked) {
        let root_members = self
            .groups
            .get(ROOT as usize)
            .map_or(0, |g| g.by_label.len());
        let split = root_members / 2;
        let offset = (self.groups.get(ROOT as usize)).map_or(0, |g| g.users_before(split));
        rayon::join(
            || self.walk_members(0..split, 0),
            || self.walk_members(split..root_members, offset),
        )
    }

    /// How many ranks of the second half refer to the first (for tests
    /// that the resolution is exercised).
    #[cfg(test)]
    pub(crate) fn references_across_halves(&self) -> usize {
        let (_, second) = self.walk_halves();
        second
            .ranks
            .iter()
            .filter(|&&rank| rank & IN_FIRST_HALF != 0)
            .count()
    }

    /// The walk of the root's members `members` (and everything below
    /// them), whose first user is at position `offset`.
    fn walk_members(&self, members: Range<usize>, offset: u64) -> Walked {
        let mut walked = Walked {
            ranks: Vec::new(),
            users: Vec::new(),
        };
        // (group, its start, entered tied, next index to visit, end index)
        let mut stack: Vec<(NodeId, u64, bool, usize, usize)> =
            vec![(ROOT, 0, false, members.start, members.end)];
        while let Some(top) = stack.last_mut() {
            let (group, start, tied, at, end) = *top;
            let member =
                (self.groups.get(group as usize)).and_then(|g| Some((g, g.by_label.get(at)?)));
            let Some((group, &(_, member, weight))) = member.filter(|_| at < end) else {
                stack.pop();
                continue;
            };
            top.3 = at + 1;
            let prefix = group.users_before(at);
            // Members that stand for no user take no position.
            let (true, Some(slot)) = (weight > 0, self.slot(member)) else {
                continue;
            };
            // The member is at `at` in its group's order (no search for it).
            let placement = self.placement_in(group, at, slot);
            if !placement.user {
                let entered = enters_tied(&placement, tied);
                stack.push((member, start + prefix, entered, 0, usize::MAX));
                continue;
            }
            let rank = match walk_in_group(start, tied, &placement) {
                Walk::Resolved(j) => j,
                Walk::Refers(target) if target < offset => IN_FIRST_HALF | target,
                Walk::Refers(target) => (walked.ranks)
                    .get((target - offset) as usize)
                    .copied()
                    .unwrap_or(target),
            };
            if let Some(assoc) = slot.assoc {
                walked.users.push((assoc, walked.ranks.len()));
            }
            walked.ranks.push(rank);
        }
        walked
    }
}
