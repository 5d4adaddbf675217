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

/// The ancestor closure `(node, (ancestor, distance))` of a forest given by
/// its `nodes` and its edges arranged by child (`child -> parent`), each node
/// its own ancestor at distance 0. An `iterate` whose rounds go one level
/// deeper; an edge change touches the moved subtree's pairs (a subtree of
/// `m` nodes at depth `d`: about `m·d`). A chain of depth `d` holds `d²/2`
/// pairs.
pub fn ancestor_closure<'s>(
    nodes: &VecCollection<'s, Epoch, NodeId, Diff>,
    edges_by_child: &ByKey<'s, NodeId, NodeId>,
) -> VecCollection<'s, Epoch, (NodeId, (NodeId, u32)), Diff> {
    let itself = |node: NodeId| (node, (node, 0u32));
    nodes.clone().map(itself).iterate(|inner_scope, inner| {
        let edges = edges_by_child.clone().enter(inner_scope);
        let base = nodes.clone().enter(inner_scope).map(itself);
        inner
            .map(|(node, (ancestor, distance))| (ancestor, (node, distance)))
            .join_core(edges, |_ancestor, &(node, distance), &parent| {
                Some((node, (parent, distance + 1)))
            })
            .concat(base)
            .consolidate()
    })
}

/// For every node, the sum over the nodes of its subtree (itself included)
/// of the amounts `amounts` carries in its diffs: the closure joined with the
/// amounts, counted per ancestor. An amount's change touches `depth + 1`
/// sums.
pub fn sums_up_the_closure<'s>(
    closure_by_node: &ByKey<'s, NodeId, (NodeId, u32)>,
    amounts: VecCollection<'s, Epoch, NodeId, Diff>,
) -> VecCollection<'s, Epoch, (NodeId, Diff), Diff> {
    closure_by_node
        .clone()
        .join_core(amounts.arrange_by_self(), |_node, &(ancestor, _), &()| {
            Some(ancestor)
        })
        .count_total_core::<Diff>()
}

/// For every node, its nearest proper ancestor whose value in `values`
/// satisfies `keep` (none for a node without one), arranged by node. A value
/// change touches the subtree below the node whose value changed.
pub fn nearest_proper_ancestor<'s, V>(
    closure: VecCollection<'s, Epoch, (NodeId, (NodeId, u32)), Diff>,
    values: &ByKey<'s, NodeId, V>,
    keep: impl Fn(&V) -> bool + 'static,
) -> ByKey<'s, NodeId, NodeId>
where
    V: ExchangeData,
{
    reduce_arranged(
        closure
            .filter(|(_, (_, distance))| *distance > 0)
            .map(|(node, (ancestor, distance))| (ancestor, (node, distance)))
            .join_core(
                values.clone(),
                move |&ancestor, &(node, distance), value: &V| {
                    keep(value).then_some((node, (distance, ancestor)))
                },
            ),
        "NearestProperAncestor",
        |_node, nearest_first, output| {
            output.push(((nearest_first[0].0).1, 1 as Diff));
        },
    )
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
