//! The users' fair-share factors as a shard's reader answers them: every
//! one (by id, or as a dense table: the fair-share table and `sshare`), a
//! few (`explain`'s path), and those a share trial changes, read on both
//! sides of its absorb ([`PriorityReader::absorb_factor_changes`]: what the
//! live what-if reads instead of every user's factor before and after the
//! proposal).
//!
//! Worker 0's reader absorbs everything before the trial and watches the
//! next absorb ([`PriorityReader::watch_factors`]): the trial's batch's,
//! which holds only its own updates. Under Fair Tree with
//! Slurm's ties, when those are tree slots that each move within their
//! group with their weight and association (a share change reorders the
//! changed association's siblings, nothing else), the users whose factor
//! can differ are the users of the members between the moved ones' old and
//! new labels in each reordered group, and the tied users after them
//! (`FairTree::users_a_reorder_moves`): their factors are
//! read before the updates are absorbed and again after. Anything else (a
//! member placed or removed, another kind of fact, other algorithms, more
//! users than reading them one by one saves) reads every factor on both
//! sides, as the fair-share table does.

use std::collections::BTreeMap;

use super::PriorityReader;
use crate::priority::fair_tree::{reordered_groups, Reordered, TreeSlot};
use crate::priority::inputs::Fact;
use crate::types::{AssocId, NodeId};

/// Reading one user's factor walks up its groups (a few hundred
/// nanoseconds, on each side); the whole table costs tens of nanoseconds
/// per user on two threads. Users are read one by one up to this fraction
/// of the placed users.
const ONE_BY_ONE_FRACTION: u64 = 16;

/// At least this many users are read one by one (a small tree).
const ONE_BY_ONE_MIN: u64 = 256;

/// A user association whose factor differs across a trial:
/// `(association, before, after)` (`None`: no factor on that side).
pub type TrialFactor = (AssocId, Option<f64>, Option<f64>);

impl PriorityReader {
    /// Every user association's fair-share factor as the priority dataflow
    /// sees it.
    pub fn fairshare_factors(&mut self) -> BTreeMap<AssocId, f64> {
        self.absorb();
        self.queue.fairshare_factors()
    }

    /// [`PriorityReader::fairshare_factors`] as a dense table by
    /// association id (`None`: no entry).
    pub fn fairshare_factors_dense(&mut self) -> Vec<Option<f64>> {
        self.absorb();
        self.queue.fairshare_factors_dense()
    }

    /// The entries of [`PriorityReader::fairshare_factors`] of `assocs`
    /// only (a read of a few associations: `explain`'s path).
    pub fn fairshare_factors_of(&mut self, assocs: &[AssocId]) -> BTreeMap<AssocId, f64> {
        self.absorb();
        assocs
            .iter()
            .filter_map(|&assoc| Some((assoc, self.queue.fairshare_factor(assoc)?)))
            .collect()
    }

    /// Absorb what is captured, then watch the factors the next absorb
    /// changes (a trial's batch absorbs as it completes).
    pub fn watch_factors(&mut self) {
        self.absorb();
        self.watching_factors = true;
        self.watched_factors.clear();
    }

    /// The user associations whose factor the watched absorb changed, by
    /// id (absorbing first: a watch nothing absorbed yet ends here).
    pub fn take_factor_changes(&mut self) -> Vec<TrialFactor> {
        self.absorb();
        std::mem::take(&mut self.watched_factors)
    }

    /// Absorb what is captured and return the user associations whose
    /// factor it changed, by id (see the module documentation).
    pub(super) fn absorb_factor_changes(&mut self) -> Vec<TrialFactor> {
        let tree = self.queue.tree();
        let limit = (tree.placed_users() / ONE_BY_ONE_FRACTION).max(ONE_BY_ONE_MIN);
        let moved = (self.reordered_groups())
            .and_then(|groups| tree.users_a_reorder_moves(&groups, limit as usize));
        let Some(users) = moved else {
            let before = self.queue.fairshare_factors_dense();
            self.absorb_captured();
            let after = self.queue.fairshare_factors_dense();
            return changed((0..before.len().max(after.len())).map(|at| {
                let side = |table: &[Option<f64>]| table.get(at).copied().flatten();
                (at as AssocId, side(&before), side(&after))
            }));
        };
        let mut sides: BTreeMap<AssocId, (Option<f64>, Option<f64>)> = BTreeMap::new();
        for (assoc, factor) in self.queue.tree().factors_of_users(&users) {
            sides.entry(assoc).or_default().0 = factor;
        }
        self.absorb_captured();
        for (assoc, factor) in self.queue.tree().factors_of_users(&users) {
            sides.entry(assoc).or_default().1 = factor;
        }
        changed((sides.into_iter()).map(|(assoc, (before, after))| (assoc, before, after)))
    }

    /// The groups the captured updates reorder, each with the span of
    /// labels its moved members leave or take, when every update is a tree
    /// slot and each node's slot moves within its group with its weight
    /// and association; `None` otherwise (or when the tree is not in
    /// force).
    fn reordered_groups(&self) -> Option<Vec<Reordered>> {
        if !self.queue.tree().is_active() {
            return None;
        }
        let captured = self.capture.borrow();
        let mut slots: Vec<(NodeId, TreeSlot, isize)> = Vec::with_capacity(captured.facts.len());
        for (fact, _, diff) in &captured.facts {
            let Fact::TreeSlot { node, slot } = fact else {
                return None;
            };
            slots.push((*node, *slot, *diff));
        }
        reordered_groups(slots)
    }
}

/// The entries whose two sides differ (bit for bit).
fn changed(sides: impl Iterator<Item = TrialFactor>) -> Vec<TrialFactor> {
    let bits = |factor: Option<f64>| factor.map(f64::to_bits);
    sides
        .filter(|&(_, before, after)| bits(before) != bits(after))
        .collect()
}
