//! Ticket-based fair-share (`PriorityFlags=TICKET_BASED`) in the dataflow:
//! each active association's tickets and each user association's factor
//! `tickets / max user tickets`, bit-identical to
//! `fairflow_oracle::fairshare::ticket` (see its definition).
//!
//! # Stages (all fed by the ticket-gated [`NodeRec`]s, so idle otherwise)
//! 1. **Pending jobs per association**: one record per pending job (the job
//!    rows with phase `Pending`, named by `(account, user)`), joined with the
//!    user associations' names, then with the closure and summed per
//!    ancestor (`count_total`): a submission, start, hold or cancel changes
//!    `depth + 1` counts.
//! 2. **Active**: a count above 0 on an association that is not a
//!    `FairShare=parent` account (the oracle's active node rule: a pending
//!    job, or an active fair-share descendant; the fair-share ancestors of a
//!    node are exactly its direct ancestors that are not `parent`).
//! 3. **Weights** `w = S · F`: a `reduce` per *active* association over its
//!    direct ancestors' records walks the fair-share chain top-down for `S`
//!    (`formula::classic_norm_shares`), then `UE`, `F`
//!    (`formula::ticket_effective_usage`, `ticket_factor`), as the oracle.
//! 4. **Sibling sums**: a `reduce` per fair-share parent over its active
//!    children's weights, summed by `formula::ticket_weight_sum` (ascending:
//!    the reduce input is sorted by the weight's bits, which for non-negative
//!    floats is numeric order; the oracle sums the same way).
//! 5. **Tickets**: a `reduce` per active association over its ancestors'
//!    `(fs parent, weight, child sum)` walks the chain from root's
//!    [`ROOT_TICKETS`] down with `formula::ticket_share`.
//! 6. **Factors**: every user association's tickets (0 when inactive); the
//!    maximum over users is a `reduce` on the unit key, whose input is the
//!    *distinct* ticket values with their multiplicities (a reduce sees its
//!    input consolidated): `O(distinct values)` per batch that changes any
//!    user's tickets. The factor joins each user with that one maximum: a
//!    change of the maximum rewrites every user's factor, as it must.
//!
//! # Cost
//! `UN = usage / root usage`, so a usage event changes every active
//! association's weight and tickets: `O(active · depth)` per usage change
//! (the algorithm's own cost; inactive associations cost nothing). A job
//! event costs its path's counts, plus, when an association turns active or
//! inactive, its sibling group's sum and the tickets below that group.

use std::collections::BTreeMap;

use differential_dataflow::operators::CountTotal;
use differential_dataflow::VecCollection;
use fairflow_model::formula::ROOT_TICKETS;
use fairflow_model::formula::{
    classic_norm_shares, norm_usage, ticket_effective_usage, ticket_factor, ticket_share,
    ticket_weight_sum,
};

use super::{counted, fs_chain, fs_chain_by, NodeRec};
use crate::stages::reduce_arranged;
use crate::types::{ByKey, Diff, Epoch, NodeId, TouchCounter, ROOT};

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

/// Build the ticket stages over the ticket-gated `records`; `pending` holds
/// one `(user association)` per pending job.
pub(super) fn build<'s>(
    closure_by_node: ByKey<'s, NodeId, (NodeId, u32)>,
    records: VecCollection<'s, Epoch, (NodeId, NodeRec), Diff>,
    pending: VecCollection<'s, Epoch, NodeId, Diff>,
    touched: &TouchCounter,
) -> Tickets<'s> {
    let records_by_node = records.clone().arrange_by_key();

    // 1. Pending jobs per association (only while the records exist: gated).
    let pending = pending
        .map(|node| (node, ()))
        .join_core(records_by_node.clone(), |&node, &(), _record| Some(node));
    let pending_below = closure_by_node
        .clone()
        .join_core(pending.arrange_by_self(), |_node, &(ancestor, _), &()| {
            Some(ancestor)
        })
        .count_total_core::<Diff>();

    // 2. Active associations.
    let active = counted(
        pending_below.join_core(records_by_node.clone(), |&node, &count, record| {
            (count > 0 && (record.user || !record.shares.is_parent())).then_some(node)
        }),
        touched,
    );

    // Each active association with each of its direct ancestors, by ancestor.
    let active_paths = closure_by_node
        .join_core(active.arrange_by_self(), |&node, &(ancestor, _), &()| {
            Some((ancestor, node))
        })
        .arrange_by_key();

    // 3. Weights.
    let weights = counted(
        active_paths
            .clone()
            .join_core(records_by_node, |&ancestor, &node, &record| {
                Some((node, (ancestor, record)))
            })
            .reduce(|&node, path, output| {
                if let Some(weighed) = weigh(node, path) {
                    output.push((weighed, 1 as Diff));
                }
            }),
        touched,
    );

    // 4. Sibling sums.
    let child_sums = counted(
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
    );

    // 5. Tickets (the records' output arrangement is the join's input).
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
    let tickets_by_node = reduce_arranged(
        active_paths.join_core(ticket_records, |&ancestor, &node, &record| {
            Some((node, (ancestor, record)))
        }),
        "Tickets",
        |&node, path, output| {
            if let Some(tickets) = walk_tickets(node, path) {
                output.push((tickets, 1 as Diff));
            }
        },
    );
    let tickets = counted(
        tickets_by_node
            .clone()
            .as_collection(|&node, &tickets| (node, tickets)),
        touched,
    );

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
    let factors = user_tickets
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
        );
    Tickets { factors, tickets }
}

