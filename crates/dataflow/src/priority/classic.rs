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

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use fairflow_model::formula::{
    classic_effective_usage, classic_factor, classic_norm_shares, depth_oblivious_effective_usage,
    norm_usage_converted,
};
use fairflow_model::Shares;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::types::{grow, AssocId, FrameUsage, NodeId, ROOT};

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
    pub usage: FrameUsage,
    /// As a fair-share parent: its fair-share children's raw shares, summed.
    pub child_level: u64,
    /// As a fair-share parent: the usage of its fair-share children that
    /// are not `FairShare=parent`, summed (depth-oblivious).
    pub child_usage: FrameUsage,
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

/// A reachable node as the passes read it, by its position in the tree
/// order: its inputs, its fair-share parent's position, its usages
/// converted to `f64` once (`formula::norm_usage_converted`) and its
/// values as last evaluated. A pass in tree order reads these
/// sequentially (a node's parent comes before it, siblings together).
#[derive(Debug, Clone, Copy)]
struct Row {
    inputs: ClassicNode,
    parent_position: u32,
    usage_f64: f64,
    child_usage_f64: f64,
    values: Values,
}

impl Row {
    fn new(inputs: ClassicNode, parent_position: u32) -> Self {
        Row {
            inputs,
            parent_position,
            usage_f64: inputs.usage as f64,
            child_usage_f64: inputs.child_usage as f64,
            values: Values::default(),
        }
    }
}

