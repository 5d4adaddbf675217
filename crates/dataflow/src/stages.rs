//! The generic stages the tree dataflow is built from, as small functions
//! over collections in the style of differential dataflow's own
//! `algorithms`: each takes its inputs as collections or shared
//! arrangements and says what an update costs.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use differential_dataflow::consolidation::consolidate;
use differential_dataflow::hashable::Hashable;
use differential_dataflow::operators::CountTotal;
use differential_dataflow::trace::implementations::ValBuilder;
use differential_dataflow::trace::implementations::ValSpine;
use differential_dataflow::{AsCollection, ExchangeData, VecCollection};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use serde::{Deserialize, Serialize};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::Capability;

use crate::types::{grow, ByKey, Diff, Epoch, NodeId, ROOT};

/// For every node, the sum over the nodes of its subtree (itself included)
/// of the amounts `amounts` carries in its diffs (absent when 0), without
/// any ancestor pairs and without one round per level: a stateful operator
/// ([`SubtreeSums`], on worker 0) that keeps the parent links, every node's
/// own amount and every subtree sum, and applies a batch as deltas pushed up
/// the union of the changed nodes' paths, deepest first, so that each node on
/// it is visited once (a usage event: `depth + 1` nodes; a chain of depth
/// `d` loaded at once: `d` nodes; a moved subtree: its old and new paths).
/// It emits, per batch, the old and new sum of every node whose sum changed.
pub fn sums_up_the_tree<'s>(
    edges_by_child: &ByKey<'s, NodeId, NodeId>,
    amounts: VecCollection<'s, Epoch, NodeId, Diff>,
) -> VecCollection<'s, Epoch, (NodeId, Diff), Diff> {
    let edges = edges_by_child
        .clone()
        .as_collection(|&child, &parent| TreeChange::Edge { child, parent });
    let changes = edges.concat(amounts.map(TreeChange::Amount));
    per_batch_on_worker_0(changes, "SubtreeSums", {
        let mut sums = SubtreeSums::default();
        move |changes, out| {
            for (node, old, new) in sums.apply(changes) {
                if old != 0 {
                    out.push(((node, old), -1));
                }
                if new != 0 {
                    out.push(((node, new), 1));
                }
            }
        }
    })
}

/// A stateful operator on worker 0: every update of `changes` is exchanged
/// to worker 0 and, once its time is complete (times in order), that time's
/// updates are handed to `logic` together; the updates `logic` pushes leave
/// at that time. The tree stages use it where a batch's work is a walk over
/// the changed part of the tree, which a round per level would make
/// quadratic on deep trees.
fn per_batch_on_worker_0<'s, D, O>(
    changes: VecCollection<'s, Epoch, D, Diff>,
    name: &str,
    logic: impl FnMut(Vec<(D, Diff)>, &mut Vec<(O, Diff)>) + 'static,
) -> VecCollection<'s, Epoch, O, Diff>
where
    D: ExchangeData,
    O: ExchangeData,
{
    per_batch_routed(changes, name, |_| 0, logic)
}

