//! Fair Tree, Slurm's default algorithm (notes §3.1-3.3), with exact,
//! order-independent tie rules.
//!
//! # Definition
//! Per association, over the fair-share tree:
//! - `S = shares / level_shares` (0 if `level_shares` is 0);
//! - `U = usage / fs-parent usage` (0 if the fs-parent has no usage);
//! - `LF`: a `FairShare=parent` user: `+inf`; a `FairShare=parent` account:
//!   not ranked (it has no fair-share children: they were moved up); `S == 0`:
//!   0 (even if `U == 0`); `U == 0`: `+inf`; otherwise `S / U`.
//!
//! **Ranking.** Every user association is ranked, idle and zero-share ones
//! too; `N` is their number. Starting from root's fair-share children, each
//! sibling group is sorted by `LF` descending, users before accounts on equal
//! `LF`, and visited in that order; ranks count down from `N` with
//! competition ranking (a tied user takes the previous rank, the counter still
//! moves), and `F = rank / N`, never 0. Accounts are descended into where they
//! stand in the order.
//!
//! **Ties** are exact: `LF` is compared as the rational
//! `(shares * U_parent) / (level_shares * U_self)` of integers
//! (`formula::LevelFs`), never in floating point. The three tie rules of
//! Slurm's documentation are implemented (not Slurm's code, whose result
//! depends on the unspecified order of `qsort` among tied accounts):
//! 1. tied sibling users share a rank;
//! 2. tied sibling accounts have their children merged into one group (each
//!    child keeps its `LF` relative to its own parent, compared exactly across
//!    parents) before descending;
//! 3. a user tied with an account takes the rank of that account's best user:
//!    users sort first, and the (merged) account group is entered "tied", so
//!    its first-visited user inherits the last assigned rank.
//!
//! The result depends only on the tree, never on the order of siblings.
//!
//! # sshare cells
//! NormShares `S` (a `parent` association shows its fs-parent's
//! `shares / level_shares`; root 0.000000), NormUsage `usage / root usage`
//! (empty on root), EffectvUsage `U` (root 1.000000), FairShare on users
//! only, LevelFS `S / U` (`inf` allowed; empty on root and `parent` accounts).

use std::cmp::Ordering;
use std::collections::BTreeMap;

use fairflow_model::formula::{level_fs_value, rank_factor, share_fraction, LevelFs};

use super::{
    base_row, node_local_shares, node_norm_usage, node_usage_in_parent, user_key, Computed,
};
use crate::tree::Tree;

/// The exact level fair-share of every node, for ranking (`None`: not ranked,
/// i.e. root and `FairShare=parent` accounts).
pub fn level_fs(tree: &Tree) -> Vec<Option<LevelFs>> {
    tree.nodes
        .iter()
        .map(|node| {
            let parent = node.fs_parent?;
            if node.shares.is_parent() {
                return node.is_user().then_some(LevelFs::Infinite);
            }
            Some(LevelFs::of(
                node.shares.raw(),
                node.level_shares,
                node.usage,
                tree.nodes[parent].usage,
            ))
        })
        .collect()
}

/// The ranking's two counters: the last assigned rank and the next rank
/// without ties (Slurm's `rank` and `rnt`).
struct Counter {
    rank: u64,
    next: u64,
}

/// Rank every user association: `rank[i]` in `1..=N` for users, `None` otherwise.
pub fn ranks(tree: &Tree) -> Vec<Option<u64>> {
    let lf = level_fs(tree);
    let n = tree.user_count() as u64;
    let mut ranks = vec![None; tree.nodes.len()];
    let mut counter = Counter { rank: n, next: n };
    if let Some(root) = tree.nodes.first() {
        // Depth-first over (merged) sibling groups with an explicit stack, so
        // any depth of tree ranks without recursion.
        let mut stack = vec![Group::new(tree, &lf, root.fs_children.clone(), false)];
        while let Some(group) = stack.last_mut() {
            match group.rank_next_block(tree, &mut counter, &mut ranks) {
                Step::Done => {
                    stack.pop();
                }
                Step::Continue => {}
                Step::Descend(merged, tied) => stack.push(Group::new(tree, &lf, merged, tied)),
            }
        }
    }
    ranks
}

