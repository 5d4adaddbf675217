//! Fair-share factors maintained in the dataflow, in the same logical time as
//! the usage and tree changes that move them, and turned into the priority
//! dataflow's `Fairshare` facts: no driver round trip, no tree walk per batch.
//! Every algorithm: Fair Tree, classic, depth-oblivious, ticket-based
//! (`ticket`) and level-based (`level`); every value is bit-identical to
//! the oracle's (`fairflow_oracle::fairshare`), whose definitions are
//! restated here only as far as the dataflow formulation needs.
//!
//! # Per-association records
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
//! the one [`FsParams`] record.
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
//! here (its merged groups make a user's block depend on ties above it).
//!
//! # Fair Tree, documented rule: groups, placements, path sums
//! The documented ranking is a depth-first walk of *groups*: a group's members are
//! sorted by exact level fair-share (`LevelFs`, descending; users first on
//! ties) into blocks of equal `LF`; a block's users are ranked, then the
//! fair-share children of the block's accounts form one merged child group.
//! - **Group keys.** A group is keyed by its *representative*: root for root's
//!   children; for the group below block `B`, the smallest account id in `B`.
//!   Which group an association is in depends on the blocks above it, so the
//!   keys are found by an `iterate` whose rounds go one level deeper (a fixed
//!   point after `depth` rounds on a load; afterwards only when a tie among
//!   accounts appears or disappears). Only accounts enter the loop (users
//!   never key a group); the placements are computed once, outside it.
//! - **Placements.** A `reduce` per group sorts its members and gives each a
//!   [`Placement`]: its block, the *weight* (users in the subtree, a user 1) of
//!   the blocks before its own (`prefix`), and the number of users in its
//!   block. A usage event re-sorts the groups on its path; a placement
//!   changes only where the order moved. A member's `LevelFs` needs its
//!   fair-share parent's usage and level shares: the group's input holds
//!   each member's own part and, once, each of its members' parents' part
//!   (a [`GroupItem`]), so a usage event changes one parent item and one
//!   member item per group on its path (the loop's groups likewise), not
//!   every member below the parents whose usage moved.
//! - **Ranks by path sums.** For a user `u` under fair-share ancestors
//!   `a_1 .. a_k`, with `(b_i, prefix_i, users_i)` their placements and
//!   `(b, prefix)` its own, the walk's position is
//!   `offset = Σ (prefix_i + users_i)` (where its group starts),
//!   `X = offset + prefix − [b = 0]·D`, where `D` (how far the group's first
//!   block is tied back to users ranked before it) is
//!   `D_0 = 0, D_i = users_i + [b_i = 0]·D_{i−1}`; its rank is `N − X` and its
//!   factor `rank / N` (`N`: user associations). This is exactly the oracle's
//!   counter: a block's users share the rank of its first user, and a group
//!   entered "tied" (its block had users, or was first in a group entered
//!   tied) gives its first block the last assigned rank. The sums run
//!   top-down (`stages::down_the_tree` over the fair-share parents): each
//!   ranked account's `(offset, D)` from its parent's, then each user's `X`
//!   from its parent's, so a placement change reaches the users below it
//!   (the users whose rank really moved) and a chain of depth `d` holds `d`
//!   states, not a path of `d` placements per user.
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

use differential_dataflow::operators::iterate::Iterate;
use differential_dataflow::operators::CountTotal;
use differential_dataflow::{AsCollection, VecCollection};
use fairflow_model::formula::{rank_factor, LevelFs};
use fairflow_model::{Algorithm, Config, FairTreeTies, Shares};
use timely::dataflow::operators::vec::Map as _;

use crate::priority::Fact as PFact;
use crate::stages::{down_the_tree, per_batch_routed, sums_up_the_tree};
use crate::types::{AssocId, ByKey, Diff, Epoch, NodeId, TouchCounter, ROOT};
use rustc_hash::FxHashMap;