/// [`per_batch_on_worker_0`] with the updates exchanged by `route` (a
/// worker receives every update whose route maps to it, so a stage whose
/// state is per key routes by the key and each worker holds its keys): each
/// worker applies its part of a time's updates once the time is complete.
pub fn per_batch_routed<'s, D, O>(
    changes: VecCollection<'s, Epoch, D, Diff>,
    name: &str,
    route: impl Fn(&D) -> u64 + 'static,
    mut logic: impl FnMut(Vec<(D, Diff)>, &mut Vec<(O, Diff)>) + 'static,
) -> VecCollection<'s, Epoch, O, Diff>
where
    D: ExchangeData,
    O: ExchangeData,
{
    changes
        .inner
        .unary_frontier::<CapacityContainerBuilder<Vec<(O, Epoch, Diff)>>, _, _, _>(
            Exchange::new(move |(data, _, _): &(D, Epoch, Diff)| route(data)),
            name,
            |_capability, _info| {
                let mut pending: BTreeMap<Epoch, Pending<D>> = BTreeMap::new();
                let mut produced = Vec::new();
                move |(input, frontier), output| {
                    input.for_each(|capability, data| {
                        for (change, time, diff) in data.drain(..) {
                            pending
                                .entry(time)
                                .or_insert_with(|| (capability.delayed(&time, 0), Vec::new()))
                                .1
                                .push((change, diff));
                        }
                    });
                    while let Some(entry) = pending.first_entry() {
                        if frontier.less_equal(entry.key()) {
                            break;
                        }
                        let (time, (capability, changes)) = entry.remove_entry();
                        logic(changes, &mut produced);
                        output.session(&capability).give_iterator(
                            produced.drain(..).map(|(data, diff)| (data, time, diff)),
                        );
                    }
                }
            },
        )
        .as_collection()
}

/// One time's updates waiting for the time to complete, with the capability
/// to send its results at that time.
type Pending<D> = (Capability<Epoch>, Vec<(D, Diff)>);

/// The depth of every node in `nodes` and of every node on their paths to
/// their roots (a node without a parent: 0), walking up `parent_of` until a
/// node of known depth: each node on the union of the paths is visited once.
/// Panics if a walk is longer than `node_bound` (a cycle: the book never
/// leaves one).
fn walk_depths(
    nodes: &[NodeId],
    parent_of: impl Fn(NodeId) -> Option<NodeId>,
    node_bound: usize,
) -> HashMap<NodeId, usize> {
    let mut depth: HashMap<NodeId, usize> = HashMap::default();
    let mut path = Vec::new();
    for &start in nodes {
        let mut node = start;
        let base = loop {
            if let Some(&known) = depth.get(&node) {
                break known + 1;
            }
            path.push(node);
            assert!(
                path.len() <= node_bound + 1,
                "the parent links hold a cycle through node {start}"
            );
            match parent_of(node) {
                Some(parent) => node = parent,
                None => break 0,
            }
        };
        for (offset, &on_path) in path.iter().rev().enumerate() {
            depth.insert(on_path, base + offset);
        }
        path.clear();
    }
    depth
}

/// One input of [`sums_up_the_tree`]: a parent link or an amount (in the diff).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
enum TreeChange {
    Edge { child: NodeId, parent: NodeId },
    Amount(NodeId),
}

/// The state of [`sums_up_the_tree`]'s operator: the forest and the
/// subtree sums (a node's own amount is only ever pushed up, never read).
///
/// A batch is applied in two pushes of deltas, each over a forest:
/// 1. **cut** every changed link (a moved, new or removed child), then push
///    `-sum(child)` from each old parent up the cut forest: every sum is now
///    that of the forest without those links (a moved subtree nested in
///    another is cut from its old parent only, so nothing is taken twice);
/// 2. **attach** the new links and push `+sum(child)` (the cut forest's)
///    from each new parent and every own amount's change from its node, up
///    the new forest.
///
/// A push visits the union of the starting nodes' paths to their roots once,
/// deepest first (depths found by walking up until a node of known depth),
/// adding each node's accumulated delta to its sum and passing it on to its
/// parent: `O(p log p)` for `p` nodes on those paths.
///
/// The state is dense, by node id (ids are interned densely): a lookup on
/// a path is an index, not a hash probe.
#[derive(Debug, Default)]
struct SubtreeSums {
    /// Each node's parent link.
    parent: Vec<Option<NodeId>>,
    /// Each node's subtree sum.
    sum: Vec<Diff>,
}

