//! Classic fair-share (`PriorityFlags=NO_FAIR_TREE`) and its
//! `DEPTH_OBLIVIOUS` variant, evaluated in the queue: the dataflow sends
//! each association's classic inputs as one [`ClassicNode`] fact
//! (`factors::classic`), and [`ClassicTree`] keeps them and, after a batch
//! that changed any, recomputes every user's factor in one pass over the
//! fair-share tree in tree order.
//!
//! # Why
//! Normalised usage divides by root's usage, so under these algorithms a
//! usage event changes every association's effective usage and every
//! user's factor: the algorithm's own `O(associations)` cost, which Slurm
//! pays at every `PriorityCalcPeriod` too. Paid as dataflow records (a
//! value per association out of a top-down stage, then a retraction and
//! an insertion per user's factor, exchanged, captured and sorted by the
//! queue) it cost about 236,000 records and 200 ms per usage event at
//! 100,000 associations; paid as a loop over a dense array it costs a few
//! milliseconds. The facts themselves change only where the inputs did: a
//! usage event changes the `depth + 1` associations on its path.
//!
//! # Definition (the oracle's `fairshare::classic`, the same scalar
//! formulas in the same order, so bit-identical)
//! Top-down over the fair-share parents from root (`S = 1`, `UE = 1`):
//! - a `FairShare=parent` association takes its fair-share parent's
//!   `(S, UE)` (a `parent` user's factor is its parent's);
//! - otherwise `S = formula::classic_norm_shares(shares, level shares of
//!   the parent, S_parent)`, `UN = formula::norm_usage(usage, root usage)`,
//!   and `UE` is `UN` under root, else `formula::classic_effective_usage`
//!   or, depth-oblivious, `formula::depth_oblivious_effective_usage` (with
//!   the parent's non-`parent` children's usage over root's usage);
//! - a user association's factor is `formula::classic_factor(UE, S, d)`.
//!
//! An association not reachable from root through the nodes sent has no
//! values (and a user there no factor), as in the dataflow's recurrence.

use fairflow_model::formula::{
    classic_effective_usage, classic_factor, classic_norm_shares, depth_oblivious_effective_usage,
    norm_usage,
};
use fairflow_model::Shares;
use rustc_hash::FxHashMap as HashMap;

use super::fair_tree::grow;
use crate::types::{AssocId, NodeId, ROOT};

/// One association's classic inputs (the payload of `Fact::ClassicNode`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct ClassicNode {
    /// Its fair-share parent (`None` for root).
    pub fs_parent: Option<NodeId>,
    /// `FairShare`.
    pub shares: Shares,
    /// Subtree usage, frame units.
    pub usage: u128,
    /// As a fair-share parent: its fair-share children's raw shares, summed.
    pub child_level: u64,
    /// As a fair-share parent: the usage of its fair-share children that
    /// are not `FairShare=parent`, summed (depth-oblivious).
    pub child_usage: u128,
    /// For a user association, its interned name.
    pub user: Option<AssocId>,
    /// `FairShareDampeningFactor`.
    pub dampening_factor: u32,
    /// `PriorityFlags=DEPTH_OBLIVIOUS`?
    pub depth_oblivious: bool,
}

/// A node's normalised shares `S` and effective usage `UE`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Values {
    norm_shares: f64,
    effective_usage: f64,
}

/// Root's values.
const ROOT_VALUES: Values = Values {
    norm_shares: 1.0,
    effective_usage: 1.0,
};

/// A node's values from its fair-share parent's (`parent_is_root`: the
/// parent is root): see the module documentation.
fn step(
    parent_values: Values,
    parent: &ClassicNode,
    parent_is_root: bool,
    node: &ClassicNode,
    root_usage: u128,
) -> Values {
    if node.shares.is_parent() {
        return parent_values;
    }
    let norm_shares = classic_norm_shares(
        node.shares.raw(),
        parent.child_level,
        parent_values.norm_shares,
    );
    let node_norm_usage = norm_usage(node.usage, root_usage);
    let effective_usage = if parent_is_root {
        node_norm_usage
    } else if node.depth_oblivious {
        depth_oblivious_effective_usage(
            norm_shares,
            node_norm_usage,
            parent_values.norm_shares,
            parent_values.effective_usage,
            norm_usage(parent.child_usage, root_usage),
        )
    } else {
        classic_effective_usage(
            node_norm_usage,
            parent_values.effective_usage,
            node.shares.raw(),
            parent.child_level,
        )
    };
    Values {
        norm_shares,
        effective_usage,
    }
}

