//! Fair Tree's ranking as Slurm's code does it (`FairTreeTies=slurm`, the
//! default): `_calc_tree_fs` and `_apply_priority_fs` of
//! `src/plugins/priority/multifactor/fair_tree.c`, read in Slurm 22.05 and
//! at 26.11's development head (the ranking is unchanged between them).
//!
//! # Definition
//! Ranks count down from `N` (every user association) with two counters,
//! `rank` and `rnt` ("rank, no ties"), both starting at `N`. From root's
//! fair-share children, each sibling group is:
//! 1. given its `LevelFS` as Slurm computes it, an `f64`
//!    (`formula::slurm_level_fs`): a `FairShare=parent` user `+inf`, a
//!    `FairShare=parent` account `4294967294` (`NO_VAL`; it stays in the
//!    group, ranks nobody, and can tie with the next sibling);
//! 2. sorted by `LevelFS` descending, users before accounts on equal values,
//!    then tied accounts in Slurm's association-list order: the newest
//!    association first (the latest created, [`crate::tree::Node::created`]);
//!    the order among tied users changes no rank (`formula::slurm_sibling_order`);
//! 3. walked in that order with `prev` starting at `NO_VAL`:
//!    `tied = (first && group entered tied) || prev == LevelFS` (exact `f64`
//!    equality). A user takes `rank = rnt` unless tied, gets `rank / N`, and
//!    `rnt` moves down by one. An account's fair-share children are walked
//!    next as their own group, entered tied if the account was.
//!
//! Tied accounts are never merged: `_count_tied_accounts` stops at the first
//! sibling that is not a user, and on equal `LevelFS` users sort before
//! accounts, so it always returns 0. A tie between accounts is carried only
//! into the ranking of users: the second account's first user takes the rank
//! last assigned in the first account's subtree.
//!
//! The result depends on the creation order of tied accounts (as Slurm's
//! does), never on the order of events otherwise.

use fairflow_model::formula::{slurm_level_fs, slurm_sibling_order, SLURM_PARENT_ACCOUNT_LEVEL_FS};

use crate::tree::Tree;

/// `(long double) NO_VAL`, where `_calc_tree_fs` starts `prev_level_fs`.
const NO_VAL_LEVEL_FS: f64 = SLURM_PARENT_ACCOUNT_LEVEL_FS;

/// Slurm's `LevelFS` of every node, `None` for root.
pub fn level_fs(tree: &Tree) -> Vec<Option<f64>> {
    tree.nodes
        .iter()
        .map(|node| {
            let parent = node.fs_parent?;
            Some(if node.shares.is_parent() {
                if node.is_user() {
                    f64::INFINITY
                } else {
                    SLURM_PARENT_ACCOUNT_LEVEL_FS
                }
            } else {
                slurm_level_fs(
                    node.shares.raw(),
                    node.level_shares,
                    node.usage,
                    tree.nodes[parent].usage,
                )
            })
        })
        .collect()
}

/// Rank every user association as Slurm does: `rank[i]` in `1..=N` for
/// users, `None` otherwise. `_calc_tree_fs`'s recursion is walked with an
/// explicit stack, so a tree of any depth is fine.
pub fn ranks(tree: &Tree) -> Vec<Option<u64>> {
    let lf = level_fs(tree);
    let n = tree.user_count() as u64;
    let mut ranks = vec![None; tree.nodes.len()];
    if tree.nodes.is_empty() {
        return ranks;
    }
    // The fair-share children of `parent` that are ranked, in Slurm's order.
    let sorted = |parent: usize| {
        let mut members: Vec<(f64, usize)> = tree.nodes[parent]
            .fs_children
            .iter()
            .filter_map(|&m| lf[m].map(|value| (value, m)))
            .collect();
        let key = |&(value, m): &(f64, usize)| {
            let node = &tree.nodes[m];
            (value, node.is_user(), node.created)
        };
        // Stable: tied users stay in tree order (which changes no rank).
        members.sort_by(|a, b| slurm_sibling_order(key(a), key(b)));
        members
    };
    /// One level of `_calc_tree_fs`: its sorted members, the next one to
    /// visit, the previous member's LevelFS and whether its account was tied.
    struct Frame {
        members: Vec<(f64, usize)>,
        next: usize,
        prev: f64,
        account_tied: bool,
    }
    let (mut rank, mut rnt) = (n, n);
    let mut stack = vec![Frame {
        members: sorted(0),
        next: 0,
        prev: NO_VAL_LEVEL_FS,
        account_tied: false,
    }];
    while let Some(frame) = stack.last_mut() {
        let Some(&(value, member)) = frame.members.get(frame.next) else {
            stack.pop();
            continue;
        };
        let tied = (frame.next == 0 && frame.account_tied) || frame.prev == value;
        frame.next += 1;
        frame.prev = value;
        if tree.nodes[member].is_user() {
            if !tied {
                rank = rnt;
            }
            ranks[member] = Some(rank);
            rnt = rnt.saturating_sub(1);
        } else {
            stack.push(Frame {
                members: sorted(member),
                next: 0,
                prev: NO_VAL_LEVEL_FS,
                account_tied: tied,
            });
        }
    }
    ranks
}
