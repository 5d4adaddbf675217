//! Level-based fair-share (`PriorityFlags=LEVEL_BASED` with
//! `PriorityLevels`), exactly as Slurm 14.11pre5's `level_based.c` (notes
//! §4.2), including its zero-shares quirk.
//!
//! # Definition
//! With `L = PriorityLevels`, each level owns a `64 / L`-bit bucket of a
//! 64-bit word (`64 % L` bits unused at the bottom; `formula::LevelLayout`).
//! Per association, over the fair-share tree, at fair-share depth `d` (0
//! directly under root; a `parent` account and the children moved up from it
//! share a depth):
//! - `S = shares / level_shares`, `U = usage / fs-parent usage`;
//! - bucket `v = trunc(1 + 2^(-U / (0.1 + 0.9 S)) * (bucket_max - 1))`, with
//!   the ratio taken as 0 when `S == 0` (so zero shares get the maximum
//!   bucket); a `FairShare=parent` user gets the maximum bucket; a
//!   `FairShare=parent` account adds 0 bits;
//! - `level_value = v << ((L - d - 1) * width + unused)`, or 0 when `d >= L`;
//! - `fairshare_raw = fairshare_raw(direct parent) | level_value` (root 0).
//!
//! **Ranking**: the `n` user associations sorted by `fairshare_raw`
//! descending; walking down from rank `n - 1`, a user whose raw value differs
//! from the previous user's takes the current position as its rank, equal
//! values share a rank; factor `rank / n` (top `(n-1)/n`, the last 0 unless
//! tied).
//!
//! # sshare cells
//! NormShares `S` (a `parent` association shows its fs-parent's; root
//! 0.000000), NormUsage `usage / root usage` (empty on root), EffectvUsage
//! `U` (root 1.000000), FairShare on users only, `level_value` and
//! `fairshare_raw` on every row but root.

use std::collections::BTreeMap;

use fairflow_model::formula::{level_bucket_value, rank_factor, share_fraction, LevelLayout};

use super::{
    base_row, fs_depths, node_local_shares, node_norm_usage, node_usage_in_parent, user_key,
    Computed,
};
use crate::tree::Tree;

/// Each node's level value and `fairshare_raw` (root: 0 and 0).
pub fn raw_values(tree: &Tree, levels: u32) -> (Vec<u64>, Vec<u64>) {
    let layout = LevelLayout::new(levels);
    let depths = fs_depths(tree);
    let count = tree.nodes.len();
    let mut level_values = vec![0u64; count];
    let mut raw = vec![0u64; count];
    for index in 1..count {
        let node = &tree.nodes[index];
        let bucket = match (node.shares.is_parent(), node.is_user()) {
            (true, true) => layout.bucket_max,
            (true, false) => 0,
            (false, _) => level_bucket_value(
                share_fraction(node.shares.raw(), node.level_shares),
                node_usage_in_parent(tree, index),
                layout.bucket_max,
            ),
        };
        level_values[index] = layout.place(bucket, depths[index]);
        let parent = node.parent.unwrap_or(0);
        raw[index] = raw[parent] | level_values[index];
    }
    (level_values, raw)
}

/// Each user association's rank in `0..n` (`None` for accounts).
pub fn ranks(tree: &Tree, raw: &[u64]) -> Vec<Option<u64>> {
    let mut users: Vec<usize> = (0..tree.nodes.len())
        .filter(|&i| tree.nodes[i].is_user())
        .collect();
    users.sort_by(|&a, &b| raw[b].cmp(&raw[a]).then(a.cmp(&b)));
    let n = users.len() as u64;
    let mut ranks = vec![None; tree.nodes.len()];
    let mut rank = n.saturating_sub(1);
    let mut previous: Option<u64> = None;
    for (position, &user) in users.iter().enumerate() {
        let index_from_top = n - 1 - position as u64;
        if previous != Some(raw[user]) {
            rank = index_from_top;
        }
        ranks[user] = Some(rank);
        previous = Some(raw[user]);
    }
    ranks
}

/// The sshare rows and user factors.
pub fn compute(tree: &Tree, levels: u32) -> Computed {
    let (level_values, raw) = raw_values(tree, levels);
    let ranks = ranks(tree, &raw);
    let n = tree.user_count() as u64;
    let mut rows = Vec::with_capacity(tree.nodes.len());
    let mut user_factors = BTreeMap::new();
    for index in 0..tree.nodes.len() {
        let mut row = base_row(tree, index);
        if index == 0 {
            row.norm_shares = Some(0.0);
            row.effective_usage = Some(1.0);
            rows.push(row);
            continue;
        }
        row.norm_shares = Some(node_local_shares(tree, index));
        row.norm_usage = Some(node_norm_usage(tree, index));
        row.effective_usage = Some(node_usage_in_parent(tree, index));
        row.level_value = Some(level_values[index]);
        row.fairshare_raw = Some(raw[index]);
        if let Some(key) = user_key(tree, index) {
            let factor = rank_factor(ranks[index].unwrap_or(0), n);
            row.fairshare = Some(factor);
            user_factors.insert(key, factor);
        }
        rows.push(row);
    }
    Computed { rows, user_factors }
}
