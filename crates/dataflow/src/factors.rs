//! Fair-share factors maintained in the dataflow, in the same logical time as
//! the usage and tree changes that move them, and turned into the priority
//! dataflow's `Fairshare` facts: no driver round trip, no tree walk per batch.
//! Every algorithm: Fair Tree, classic, depth-oblivious, ticket-based
//! (`ticket`) and level-based (`level`); every value is bit-identical to
//! the oracle's (`fairflow_oracle::fairshare`), whose definitions are
//! restated here only as far as the dataflow formulation needs.
//!
//! # Per-association records
//! Each association's [`NodeRec`], assembled from the tree dataflow's sums
//! and nearest ancestors in one stateful stage (`records`).
//!
//! # Fair Tree
//! Two tie rules (`FsParams::fair_tree_ties`): Slurm's code
//! (`fair_tree_slurm`, the default: `f64` `LevelFS`, no merging, tied
//! accounts newest first) and Slurm's documentation (below). Under Slurm's
//! rule the ranks are not materialised: each association's placement in
//! its sorted group leaves as a `TreeSlot` fact, and the queue keeps the
//! sorted tree and derives a user's rank when it reads it
//! (`priority::fair_tree`), so a usage event changes the placements that
//! moved and no user's factor. The documented rule still ranks every user
//! here (its merged groups make a user's block depend on ties above it):
//! `fair_tree_documented`, over the groups both rules sort (`groups`).
//!
//! # Classic and depth-oblivious
//! Normalised usage divides by root's usage, so under these algorithms
//! every usage event changes every association's values and every user's
//! factor: the algorithm's own `O(associations)` cost, which Slurm pays at
//! every `PriorityCalcPeriod` too. It is not paid as dataflow records:
//! `classic` sends each gated association's classic inputs (its record and
//! the parameters, a user's with its interned name) as one `ClassicNode`
//! fact, so a usage event changes the `depth + 1` facts on its path, and
//! the queue evaluates the oracle's top-down walk over them in one pass in
//! tree order (`priority::classic`).
//!
//! # Ticket-based and level-based
//! Their own modules: `ticket` (active associations from the pending job
//! rows summed up the tree, `S` and tickets by top-down recurrences,
//! sibling sums per fair-share parent, the maximum over users by a unit-key
//! reduce over the distinct ticket values) and `level` (`fairshare_raw` by a
//! top-down recurrence over the direct edges, ranks by a unit-key reduce
//! over the distinct raw values).
//!
//! # Depth
//! Nothing here holds an (association, ancestor) pair for every
//! association: subtree sums (users below, pending jobs below) move amounts
//! up the edges (`stages::sums_up_the_tree`) and per-association values come
//! down from the parent's (`stages::down_the_tree`), the documented Fair
//! Tree rule's walk included; Slurm's rule sends placements only. No stage
//! holds an ancestor closure. The ticket-based tickets of every active
//! association are an output too: the sshare table shows them.

use differential_dataflow::{AsCollection, VecCollection};
use fairflow_model::{Algorithm, Config, FairTreeTies, Shares};
use timely::dataflow::operators::vec::Map as _;

use crate::priority::Fact;
use crate::types::{
    AssocId, ByKey, Diff, Epoch, FrameUsage, NodeId, SignedFrameUsage, TouchCounter,
};

mod classic;
mod fair_tree_documented;
mod fair_tree_slurm;
mod groups;
mod level;
mod records;
mod ticket;

/// The fair-share parameters the factor stages need (one record).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct FsParams {
    /// The configured algorithm.
    pub algorithm: Algorithm,
    /// `FairShareDampeningFactor` (classic).
    pub dampening_factor: u32,
    /// `PriorityLevels` (level-based).
    pub levels: u32,
    /// Fair Tree's tie rule in force (`Config::fair_tree_ties`).
    pub fair_tree_ties: FairTreeTies,
}

impl FsParams {
    /// The parameters of `config`.
    pub fn from_config(config: &Config) -> Self {
        FsParams {
            algorithm: config.algorithm(),
            dampening_factor: config.dampening_factor,
            levels: config.levels,
            fair_tree_ties: config.fair_tree_ties(),
        }
    }
}

