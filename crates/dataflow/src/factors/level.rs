//! Level-based fair-share (`PriorityFlags=LEVEL_BASED`, `PriorityLevels`) in
//! the dataflow: each user association's `fairshare_raw` and its factor
//! `rank / n`, bit-identical to `fairflow_oracle::fairshare::level` (see its
//! definition).
//!
//! # Stages (fed by the level-gated [`NodeRec`]s, so idle otherwise)
//! 1. **Raw values**: a `reduce` per user association over its direct
//!    ancestors' records (the closure joined with the records by ancestor)
//!    computes each ancestor's bucket (`formula::level_bucket_value` of
//!    `shares / level shares` and `usage / fs-parent usage`, the maximum for
//!    a `FairShare=parent` user, nothing for a `parent` account), places it
//!    at the ancestor's fair-share depth (`formula::LevelLayout::place`) and
//!    ORs them: the oracle's `raw = raw(parent) | level_value`, unrolled.
//! 2. **Ranks**: a `reduce` on the unit key over the *distinct* raw values
//!    with their multiplicities (a reduce sees its input consolidated) walks
//!    them from the largest down: the `n − 1 − (users with a larger raw)`
//!    rank of the oracle's walk, `rank_factor(rank, n)` per distinct value
//!    (`n` is the sum of the multiplicities). `O(distinct values)` per batch
//!    that changes any raw value; only the values whose rank moved change
//!    downstream.
//! 3. **Factors**: each user joined with its raw value's factor.
//!
//! # Cost
//! A usage event changes the usage ratio of every association on its path
//! and of their fair-share siblings, so the raw values of every user below
//! them are re-derived: `O(users · depth)` in the worst case (root's children
//! all move); the buckets are quantised, so many raw values do not change
//! and their ranks stay.

use std::collections::BTreeMap;

use differential_dataflow::VecCollection;
use fairflow_model::formula::{
    level_bucket_value, rank_factor, share_fraction, usage_ratio, LevelLayout,
};

use super::{counted, FsParams, NodeRec};
use crate::types::{Diff, Epoch, NodeId, TouchCounter, ROOT};

/// Build the level stages: `(user association, factor bits)` for every user
/// association. `user_paths` is `(ancestor, (user, distance))`; `records`
/// are the level-gated records with the parameters.
pub(super) fn build<'s>(
    user_paths: VecCollection<'s, Epoch, (NodeId, (NodeId, u32)), Diff>,
    records: VecCollection<'s, Epoch, (NodeId, (NodeRec, FsParams)), Diff>,
    touched: &TouchCounter,
) -> VecCollection<'s, Epoch, (NodeId, u64), Diff> {
    let raw_values = counted(
        user_paths
            .arrange_by_key()
            .join_core(
                records.arrange_by_key(),
                |&ancestor, &(user, _), &(record, params)| Some((user, (ancestor, record, params))),
            )
            .reduce(|&user, path, output| {
                if let Some(raw) = fairshare_raw(user, path) {
                    output.push((raw, 1 as Diff));
                }
            }),
        touched,
    );
    let factor_of_raw = counted(
        raw_values
            .clone()
            .map(|(_user, raw)| ((), raw))
            .reduce(|_unit, values, output| {
                let n: u64 = values
                    .iter()
                    .map(|(_, count)| u64::try_from(*count).unwrap_or(0))
                    .sum();
                let mut larger = 0u64;
                // Largest first.
                for (&raw, count) in values.iter().rev() {
                    let count = u64::try_from(*count).unwrap_or(0);
                    if count == 0 {
                        continue;
                    }
                    let rank = n - 1 - larger;
                    output.push(((raw, rank_factor(rank, n).to_bits()), 1 as Diff));
                    larger += count;
                }
            })
            .map(|((), value)| value),
        touched,
    );
    raw_values
        .map(|(user, raw)| (raw, user))
        .arrange_by_key()
        .join_core(factor_of_raw.arrange_by_key(), |_raw, &user, &bits| {
            Some((user, bits))
        })
}

/// A user association's `fairshare_raw` from every direct ancestor's record
/// (itself included): the OR of their level values.
fn fairshare_raw(user: NodeId, path: &[(&(NodeId, NodeRec, FsParams), Diff)]) -> Option<u64> {
    let records: BTreeMap<NodeId, (NodeRec, FsParams)> = path
        .iter()
        .filter(|(_, count)| *count > 0)
        .map(|((node, record, params), _)| (*node, (*record, *params)))
        .collect();
    let (_, params) = *records.get(&user)?;
    records.get(&ROOT)?;
    let layout = LevelLayout::new(params.levels);
    let mut raw = 0u64;
    for (&node, (record, _)) in &records {
        if node == ROOT {
            continue;
        }
        let fs_parent = record.fs_parent?;
        let parent = &records.get(&fs_parent)?.0;
        let bucket = match (record.shares.is_parent(), record.user) {
            (true, true) => layout.bucket_max,
            (true, false) => 0,
            (false, _) => level_bucket_value(
                share_fraction(record.shares.raw(), parent.child_level),
                usage_ratio(record.usage, parent.usage),
                layout.bucket_max,
            ),
        };
        raw |= layout.place(bucket, fs_depth(node, &records)?);
    }
    Some(raw)
}

/// The fair-share depth of `node` (0 directly under root): the fair-share
/// parents between it and root.
fn fs_depth(node: NodeId, records: &BTreeMap<NodeId, (NodeRec, FsParams)>) -> Option<usize> {
    let mut depth = 0usize;
    let mut parent = records.get(&node)?.0.fs_parent?;
    while parent != ROOT {
        depth += 1;
        if depth > records.len() {
            return None;
        }
        parent = records.get(&parent)?.0.fs_parent?;
    }
    Some(depth)
}