impl SubtreeSums {
    /// Apply one batch of changes; returns `(node, old sum, new sum)` for
    /// every node whose sum changed.
    fn apply(&mut self, mut changes: Vec<(TreeChange, Diff)>) -> Vec<(NodeId, Diff, Diff)> {
        consolidate(&mut changes);
        let mut old_sums: HashMap<NodeId, Diff> = HashMap::default();
        // 1. Cut every child whose link changes.
        let mut deltas: HashMap<NodeId, Diff> = HashMap::default();
        let mut attached = Vec::new();
        for &(change, diff) in &changes {
            if let TreeChange::Edge { child, parent } = change {
                if diff > 0 {
                    attached.push((child, parent));
                }
                if let Some(old_parent) = self.parent_of(child) {
                    self.parent[child as usize] = None;
                    *deltas.entry(old_parent).or_default() -= self.sum_of(child);
                }
            }
        }
        self.push_up(deltas, &mut old_sums);
        // 2. Attach the new links; push their subtrees' sums and the amounts.
        let mut deltas: HashMap<NodeId, Diff> = HashMap::default();
        for &(child, parent) in &attached {
            *grow(&mut self.parent, child as usize) = Some(parent);
        }
        for &(child, parent) in &attached {
            let moved = self.sum_of(child);
            if moved != 0 {
                *deltas.entry(parent).or_default() += moved;
            }
        }
        for &(change, amount) in &changes {
            if let TreeChange::Amount(node) = change {
                *deltas.entry(node).or_default() += amount;
            }
        }
        self.push_up(deltas, &mut old_sums);
        let mut changed: Vec<(NodeId, Diff, Diff)> = old_sums
            .into_iter()
            .filter_map(|(node, old)| {
                let new = self.sum_of(node);
                (new != old).then_some((node, old, new))
            })
            .collect();
        changed.sort_unstable();
        changed
    }

    fn sum_of(&self, node: NodeId) -> Diff {
        self.sum.get(node as usize).copied().unwrap_or(0)
    }

    fn parent_of(&self, node: NodeId) -> Option<NodeId> {
        self.parent.get(node as usize).copied().flatten()
    }

    /// Add each node's delta to its sum and to every ancestor's, visiting the
    /// union of the paths once, deepest first; records the first-seen old sum
    /// of every node it changes in `old_sums`.
    fn push_up(&mut self, mut deltas: HashMap<NodeId, Diff>, old_sums: &mut HashMap<NodeId, Diff>) {
        deltas.retain(|_, delta| *delta != 0);
        if deltas.is_empty() {
            return;
        }
        let starts: Vec<NodeId> = deltas.keys().copied().collect();
        let depth = walk_depths(&starts, |node| self.parent_of(node), self.parent.len());
        let mut order: Vec<(usize, NodeId)> =
            depth.into_iter().map(|(node, d)| (d, node)).collect();
        order.sort_unstable_by(|a, b| b.cmp(a));
        for (_, node) in order {
            let Some(delta) = deltas.remove(&node) else {
                continue;
            };
            if delta == 0 {
                continue;
            }
            let sum = grow(&mut self.sum, node as usize);
            old_sums.entry(node).or_insert(*sum);
            *sum += delta;
            if let Some(parent) = self.parent_of(node) {
                *deltas.entry(parent).or_default() += delta;
            }
        }
    }
}

/// For every node with a parent, its nearest proper ancestor whose value in
/// `values` satisfies `keep` (none for a node without one), arranged by
/// node, without any ancestor pairs and without a loop: a top-down
/// recurrence ([`down_the_tree`] from root) over `W(n)`, the nearest kept
/// ancestor-or-self (`n` when `n` is kept, else its parent's `W`); a node's
/// answer is its parent's `W`. A value change touches the node and the
/// nodes below it whose answer changes, in one pass per batch (an `iterate`
/// did this before, at the price of a nested scope whose progress tracking
/// every batch paid, whatever it changed).
pub fn nearest_proper_ancestor<'s, V>(
    edges_by_child: &ByKey<'s, NodeId, NodeId>,
    values: &ByKey<'s, NodeId, V>,
    keep: impl Fn(&V) -> bool + Clone + 'static,
) -> ByKey<'s, NodeId, NodeId>
where
    V: ExchangeData,
{
    // `(child, (parent, (child, is the child kept?)))`.
    let keep_link = keep.clone();
    let links = edges_by_child
        .clone()
        .join_core(values.clone(), move |&child, &parent, value: &V| {
            Some((child, (parent, (child, keep_link(value)))))
        });
    let root = values.clone().flat_map_ref(move |&node, value| {
        (node == ROOT).then(|| (node, Nearest::root(node, keep(value))))
    });
    down_the_tree(links, root, |parent: &Nearest, &(child, kept)| {
        Some(Nearest {
            own_or_above: if kept {
                Some(child)
            } else {
                parent.own_or_above
            },
            above: parent.own_or_above,
        })
    })
    .flat_map(|(node, nearest)| nearest.above.map(|above| (node, above)))
    .arrange_by_key_named("Arrange: NearestProperAncestor")
}