mod classic;
mod fair_tree_slurm;
mod level;
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
    pub usage: u128,
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
    pub child_usage: u128,
}

/// One input of the per-association assembly.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
enum Part {
    FsParent(NodeId),
    Shares(Shares),
    Usage(i128),
    /// A user association, with its interned name.
    User(AssocId),
    UsersBelow(i128),
    ChildLevel(i128),
    ChildUsage(i128),
}

/// A ranked association as a member of its (possibly merged) group.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
struct Member {
    shares: Shares,
    level_shares: u64,
    usage: u128,
    parent_usage: u128,
    user: bool,
    /// A user association's interned name.
    assoc: Option<AssocId>,
    /// A user 1, an account the users in its subtree.
    weight: u64,
}

impl Member {
    fn level_fs(&self) -> LevelFs {
        if self.shares.is_parent() {
            // Only `FairShare=parent` users are ranked.
            LevelFs::Infinite
        } else {
            LevelFs::of(
                self.shares.raw(),
                self.level_shares,
                self.usage,
                self.parent_usage,
            )
        }
    }
}

/// Where a ranked association stands in its group.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
)]
pub struct Placement {
    /// Its block of equal `LF` (0 first).
    pub block: u32,
    /// The weight of the blocks before its own.
    pub prefix: u64,
    /// User associations in its block.
    pub users_in_block: u64,
    /// For an account: the key of the group below its block (the smallest
    /// account id in the block).
    pub rep: NodeId,
    /// Is it a user association?
    pub user: bool,
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
    pub subtree_usage: VecCollection<'s, Epoch, (NodeId, i128), Diff>,
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
    pub fairshare_facts: VecCollection<'s, Epoch, PFact, isize>,
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
    let FactorInputs {
        edges_by_child,
        fs_parent,
        fs_parent_by_node,
        shares,
        shares_by_node,
        subtree_usage,
        level_shares,
        users,
        user_names,
        params,
        pending_jobs,
    } = inputs;
    let scope = edges_by_child.stream.scope();

    // The parts of each association's record: its fair-share parent,
    // shares, subtree usage, whether it is a user, its fair-share children's
    // level shares; Fair Tree also weighs accounts by the users in their
    // subtree, depth-oblivious needs the usage of each node's non-`parent`
    // fs-children.
    let mut parts = fs_parent
        .clone()
        .map(|(node, parent)| (node, Part::FsParent(parent)))
        .concat(shares.map(|(node, shares)| (node, Part::Shares(shares))))
        .concat(
            subtree_usage
                .clone()
                .map(|(node, usage)| (node, Part::Usage(usage))),
        )
        .concat(
            user_names
                .clone()
                .map(|(node, assoc)| (node, Part::User(assoc))),
        )
        .concat(level_shares.map(|(node, level)| (node, Part::ChildLevel(level))));
    if family.fair_tree() {
        let users_below = sums_up_the_tree(&edges_by_child, users.clone());
        parts = parts.concat(users_below.map(|(node, count)| (node, Part::UsersBelow(count))));
    }
    if family == Family::Classic {
        let child_usage = fs_parent_by_node
            .clone()
            .join_core(shares_by_node, |&node, &parent, shares: &Shares| {
                (!shares.is_parent()).then_some((node, parent))
            })
            .arrange_by_key()
            .join_core(subtree_usage.arrange_by_key(), |_node, &parent, &usage| {
                Some((parent, usage))
            })
            .explode(|(parent, usage)| Some((parent, usage)))
            .count_total_core::<Diff>();
        parts = parts.concat(child_usage.map(|(node, usage)| (node, Part::ChildUsage(usage))));
    }
    let records = counted(assemble_records(parts), touched);
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
                Some(PFact::Fairshare {
                    assoc,
                    factor_bits: bits,
                })
            },
        )
    };
    let (facts, tickets) = match family {
        Family::FairTreeSlurm => (slurm_tree_facts(records, touched), None),
        Family::FairTreeDocumented => {
            let factors = documented_factors(scope, records, fs_parent_by_node, users, touched);
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
) -> VecCollection<'s, Epoch, PFact, Diff> {
    counted(fair_tree_slurm::place(records), touched)
        .map(|(node, slot)| PFact::TreeSlot { node, slot })
}

