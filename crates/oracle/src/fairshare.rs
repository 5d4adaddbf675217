//! Every fair-share algorithm as a plain batch computation over [`Tree`]:
//! the sshare table and each user association's factor, which job priority
//! uses. One module per algorithm; the per-association scalar formulas come
//! from `fairflow_model::formula`, shared with the incremental engine, and the
//! aggregation (tree walks, sibling sums, rankings, ticket distribution) is
//! done here, from scratch.
//!
//! # The fair-share tree (all algorithms)
//! [`Tree::build`] gives the nodes in sshare's tree order with
//! - `fs_parent`: the nearest proper ancestor that is not `FairShare=parent`
//!   (the children of a `parent` account are moved up into its parent's group);
//! - `fs_children`: the fair-share sibling groups;
//! - `level_shares`: the sum of the raw shares of a node's fair-share sibling
//!   group (a `parent` sibling adds 0);
//! - `usage`: the exact subtree usage in frame units (`u128`).
//!
//! Usage enters only as ratios (usage / fs-parent usage, usage / root usage),
//! computed in `f64` from the exact integers, so the decay frame's scale
//! cancels and the order of events does not matter.
//!
//! # Algorithms
//! - [`classic`]: `NO_FAIR_TREE` and `DEPTH_OBLIVIOUS` (notes §2.1-2.3, §2.7).
//! - [`fair_tree`]: the default (notes §3); ties as Slurm's code decides them
//!   ([`fair_tree_slurm`], `FairTreeTies=slurm`, the default) or by the
//!   exact, documented rules (`FairTreeTies=documented`, and the Flux model).
//! - [`ticket`]: `TICKET_BASED` (the seed document's formulas).
//! - [`level`]: `LEVEL_BASED` (Slurm 14.11pre5, notes §4.2).
//!
//! The factor job priority uses ([`user_factors`]): classic and
//! depth-oblivious `F`; Fair Tree `rank / N`; ticket-based
//! `tickets / max_tickets` (0 when inactive); level-based `rank / n`.

pub mod classic;
pub mod fair_tree;
pub mod fair_tree_slurm;
pub mod level;
pub mod ticket;

use std::collections::BTreeMap;

use fairflow_model::formula::norm_usage;
use fairflow_model::report::{FairshareRow, FairshareTable};
use fairflow_model::Algorithm;

use crate::tree::Tree;
use crate::State;

/// What one algorithm computes: the sshare rows (in tree order) and each user
/// association's factor.
#[derive(Debug, Clone, PartialEq)]
pub struct Computed {
    /// One row per association, in [`Tree`] order.
    pub rows: Vec<FairshareRow>,
    /// `(account, user) -> factor`, as job priority uses it.
    pub user_factors: BTreeMap<(String, String), f64>,
}

/// Run the configured algorithm over the state at `state.now`.
pub fn compute(state: &State) -> Computed {
    let tree = Tree::build(state);
    match state.config.algorithm() {
        Algorithm::Classic => classic::compute(&tree, state.config.dampening_factor, false),
        Algorithm::DepthOblivious => classic::compute(&tree, state.config.dampening_factor, true),
        Algorithm::FairTree => fair_tree::compute(&tree, state.config.fair_tree_ties()),
        Algorithm::TicketBased => ticket::compute(state, &tree, ticket::ROOT_TICKETS),
        Algorithm::LevelBased => level::compute(&tree, state.config.levels),
    }
}

/// The fair-share table under the configured algorithm, as of `state.now`.
pub fn table(state: &State) -> FairshareTable {
    FairshareTable {
        algorithm: state.config.algorithm(),
        as_of: state.now,
        rows: compute(state).rows,
    }
}

/// Each user association's fair-share factor, `(account, user) -> factor`, as
/// the priority models use it.
pub fn user_factors(state: &State) -> BTreeMap<(String, String), f64> {
    compute(state).user_factors
}

/// A row with the cells every algorithm fills the same way: the names, the
/// depth, `RawShares` (empty on root) and `RawUsage` (decayed TRES-seconds,
/// truncated).
pub(crate) fn base_row(tree: &Tree, index: usize) -> FairshareRow {
    let node = &tree.nodes[index];
    let mut row = FairshareRow::new(&node.account, node.user.as_deref(), node.depth);
    if index != 0 {
        row.raw_shares = Some(node.shares);
    }
    // `as` truncates toward zero and saturates, as sshare's `(uint64)` cast.
    row.usage_tres_secs = tree.usage_tres_secs(index);
    row.raw_usage = row.usage_tres_secs as u64;
    row
}

/// `usage / root usage`, capped at 1 (0 when there is no usage at all).
pub(crate) fn node_norm_usage(tree: &Tree, index: usize) -> f64 {
    norm_usage(tree.nodes[index].usage, tree.nodes[0].usage)
}

/// `usage / fs-parent usage` (0 when the fs-parent has none; 1 for root).
pub(crate) fn node_usage_in_parent(tree: &Tree, index: usize) -> f64 {
    match tree.nodes[index].fs_parent {
        None => 1.0,
        Some(p) => {
            fairflow_model::formula::usage_ratio(tree.nodes[index].usage, tree.nodes[p].usage)
        }
    }
}

/// `shares / level_shares` of a node: its share of its fair-share sibling
/// group. A `FairShare=parent` node shows its fs-parent's (root's is 0).
pub(crate) fn node_local_shares(tree: &Tree, index: usize) -> f64 {
    let node = &tree.nodes[index];
    let shown = if node.shares.is_parent() {
        node.fs_parent.unwrap_or(0)
    } else {
        index
    };
    if shown == 0 {
        return 0.0;
    }
    let shown = &tree.nodes[shown];
    fairflow_model::formula::share_fraction(shown.shares.raw(), shown.level_shares)
}