/// A node's value in [`nearest_proper_ancestor`]'s recurrence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
struct Nearest {
    /// The nearest kept ancestor-or-self.
    own_or_above: Option<NodeId>,
    /// The nearest kept proper ancestor (the answer).
    above: Option<NodeId>,
}

impl Nearest {
    fn root(node: NodeId, kept: bool) -> Self {
        Nearest {
            own_or_above: kept.then_some(node),
            above: None,
        }
    }
}

/// Values defined top-down over a forest: `starts` gives the value of the
/// nodes that start a chain (root), and every other node's value is
/// `step(parent's value, link input)` over `links` `(child, (parent, link
/// input))` (`None`: no value); a start's own value wins over a link. A
/// stateful operator ([`TopDown`], on worker 0) that keeps the links, the
/// starts and the values, and recomputes, in one pass per batch, the nodes
/// whose link or start changed and, shallowest first, the children of every
/// node whose value changed: `O(changed values)` work and no round per level
/// (a chain of depth `d` loaded at once: `d` steps, not `d` rounds).
pub fn down_the_tree<'s, I, V>(
    links: VecCollection<'s, Epoch, (NodeId, (NodeId, I)), Diff>,
    starts: VecCollection<'s, Epoch, (NodeId, V), Diff>,
    step: impl Fn(&V, &I) -> Option<V> + 'static,
) -> VecCollection<'s, Epoch, (NodeId, V), Diff>
where
    I: ExchangeData,
    V: ExchangeData + std::hash::Hash,
{
    let changes = links
        .map(|(child, (parent, input))| TopDownChange::Link {
            child,
            parent,
            input,
        })
        .concat(starts.map(|(node, value)| TopDownChange::Start { node, value }));
    per_batch_on_worker_0(changes, "TopDown", {
        let mut state = TopDown::default();
        move |changes, out| state.apply(changes, &step, out)
    })
}

/// One input of [`down_the_tree`].
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
enum TopDownChange<I, V> {
    Link {
        child: NodeId,
        parent: NodeId,
        input: I,
    },
    Start {
        node: NodeId,
        value: V,
    },
}

/// The state of [`down_the_tree`]'s operator.
#[derive(Debug)]
struct TopDown<I, V> {
    links: HashMap<NodeId, (NodeId, I)>,
    children: HashMap<NodeId, HashSet<NodeId>>,
    starts: HashMap<NodeId, V>,
    values: HashMap<NodeId, V>,
}

impl<I, V> Default for TopDown<I, V> {
    fn default() -> Self {
        TopDown {
            links: HashMap::default(),
            children: HashMap::default(),
            starts: HashMap::default(),
            values: HashMap::default(),
        }
    }
}