/// The documented Fair Tree rule's factors: the walk, top-down: each ranked
/// account's walk state from its fair-share parent's, then each user's
/// position from its parent's state (no walk over every ancestor per user),
/// and its rank factor.
fn documented_factors<'s>(
    scope: timely::dataflow::Scope<'s, Epoch>,
    records: VecCollection<'s, Epoch, (NodeId, NodeRec), Diff>,
    fs_parent_by_node: ByKey<'s, NodeId, NodeId>,
    users: VecCollection<'s, Epoch, NodeId, Diff>,
    touched: &TouchCounter,
) -> VecCollection<'s, Epoch, (NodeId, u64), Diff> {
    let root_state = records
        .clone()
        .flat_map(|(node, _)| (node == ROOT).then_some((node, WalkState::default())));
    let placements = counted(place(scope, records), touched);
    let placed = placements
        .arrange_by_key()
        .join_core(fs_parent_by_node, |&node, &placement, &parent| {
            Some((node, (parent, placement)))
        });
    let states = down_the_tree(
        placed.clone().filter(|(_, (_, placement))| !placement.user),
        root_state,
        |state: &WalkState, placement: &Placement| Some(state.enter(placement)),
    );
    let positions = counted(
        placed
            .filter(|(_, (_, placement))| placement.user)
            .map(|(user, (parent, placement))| (parent, (user, placement)))
            .arrange_by_key()
            .join_core(
                states.arrange_by_key(),
                |_parent, &(user, placement), state| Some((user, state.position(&placement))),
            ),
        touched,
    );
    let user_count = users.map(|_| ()).count_total_core::<Diff>();
    positions
        .map(|(user, position)| ((), (user, position)))
        .arrange_by_key()
        .join_core(
            user_count.arrange_by_key(),
            |_unit, &(user, position), &count| {
                let n = u64::try_from(count).ok()?;
                Some((user, rank_factor(n.saturating_sub(position), n).to_bits()))
            },
        )
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
    let non_negative = |value: i128| u128::try_from(value).unwrap_or(0);
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

/// A ranked association's own part of a [`Member`] (its fair-share
/// parent's part arrives as a [`GroupItem::Parent`]).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
struct Own {
    shares: Shares,
    usage: u128,
    user: bool,
    /// A user association's interned name.
    assoc: Option<AssocId>,
    /// A user 1, an account the users in its subtree.
    weight: u64,
}

impl Member {
    /// A member from its own part and its parent's `(usage, level shares)`.
    fn of(own: Own, (parent_usage, level_shares): (u128, u64)) -> Member {
        Member {
            shares: own.shares,
            level_shares,
            usage: own.usage,
            parent_usage,
            user: own.user,
            assoc: own.assoc,
            weight: own.weight,
        }
    }
}

/// One value of a Fair Tree group's reduce. A member's `LevelFs` needs its
/// fair-share parent's usage and level shares; they travel once per parent
/// (not once per member), so a usage event changes one item per parent on
/// its path instead of every member below those parents.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
enum GroupItem {
    /// A ranked association of the group, with its fair-share parent.
    Member {
        node: NodeId,
        parent: NodeId,
        own: Own,
    },
    /// A fair-share parent of members of the group: its subtree usage and
    /// its fair-share children's level shares.
    Parent {
        parent: NodeId,
        usage: u128,
        child_level: u64,
    },
}

