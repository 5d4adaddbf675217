//! The generic stages the tree dataflow is built from, as small functions
//! over collections in the style of differential dataflow's own
//! `algorithms`: each takes its inputs as collections or shared
//! arrangements and says what an update costs.

use differential_dataflow::hashable::Hashable;
use differential_dataflow::operators::iterate::Iterate;
use differential_dataflow::operators::CountTotal;
use differential_dataflow::trace::implementations::ValBuilder;
use differential_dataflow::trace::implementations::ValSpine;
use differential_dataflow::{ExchangeData, VecCollection};

use crate::types::{ByKey, Diff, Epoch, NodeId};

/// For every node, the sum over the nodes of its subtree (itself included)
/// of the amounts `amounts` carries in its diffs (absent when 0), without
/// any ancestor pairs: an `iterate` that moves every amount up one edge per
/// round (`up = amounts + up ⋈ edges`; the amounts add up in the diffs, so
/// the loop holds at most one record per node and time). A load of a chain
/// of depth `d` takes `d` rounds and `O(d)` records; an amount's change moves
/// one record per round up its path (`depth + 1` records, `depth` rounds).
pub fn sums_up_the_tree<'s>(
    edges_by_child: &ByKey<'s, NodeId, NodeId>,
    amounts: VecCollection<'s, Epoch, NodeId, Diff>,
) -> VecCollection<'s, Epoch, (NodeId, Diff), Diff> {
    amounts
        .clone()
        .iterate(|inner_scope, inner| {
            let edges = edges_by_child.clone().enter(inner_scope);
            let base = amounts.clone().enter(inner_scope);
            inner
                .arrange_by_self()
                .join_core(edges, |_child, &(), &parent| Some(parent))
                .concat(base)
                .consolidate()
        })
        .count_total_core::<Diff>()
}

/// For every node with a parent, its nearest proper ancestor whose value in
/// `values` satisfies `keep` (none for a node without one), arranged by
/// node, without any ancestor pairs: a node whose parent is kept takes the
/// parent; one whose parent is skipped takes its parent's answer (an
/// `iterate`: as many rounds as the longest run of skipped ancestors, plus
/// one). A value change touches the links to the node's children and the
/// nodes whose answer changes.
pub fn nearest_proper_ancestor<'s, V>(
    edges_by_child: &ByKey<'s, NodeId, NodeId>,
    values: &ByKey<'s, NodeId, V>,
    keep: impl Fn(&V) -> bool + 'static,
) -> ByKey<'s, NodeId, NodeId>
where
    V: ExchangeData,
{
    // `(child, (parent, is the parent kept?))`.
    let links = edges_by_child
        .clone()
        .as_collection(|&child, &parent| (parent, child))
        .arrange_by_key()
        .join_core(values.clone(), move |&parent, &child, value: &V| {
            Some((child, (parent, keep(value))))
        });
    let direct = links
        .clone()
        .flat_map(|(child, (parent, kept))| kept.then_some((child, parent)));
    let through = links
        .flat_map(|(child, (parent, kept))| (!kept).then_some((parent, child)))
        .arrange_by_key();
    direct
        .clone()
        .iterate(|inner_scope, nearest| {
            let through = through.enter(inner_scope);
            let direct = direct.enter(inner_scope);
            through
                .join_core(nearest.arrange_by_key(), |_parent, &child, &nearest| {
                    Some((child, nearest))
                })
                .concat(direct)
                .consolidate()
        })
        .arrange_by_key_named("Arrange: NearestProperAncestor")
}

/// Values defined top-down over a forest: `starts` gives the value of the
/// nodes that start a chain (root), and every other node's value is
/// `step(parent's value, link input)` over `links` `(child, (parent, link
/// input))` (`None`: no value). An `iterate` whose rounds go one level
/// deeper: `O(depth)` rounds, each node's value computed from its parent's
/// once (a chain of depth `d`: `d` records, not a walk of `d` ancestors per
/// node); a link's change re-derives the values below it that change.
pub fn down_the_tree<'s, I, V>(
    links: VecCollection<'s, Epoch, (NodeId, (NodeId, I)), Diff>,
    starts: VecCollection<'s, Epoch, (NodeId, V), Diff>,
    step: impl Fn(&V, &I) -> Option<V> + 'static,
) -> VecCollection<'s, Epoch, (NodeId, V), Diff>
where
    I: ExchangeData,
    V: ExchangeData + std::hash::Hash,
{
    let by_parent = links
        .map(|(child, (parent, input))| (parent, (child, input)))
        .arrange_by_key();
    starts.clone().iterate(|inner_scope, values| {
        let by_parent = by_parent.enter(inner_scope);
        let starts = starts.enter(inner_scope);
        by_parent
            .join_core(
                values.arrange_by_key(),
                move |_parent, (child, input), value| step(value, input).map(|next| (*child, next)),
            )
            .concat(starts)
            .consolidate()
    })
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