impl<I: Ord + Clone, V: Ord + Clone> TopDown<I, V> {
    /// Apply one batch; pushes `((node, value), diff)` for every changed value.
    fn apply(
        &mut self,
        mut changes: Vec<(TopDownChange<I, V>, Diff)>,
        step: &impl Fn(&V, &I) -> Option<V>,
        out: &mut Vec<((NodeId, V), Diff)>,
    ) {
        consolidate(&mut changes);
        // Retractions first, so that a replaced link or start is replaced.
        changes.sort_by_key(|(_, diff)| *diff > 0);
        let mut dirty = Vec::new();
        for (change, diff) in changes {
            match change {
                TopDownChange::Link {
                    child,
                    parent,
                    input,
                } => {
                    dirty.push(child);
                    if diff > 0 {
                        if let Some((old_parent, _)) = self.links.insert(child, (parent, input)) {
                            self.unlink(child, old_parent);
                        }
                        self.children.entry(parent).or_default().insert(child);
                    } else if self
                        .links
                        .get(&child)
                        .is_some_and(|(p, i)| (*p, i) == (parent, &input))
                    {
                        self.links.remove(&child);
                        self.unlink(child, parent);
                    }
                }
                TopDownChange::Start { node, value } => {
                    dirty.push(node);
                    if diff > 0 {
                        self.starts.insert(node, value);
                    } else if self.starts.get(&node) == Some(&value) {
                        self.starts.remove(&node);
                    }
                }
            }
        }
        let mut queue: BinaryHeap<Reverse<(usize, NodeId)>> = BinaryHeap::new();
        let mut queued: HashSet<NodeId> = HashSet::default();
        let depths = self.depths(&dirty);
        for node in dirty {
            if queued.insert(node) {
                queue.push(Reverse((depths[&node], node)));
            }
        }
        while let Some(Reverse((depth, node))) = queue.pop() {
            let new = match self.starts.get(&node) {
                Some(start) => Some(start.clone()),
                None => self.links.get(&node).and_then(|(parent, input)| {
                    self.values.get(parent).and_then(|value| step(value, input))
                }),
            };
            let old = self.values.get(&node);
            if old == new.as_ref() {
                continue;
            }
            if let Some(old) = old {
                out.push(((node, old.clone()), -1));
            }
            match new {
                Some(new) => {
                    out.push(((node, new.clone()), 1));
                    self.values.insert(node, new);
                }
                None => {
                    self.values.remove(&node);
                }
            }
            for &child in self.children.get(&node).into_iter().flatten() {
                if queued.insert(child) {
                    queue.push(Reverse((depth + 1, child)));
                }
            }
        }
    }

    fn unlink(&mut self, child: NodeId, parent: NodeId) {
        if let Some(siblings) = self.children.get_mut(&parent) {
            siblings.remove(&child);
            if siblings.is_empty() {
                self.children.remove(&parent);
            }
        }
    }

    /// The depth of each of `nodes` over the links (a node without a link: 0).
    fn depths(&self, nodes: &[NodeId]) -> HashMap<NodeId, usize> {
        walk_depths(
            nodes,
            |node| self.links.get(&node).map(|(parent, _)| *parent),
            self.links.len(),
        )
    }
}

/// Per group key, the sum of the amounts: `(group, amount)` records, the
/// amount moved into the diff and counted. A record's change touches one sum.
pub fn group_sums<'s, K>(
    amounts: VecCollection<'s, Epoch, (K, Diff), Diff>,
) -> VecCollection<'s, Epoch, (K, Diff), Diff>
where
    K: ExchangeData + Hashable,
{
    amounts
        .explode(|(group, amount)| Some((group, amount)))
        .count_total_core::<Diff>()
}

/// `reduce`, with the output left arranged by the same key, so that an
/// operator joining on that key reads the reduce's own output arrangement
/// instead of arranging the output again.
pub fn reduce_arranged<'s, K, V, V2, L>(
    input: VecCollection<'s, Epoch, (K, V), Diff>,
    name: &str,
    mut logic: L,
) -> ByKey<'s, K, V2>
where
    K: ExchangeData + Hashable,
    V: ExchangeData,
    V2: ExchangeData,
    L: FnMut(&K, &[(&V, Diff)], &mut Vec<(V2, Diff)>) + 'static,
{
    input
        .arrange_by_key_named(&format!("Arrange: {name}"))
        .reduce_abelian::<_, ValBuilder<K, V2, Epoch, Diff>, ValSpine<K, V2, Epoch, Diff>, _, _>(
            name,
            move |key: &K, values, output| logic(key, values, output),
            |buffer, key: &K, updates| {
                buffer.clear();
                buffer.extend(
                    updates
                        .drain(..)
                        .map(|(value, time, diff)| ((key.clone(), value), time, diff)),
                );
            },
        )
}

