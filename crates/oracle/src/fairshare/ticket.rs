//! Ticket-based fair-share (`PriorityFlags=TICKET_BASED`, Slurm 2.5 to
//! 14.11), following the seed document's formulas where the 14.11 code
//! differs.
//!
//! # Definition
//! - `S`: the classic global normalized shares (`classic::norm_shares`).
//! - `UN = usage / root usage`; `UE = max(UN, 0.01 S)`; `F = S / UE` (0 when
//!   `S` is 0). A `FairShare=parent` association uses its fs-parent's `S` and
//!   `UN` (so its `F` is its fs-parent's; directly under root, root's `S = 1`
//!   and `UN = 1`, or 0 without usage).
//! - **Active**: an association with a pending, non-held job, or with an
//!   active descendant in the fair-share tree (a `parent` account has no
//!   fair-share children and no jobs, so it is never active: the users moved
//!   up from it make its fs-parent's group active instead). Root is active if
//!   anything is.
//! - **Tickets**: root holds [`ROOT_TICKETS`] (`u32::MAX`) when active. Each
//!   active association's tickets are split among its active fair-share
//!   children in proportion to `S * F`:
//!   `T = round(T_parent * S F / sum over active siblings of S F)`
//!   (`formula::ticket_share`; a zero sum gives 0). The sum runs in
//!   ascending order of the weights (`formula::ticket_weight_sum`), not in
//!   tree order, so that it depends only on the siblings' weights and the
//!   incremental engine, which meets them in another order, gets the same
//!   bits. Inactive associations get 0.
//! - **Factor** (job priority): `tickets / max tickets over all users`; 0
//!   when the association is inactive or no user has tickets.
//!
//! # sshare cells
//! NormShares `S`, NormUsage `UN` (own), EffectvUsage `UE` (the one `F` uses),
//! FairShare `F` on every row but root, `tickets` on every row. Root:
//! RawShares empty, NormShares 1.000000, NormUsage empty, EffectvUsage
//! 1.000000, FairShare empty, tickets the root's.

use std::collections::BTreeMap;

use fairflow_model::formula::{
    ticket_effective_usage, ticket_factor, ticket_share, ticket_weight_sum,
};

use super::{base_row, classic, node_norm_usage, user_key, Computed};
use crate::tree::Tree;
use crate::State;

pub use fairflow_model::formula::ROOT_TICKETS;

/// Which nodes are active: have a pending, non-held job themselves or in
/// their fair-share subtree.
pub fn active_nodes(state: &State, tree: &Tree) -> Vec<bool> {
    let index_of: BTreeMap<(&str, &str), usize> = tree
        .nodes
        .iter()
        .enumerate()
        .filter_map(|(i, n)| n.user.as_deref().map(|u| ((n.account.as_str(), u), i)))
        .collect();
    let mut active = vec![false; tree.nodes.len()];
    for job in state.jobs.values().filter(|j| j.is_pending()) {
        let Some(&start) = index_of.get(&(job.account.as_str(), job.user.as_str())) else {
            continue;
        };
        let mut node = Some(start);
        while let Some(i) = node {
            if active[i] {
                break;
            }
            active[i] = true;
            node = tree.nodes[i].fs_parent;
        }
    }
    active
}

/// Run the algorithm with `root_tickets` at the root (the proportions do not
/// depend on it; tests use the seed document's 1000).
pub fn compute(state: &State, tree: &Tree, root_tickets: u64) -> Computed {
    let count = tree.nodes.len();
    let norm_shares = classic::norm_shares(tree);
    let norm_usage: Vec<f64> = (0..count).map(|i| node_norm_usage(tree, i)).collect();
    // Root's own normalized usage, for `parent` associations directly under it.
    let root_norm_usage = if tree.nodes.first().is_some_and(|r| r.usage > 0) {
        1.0
    } else {
        0.0
    };
    let mut effective = vec![1.0; count];
    let mut factor = vec![0.0; count];
    for index in 1..count {
        let node = &tree.nodes[index];
        let (shares, usage) = if node.shares.is_parent() {
            match node.fs_parent {
                Some(0) | None => (1.0, root_norm_usage),
                Some(p) => (norm_shares[p], norm_usage[p]),
            }
        } else {
            (norm_shares[index], norm_usage[index])
        };
        effective[index] = ticket_effective_usage(usage, shares);
        factor[index] = ticket_factor(shares, effective[index]);
    }

    let active = active_nodes(state, tree);
    let mut tickets = vec![0u64; count];
    if count > 0 && active[0] {
        tickets[0] = root_tickets;
    }
    // Pre-order: a node's tickets are final before its children are served.
    for parent in 0..count {
        if tickets[parent] == 0 {
            continue;
        }
        let weight = |c: usize| norm_shares[c] * factor[c];
        let children: Vec<usize> = tree.nodes[parent]
            .fs_children
            .iter()
            .copied()
            .filter(|&c| active[c])
            .collect();
        let mut weights: Vec<f64> = children.iter().map(|&c| weight(c)).collect();
        let weight_sum = ticket_weight_sum(&mut weights);
        for child in children {
            tickets[child] = ticket_share(tickets[parent], weight(child), weight_sum);
        }
    }
    let max_user_tickets = (0..count)
        .filter(|&i| tree.nodes[i].is_user())
        .map(|i| tickets[i])
        .max()
        .unwrap_or(0);

    let mut rows = Vec::with_capacity(count);
    let mut user_factors = BTreeMap::new();
    for index in 0..count {
        let mut row = base_row(tree, index);
        row.norm_shares = Some(norm_shares[index]);
        row.effective_usage = Some(effective[index]);
        row.tickets = Some(tickets[index]);
        if index != 0 {
            row.norm_usage = Some(norm_usage[index]);
            row.fairshare = Some(factor[index]);
        }
        if let Some(key) = user_key(tree, index) {
            let priority_factor = if max_user_tickets == 0 {
                0.0
            } else {
                tickets[index] as f64 / max_user_tickets as f64
            };
            user_factors.insert(key, priority_factor);
        }
        rows.push(row);
    }
    Computed { rows, user_factors }
}
