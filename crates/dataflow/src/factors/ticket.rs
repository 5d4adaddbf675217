//! Ticket-based fair-share (`PriorityFlags=TICKET_BASED`) in the dataflow:
//! each active association's tickets and each user association's factor
//! `tickets / max user tickets`, bit-identical to
//! `fairflow_oracle::fairshare::ticket` (see its definition).
//!
//! # Stages (all fed by the ticket-gated [`NodeRec`]s, so idle otherwise)
//! 1. **Pending jobs per association**: one record per pending job (the job
//!    rows with phase `Pending`, named by `(account, user)`), joined with the
//!    user associations' names, then moved up the edges and counted per
//!    node (`stages::sums_up_the_tree`): a submission, start, hold or cancel
//!    changes `depth + 1` counts.
//! 2. **Active**: a count above 0 on an association that is not a
//!    `FairShare=parent` account (the oracle's active node rule: a pending
//!    job, or an active fair-share descendant; the fair-share ancestors of a
//!    node are exactly its direct ancestors that are not `parent`, so every
//!    fair-share ancestor of an active association is active).
//! 3. **Weights** `w = S · F`: `S` by a top-down recurrence over the
//!    fair-share parents (`stages::down_the_tree`, each `S` from its
//!    parent's by `formula::classic_norm_shares`, the oracle's walk
//!    unrolled; structure only), then per *active* association `UE`, `F`
//!    (`formula::ticket_effective_usage`, `ticket_factor`) from its record,
//!    its `S`, its fair-share parent's usage and root's usage, as the oracle.
//! 4. **Sibling sums**: a `reduce` per fair-share parent over its active
//!    children's weights, summed by `formula::ticket_weight_sum` (ascending:
//!    the reduce input is sorted by the weight's bits, which for non-negative
//!    floats is numeric order; the oracle sums the same way).
//! 5. **Tickets**: root's [`ROOT_TICKETS`] split down the active fair-share
//!    chains with `formula::ticket_share`, a top-down recurrence (each
//!    active association's tickets from its fair-share parent's).
//! 6. **Factors**: every user association's tickets (0 when inactive); the
//!    maximum over users is a `reduce` on the unit key, whose input is the
//!    *distinct* ticket values with their multiplicities (a reduce sees its
//!    input consolidated): `O(distinct values)` per batch that changes any
//!    user's tickets. The factor joins each user with that one maximum: a
//!    change of the maximum rewrites every user's factor, as it must.
//!
//! # Cost
//! `UN = usage / root usage`, so a usage event changes every active
//! association's weight and tickets: `O(active)` per usage change
//! (the algorithm's own cost; inactive associations cost nothing). A job
//! event costs its path's counts, plus, when an association turns active or
//! inactive, its sibling group's sum and the tickets below that group.

use differential_dataflow::VecCollection;
use fairflow_model::formula::ROOT_TICKETS;
use fairflow_model::formula::{
    classic_norm_shares, norm_usage, ticket_effective_usage, ticket_factor, ticket_share,
    ticket_weight_sum,
};

use super::{counted, NodeRec};
use crate::stages::{down_the_tree, reduce_arranged, sums_up_the_tree};
use crate::types::{ByKey, Diff, Epoch, FrameUsage, NodeId, TouchCounter, ROOT};

/// What the ticket walk knows about one active association.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
struct TicketRec {
    /// Its fair-share parent (`None` for root).
    fs_parent: Option<NodeId>,
    /// `S · F`, as bits.
    weight_bits: u64,
    /// As a fair-share parent: its active children's weights, summed, as bits.
    child_sum_bits: u64,
}

/// One input of the [`TicketRec`] assembly.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
enum Part {
    Weight(Option<NodeId>, u64),
    ChildSum(u64),
}

/// The ticket stages' results.
pub(super) struct Tickets<'s> {
    /// `(user association, factor bits)`, every user association.
    pub factors: VecCollection<'s, Epoch, (NodeId, u64), Diff>,
    /// `(association, tickets)`, active associations only (the others have 0).
    pub tickets: VecCollection<'s, Epoch, (NodeId, u64), Diff>,
}

