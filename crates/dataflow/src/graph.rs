//! The dataflow every timely worker builds (identically, in the same
//! order): the tree half (subtree usage, fair-share parents, level
//! shares), the fair-share factors (`factors`) and the
//! priority half (`priority`), with their inputs and the probe. The loop
//! that drives it is `worker`.
//!
//! All collections have time `u64` (one logical time per batch) and diff
//! `i128`, so that usage can travel in the diff and be summed exactly; this
//! also keeps the number of distinct `(K, V, T, R)` combinations small.

use differential_dataflow::input::{Input, InputSession};
use differential_dataflow::operators::arrange::arrangement::arrange_core;
use differential_dataflow::operators::arrange::TraceAgent;
use differential_dataflow::trace::implementations::{ValBatcher, ValSpine};
use differential_dataflow::AsCollection;
use fairflow_model::Shares;
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::probe::Handle as ProbeHandle;
use timely::dataflow::operators::vec::Map as _;
use timely::dataflow::operators::Probe;
use timely::worker::Worker;

use crate::factors::{FactorInputs, FsParams};
use crate::job_feed::JobDeltas;
use crate::names::JobNames;
use crate::priority::{
    build as build_priority, Fact as PFact, JobRow, Phase, PriorityInputs, PriorityReader,
    TouchCounter,
};
use crate::stages::{group_sums, nearest_proper_ancestor, sums_up_the_tree};
use crate::tree_feed::Deltas;
use crate::types::{AssocId, Diff, Epoch, NodeId};

/// One derived fact about an association, as read from the result arrangement.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum Fact {
    /// The subtree's usage (the node's own plus every descendant's), frame units.
    SubtreeUsage(i128),
    /// The fair-share parent: the nearest proper ancestor whose shares are not `parent`.
    FsParent(NodeId),
    /// As a fair-share parent: the sum of its fair-share children's raw shares.
    LevelShares(i128),
    /// Ticket-based: an active association's tickets (absent: 0).
    Tickets(u64),
}

pub(crate) type FactTrace = TraceAgent<ValSpine<NodeId, Fact, Epoch, Diff>>;

pub(crate) struct Inputs {
    edges: InputSession<Epoch, (NodeId, NodeId), Diff>,
    shares: InputSession<Epoch, (NodeId, Shares), Diff>,
    usage: InputSession<Epoch, NodeId, Diff>,
    users: InputSession<Epoch, NodeId, Diff>,
    user_names: InputSession<Epoch, (NodeId, AssocId), Diff>,
    fs_params: InputSession<Epoch, FsParams, Diff>,
    jobs: InputSession<Epoch, JobRow, isize>,
    priority_facts: InputSession<Epoch, PFact, isize>,
}

impl Inputs {
    /// Insert one batch's changes at `epoch` (not before the inputs' time).
    pub(crate) fn feed(&mut self, epoch: Epoch, deltas: Deltas, jobs: JobDeltas) {
        debug_assert!(epoch >= *self.usage.time());
        self.advance_and_flush(epoch);
        for (record, diff) in deltas.edges {
            self.edges.update(record, diff);
        }
        for (record, diff) in deltas.shares {
            self.shares.update(record, diff);
        }
        for (record, diff) in deltas.usage {
            self.usage.update(record, diff);
        }
        for (record, diff) in deltas.users {
            self.users.update(record, diff);
        }
        for (record, diff) in deltas.user_names {
            self.user_names.update(record, diff);
        }
        for (record, diff) in deltas.fs_params {
            self.fs_params.update(record, diff);
        }
        for (record, diff) in jobs.jobs {
            self.jobs.update(record, diff);
        }
        for (record, diff) in jobs.facts {
            self.priority_facts.update(record, diff);
        }
    }

    /// Advance every input to `epoch` and flush.
    pub(crate) fn advance_and_flush(&mut self, epoch: Epoch) {
        self.edges.advance_to(epoch);
        self.shares.advance_to(epoch);
        self.usage.advance_to(epoch);
        self.users.advance_to(epoch);
        self.user_names.advance_to(epoch);
        self.fs_params.advance_to(epoch);
        self.jobs.advance_to(epoch);
        self.priority_facts.advance_to(epoch);
        self.edges.flush();
        self.shares.flush();
        self.usage.flush();
        self.users.flush();
        self.user_names.flush();
        self.fs_params.flush();
        self.jobs.flush();
        self.priority_facts.flush();
    }
}