/// The depth of a node in the fair-share tree: 0 directly under root (root
/// itself is 0 too). A `parent` account and the children moved up from it
/// are at the same depth.
pub(crate) fn fs_depths(tree: &Tree) -> Vec<usize> {
    let mut depths = vec![0usize; tree.nodes.len()];
    // Nodes are in pre-order, so a node's fs-parent (an ancestor) comes first.
    for index in 1..tree.nodes.len() {
        depths[index] = match tree.nodes[index].fs_parent {
            Some(0) | None => 0,
            Some(p) => depths[p] + 1,
        };
    }
    depths
}

/// The key of a user association's factor.
pub(crate) fn user_key(tree: &Tree, index: usize) -> Option<(String, String)> {
    let node = &tree.nodes[index];
    node.user
        .as_ref()
        .map(|user| (node.account.clone(), user.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use fairflow_ingest::parse_event;
    use fairflow_model::Config;

    /// A tree with every kind of node: nested accounts, a `parent` account
    /// with users, a `parent` user, zero shares, idle users, a pending job.
    fn state(flags: &str) -> State {
        let lines = [
            format!(r#"{{"op":"config","t":1,"set":{{"PriorityFlags":"{flags}"}}}}"#),
            r#"{"op":"account","t":1,"name":"a","shares":3}"#.to_string(),
            r#"{"op":"account","t":1,"name":"b","shares":0}"#.to_string(),
            r#"{"op":"account","t":1,"name":"pa","parent":"a","shares":"parent"}"#.to_string(),
            r#"{"op":"account","t":1,"name":"deep","parent":"pa","shares":2}"#.to_string(),
            r#"{"op":"user","t":1,"user":"u1","account":"a","shares":1}"#.to_string(),
            r#"{"op":"user","t":1,"user":"u2","account":"a","shares":"parent"}"#.to_string(),
            r#"{"op":"user","t":1,"user":"u3","account":"pa","shares":4}"#.to_string(),
            r#"{"op":"user","t":1,"user":"u4","account":"deep","shares":1}"#.to_string(),
            r#"{"op":"user","t":1,"user":"u5","account":"b","shares":1}"#.to_string(),
            r#"{"op":"user","t":1,"user":"u6","account":"root","shares":0}"#.to_string(),
            r#"{"op":"usage","t":2,"account":"a","user":"u1","amount":5}"#.to_string(),
            r#"{"op":"usage","t":2,"account":"deep","user":"u4","amount":3}"#.to_string(),
            r#"{"op":"usage","t":2,"account":"b","user":"u5","amount":1}"#.to_string(),
            r#"{"op":"submit","t":3,"job":"1","user":"u3","account":"pa"}"#.to_string(),
        ];
        let mut book = fairflow_book::Book::new(Config::default());
        for (i, line) in lines.iter().enumerate() {
            let number = i as u64 + 1;
            book.apply(number, &parse_event(number, line).unwrap())
                .unwrap();
        }
        book.state().clone()
    }

    #[test]
    fn fair_share_depths_follow_the_fair_share_tree() {
        let tree = Tree::build(&state(""));
        let depth_of = |account: &str, user: Option<&str>| {
            let i = tree
                .nodes
                .iter()
                .position(|n| n.account == account && n.user.as_deref() == user)
                .unwrap();
            fs_depths(&tree)[i]
        };
        // pa is a's child at depth 1; its children (deep, u3) move up beside it.
        assert_eq!(depth_of("a", None), 0);
        assert_eq!(depth_of("pa", None), 1);
        assert_eq!(depth_of("pa", Some("u3")), 1);
        assert_eq!(depth_of("deep", None), 1);
        assert_eq!(depth_of("deep", Some("u4")), 2);
        assert_eq!(depth_of("root", Some("u6")), 0);
    }

    #[test]
    fn every_algorithm_fills_every_row_and_user() {
        for flags in [
            "",
            "NO_FAIR_TREE",
            "DEPTH_OBLIVIOUS",
            "TICKET_BASED",
            "LEVEL_BASED",
        ] {
            let state = state(flags);
            let tree = Tree::build(&state);
            let table = table(&state);
            let factors = user_factors(&state);
            assert_eq!(table.rows.len(), tree.nodes.len(), "{flags}");
            assert_eq!(factors.len(), 6, "{flags}");
            for (row, node) in table.rows.iter().zip(&tree.nodes) {
                assert_eq!((&row.account, &row.user), (&node.account, &node.user));
                assert!(row.effective_usage.is_some(), "{flags}: {row:?}");
                // FairShare on users; ticket-based shows it on accounts too,
                // classic and depth-oblivious on every row (root included).
                let shown = node.is_user()
                    || (flags == "TICKET_BASED" && node.parent.is_some())
                    || flags == "NO_FAIR_TREE"
                    || flags == "DEPTH_OBLIVIOUS";
                assert_eq!(row.fairshare.is_some(), shown, "{flags}: {row:?}");
                if node.is_user() {
                    assert!(row.fairshare.unwrap().is_finite(), "{flags}: {row:?}");
                }
            }
            for (key, factor) in &factors {
                assert!((0.0..=1.0).contains(factor), "{flags}: {key:?} {factor}");
            }
        }
    }
}