/// One (possibly merged) sibling group being ranked, block by block of equal
/// LevelFS; `entered_tied` says its first block is tied with what was ranked
/// just before it.
struct Group {
    members: Vec<(usize, LevelFs)>,
    start: usize,
    entered_tied: bool,
}

/// What ranking one block asks for next.
enum Step {
    /// The group is ranked.
    Done,
    /// Go on with the group's next block.
    Continue,
    /// Rank the merged children of the block's tied accounts (entered tied or
    /// not) before the group's next block.
    Descend(Vec<usize>, bool),
}

impl Group {
    fn new(tree: &Tree, lf: &[Option<LevelFs>], members: Vec<usize>, entered_tied: bool) -> Self {
        // `parent` accounts are not ranked: their children are already here.
        let mut members: Vec<(usize, LevelFs)> = members
            .into_iter()
            .filter_map(|m| lf[m].map(|value| (m, value)))
            .collect();
        // LF descending, users first on equal LF; the index only fixes the order
        // of members whose relative order does not change any rank.
        members.sort_by(|(a, lf_a), (b, lf_b)| {
            lf_b.cmp(lf_a)
                .then_with(|| user_first(tree, *a, *b))
                .then_with(|| a.cmp(b))
        });
        Group {
            members,
            start: 0,
            entered_tied,
        }
    }

    /// Rank the next block of equal LevelFS: its users now, its accounts'
    /// merged children next (`Step::Descend`).
    fn rank_next_block(
        &mut self,
        tree: &Tree,
        counter: &mut Counter,
        ranks: &mut [Option<u64>],
    ) -> Step {
        let members = &self.members;
        let start = self.start;
        if start >= members.len() {
            return Step::Done;
        }
        let value = members[start].1;
        let end = start
            + members[start..]
                .iter()
                .take_while(|(_, v)| *v == value)
                .count();
        self.start = end;
        let mut tied = start == 0 && self.entered_tied;
        let mut tied_accounts = Vec::new();
        for &(member, _) in &members[start..end] {
            if tree.nodes[member].is_user() {
                if !tied {
                    counter.rank = counter.next;
                }
                ranks[member] = Some(counter.rank);
                counter.next = counter.next.saturating_sub(1);
                tied = true;
            } else {
                tied_accounts.push(member);
            }
        }
        if tied_accounts.is_empty() {
            return Step::Continue;
        }
        let merged: Vec<usize> = tied_accounts
            .iter()
            .flat_map(|&account| tree.nodes[account].fs_children.iter().copied())
            .collect();
        Step::Descend(merged, tied)
    }
}

fn user_first(tree: &Tree, a: usize, b: usize) -> Ordering {
    tree.nodes[b].is_user().cmp(&tree.nodes[a].is_user())
}

/// The sshare rows and user factors.
pub fn compute(tree: &Tree) -> Computed {
    let ranks = ranks(tree);
    let n = tree.user_count() as u64;
    let mut rows = Vec::with_capacity(tree.nodes.len());
    let mut user_factors = BTreeMap::new();
    for (index, node) in tree.nodes.iter().enumerate() {
        let mut row = base_row(tree, index);
        if index == 0 {
            row.norm_shares = Some(0.0);
            row.effective_usage = Some(1.0);
            rows.push(row);
            continue;
        }
        let effective_usage = node_usage_in_parent(tree, index);
        row.norm_shares = Some(node_local_shares(tree, index));
        row.norm_usage = Some(node_norm_usage(tree, index));
        row.effective_usage = Some(effective_usage);
        row.level_fs = match (node.shares.is_parent(), node.is_user()) {
            (true, true) => Some(f64::INFINITY),
            (true, false) => None,
            (false, _) => Some(level_fs_value(
                share_fraction(node.shares.raw(), node.level_shares),
                effective_usage,
            )),
        };
        if let Some(key) = user_key(tree, index) {
            let factor = rank_factor(ranks[index].unwrap_or(0), n);
            row.fairshare = Some(factor);
            user_factors.insert(key, factor);
        }
        rows.push(row);
    }
    Computed { rows, user_factors }
}