/// What an active association's weight needs besides its own record: its
/// normalised shares `S`, and its fair-share parent's usage (a `parent`
/// association uses its parent's `UN`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
struct WeightInput {
    record: NodeRec,
    norm_shares_bits: u64,
    parent_usage: FrameUsage,
}

/// Each active association's `(fs parent, S · F bits)`.
type Weights<'s> = VecCollection<'s, Epoch, (NodeId, (Option<NodeId>, u64)), Diff>;

/// Build the ticket stages over the ticket-gated `records`; `pending` holds
/// one `(user association)` per pending job; `edges_by_child` is the tree.
pub(super) fn build<'s>(
    edges_by_child: &ByKey<'s, NodeId, NodeId>,
    records: VecCollection<'s, Epoch, (NodeId, NodeRec), Diff>,
    pending: VecCollection<'s, Epoch, NodeId, Diff>,
    touched: &TouchCounter,
) -> Tickets<'s> {
    let records_by_node = records.clone().arrange_by_key();
    let active = active(edges_by_child, pending, &records_by_node, touched);
    let norm_shares = norm_shares(&records, &records_by_node, touched);
    let weights = weights(active, norm_shares, records_by_node, touched);
    let child_sums = child_sums(&weights, touched);
    let tickets_by_node = tickets_by_node(weights, child_sums);
    let tickets = counted(
        tickets_by_node
            .clone()
            .as_collection(|&node, &tickets| (node, tickets)),
        touched,
    );
    let factors = factors(records, tickets_by_node);
    Tickets { factors, tickets }
}

/// Stages 1 and 2: the active associations, with their records.
fn active<'s>(
    edges_by_child: &ByKey<'s, NodeId, NodeId>,
    pending: VecCollection<'s, Epoch, NodeId, Diff>,
    records_by_node: &ByKey<'s, NodeId, NodeRec>,
    touched: &TouchCounter,
) -> VecCollection<'s, Epoch, (NodeId, NodeRec), Diff> {
    // 1. Pending jobs per association (only while the records exist: gated),
    //    moved up the edges and counted.
    let pending = pending
        .map(|node| (node, ()))
        .join_core(records_by_node.clone(), |&node, &(), _record| Some(node));
    let pending_below = sums_up_the_tree(edges_by_child, pending);
    // 2. Active: a count above 0, not a `FairShare=parent` account.
    counted(
        pending_below.join_core(records_by_node.clone(), |&node, &count, record| {
            (count > 0 && (record.user || !record.shares.is_parent())).then_some((node, *record))
        }),
        touched,
    )
}

/// Stage 3, first half: every association's normalised shares `S`, bits.
fn norm_shares<'s>(
    records: &VecCollection<'s, Epoch, (NodeId, NodeRec), Diff>,
    records_by_node: &ByKey<'s, NodeId, NodeRec>,
    touched: &TouchCounter,
) -> VecCollection<'s, Epoch, (NodeId, u64), Diff> {
    // Top-down over the fair-share parents (structure only: it never moves
    // on usage), for every association.
    counted(
        down_the_tree(
            records
                .clone()
                .flat_map(|(node, record)| {
                    record
                        .fs_parent
                        .map(|parent| (parent, (node, record.shares)))
                })
                .arrange_by_key()
                .join_core(
                    records_by_node.clone(),
                    |&parent, &(node, shares), parent_record| {
                        Some((node, (parent, (shares, parent_record.child_level))))
                    },
                ),
            records
                .clone()
                .flat_map(|(node, _)| (node == ROOT).then_some((node, 1.0f64.to_bits()))),
            |&parent_bits, &(shares, parent_child_level)| {
                Some(if shares.is_parent() {
                    parent_bits
                } else {
                    classic_norm_shares(
                        shares.raw(),
                        parent_child_level,
                        f64::from_bits(parent_bits),
                    )
                    .to_bits()
                })
            },
        ),
        touched,
    )
}