/// An active association's `(fs parent, S · F bits)` from its direct
/// ancestors' records (itself included), walking the fair-share chain
/// top-down as the oracle does.
fn weigh(node: NodeId, path: &[(&(NodeId, NodeRec), Diff)]) -> Option<(Option<NodeId>, u64)> {
    let records: BTreeMap<NodeId, NodeRec> = path
        .iter()
        .filter(|(_, count)| *count > 0)
        .map(|((ancestor, record), _)| (*ancestor, *record))
        .collect();
    let chain = fs_chain(node, &records)?;
    let root_usage = records.get(&ROOT)?.usage;
    // S along the chain; root's is 1.
    let mut norm_shares = vec![1.0f64];
    for pair in chain.windows(2) {
        let (parent, child) = (&records[&pair[0]], &records[&pair[1]]);
        let parent_norm_shares = *norm_shares.last()?;
        norm_shares.push(if child.shares.is_parent() {
            parent_norm_shares
        } else {
            classic_norm_shares(child.shares.raw(), parent.child_level, parent_norm_shares)
        });
    }
    let record = &records[&node];
    if node == ROOT {
        return Some((None, 0.0f64.to_bits()));
    }
    let own_norm_shares = *norm_shares.last()?;
    let fs_parent = record.fs_parent?;
    // A `parent` association uses its fs-parent's S and UN (root: 1 and
    // its own UN, 1 with usage, 0 without).
    let (shares, usage) = if record.shares.is_parent() {
        let parent_norm_shares = norm_shares[norm_shares.len().checked_sub(2)?];
        let parent_usage = records.get(&fs_parent)?.usage;
        if fs_parent == ROOT {
            (1.0, if root_usage > 0 { 1.0 } else { 0.0 })
        } else {
            (parent_norm_shares, norm_usage(parent_usage, root_usage))
        }
    } else {
        (own_norm_shares, norm_usage(record.usage, root_usage))
    };
    let effective = ticket_effective_usage(usage, shares);
    let factor = ticket_factor(shares, effective);
    Some((Some(fs_parent), (own_norm_shares * factor).to_bits()))
}

/// An active association's tickets from its active fair-share ancestors'
/// [`TicketRec`]s (itself included): root's [`ROOT_TICKETS`] split down the
/// chain.
fn walk_tickets(node: NodeId, path: &[(&(NodeId, TicketRec), Diff)]) -> Option<u64> {
    let records: BTreeMap<NodeId, TicketRec> = path
        .iter()
        .filter(|(_, count)| *count > 0)
        .map(|((ancestor, record), _)| (*ancestor, *record))
        .collect();
    let chain = fs_chain_by(node, records.len(), |id| {
        records.get(&id).map(|r| r.fs_parent)
    })?;
    let mut tickets = ROOT_TICKETS;
    for pair in chain.windows(2) {
        if tickets == 0 {
            break;
        }
        let (parent, child) = (&records[&pair[0]], &records[&pair[1]]);
        tickets = ticket_share(
            tickets,
            f64::from_bits(child.weight_bits),
            f64::from_bits(parent.child_sum_bits),
        );
    }
    Some(tickets)
}