/// What the factor stages know about one association.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct NodeRec {
    /// The fair-share parent (`None` for root).
    pub fs_parent: Option<NodeId>,
    /// `FairShare`.
    pub shares: Shares,
    /// Subtree usage, frame units.
    pub usage: FrameUsage,
    /// Is it a user association?
    pub user: bool,
    /// A user association's interned name (what job rows and the queue
    /// carry), so no stage joins the records with the names again.
    pub assoc: Option<AssocId>,
    /// User associations in its subtree (itself included).
    pub users_below: u64,
    /// As a fair-share parent: its fair-share children's raw shares, summed.
    pub child_level: u64,
    /// As a fair-share parent: the usage of its fair-share children that are
    /// not `FairShare=parent`, summed (depth-oblivious).
    pub child_usage: FrameUsage,
}

/// The collections the factor stages read (time [`Epoch`], diff [`Diff`]).
pub struct FactorInputs<'s> {
    /// `child -> parent`, arranged by child (the tree dataflow's).
    pub edges_by_child: ByKey<'s, NodeId, NodeId>,
    /// `(node, fair-share parent)`.
    pub fs_parent: VecCollection<'s, Epoch, (NodeId, NodeId), Diff>,
    /// The same, as the tree dataflow's arrangement by node.
    pub fs_parent_by_node: ByKey<'s, NodeId, NodeId>,
    /// `(node, shares)`, one per live association.
    pub shares: VecCollection<'s, Epoch, (NodeId, Shares), Diff>,
    /// The same, as the tree dataflow's arrangement by node.
    pub shares_by_node: ByKey<'s, NodeId, Shares>,
    /// `(node, subtree usage)`, absent when 0.
    pub subtree_usage: VecCollection<'s, Epoch, (NodeId, SignedFrameUsage), Diff>,
    /// `(fair-share parent, level shares)`.
    pub level_shares: VecCollection<'s, Epoch, (NodeId, i128), Diff>,
    /// User associations.
    pub users: VecCollection<'s, Epoch, NodeId, Diff>,
    /// `(user association, its interned name)`.
    pub user_names: VecCollection<'s, Epoch, (NodeId, AssocId), Diff>,
    /// The one [`FsParams`] record.
    pub params: VecCollection<'s, Epoch, FsParams, Diff>,
    /// The user association (interned name) of every pending (not held, not running) job, one
    /// record per job (ticket-based: which associations are active; the
    /// driver feeds it to the ticket family's dataflow only).
    pub pending_jobs: VecCollection<'s, Epoch, AssocId, Diff>,
}

/// What the factor stages produce.
pub struct FactorOutputs<'s> {
    /// Each user association's `Fairshare` priority fact, or under Fair
    /// Tree with Slurm's ties every association's `TreeSlot` fact (diff
    /// `isize`, the priority dataflow's).
    pub fairshare_facts: VecCollection<'s, Epoch, Fact, isize>,
    /// Ticket-based: `(association, tickets)` of the active associations
    /// (the others have 0); `None` in the other families.
    pub tickets: Option<VecCollection<'s, Epoch, (NodeId, u64), Diff>>,
}

/// Count every update leaving a stage.
fn counted<'s, D: differential_dataflow::Data>(
    collection: VecCollection<'s, Epoch, D, Diff>,
    touched: &TouchCounter,
) -> VecCollection<'s, Epoch, D, Diff> {
    let touched = touched.clone();
    collection.inspect(move |_| touched.add(1))
}

/// The stages one tree dataflow builds: the dataflow of each family holds
/// only its own algorithm's stages, and the driver feeds only the family of
/// the configuration in force (a switch moves the tree from one dataflow to
/// the other in one batch; `graph` and `engine` describe it), so the stages
/// of the algorithms not configured hold nothing and never step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    /// Fair Tree under the documented tie rule.
    FairTreeDocumented,
    /// Fair Tree under Slurm's code's tie rule (the default).
    FairTreeSlurm,
    /// Classic and depth-oblivious.
    Classic,
    /// Ticket-based.
    Ticket,
    /// Level-based.
    Level,
}