/// Build the dataflow on this worker. See the crate documentation for the
/// collections and what each update touches. `touched` counts the records
/// the stages emit (the tree part's facts and every priority stage).
pub(crate) fn build(
    worker: &mut Worker,
    touched: &TouchCounter,
    names: JobNames,
) -> (Inputs, FactTrace, PriorityReader, ProbeHandle<Epoch>) {
    worker.dataflow::<Epoch, _, _>(|scope| {
        let (edges_input, edges) = scope.new_collection::<(NodeId, NodeId), Diff>();
        let (shares_input, shares) = scope.new_collection::<(NodeId, Shares), Diff>();
        let (usage_input, usage) = scope.new_collection::<NodeId, Diff>();
        let (users_input, users) = scope.new_collection::<NodeId, Diff>();
        let (user_names_input, user_names) = scope.new_collection::<(NodeId, AssocId), Diff>();
        let (fs_params_input, fs_params) = scope.new_collection::<FsParams, Diff>();
        let (jobs_input, jobs) = scope.new_collection::<JobRow, isize>();
        let (priority_facts_input, priority_facts) = scope.new_collection::<PFact, isize>();
        let shares_for_factors = shares.clone();

        let edges_by_child = edges.arrange_by_key();
        let shares_by_node = shares.arrange_by_key();

        // Subtree usage: every own usage (in the diff) moved up the edges
        // and summed per node (no ancestor pairs).
        let subtree_usage_sums = sums_up_the_tree(&edges_by_child, usage);
        let subtree_usage = subtree_usage_sums
            .clone()
            .map(|(node, usage)| (node, Fact::SubtreeUsage(usage)));

        // Fair-share parent: the nearest proper ancestor not `parent`; its
        // output arrangement (by node) is joined with the shares twice.
        let fs_parent_by_node =
            nearest_proper_ancestor(&edges_by_child, &shares_by_node, |shares| {
                !shares.is_parent()
            });
        let fs_parent = fs_parent_by_node
            .clone()
            .as_collection(|&node, &parent| (node, parent));

        // Level shares: the raw shares of each fair-share sibling group, summed.
        let level_share_sums = group_sums(fs_parent_by_node.clone().join_core(
            shares_by_node.clone(),
            |_node, &fs_parent, shares: &Shares| Some((fs_parent, Diff::from(shares.raw()))),
        ));
        let level_shares = level_share_sums
            .clone()
            .map(|(node, level)| (node, Fact::LevelShares(level)));

        // One record per pending job, by `(account, user)` (ticket-based).
        let pending_jobs = jobs
            .clone()
            .filter(|row| row.phase == Phase::Pending)
            .map(|row| row.assoc)
            .inner
            .map(|(name, time, diff)| (name, time, diff as Diff))
            .as_collection();
        let factors = crate::factors::build(
            FactorInputs {
                edges_by_child,
                fs_parent: fs_parent.clone(),
                fs_parent_by_node,
                shares: shares_for_factors,
                shares_by_node,
                subtree_usage: subtree_usage_sums.clone(),
                level_shares: level_share_sums,
                users,
                user_names,
                params: fs_params,
                pending_jobs,
            },
            touched,
        );
        let facts = subtree_usage
            .concat(fs_parent.map(|(node, parent)| (node, Fact::FsParent(parent))))
            .concat(level_shares)
            .concat(
                factors
                    .tickets
                    .map(|(node, tickets)| (node, Fact::Tickets(tickets))),
            );
        let facts_touched = touched.clone();
        let facts = facts.inspect(move |_| facts_touched.add(1));
        // Pinned to worker 0, where the driver's reads are served.
        let pinned =
            arrange_core::<_, _, ValBatcher<NodeId, Fact, Epoch, Diff>, ValSpine<_, _, _, _>>(
                facts.inner,
                Exchange::new(|_: &((NodeId, Fact), Epoch, Diff)| 0u64),
                "FactsOnWorker0",
                ValBatcher::new,
            );
        let (probe, _) = pinned.stream.clone().probe();

        // Job priority (crate::priority), probed with the same handle; the
        // fair-share factors arrive as facts in the same logical time.
        let priority = build_priority(
            PriorityInputs {
                jobs,
                facts: priority_facts.concat(factors.fairshare_facts),
            },
            touched,
        );
        for stream in priority.captured {
            stream.probe_with(&probe);
        }
        let reader = PriorityReader::new(names, priority.capture, touched.clone());
        let inputs = Inputs {
            edges: edges_input,
            shares: shares_input,
            usage: usage_input,
            users: users_input,
            user_names: user_names_input,
            fs_params: fs_params_input,
            jobs: jobs_input,
            priority_facts: priority_facts_input,
        };
        (inputs, pinned.trace, reader, probe)
    })
}