#[cfg(test)]
mod tests {
    use super::{SubtreeSums, TopDown, TopDownChange, TreeChange};

    fn edge(child: u32, parent: u32, diff: i128) -> (TreeChange, i128) {
        (TreeChange::Edge { child, parent }, diff)
    }

    fn amount(node: u32, amount: i128) -> (TreeChange, i128) {
        (TreeChange::Amount(node), amount)
    }

    fn sums(state: &SubtreeSums, nodes: &[u32]) -> Vec<i128> {
        nodes.iter().map(|&node| state.sum_of(node)).collect()
    }

    #[test]
    fn a_chain_loaded_at_once_sums_every_level() {
        // 0 <- 1 <- 2 <- 3, own amounts 1, 10, 100, 1000: sums by hand.
        let mut state = SubtreeSums::default();
        let changed = state.apply(vec![
            edge(3, 2, 1),
            edge(1, 0, 1),
            edge(2, 1, 1),
            amount(0, 1),
            amount(1, 10),
            amount(2, 100),
            amount(3, 1000),
        ]);
        assert_eq!(sums(&state, &[0, 1, 2, 3]), vec![1111, 1110, 1100, 1000]);
        assert_eq!(
            changed,
            vec![(0, 0, 1111), (1, 0, 1110), (2, 0, 1100), (3, 0, 1000)]
        );
        // A charge at the bottom changes its path only.
        let changed = state.apply(vec![amount(3, 5), amount(3, 2)]);
        assert_eq!(
            changed,
            vec![
                (0, 1111, 1118),
                (1, 1110, 1117),
                (2, 1100, 1107),
                (3, 1000, 1007)
            ]
        );
        // A charge and its retraction in one batch change nothing.
        assert!(state.apply(vec![amount(2, 4), amount(2, -4)]).is_empty());
    }

    #[test]
    fn moving_nested_subtrees_in_one_batch_takes_nothing_twice() {
        // 0 has children 1 and 5; 1 <- 2 <- 3 <- 4. Amounts: 2:2, 3:30, 4:400, 5:5000.
        let mut state = SubtreeSums::default();
        state.apply(vec![
            edge(1, 0, 1),
            edge(5, 0, 1),
            edge(2, 1, 1),
            edge(3, 2, 1),
            edge(4, 3, 1),
            amount(2, 2),
            amount(3, 30),
            amount(4, 400),
            amount(5, 5000),
        ]);
        assert_eq!(
            sums(&state, &[0, 1, 2, 3, 4, 5]),
            vec![5432, 432, 432, 430, 400, 5000]
        );
        // Move 2 (with 3 and 4) under 5, and 4 out of it to the root 0, and
        // charge 3 by 1: 0 = 5433; 1 = 0; 5 = 5000 + 2 + 31 = 5033; 2 = 33; 3 = 31; 4 = 400.
        state.apply(vec![
            edge(2, 1, -1),
            edge(2, 5, 1),
            edge(4, 3, -1),
            edge(4, 0, 1),
            amount(3, 1),
        ]);
        assert_eq!(
            sums(&state, &[0, 1, 2, 3, 4, 5]),
            vec![5433, 0, 33, 31, 400, 5033]
        );
        // The same batch in another order gives the same sums.
        let mut other = SubtreeSums::default();
        other.apply(vec![
            amount(5, 5000),
            amount(4, 400),
            edge(4, 3, 1),
            edge(3, 2, 1),
            amount(3, 30),
            edge(2, 1, 1),
            amount(2, 2),
            edge(5, 0, 1),
            edge(1, 0, 1),
        ]);
        other.apply(vec![
            amount(3, 1),
            edge(4, 0, 1),
            edge(2, 5, 1),
            edge(4, 3, -1),
            edge(2, 1, -1),
        ]);
        assert_eq!(
            sums(&other, &[0, 1, 2, 3, 4, 5]),
            vec![5433, 0, 33, 31, 400, 5033]
        );
    }