/// A node's values from its fair-share parent's (`parent_is_root`: the
/// parent is root; `root_usage`: root's usage converted): see the module
/// documentation.
fn step(parent: &Row, parent_is_root: bool, node: &Row, root_usage: f64) -> Values {
    let inputs = &node.inputs;
    if inputs.shares.is_parent() {
        return parent.values;
    }
    let norm_shares = classic_norm_shares(
        inputs.shares.raw(),
        parent.inputs.child_level,
        parent.values.norm_shares,
    );
    let node_norm_usage = norm_usage_converted(node.usage_f64, root_usage);
    let effective_usage = if parent_is_root {
        node_norm_usage
    } else if inputs.depth_oblivious {
        depth_oblivious_effective_usage(
            norm_shares,
            node_norm_usage,
            parent.values.norm_shares,
            parent.values.effective_usage,
            norm_usage_converted(parent.child_usage_f64, root_usage),
        )
    } else {
        classic_effective_usage(
            node_norm_usage,
            parent.values.effective_usage,
            inputs.shares.raw(),
            parent.inputs.child_level,
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

/// The classic inputs of every association, their values and the users'
/// factors last evaluated from them; see the module documentation.
#[derive(Debug, Default)]
pub struct ClassicTree {
    /// The inputs, by node id (ids are dense).
    nodes: Vec<Option<ClassicNode>>,
    /// The nodes reachable from root, each after its fair-share parent
    /// (breadth-first from root, so a node's fair-share children are
    /// consecutive); rebuilt when a fair-share parent link changes.
    order: Vec<NodeId>,
    /// By node id: its fair-share children's range in `order`.
    children: Vec<(u32, u32)>,
    /// By node id: its place in `order` (`u32::MAX`: unreachable).
    position: Vec<u32>,
    /// By place in `order`: the node's inputs and values.
    rows: Vec<Row>,
    /// The inputs of every node touched since the last evaluation, as they
    /// were before.
    touched: HashMap<NodeId, Option<ClassicNode>>,
    /// Each user association's factor bits, as last evaluated.
    factors: Vec<Option<u64>>,
}

impl ClassicTree {
    /// Apply one consolidated `ClassicNode` fact update (a replaced node's
    /// retraction and insertion may come in either order).
    pub fn apply(&mut self, node: NodeId, inputs: &ClassicNode, diff: isize) {
        let slot = grow(&mut self.nodes, node as usize);
        self.touched.entry(node).or_insert(*slot);
        if diff > 0 {
            *slot = Some(*inputs);
        } else if slot.as_ref() == Some(inputs) {
            *slot = None;
        }
    }

    /// Re-evaluate the users' factors if any node changed since the last
    /// call; returns the users whose factor changed. A change of root's
    /// usage (every normalised usage moves) or of the tree's shape
    /// re-evaluates every node in one pass in tree order; any other (a
    /// share change, a `parent` account's usage) only the subtrees whose
    /// values move, parents first.
    pub fn evaluate(&mut self) -> Vec<FactorChange> {
        if self.touched.is_empty() {
            return Vec::new();
        }
        let touched: Vec<(NodeId, Option<ClassicNode>)> = self.touched.drain().collect();
        let mut reshaped = false;
        let mut everything = false;
        for (node, before) in &touched {
            let now = self.nodes[*node as usize];
            match (before, now) {
                (Some(before), Some(now))
                    if before.fs_parent == now.fs_parent && before.user == now.user =>
                {
                    everything |= *node == ROOT && before.usage != now.usage;
                }
                (None, None) => {}
                _ => reshaped = true,
            }
        }
        if reshaped {
            self.rebuild_order();
        } else {
            for (node, _) in &touched {
                let position = self.position.get(*node as usize).copied();
                if let (Some(position), Some(inputs)) = (
                    position.filter(|&p| p != u32::MAX),
                    self.nodes[*node as usize],
                ) {
                    let row = &mut self.rows[position as usize];
                    *row = Row {
                        values: row.values,
                        ..Row::new(inputs, row.parent_position)
                    };
                }
            }
        }
        if reshaped || everything {
            self.evaluate_every_node()
        } else {
            self.evaluate_below(&touched)
        }
    }

    /// Every node in one pass in tree order; the users whose factor changed.
    fn evaluate_every_node(&mut self) -> Vec<FactorChange> {
        let mut changes = Vec::new();
        let mut factors = vec![None; self.factors.len()];
        for position in 0..self.rows.len() {
            if let Some(bits) = self.revalue(position) {
                *grow(&mut factors, bits.0 as usize) = Some(bits.1);
            }
        }
        let len = factors.len().max(self.factors.len());
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

    /// Only the `touched` nodes and, below a node whose children's inputs
    /// moved, its fair-share children; then the children of every node
    /// whose values moved, parents first. The users whose factor changed.
    fn evaluate_below(&mut self, touched: &[(NodeId, Option<ClassicNode>)]) -> Vec<FactorChange> {
        let mut changes = Vec::new();
        let mut heap: BinaryHeap<Reverse<u32>> = BinaryHeap::new();
        let mut queued: HashSet<u32> = HashSet::default();
        let mut enqueue_children = |tree: &Self, node: NodeId, heap: &mut BinaryHeap<_>| {
            let (start, end) = tree.children[node as usize];
            for position in start..end {
                if queued.insert(position) {
                    heap.push(Reverse(position));
                }
            }
        };
        for (node, before) in touched {
            let position = self.position.get(*node as usize).copied();
            let Some(position) = position.filter(|&p| p != u32::MAX) else {
                continue;
            };
            heap.push(Reverse(position));
            let now = self.nodes[*node as usize];
            let parent_part = |n: &Option<ClassicNode>| n.map(|n| (n.child_level, n.child_usage));
            if parent_part(before) != parent_part(&now) {
                enqueue_children(self, *node, &mut heap);
            }
        }
        let mut last = None;
        while let Some(Reverse(position)) = heap.pop() {
            if last == Some(position) {
                continue;
            }
            last = Some(position);
            let node = self.order[position as usize];
            let old_values = self.rows[position as usize].values;
            if let Some((assoc, bits)) = self.revalue(position as usize) {
                let slot = grow(&mut self.factors, assoc as usize);
                if *slot != Some(bits) {
                    changes.push((assoc, *slot, Some(bits)));
                    *slot = Some(bits);
                }
            }
            if self.rows[position as usize].values != old_values {
                enqueue_children(self, node, &mut heap);
            }
        }
        changes.sort_unstable();
        changes
    }

    /// Recompute the values of the node at `position` in the tree order
    /// from its fair-share parent's (root: `(1, 1)`); a user's
    /// `(association, factor bits)`.
    fn revalue(&mut self, position: usize) -> Option<(AssocId, u64)> {
        let row = &self.rows[position];
        let own = match row.inputs.fs_parent {
            None => ROOT_VALUES,
            Some(parent) => {
                // Root is the order's first node.
                let parent_row = &self.rows[row.parent_position as usize];
                step(parent_row, parent == ROOT, row, self.rows[0].usage_f64)
            }
        };
        let row = &mut self.rows[position];
        row.values = own;
        row.inputs.user.map(|assoc| {
            let factor = classic_factor(
                own.effective_usage,
                own.norm_shares,
                row.inputs.dampening_factor,
            );
            (assoc, factor.to_bits())
        })
    }

    /// The nodes reachable from root, parents first (breadth-first), with
    /// each node's children's range and its position.
    fn rebuild_order(&mut self) {
        self.order.clear();
        let len = self.nodes.len();
        self.children.clear();
        self.children.resize(len, (0, 0));
        self.position.clear();
        self.position.resize(len, u32::MAX);
        self.rows.clear();
        if !matches!(self.nodes.get(ROOT as usize), Some(Some(root)) if root.fs_parent.is_none()) {
            return;
        }
        let mut children: HashMap<NodeId, Vec<NodeId>> = HashMap::default();
        for (node, inputs) in self.nodes.iter().enumerate() {
            if let Some(parent) = inputs.and_then(|inputs| inputs.fs_parent) {
                children.entry(parent).or_default().push(node as NodeId);
            }
        }
        self.order.push(ROOT);
        self.position[ROOT as usize] = 0;
        let mut next = 0;
        while next < self.order.len() {
            let node = self.order[next];
            let start = self.order.len() as u32;
            for &child in children.get(&node).into_iter().flatten() {
                if child != ROOT {
                    self.position[child as usize] = self.order.len() as u32;
                    self.order.push(child);
                }
            }
            self.children[node as usize] = (start, self.order.len() as u32);
            next += 1;
        }
        self.rows.extend(self.order.iter().map(|&node| {
            let inputs = self.nodes[node as usize].expect("an ordered node has inputs");
            let parent_position = inputs
                .fs_parent
                .map_or(0, |parent| self.position[parent as usize]);
            Row::new(inputs, parent_position)
        }));
    }
}

#[cfg(test)]
mod tests {
    use fairflow_model::Shares;

    use super::{ClassicNode, ClassicTree, FactorChange};
    use crate::types::{AssocId, NodeId};

    /// An association's inputs (dampening 1, classic).
    fn node(
        fs_parent: Option<NodeId>,
        shares: Shares,
        usage: u128,
        child_level: u64,
        user: Option<AssocId>,
    ) -> ClassicNode {
        ClassicNode {
            fs_parent,
            shares,
            usage,
            child_level,
            child_usage: 0,
            user,
            dampening_factor: 1,
            depth_oblivious: false,
        }
    }

    /// The tree of the tests, by hand:
    /// - root (0), usage 100; its fair-share children A (3 shares) and u4
    ///   (1 share, below the `parent` account B): level shares 4;
    /// - A (1): usage 60, children u3 and u5 (1 share each, level shares 2)
    ///   and u6 (`parent`);
    /// - B (2): `FairShare=parent`, usage 40 (nobody's fair-share parent);
    /// - u3 (3): usage 60, user 13; u4 (4): usage 40, user 14; u5 (5):
    ///   usage 0, user 15; u6 (6): `parent`, usage 0, user 16.
    fn tree(root_usage: u128) -> Vec<(NodeId, ClassicNode)> {
        let used = |usage: u128| if root_usage == 0 { 0 } else { usage };
        vec![
            (0, node(None, Shares::Value(1), root_usage, 4, None)),
            (1, node(Some(0), Shares::Value(3), used(60), 2, None)),
            (2, node(Some(0), Shares::Parent, used(40), 0, None)),
            (3, node(Some(1), Shares::Value(1), used(60), 0, Some(13))),
            (4, node(Some(0), Shares::Value(1), used(40), 0, Some(14))),
            (5, node(Some(1), Shares::Value(1), 0, 0, Some(15))),
            (6, node(Some(1), Shares::Parent, 0, 0, Some(16))),
        ]
    }

    fn load(state: &mut ClassicTree, nodes: &[(NodeId, ClassicNode)], diff: isize) {
        for (id, inputs) in nodes {
            state.apply(*id, inputs, diff);
        }
    }

    /// The changes as `(user, old factor, new factor)`.
    fn factors(changes: &[FactorChange]) -> Vec<(AssocId, Option<f64>, Option<f64>)> {
        changes
            .iter()
            .map(|&(assoc, old, new)| (assoc, old.map(f64::from_bits), new.map(f64::from_bits)))
            .collect()
    }

    fn assert_near(actual: Option<f64>, expected: f64) {
        let actual = actual.expect("a factor");
        assert!(
            (actual - expected).abs() < 1e-12,
            "{actual} is not {expected}"
        );
    }

    #[test]
    fn factors_by_hand_with_parent_shares_and_zero_root_usage() {
        let mut state = ClassicTree::default();
        load(&mut state, &tree(100), 1);
        let changes = factors(&state.evaluate());
        assert_eq!(
            changes.iter().map(|c| (c.0, c.1)).collect::<Vec<_>>(),
            vec![(13, None), (14, None), (15, None), (16, None)]
        );
        // A: S = 3/4, UE = UN = 60/100 (under root).
        // u3: S = 1/2 · 3/4 = 0.375, UN = 0.6, UE = 0.6 + (0.6 − 0.6) · 1/2 = 0.6:
        //     F = 2^-(0.6 / 0.375) = 2^-1.6.
        assert_near(changes[0].2, (-1.6f64).exp2());
        // u4 (fair-share parent root through the `parent` account B):
        //     S = 1/4, UE = UN = 0.4: F = 2^-1.6.
        assert_near(changes[1].2, (-1.6f64).exp2());
        // u5: S = 0.375, UN = 0, UE = 0 + 0.6 · 1/2 = 0.3: F = 2^-0.8.
        assert_near(changes[2].2, (-0.8f64).exp2());
        // u6 (`parent`): A's S = 0.75 and UE = 0.6: F = 2^-0.8.
        assert_near(changes[3].2, (-0.8f64).exp2());
        // Nothing changed: nothing to evaluate.
        assert!(state.evaluate().is_empty());

        // Zero root usage (every usage gone): UN = 0 and UE = 0 everywhere,
        // F = 2^0 = 1 for every user.
        load(&mut state, &tree(100), -1);
        load(&mut state, &tree(0), 1);
        let changes = factors(&state.evaluate());
        assert_eq!(changes.len(), 4);
        for change in changes {
            assert_near(change.2, 1.0);
        }
    }

    #[test]
    fn users_removed_re_added_and_the_algorithm_switched_away() {
        let mut state = ClassicTree::default();
        let nodes = tree(100);
        load(&mut state, &nodes, 1);
        state.evaluate();
        // u5 removed: its factor goes; A's level shares drop to 1, so u3's
        // S becomes 1 · 3/4 and UE = 0.6 + 0 · 1 = 0.6: F = 2^-0.8.
        let a_without_u5 = ClassicNode {
            child_level: 1,
            ..nodes[1].1
        };
        state.apply(5, &nodes[5].1, -1);
        state.apply(1, &nodes[1].1, -1);
        state.apply(1, &a_without_u5, 1);
        let changes = factors(&state.evaluate());
        assert_eq!(changes.len(), 2);
        assert_eq!((changes[0].0, changes[1].0), (13, 15));
        assert_near(changes[0].2, (-0.8f64).exp2());
        assert_eq!((changes[1].1.is_some(), changes[1].2), (true, None));
        // Re-added (insertion before the retraction of A's replaced inputs):
        // the first tree's factors again.
        state.apply(1, &nodes[1].1, 1);
        state.apply(5, &nodes[5].1, 1);
        state.apply(1, &a_without_u5, -1);
        let changes = factors(&state.evaluate());
        assert_eq!(changes.len(), 2);
        assert_near(changes[0].2, (-1.6f64).exp2());
        assert_near(changes[1].2, (-0.8f64).exp2());
        assert_eq!(changes[1].1, None);
        // Another algorithm: every input retracted, every factor goes.
        load(&mut state, &nodes, -1);
        let changes = state.evaluate();
        assert_eq!(changes.len(), 4);
        assert!(changes
            .iter()
            .all(|&(_, old, new)| old.is_some() && new.is_none()));
        assert!(state.order.is_empty());
    }

    #[test]
    fn a_share_change_re_evaluates_the_subtree_below_it_only() {
        let mut state = ClassicTree::default();
        let mut nodes = tree(100);
        load(&mut state, &nodes, 1);
        state.evaluate();
        // u3's shares 1 -> 3: A's level shares 2 -> 4 (root's usage and
        // A's values unchanged). u3: S = 3/4 · 3/4 = 0.5625, UE = 0.6:
        // F = 2^-(0.6 / 0.5625); u4 (under root) and u6 (A's values) keep
        // theirs.
        let changed = [
            (
                1,
                ClassicNode {
                    child_level: 4,
                    ..nodes[1].1
                },
            ),
            (
                3,
                ClassicNode {
                    shares: Shares::Value(3),
                    ..nodes[3].1
                },
            ),
        ];
        for (id, inputs) in changed {
            state.apply(id, &nodes[id as usize].1, -1);
            state.apply(id, &inputs, 1);
            nodes[id as usize].1 = inputs;
        }
        let changes = factors(&state.evaluate());
        assert_eq!(changes[0].0, 13);
        assert_near(changes[0].2, (-(0.6f64 / 0.5625)).exp2());
        assert!(changes.iter().all(|c| c.0 == 13 || c.0 == 15));
        // The same as evaluating the changed tree afresh.
        let mut fresh = ClassicTree::default();
        load(&mut fresh, &nodes, 1);
        fresh.evaluate();
        assert_eq!(state.factors, fresh.factors);
    }
}