impl GroupItem {
    /// A parent's part `(parent, subtree usage, children's level shares)`
    /// if this is a parent item present `count` times (positive).
    fn present_parent(&self, count: Diff) -> Option<(NodeId, u128, u64)> {
        match *self {
            GroupItem::Parent {
                parent,
                usage,
                child_level,
            } if count > 0 => Some((parent, usage, child_level)),
            _ => None,
        }
    }
}

/// The members of one group, with their parents' parts joined in: every
/// `(node, Member)` whose parent's item is present (positive counts only).
fn group_members(items: &[(&GroupItem, Diff)]) -> Vec<(NodeId, Member)> {
    let parents: std::collections::BTreeMap<NodeId, (u128, u64)> = items
        .iter()
        .filter_map(|(item, count)| item.present_parent(*count))
        .map(|(parent, usage, child_level)| (parent, (usage, child_level)))
        .collect();
    items
        .iter()
        .filter(|(_, count)| *count > 0)
        .filter_map(|(item, _)| match **item {
            GroupItem::Member { node, parent, own } => {
                Some((node, Member::of(own, *parents.get(&parent)?)))
            }
            GroupItem::Parent { .. } => None,
        })
        .collect()
}

/// The items of every group: each member (a fair-share child of an
/// association whose group-below key is known) and each such parent's part,
/// keyed by the group. `$group_of` is `(account, key of the group below its
/// block)`, root's `(root, root)`, arranged; `$children` the ranked
/// `(parent, (node, Own))` and `$parent_parts` the `(account, (usage, level
/// shares))`, arranged. A macro because the loop's arrangements (entered
/// traces) and the outer ones have different types.
macro_rules! group_items {
    ($group_of:expr, $children:expr, $parent_parts:expr) => {{
        let group_of = $group_of;
        let members = group_of
            .clone()
            .join_core($children, |&parent, &group, &(node, own)| {
                Some((group, GroupItem::Member { node, parent, own }))
            });
        let parents =
            group_of.join_core($parent_parts, |&parent, &group, &(usage, child_level)| {
                Some((
                    group,
                    GroupItem::Parent {
                        parent,
                        usage,
                        child_level,
                    },
                ))
            });
        members.concat(parents)
    }};
}

/// The Fair Tree placements of every ranked association (see the module
/// documentation): the groups' keys by an `iterate` over accounts, then a
/// `reduce` per group.
fn place<'s>(
    scope: timely::dataflow::Scope<'s, Epoch>,
    records: VecCollection<'s, Epoch, (NodeId, NodeRec), Diff>,
) -> VecCollection<'s, Epoch, (NodeId, Placement), Diff> {
    // Ranked: every association but root and `FairShare=parent` accounts,
    // by fair-share parent.
    let ranked = records.clone().flat_map(|(node, record)| {
        let is_ranked = node != ROOT && (record.user || !record.shares.is_parent());
        let own = Own {
            shares: record.shares,
            usage: record.usage,
            user: record.user,
            assoc: record.assoc,
            weight: if record.user { 1 } else { record.users_below },
        };
        record
            .fs_parent
            .filter(|_| is_ranked)
            .map(|parent| (parent, (node, own)))
    });
    // Every account (root included) as a possible fair-share parent.
    let parent_parts = records
        .clone()
        .flat_map(|(node, record)| {
            (!record.user).then_some((node, (record.usage, record.child_level)))
        })
        .arrange_by_key();
    let account_children = ranked
        .clone()
        .filter(|(_, (_, own))| !own.user)
        .arrange_by_key();
    let children = ranked.arrange_by_key();
    let root = records.flat_map(|(node, _)| (node == ROOT).then_some((node, node)));
    // Only the accounts' group keys are found by iteration (users never key a
    // group, and a block's tied accounts do not depend on its users), so the
    // loop's reduce sees only account members and its output (the
    // representatives) changes only when a tie among accounts does.
    let root_for_loop = root.clone();
    let parent_parts_for_loop = parent_parts.clone();
    let representatives =
        Iterate::<Epoch, (NodeId, NodeId), Diff>::iterate(scope, |subgraph, representatives| {
            let children = account_children.enter(subgraph);
            let parent_parts = parent_parts_for_loop.enter(subgraph);
            let root = root_for_loop.enter(subgraph);
            let group_of = representatives.concat(root).arrange_by_key();
            group_items!(group_of, children, parent_parts)
                .reduce(|_group, items, output| represent_group(items, output))
                .map(|(_group, represented)| represented)
        });
    let group_of = representatives.concat(root).arrange_by_key();
    group_items!(group_of, children, parent_parts)
        .reduce(|_group, items, output| place_group(items, output))
        .map(|(_group, placed)| placed)
}