/// Stage 3, second half: each active association's `(fs parent, S · F
/// bits)`.
fn weights<'s>(
    active: VecCollection<'s, Epoch, (NodeId, NodeRec), Diff>,
    norm_shares: VecCollection<'s, Epoch, (NodeId, u64), Diff>,
    records_by_node: ByKey<'s, NodeId, NodeRec>,
    touched: &TouchCounter,
) -> Weights<'s> {
    let root_usage = records_by_node
        .clone()
        .as_collection(|&node, record| (node, record.usage))
        .flat_map(|(node, usage)| (node == ROOT).then_some(((), usage)));
    counted(
        active
            .arrange_by_key()
            .join_core(
                norm_shares.arrange_by_key(),
                |&node, &record, &norm_shares_bits| {
                    Some((
                        record.fs_parent.unwrap_or(ROOT),
                        (node, record, norm_shares_bits),
                    ))
                },
            )
            .arrange_by_key()
            .join_core(
                records_by_node,
                |_parent, &(node, record, norm_shares_bits), parent_record| {
                    Some((
                        (),
                        (
                            node,
                            WeightInput {
                                record,
                                norm_shares_bits,
                                parent_usage: parent_record.usage,
                            },
                        ),
                    ))
                },
            )
            .arrange_by_key()
            .join_core(
                root_usage.arrange_by_key(),
                |_unit, &(node, input), &root_usage| {
                    weigh(node, &input, root_usage).map(|weighed| (node, weighed))
                },
            ),
        touched,
    )
}

/// Stage 4: per fair-share parent, its active children's weights summed
/// (bits).
fn child_sums<'s>(
    weights: &Weights<'s>,
    touched: &TouchCounter,
) -> VecCollection<'s, Epoch, (NodeId, u64), Diff> {
    counted(
        weights
            .clone()
            .flat_map(|(_node, (fs_parent, weight_bits))| {
                fs_parent.map(|parent| (parent, weight_bits))
            })
            .reduce(|_parent, weights, output| {
                let mut values: Vec<f64> = Vec::new();
                for (&bits, count) in weights {
                    for _ in 0..usize::try_from(*count).unwrap_or(0) {
                        values.push(f64::from_bits(bits));
                    }
                }
                output.push((ticket_weight_sum(&mut values).to_bits(), 1 as Diff));
            }),
        touched,
    )
}

/// Stage 5: every active association's tickets, arranged by node.
fn tickets_by_node<'s>(
    weights: Weights<'s>,
    child_sums: VecCollection<'s, Epoch, (NodeId, u64), Diff>,
) -> ByKey<'s, NodeId, u64> {
    // 5. Tickets: root's `ROOT_TICKETS` split down the active fair-share
    //    chains (every fair-share ancestor of an active association is
    //    active), top-down (the records' output arrangement is the links'
    //    parent side).
    let ticket_records = reduce_arranged(
        weights
            .map(|(node, (fs_parent, weight_bits))| (node, Part::Weight(fs_parent, weight_bits)))
            .concat(child_sums.map(|(node, sum_bits)| (node, Part::ChildSum(sum_bits)))),
        "TicketRecords",
        |_node, parts, output| {
            let (mut weight, mut child_sum_bits) = (None, 0.0f64.to_bits());
            for (part, count) in parts {
                if *count <= 0 {
                    continue;
                }
                match **part {
                    Part::Weight(fs_parent, bits) => weight = Some((fs_parent, bits)),
                    Part::ChildSum(bits) => child_sum_bits = bits,
                }
            }
            if let Some((fs_parent, weight_bits)) = weight {
                output.push((
                    TicketRec {
                        fs_parent,
                        weight_bits,
                        child_sum_bits,
                    },
                    Diff::from(1u8),
                ));
            }
        },
    );
    let ticket_links = ticket_records
        .clone()
        .as_collection(|&node, record| (node, *record))
        .flat_map(|(node, record)| {
            record
                .fs_parent
                .map(|parent| (parent, (node, record.weight_bits)))
        })
        .arrange_by_key()
        .join_core(
            ticket_records.clone(),
            |&parent, &(node, weight_bits), parent_record| {
                Some((node, (parent, (weight_bits, parent_record.child_sum_bits))))
            },
        );
    let root_tickets = ticket_records
        .as_collection(|&node, record| (node, record.fs_parent))
        .flat_map(|(node, fs_parent)| {
            (node == ROOT && fs_parent.is_none()).then_some((node, ROOT_TICKETS))
        });
    down_the_tree(
        ticket_links,
        root_tickets,
        |&parent_tickets, &(weight_bits, parent_child_sum_bits)| {
            Some(if parent_tickets == 0 {
                0
            } else {
                ticket_share(
                    parent_tickets,
                    f64::from_bits(weight_bits),
                    f64::from_bits(parent_child_sum_bits),
                )
            })
        },
    )
    .arrange_by_key()
}

