//! Level-based fair-share (`PriorityFlags=LEVEL_BASED`, `PriorityLevels`) in
//! the dataflow: each user association's `fairshare_raw` and its factor
//! `rank / n`, bit-identical to `fairflow_oracle::fairshare::level` (see its
//! definition).
//!
//! # Stages (fed by the level-gated [`NodeRec`]s, so idle otherwise)
//! 1. **Raw values**: each association's bucket
//!    (`formula::level_bucket_value` of `shares / level shares` and
//!    `usage / fs-parent usage`, the maximum for a `FairShare=parent` user,
//!    0 for a `parent` account) from its record and its fair-share parent's;
//!    then a top-down recurrence over the direct edges
//!    (`stages::down_the_tree`): `raw = raw(parent) | place(bucket, fs
//!    depth)` (`formula::LevelLayout::place`), the fair-share depth carried
//!    down beside it (a `parent` account gives its children its own). The
//!    oracle's `raw = raw(parent) | level_value`, one record per
//!    association instead of a walk per user over its ancestors.
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
//! them are re-derived: `O(associations)` in the worst case (root's children
//! all move); the buckets are quantised, so many raw values do not change
//! and their ranks stay.

use differential_dataflow::VecCollection;
use fairflow_model::formula::{
    level_bucket_value, rank_factor, share_fraction, usage_ratio, LevelLayout,
};

use super::{counted, FsParams, NodeRec};
use crate::stages::down_the_tree;
use crate::types::{ByKey, Diff, Epoch, NodeId, TouchCounter, ROOT};

/// What a node's level step needs: its bucket value (unshifted), whether it
/// is a `FairShare=parent` account (its children's fair-share depth is its
/// own) and `PriorityLevels`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
struct LevelLink {
    bucket: u64,
    parent_account: bool,
    levels: u32,
}

/// A node's top-down level value: the OR of its direct ancestors' (and its
/// own) placed buckets, and the fair-share depth its children have.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
struct LevelValue {
    raw: u64,
    children_fs_depth: usize,
}

/// Build the level stages: `(user association, factor bits)` for every user
/// association. `edges_by_child` is the tree; `records` are the level-gated
/// records with the parameters.
pub(super) fn build<'s>(
    edges_by_child: &ByKey<'s, NodeId, NodeId>,
    records: VecCollection<'s, Epoch, (NodeId, (NodeRec, FsParams)), Diff>,
    touched: &TouchCounter,
) -> VecCollection<'s, Epoch, (NodeId, u64), Diff> {
    let records_by_node = records.clone().arrange_by_key();
    // Each association's bucket (it needs its fair-share parent's record).
    let buckets = with_fs_parent_record(records.clone(), records_by_node.clone()).map(
        |(node, (record, params, _parent, parent_record))| {
            let layout = LevelLayout::new(params.levels);
            let bucket = match (record.shares.is_parent(), record.user) {
                (true, true) => layout.bucket_max,
                (true, false) => 0,
                (false, _) => level_bucket_value(
                    share_fraction(record.shares.raw(), parent_record.child_level),
                    usage_ratio(record.usage, parent_record.usage),
                    layout.bucket_max,
                ),
            };
            let link = LevelLink {
                bucket,
                parent_account: !record.user && record.shares.is_parent(),
                levels: params.levels,
            };
            (node, link)
        },
    );
    // `raw = raw(parent) | level_value`, top-down over the direct edges.
    let links = edges_by_child
        .clone()
        .join_core(buckets.arrange_by_key(), |&node, &parent, &link| {
            Some((node, (parent, link)))
        });
    let root = records.flat_map(|(node, _)| {
        (node == ROOT).then_some((
            node,
            LevelValue {
                raw: 0,
                children_fs_depth: 0,
            },
        ))
    });
    let values = counted(
        down_the_tree(links, root, |parent: &LevelValue, link: &LevelLink| {
            let fs_depth = parent.children_fs_depth;
            Some(LevelValue {
                raw: parent.raw | LevelLayout::new(link.levels).place(link.bucket, fs_depth),
                children_fs_depth: if link.parent_account {
                    fs_depth
                } else {
                    fs_depth + 1
                },
            })
        }),
        touched,
    );
    let raw_values = counted(
        values
            .arrange_by_key()
            .join_core(records_by_node, |&node, value, &(record, _)| {
                record.user.then_some((node, value.raw))
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

/// A gated record with its fair-share parent's: `(record, params, parent,
/// parent's record)`.
type WithFsParent = (NodeRec, FsParams, NodeId, NodeRec);

/// Each gated association with its fair-share parent and the parent's
/// record, `(node, (record, params, parent, parent's record))` (root, which
/// has no fair-share parent, is left out): the records joined on the parent
/// with their own arrangement `by_node`. A record's change touches its own
/// row and its fair-share children's.
fn with_fs_parent_record<'s>(
    records: VecCollection<'s, Epoch, (NodeId, (NodeRec, FsParams)), Diff>,
    by_node: ByKey<'s, NodeId, (NodeRec, FsParams)>,
) -> VecCollection<'s, Epoch, (NodeId, WithFsParent), Diff> {
    records
        .flat_map(|(node, (record, params))| {
            record
                .fs_parent
                .map(|parent| (parent, (node, record, params)))
        })
        .arrange_by_key()
        .join_core(
            by_node,
            |&parent, &(node, record, params), &(parent_record, _)| {
                Some((node, (record, params, parent, parent_record)))
            },
        )
}
