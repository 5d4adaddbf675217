//! The classic algorithm (`PriorityFlags=NO_FAIR_TREE`) and its
//! `DEPTH_OBLIVIOUS` variant, over the fair-share tree (notes §2.1-2.3, §2.7).
//!
//! # Definition
//! Top-down over the fair-share tree (parents before children):
//! - **NormShares** `S`: root 1; a `FairShare=parent` association copies its
//!   fs-parent's `S`; otherwise `S = shares / level_shares * S_fs_parent`
//!   (the product of the share fractions up the direct chain, skipping
//!   `parent` levels; 0 if any `level_shares` on the way is 0). The product
//!   is taken from the root down.
//! - **NormUsage** `UN = usage / root usage`, capped at 1 (0 without usage).
//! - **EffectvUsage** `UE`: root 1; fs-parent root: `UN`; `FairShare=parent`:
//!   the fs-parent's `UE`; otherwise classic
//!   `UN + (UE_p - UN) * shares / level_shares` (`UE_p` when `level_shares` is
//!   0), or for `DEPTH_OBLIVIOUS` the formula of
//!   `formula::depth_oblivious_effective_usage`, whose sibling usage is the
//!   exact usage sum of the fs-parent's non-`parent` children over root usage.
//! - **FairShare** `F = 2^(-(UE / S) / d)` (`d`: `FairShareDampeningFactor`),
//!   0 when `S <= 0`. A `FairShare=parent` association uses its fs-parent's
//!   `UE` and `S` (directly under root: root's `UE = 1`, `S = 1`, so 0.5).
//!
//! # sshare cells
//! FairShare on every row, as Slurm 22.05 to 25.05 print it (sshare's
//! `process.c` calls `priority_g_calc_fs_factor(usage_efctv, shares_norm)`
//! for every row that is not Fair Tree): an account's own `F` from its own
//! `UE` and `S`, a `FairShare=parent` account its fs-parent's, root
//! `2^(-1/1) = 0.5` (`UE = S = 1`). Slurm 25.11 prints it on users only
//! (README, "Which Slurm"). LevelFS empty. Root: RawShares empty,
//! NormShares 1.000000, NormUsage empty, EffectvUsage 1.000000.

use std::collections::BTreeMap;

use fairflow_model::formula::{
    classic_effective_usage, classic_factor, classic_norm_shares, depth_oblivious_effective_usage,
    norm_usage,
};

use super::{base_row, node_norm_usage, user_key, Computed};
use crate::tree::Tree;

/// Per-node classic quantities, indexed like `tree.nodes`.
#[derive(Debug, Clone, PartialEq)]
pub struct ClassicValues {
    /// `S`, global normalized shares.
    pub norm_shares: Vec<f64>,
    /// `UN`, usage / root usage.
    pub norm_usage: Vec<f64>,
    /// `UE`.
    pub effective_usage: Vec<f64>,
    /// `F` (every node; sshare shows it on users only).
    pub factor: Vec<f64>,
}

/// Classic global normalized shares of every node (root 1; a `parent` node
/// copies its fs-parent's). Also used by the ticket-based algorithm.
pub fn norm_shares(tree: &Tree) -> Vec<f64> {
    let mut shares = vec![0.0; tree.nodes.len()];
    if shares.is_empty() {
        return shares;
    }
    shares[0] = 1.0;
    // Pre-order: every fs-parent is computed before its children.
    for index in 1..tree.nodes.len() {
        let node = &tree.nodes[index];
        let parent = node.fs_parent.unwrap_or(0);
        shares[index] = if node.shares.is_parent() {
            shares[parent]
        } else {
            classic_norm_shares(node.shares.raw(), node.level_shares, shares[parent])
        };
    }
    shares
}

/// Compute the classic (or, with `depth_oblivious`, the depth-oblivious)
/// quantities of every node.
pub fn values(tree: &Tree, dampening_factor: u32, depth_oblivious: bool) -> ClassicValues {
    let count = tree.nodes.len();
    let norm_shares = norm_shares(tree);
    let norm_usage_of: Vec<f64> = (0..count).map(|i| node_norm_usage(tree, i)).collect();
    let root_usage = tree.nodes.first().map_or(0, |root| root.usage);
    let mut effective = vec![0.0; count];
    if count > 0 {
        effective[0] = 1.0;
    }
    for index in 1..count {
        let node = &tree.nodes[index];
        let parent = node.fs_parent.unwrap_or(0);
        effective[index] = if parent == 0 {
            norm_usage_of[index]
        } else if node.shares.is_parent() {
            effective[parent]
        } else if depth_oblivious {
            let sibling_usage: u128 = tree.nodes[parent]
                .fs_children
                .iter()
                .filter(|&&c| !tree.nodes[c].shares.is_parent())
                .map(|&c| tree.nodes[c].usage)
                .sum();
            depth_oblivious_effective_usage(
                norm_shares[index],
                norm_usage_of[index],
                norm_shares[parent],
                effective[parent],
                norm_usage(sibling_usage, root_usage),
            )
        } else {
            classic_effective_usage(
                norm_usage_of[index],
                effective[parent],
                node.shares.raw(),
                node.level_shares,
            )
        };
    }
    let factor = (0..count)
        .map(|index| {
            let node = &tree.nodes[index];
            // A `parent` association takes its fs-parent's values.
            let source = if index != 0 && node.shares.is_parent() {
                node.fs_parent.unwrap_or(0)
            } else {
                index
            };
            classic_factor(effective[source], norm_shares[source], dampening_factor)
        })
        .collect();
    ClassicValues {
        norm_shares,
        norm_usage: norm_usage_of,
        effective_usage: effective,
        factor,
    }
}

/// The sshare rows and user factors.
pub fn compute(tree: &Tree, dampening_factor: u32, depth_oblivious: bool) -> Computed {
    let values = values(tree, dampening_factor, depth_oblivious);
    let mut rows = Vec::with_capacity(tree.nodes.len());
    let mut user_factors = BTreeMap::new();
    for index in 0..tree.nodes.len() {
        let mut row = base_row(tree, index);
        row.norm_shares = Some(values.norm_shares[index]);
        row.effective_usage = Some(values.effective_usage[index]);
        if index != 0 {
            row.norm_usage = Some(values.norm_usage[index]);
        }
        // Every row, root and accounts included, as sshare prints it from
        // Slurm 22.05 to 25.05 (`priority_g_calc_fs_factor(UE, S)` per row).
        row.fairshare = Some(values.factor[index]);
        if let Some(key) = user_key(tree, index) {
            user_factors.insert(key, values.factor[index]);
        }
        rows.push(row);
    }
    Computed { rows, user_factors }
}
