//! Each association's [`NodeRec`], assembled from its parts.
//!
//! A stateful stage routed by association (`assemble_records`) assembles a
//! [`NodeRec`] (an outer join over a tagged [`Part`] enum) for the
//! associations a batch changed: its fair-share parent, shares, subtree usage, whether
//! it is a user association (with its interned name, so the facts that leave
//! for the queue need no join with the names), the user associations in its subtree, and, as a
//! fair-share parent, its children's level shares and (depth-oblivious) the
//! usage of its children that are not `FairShare=parent`. Each part is a sum
//! or a nearest ancestor already maintained by the tree dataflow; a usage
//! event changes the records of the `depth + 1` associations on its path.
//! Each [`Family`] of algorithms has a tree dataflow of its own that builds
//! only its stages (`graph`), and only the configured family's is fed; the
//! algorithms with parameters (classic, level-based) see each record with
//! the one `FsParams` record.

use differential_dataflow::operators::CountTotal;
use differential_dataflow::VecCollection;
use fairflow_model::Shares;
use rustc_hash::FxHashMap;

use super::{FactorInputs, Family, NodeRec};
use crate::stages::{per_batch_routed, sums_up_the_tree};
use crate::types::{AssocId, Diff, Epoch, FrameUsage, NodeId, SignedFrameUsage, TouchCounter};

/// One input of the per-association assembly.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
enum Part {
    FsParent(NodeId),
    Shares(Shares),
    Usage(SignedFrameUsage),
    /// A user association, with its interned name.
    User(AssocId),
    UsersBelow(i128),
    ChildLevel(i128),
    ChildUsage(SignedFrameUsage),
}

/// Every association's record under `family` (each family assembles the
/// parts its algorithms read), counted in `touched`.
pub(super) fn assembled<'s>(
    inputs: &FactorInputs<'s>,
    family: Family,
    touched: &TouchCounter,
) -> VecCollection<'s, Epoch, (NodeId, NodeRec), Diff> {
    // The parts of each association's record: its fair-share parent,
    // shares, subtree usage, whether it is a user, its fair-share children's
    // level shares; Fair Tree also weighs accounts by the users in their
    // subtree, depth-oblivious needs the usage of each node's non-`parent`
    // fs-children.
    let mut parts = inputs
        .fs_parent
        .clone()
        .map(|(node, parent)| (node, Part::FsParent(parent)))
        .concat(
            inputs
                .shares
                .clone()
                .map(|(node, shares)| (node, Part::Shares(shares))),
        )
        .concat(
            inputs
                .subtree_usage
                .clone()
                .map(|(node, usage)| (node, Part::Usage(usage))),
        )
        .concat(
            inputs
                .user_names
                .clone()
                .map(|(node, assoc)| (node, Part::User(assoc))),
        )
        .concat(
            inputs
                .level_shares
                .clone()
                .map(|(node, level)| (node, Part::ChildLevel(level))),
        );
    if family.fair_tree() {
        let users_below = sums_up_the_tree(&inputs.edges_by_child, inputs.users.clone());
        parts = parts.concat(users_below.map(|(node, count)| (node, Part::UsersBelow(count))));
    }
    if family == Family::Classic {
        let child_usage = inputs
            .fs_parent_by_node
            .clone()
            .join_core(
                inputs.shares_by_node.clone(),
                |&node, &parent, shares: &Shares| (!shares.is_parent()).then_some((node, parent)),
            )
            .arrange_by_key()
            .join_core(
                inputs.subtree_usage.clone().arrange_by_key(),
                |_node, &parent, &usage| Some((parent, usage)),
            )
            .explode(|(parent, usage)| Some((parent, usage)))
            .count_total_core::<Diff>();
        parts = parts.concat(child_usage.map(|(node, usage)| (node, Part::ChildUsage(usage))));
    }
    super::counted(assemble_records(parts), touched)
}

/// Each association's record from its parts: a stateful stage routed by
/// node (`stages::per_batch_routed`: each worker holds its nodes' parts,
/// with their counts) that re-assembles only the nodes a batch changed and
/// emits the old and the new record of each whose record changed, what a
/// `reduce` per node would emit, without the `reduce`'s arrangements and
/// history replay (its cost dominated a batch of 1,000 usage events).
fn assemble_records<'s>(
    parts: VecCollection<'s, Epoch, (NodeId, Part), Diff>,
) -> VecCollection<'s, Epoch, (NodeId, NodeRec), Diff> {
    per_batch_routed(parts, "Records", |(node, _)| u64::from(*node), {
        let mut held: FxHashMap<NodeId, Vec<(Part, Diff)>> = FxHashMap::default();
        move |mut changes, out| {
            changes.sort_unstable_by_key(|((node, _), _)| *node);
            let mut start = 0;
            while start < changes.len() {
                let node = (changes[start].0).0;
                let end = start + changes[start..].partition_point(|((n, _), _)| *n == node);
                let parts = held.entry(node).or_default();
                let before = assemble(parts.iter().map(|(part, count)| (part, *count)));
                for &((_, part), diff) in &changes[start..end] {
                    match parts.iter_mut().find(|(held, _)| *held == part) {
                        Some((_, count)) => *count += diff,
                        None => parts.push((part, diff)),
                    }
                }
                parts.retain(|(_, count)| *count != 0);
                let after = assemble(parts.iter().map(|(part, count)| (part, *count)));
                if parts.is_empty() {
                    held.remove(&node);
                }
                if before != after {
                    if let Some(record) = before {
                        out.push(((node, record), -1));
                    }
                    if let Some(record) = after {
                        out.push(((node, record), 1));
                    }
                }
                start = end;
            }
        }
    })
}

/// Assemble one association's record from its parts with their counts;
/// `None` until it is live.
fn assemble<'a>(parts: impl Iterator<Item = (&'a Part, Diff)>) -> Option<NodeRec> {
    let non_negative = |value: SignedFrameUsage| FrameUsage::try_from(value).unwrap_or(0);
    let (mut fs_parent, mut shares, mut usage, mut assoc) = (None, None, 0, None);
    let (mut users_below, mut child_level, mut child_usage) = (0, 0, 0);
    for (part, _) in parts.filter(|(_, count)| *count > 0) {
        match *part {
            Part::FsParent(parent) => fs_parent = Some(parent),
            Part::Shares(s) => shares = Some(s),
            Part::Usage(u) => usage = non_negative(u),
            Part::User(name) => assoc = Some(name),
            Part::UsersBelow(c) => users_below = u64::try_from(c).unwrap_or(0),
            Part::ChildLevel(l) => child_level = u64::try_from(l).unwrap_or(0),
            Part::ChildUsage(u) => child_usage = non_negative(u),
        }
    }
    Some(NodeRec {
        fs_parent,
        shares: shares?,
        usage,
        user: assoc.is_some(),
        assoc,
        users_below,
        child_level,
        child_usage,
    })
}