/// Stage 6: every user association's factor, bits.
fn factors<'s>(
    records: VecCollection<'s, Epoch, (NodeId, NodeRec), Diff>,
    tickets_by_node: ByKey<'s, NodeId, u64>,
) -> VecCollection<'s, Epoch, (NodeId, u64), Diff> {
    // 6. Factors: every user's tickets (0 when inactive) over the maximum.
    let user_nodes = records
        .filter(|(_, record)| record.user)
        .map(|(node, _)| node);
    let user_tickets = tickets_by_node
        .join_core(user_nodes.clone().arrange_by_self(), |&node, &t, &()| {
            Some((node, t))
        })
        .concat(user_nodes.map(|node| (node, 0u64)))
        .reduce(|_user, values, output| {
            // Sorted ascending: the last is the tickets (or the 0 marker).
            if let Some((&tickets, _)) = values.iter().rev().find(|(_, count)| *count > 0) {
                output.push((tickets, 1 as Diff));
            }
        });
    let max_user_tickets = user_tickets
        .clone()
        .map(|(_user, tickets)| ((), tickets))
        .reduce(|_unit, values, output| {
            if let Some((&max, _)) = values.iter().rev().find(|(_, count)| *count > 0) {
                output.push((max, 1 as Diff));
            }
        });
    user_tickets
        .map(|(user, tickets)| ((), (user, tickets)))
        .arrange_by_key()
        .join_core(
            max_user_tickets.arrange_by_key(),
            |_unit, &(user, tickets), &max| {
                let factor = if max == 0 {
                    0.0
                } else {
                    tickets as f64 / max as f64
                };
                Some((user, factor.to_bits()))
            },
        )
}

/// An active association's `(fs parent, S · F bits)` from its record, its
/// `S` and its fair-share parent's usage, as the oracle's walk ends (root:
/// `(None, 0)`).
fn weigh(
    node: NodeId,
    input: &WeightInput,
    root_usage: FrameUsage,
) -> Option<(Option<NodeId>, u64)> {
    if node == ROOT {
        return Some((None, 0.0f64.to_bits()));
    }
    let record = &input.record;
    let own_norm_shares = f64::from_bits(input.norm_shares_bits);
    let fs_parent = record.fs_parent?;
    // A `parent` association uses its fs-parent's S (its own `S` is its
    // parent's) and UN (root: 1 and its own UN, 1 with usage, 0 without).
    let (shares, usage) = if record.shares.is_parent() {
        if fs_parent == ROOT {
            (1.0, if root_usage > 0 { 1.0 } else { 0.0 })
        } else {
            (own_norm_shares, norm_usage(input.parent_usage, root_usage))
        }
    } else {
        (own_norm_shares, norm_usage(record.usage, root_usage))
    };
    let effective = ticket_effective_usage(usage, shares);
    let factor = ticket_factor(shares, effective);
    Some((Some(fs_parent), (own_norm_shares * factor).to_bits()))
}