impl Family {
    /// Every family, in the order the tree dataflows are built.
    pub const ALL: [Family; 5] = [
        Family::FairTreeSlurm,
        Family::FairTreeDocumented,
        Family::Classic,
        Family::Ticket,
        Family::Level,
    ];

    /// The family of the parameters in force.
    pub fn of(params: &FsParams) -> Family {
        match params.algorithm {
            Algorithm::FairTree => match params.fair_tree_ties {
                FairTreeTies::Slurm => Family::FairTreeSlurm,
                FairTreeTies::Documented => Family::FairTreeDocumented,
            },
            Algorithm::Classic | Algorithm::DepthOblivious => Family::Classic,
            Algorithm::TicketBased => Family::Ticket,
            Algorithm::LevelBased => Family::Level,
        }
    }

    /// Its place in [`Family::ALL`].
    pub fn index(self) -> usize {
        Family::ALL
            .iter()
            .position(|&family| family == self)
            .expect("every family is listed")
    }

    fn fair_tree(self) -> bool {
        matches!(self, Family::FairTreeSlurm | Family::FairTreeDocumented)
    }
}

/// Build one family's factor stages: each user association's `Fairshare`
/// priority fact (or Fair Tree's `TreeSlot` facts), and the ticket-based
/// tickets.
pub fn build<'s>(
    inputs: FactorInputs<'s>,
    family: Family,
    touched: &TouchCounter,
) -> FactorOutputs<'s> {
    let records = records::assembled(&inputs, family, touched);
    let FactorInputs {
        edges_by_child,
        fs_parent_by_node,
        users,
        user_names,
        params,
        pending_jobs,
        ..
    } = inputs;
    let scope = edges_by_child.stream.scope();
    // The algorithms with parameters see every record with them.
    let gated = |records: VecCollection<'s, Epoch, (NodeId, NodeRec), Diff>| {
        records
            .map(|(node, record)| ((), (node, record)))
            .arrange_by_key()
            .join_core(
                params.map(|p| ((), p)).arrange_by_key(),
                |_unit, &(node, record), &params| Some((node, (record, params))),
            )
    };
    // Per-user factors (every family but Slurm's Fair Tree and classic),
    // named as the priority dataflow's facts.
    let named = |factors: VecCollection<'s, Epoch, (NodeId, u64), Diff>| {
        counted(factors, touched).join_core(
            user_names.clone().arrange_by_key(),
            |_node, &bits, &assoc| {
                Some(Fact::Fairshare {
                    assoc,
                    factor_bits: bits,
                })
            },
        )
    };
    let (facts, tickets) = match family {
        Family::FairTreeSlurm => (slurm_tree_facts(records, touched), None),
        Family::FairTreeDocumented => {
            let factors =
                fair_tree_documented::factors(scope, records, fs_parent_by_node, users, touched);
            (named(factors), None)
        }
        Family::Classic => (classic::facts(gated(records), touched), None),
        Family::Ticket => {
            // Pending jobs by user association.
            let pending = pending_jobs
                .map(|name| (name, ()))
                .arrange_by_key()
                .join_core(
                    user_names
                        .clone()
                        .map(|(node, name)| (name, node))
                        .arrange_by_key(),
                    |_name, &(), &node| Some(node),
                );
            let tickets = ticket::build(&edges_by_child, records, pending, touched);
            (named(tickets.factors), Some(tickets.tickets))
        }
        Family::Level => {
            let factors = level::build(&edges_by_child, gated(records), touched);
            (named(factors), None)
        }
    };
    FactorOutputs {
        fairshare_facts: facts
            .inner
            .map(|(fact, time, diff)| (fact, time, diff as isize))
            .as_collection(),
        tickets,
    }
}

/// Slurm's Fair Tree rule: the placements themselves go to the queue, which
/// keeps the sorted tree and derives ranks when it reads them; a user's
/// slot carries its interned name (from its record: no join with the names).
fn slurm_tree_facts<'s>(
    records: VecCollection<'s, Epoch, (NodeId, NodeRec), Diff>,
    touched: &TouchCounter,
) -> VecCollection<'s, Epoch, Fact, Diff> {
    counted(fair_tree_slurm::place(records), touched)
        .map(|(node, slot)| Fact::TreeSlot { node, slot })
}