    #[test]
    fn a_removed_leaf_takes_its_amount_with_it() {
        let mut state = SubtreeSums::default();
        state.apply(vec![
            edge(1, 0, 1),
            edge(2, 1, 1),
            amount(2, 7),
            amount(1, 3),
        ]);
        let changed = state.apply(vec![edge(2, 1, -1), amount(2, -7)]);
        assert_eq!(changed, vec![(0, 10, 3), (1, 10, 3), (2, 7, 0)]);
        assert_eq!((state.sum_of(2), state.parent_of(2)), (0, None));
    }

    fn link(child: u32, parent: u32, input: i64, diff: i128) -> (TopDownChange<i64, i64>, i128) {
        (
            TopDownChange::Link {
                child,
                parent,
                input,
            },
            diff,
        )
    }

    fn start(node: u32, value: i64, diff: i128) -> (TopDownChange<i64, i64>, i128) {
        (TopDownChange::Start { node, value }, diff)
    }

    /// `value(child) = value(parent) + input`, undefined past a negative input.
    fn add(value: &i64, input: &i64) -> Option<i64> {
        (*input >= 0).then_some(value + input)
    }

    #[test]
    fn values_top_down_follow_links_starts_and_moves() {
        // 0 (start 100) <- 1 (+1) <- 2 (+10) <- 3 (+100); 4 (+1000) under 0.
        let mut state: TopDown<i64, i64> = TopDown::default();
        let mut out = Vec::new();
        state.apply(
            vec![
                link(3, 2, 100, 1),
                link(2, 1, 10, 1),
                link(1, 0, 1, 1),
                link(4, 0, 1000, 1),
                start(0, 100, 1),
            ],
            &add,
            &mut out,
        );
        out.sort();
        assert_eq!(
            out,
            vec![
                ((0, 100), 1),
                ((1, 101), 1),
                ((2, 111), 1),
                ((3, 211), 1),
                ((4, 1100), 1)
            ]
        );
        // The start changes: every value below it changes.
        out.clear();
        state.apply(vec![start(0, 100, -1), start(0, 0, 1)], &add, &mut out);
        out.sort();
        assert_eq!(
            out,
            vec![
                ((0, 0), 1),
                ((0, 100), -1),
                ((1, 1), 1),
                ((1, 101), -1),
                ((2, 11), 1),
                ((2, 111), -1),
                ((3, 111), 1),
                ((3, 211), -1),
                ((4, 1000), 1),
                ((4, 1100), -1),
            ]
        );
        // 2 moves under 4 with input 5: 2 = 1005, 3 = 1105; 1 is unchanged.
        out.clear();
        state.apply(vec![link(2, 1, 10, -1), link(2, 4, 5, 1)], &add, &mut out);
        out.sort();
        assert_eq!(
            out,
            vec![
                ((2, 11), -1),
                ((2, 1005), 1),
                ((3, 111), -1),
                ((3, 1105), 1)
            ]
        );
        // A link whose step gives no value leaves its subtree without values.
        out.clear();
        state.apply(
            vec![link(4, 0, 1000, -1), link(4, 0, -1, 1)],
            &add,
            &mut out,
        );
        out.sort();
        assert_eq!(out, vec![((2, 1005), -1), ((3, 1105), -1), ((4, 1000), -1)]);
        assert_eq!(state.values.len(), 2);
    }
}