/// The accounts of one group with their block's representative (the
/// smallest account id among the accounts of equal `LF`).
fn represent_group(items: &[(&GroupItem, Diff)], output: &mut Vec<((NodeId, NodeId), Diff)>) {
    let mut sorted: Vec<(LevelFs, NodeId)> = group_members(items)
        .iter()
        .map(|(node, member)| (member.level_fs(), *node))
        .collect();
    sorted.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let mut start = 0;
    while start < sorted.len() {
        let end = start
            + sorted[start..]
                .iter()
                .take_while(|(lf, _)| *lf == sorted[start].0)
                .count();
        let representative = sorted[start].1;
        for &(_, node) in &sorted[start..end] {
            output.push(((node, representative), 1));
        }
        start = end;
    }
}

/// Sort one group and place its members.
fn place_group(items: &[(&GroupItem, Diff)], output: &mut Vec<((NodeId, Placement), Diff)>) {
    let mut sorted: Vec<(LevelFs, NodeId, Member)> = group_members(items)
        .into_iter()
        .map(|(node, member)| (member.level_fs(), node, member))
        .collect();
    // LF descending, users first on equal LF, then id (the order inside a
    // block changes no rank).
    sorted.sort_by(|a, b| {
        b.0.cmp(&a.0)
            .then_with(|| b.2.user.cmp(&a.2.user))
            .then_with(|| a.1.cmp(&b.1))
    });
    let mut prefix = 0u64;
    let mut start = 0;
    let mut block = 0u32;
    while start < sorted.len() {
        let end = start
            + sorted[start..]
                .iter()
                .take_while(|(lf, _, _)| *lf == sorted[start].0)
                .count();
        let slice = &sorted[start..end];
        let users_in_block = slice.iter().filter(|(_, _, m)| m.user).count() as u64;
        let weight: u64 = slice.iter().map(|(_, _, m)| m.weight).sum();
        let rep = slice
            .iter()
            .filter(|(_, _, m)| !m.user)
            .map(|(_, node, _)| *node)
            .min()
            .unwrap_or(ROOT);
        for &(_, node, member) in slice {
            let placement = Placement {
                block,
                prefix,
                users_in_block,
                rep,
                user: member.user,
            };
            output.push(((node, placement), 1));
        }
        prefix += weight;
        block += 1;
        start = end;
    }
}

/// The documented rule's walk after an account (see the module
/// documentation): `offset`, where the group below its block starts, and
/// `tied`, how far that group's first block is tied back (`D`).
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
)]
struct WalkState {
    offset: u64,
    tied: u64,
}

impl WalkState {
    /// The state below an account placed `placement` in the group this
    /// state leads into.
    fn enter(&self, placement: &Placement) -> WalkState {
        WalkState {
            offset: self.offset + placement.prefix + placement.users_in_block,
            tied: placement.users_in_block + if placement.block == 0 { self.tied } else { 0 },
        }
    }

    /// The position `X` (rank `N − X`) of a user placed `placement` in the
    /// group this state leads into.
    fn position(&self, placement: &Placement) -> u64 {
        let back = if placement.block == 0 { self.tied } else { 0 };
        (self.offset + placement.prefix).saturating_sub(back)
    }
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