/// A user association's factor changed by [`ClassicTree::evaluate`]:
/// `(user association, old factor bits, new factor bits)` (`None`: none).
pub type FactorChange = (AssocId, Option<u64>, Option<u64>);

/// The classic inputs of every association and the users' factors last
/// evaluated from them; see the module documentation.
#[derive(Debug, Default)]
pub struct ClassicTree {
    /// The inputs, by node id (ids are dense).
    nodes: Vec<Option<ClassicNode>>,
    /// The nodes reachable from root, each after its fair-share parent, as
    /// `(node, index of its parent in this order)` (root first, its own
    /// parent); rebuilt when a fair-share parent link changes.
    order: Vec<(NodeId, usize)>,
    /// The fair-share parent link of every node touched since the last
    /// evaluation, as it was before (`None`: absent).
    touched: HashMap<NodeId, Option<Option<NodeId>>>,
    /// Each user association's factor bits, as last evaluated.
    factors: Vec<Option<u64>>,
}

impl ClassicTree {
    /// Apply one consolidated `ClassicNode` fact update (a replaced node's
    /// retraction and insertion may come in either order).
    pub fn apply(&mut self, node: NodeId, inputs: &ClassicNode, diff: isize) {
        let slot = grow(&mut self.nodes, node as usize);
        self.touched
            .entry(node)
            .or_insert_with(|| slot.map(|old| old.fs_parent));
        if diff > 0 {
            *slot = Some(*inputs);
        } else if slot.as_ref() == Some(inputs) {
            *slot = None;
        }
    }

    /// Re-evaluate every user's factor if any node changed since the last
    /// call; returns the users whose factor changed.
    pub fn evaluate(&mut self) -> Vec<FactorChange> {
        if self.touched.is_empty() {
            return Vec::new();
        }
        let reshaped = self.touched.drain().any(|(node, before)| {
            before != self.nodes[node as usize].as_ref().map(|now| now.fs_parent)
        });
        if reshaped {
            self.rebuild_order();
        }
        let mut factors: Vec<Option<u64>> = Vec::with_capacity(self.factors.len());
        if !self.order.is_empty() {
            let nodes = &self.nodes;
            let node_at = |index: usize| -> &ClassicNode {
                nodes[self.order[index].0 as usize]
                    .as_ref()
                    .expect("an ordered node has inputs")
            };
            let root_usage = node_at(0).usage;
            let mut values = Vec::with_capacity(self.order.len());
            values.push(ROOT_VALUES);
            for (index, &(_, parent_index)) in self.order.iter().enumerate().skip(1) {
                let node = node_at(index);
                let own = step(
                    values[parent_index],
                    node_at(parent_index),
                    parent_index == 0,
                    node,
                    root_usage,
                );
                values.push(own);
                if let Some(assoc) = node.user {
                    let factor = classic_factor(
                        own.effective_usage,
                        own.norm_shares,
                        node.dampening_factor,
                    );
                    *grow(&mut factors, assoc as usize) = Some(factor.to_bits());
                }
            }
        }
        let len = factors.len().max(self.factors.len());
        let mut changes = Vec::new();
        for assoc in 0..len {
            let old = self.factors.get(assoc).copied().flatten();
            let new = factors.get(assoc).copied().flatten();
            if old != new {
                changes.push((assoc as AssocId, old, new));
            }
        }
        self.factors = factors;
        changes
    }

    /// The nodes reachable from root, parents first (breadth-first).
    fn rebuild_order(&mut self) {
        self.order.clear();
        if !matches!(self.nodes.get(ROOT as usize), Some(Some(root)) if root.fs_parent.is_none())
        {
            return;
        }
        let mut children: HashMap<NodeId, Vec<NodeId>> = HashMap::default();
        for (node, inputs) in self.nodes.iter().enumerate() {
            if let Some(parent) = inputs.and_then(|inputs| inputs.fs_parent) {
                children.entry(parent).or_default().push(node as NodeId);
            }
        }
        self.order.push((ROOT, 0));
        let mut next = 0;
        while next < self.order.len() {
            let (node, _) = self.order[next];
            for &child in children.get(&node).into_iter().flatten() {
                if child != ROOT {
                    self.order.push((child, next));
                }
            }
            next += 1;
        }
    }
}
