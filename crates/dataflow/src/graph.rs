//! The dataflows every timely worker builds (identically, in the same
//! order): the two priority dataflows (`priority`: the rows dataflow, which
//! routes job rows to their shards, and the context dataflow, fed facts and
//! the combinations jobs name), and one tree dataflow per
//! family of fair-share algorithms (`factors::Family`): the tree half
//! (subtree usage, fair-share parents, level shares) and that family's
//! factors (`factors`), each with its own inputs and probe. Only the
//! configured family's tree dataflow is fed (the driver moves the tree from
//! one to another when the configuration switches family, in one batch), and
//! a batch steps only the dataflows it feeds: timely's progress tracking
//! and operator scheduling, which cost per operator at every logical time
//! whatever the batch holds, run over a graph a fraction of the size of one
//! holding every algorithm. The loop that drives them is `worker`.
//!
//! All collections have time `u64` (one logical time per batch) and diff
//! `i128`, so that usage can travel in the diff and be summed exactly; this
//! also keeps the number of distinct `(K, V, T, R)` combinations small.

use std::cell::RefCell;
use std::rc::Rc;

use differential_dataflow::input::{Input, InputSession};
use fairflow_model::Shares;
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::probe::Handle as ProbeHandle;
use timely::dataflow::operators::vec::Input as _;
use timely::dataflow::operators::vec::Map as _;
use timely::dataflow::operators::Probe;
use timely::dataflow::InputHandleVec;
use timely::worker::Worker;

use crate::factors::{FactorInputs, Family, FsParams};
use crate::job_feed::JobDeltas;
use crate::names::JobNames;
use crate::priority::queue::Capture;
use crate::priority::{
    build as build_priority, capture_on_every_worker, capture_on_worker_0, capture_rows, shard_key,
    Combo, Fact, JobRow, PriorityInputs, PriorityReader, Sharding, TouchCounter,
};
use crate::stages::{group_sums, nearest_proper_ancestor, sums_up_the_tree};
use crate::tree_feed::Deltas;
use crate::types::{
    grow, AssocId, Diff, Epoch, FrameUsage, JobId, NameId, NodeId, SignedFrameUsage,
};

/// One derived fact about an association, as read from the facts store on
/// worker 0 ([`FactStore`]).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum NodeFact {
    /// The subtree's usage (the node's own plus every descendant's), frame units.
    SubtreeUsage(SignedFrameUsage),
    /// The fair-share parent: the nearest proper ancestor whose shares are not `parent`.
    FsParent(NodeId),
    /// As a fair-share parent: the sum of its fair-share children's raw shares.
    LevelShares(i128),
    /// Ticket-based: an active association's tickets (absent: 0).
    Tickets(u64),
}

/// The sshare facts of one tree dataflow as worker 0 holds them: each
/// present `(node, fact)` with its count, updated by a capture as the
/// stages emit them (a usage event: the `depth + 1` subtree sums on its
/// path), read only after the probe passed a batch. Dense by node (ids are
/// interned densely), each node's few facts in a short list: an update is
/// an index and a scan of a handful, with no batcher, no spine to merge and
/// compact at every batch, and no hashing; a read (an sshare table, rare)
/// writes each listed node's facts at its index in the list
/// ([`FactStore::read_listed`]).
#[derive(Clone, Default)]
pub(crate) struct FactStore(Rc<RefCell<Vec<NodeFacts>>>);

/// One node's facts in a [`FactStore`], each with its count.
type NodeFacts = Vec<(NodeFact, isize)>;

impl FactStore {
    /// Apply captured updates.
    fn absorb(&self, updates: &mut Vec<((NodeId, NodeFact), Epoch, isize)>) {
        let mut facts = self.0.borrow_mut();
        for ((node, fact), _time, diff) in updates.drain(..) {
            if diff == 0 {
                continue;
            }
            let held = grow(&mut facts, node as usize);
            match held.iter().position(|(present, _)| *present == fact) {
                Some(at) => {
                    held[at].1 += diff;
                    if held[at].1 == 0 {
                        held.swap_remove(at);
                    }
                }
                None => held.push((fact, diff)),
            }
        }
    }

    /// The present facts of `nodes`, by their index in it: one pass over
    /// the list (split over rayon's pool for a whole tree's: each node's
    /// facts are a pointer away, so the read waits on memory, not on
    /// arithmetic), each node's few facts written where a reader looks for
    /// them (no list of pairs to sort and scan again).
    pub(crate) fn read_listed(&self, nodes: &[NodeId]) -> ListedFacts {
        let facts = self.0.borrow();
        let facts: &[NodeFacts] = &facts;
        let rows = crate::fairshare::build_rows(nodes.len(), |at| {
            let mut listed = ListedFact::default();
            for &(fact, count) in facts.get(nodes[at] as usize).into_iter().flatten() {
                if count <= 0 {
                    continue;
                }
                debug_assert!(count == 1, "a fact is present at most once");
                match fact {
                    NodeFact::SubtreeUsage(usage) => listed.subtree_usage = usage,
                    NodeFact::FsParent(parent) => listed.fs_parent = Some(parent),
                    NodeFact::LevelShares(level) => listed.level_shares = level,
                    NodeFact::Tickets(count) => listed.tickets = count,
                }
            }
            listed
        });
        ListedFacts(rows)
    }
}

/// The facts of a list of nodes ([`FactStore::read_listed`]), by each
/// node's index in the list.
#[derive(Debug, Default)]
pub struct ListedFacts(pub Vec<ListedFact>);

/// One listed node's facts; a fact it does not have reads as 0 (no usage,
/// no level shares, no tickets) or `None` (no fair-share parent).
#[derive(Debug, Default, Clone, Copy)]
pub struct ListedFact {
    /// [`NodeFact::SubtreeUsage`].
    pub subtree_usage: SignedFrameUsage,
    /// [`NodeFact::FsParent`].
    pub fs_parent: Option<NodeId>,
    /// [`NodeFact::LevelShares`].
    pub level_shares: i128,
    /// [`NodeFact::Tickets`].
    pub tickets: u64,
}

impl ListedFact {
    /// The subtree's usage: a present subtree sum is never negative.
    pub fn usage(&self) -> FrameUsage {
        FrameUsage::try_from(self.subtree_usage).expect("usage is non-negative")
    }
}

/// The inputs of one family's tree dataflow.
pub(crate) struct TreeInputs {
    edges: InputSession<Epoch, (NodeId, NodeId), Diff>,
    shares: InputSession<Epoch, (NodeId, Shares), Diff>,
    usage: InputSession<Epoch, NodeId, Diff>,
    users: InputSession<Epoch, NodeId, Diff>,
    user_names: InputSession<Epoch, (NodeId, AssocId), Diff>,
    fs_params: InputSession<Epoch, FsParams, Diff>,
    pending_jobs: InputSession<Epoch, AssocId, Diff>,
}

impl TreeInputs {
    /// Insert one batch's changes at `epoch` (not before the inputs' time),
    /// then close `epoch`.
    pub(crate) fn feed(&mut self, epoch: Epoch, deltas: Deltas) {
        debug_assert!(epoch >= *self.usage.time());
        self.advance_and_flush(epoch);
        update_all(&mut self.edges, deltas.edges);
        update_all(&mut self.shares, deltas.shares);
        update_all(&mut self.usage, deltas.usage);
        update_all(&mut self.users, deltas.users);
        update_all(&mut self.user_names, deltas.user_names);
        update_all(&mut self.fs_params, deltas.fs_params);
        update_all(&mut self.pending_jobs, deltas.pending_jobs);
        self.advance_and_flush(epoch + 1);
    }

    /// Advance every input to `epoch` and flush.
    pub(crate) fn advance_and_flush(&mut self, epoch: Epoch) {
        self.edges.advance_to(epoch);
        self.shares.advance_to(epoch);
        self.usage.advance_to(epoch);
        self.users.advance_to(epoch);
        self.user_names.advance_to(epoch);
        self.fs_params.advance_to(epoch);
        self.pending_jobs.advance_to(epoch);
        self.edges.flush();
        self.shares.flush();
        self.usage.flush();
        self.users.flush();
        self.user_names.flush();
        self.fs_params.flush();
        self.pending_jobs.flush();
    }
}

/// One family's tree dataflow (see [`build`]).
pub(crate) struct TreeDataflow {
    /// Its inputs.
    pub(crate) inputs: TreeInputs,
    /// The sshare facts, on worker 0.
    pub(crate) facts: FactStore,
    /// Passes a time once the facts and the captured factors reflect it.
    pub(crate) probe: ProbeHandle<Epoch>,
}

/// The inputs of the two priority dataflows: the rows dataflow (job rows,
/// and the names of inserted jobs) and the context dataflow (facts, the
/// combinations and partition pairs jobs name).
pub(crate) struct JobInputs {
    jobs: InputSession<Epoch, JobRow, isize>,
    /// With several processes: the names of inserted jobs, routed like
    /// their rows (`(shard key, job, name)`), for the process whose
    /// shard holds them (its queue breaks ties by name), and the table
    /// they are looked up in.
    names: Option<(NameInput, JobNames)>,
    priority_facts: InputSession<Epoch, Fact, isize>,
    combos: InputSession<Epoch, Combo, isize>,
    partition_refs: InputSession<Epoch, (NameId, u8), isize>,
}

/// The input of `(shard key, job, name)` for the names of inserted jobs.
type NameInput = InputHandleVec<Epoch, (u64, JobId, String)>;

/// Which of the two priority dataflows a batch fed.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Fed {
    /// The rows dataflow.
    pub(crate) rows: bool,
    /// The context dataflow.
    pub(crate) contexts: bool,
}

impl JobInputs {
    /// Insert one batch's changes at `epoch` (not before the inputs' time),
    /// then close `epoch` in the dataflows the batch feeds; a dataflow
    /// without changes in it does not move (its operators do not step).
    pub(crate) fn feed(&mut self, epoch: Epoch, jobs: JobDeltas) -> Fed {
        let fed = Fed {
            rows: !jobs.jobs.is_empty(),
            contexts: !(jobs.facts.is_empty()
                && jobs.combos.is_empty()
                && jobs.partition_refs.is_empty()),
        };
        if fed.rows {
            debug_assert!(epoch >= *self.jobs.time());
            self.advance_rows(epoch);
            if let Some((input, table)) = &mut self.names {
                for (row, _) in jobs.jobs.iter().filter(|(_, diff)| *diff > 0) {
                    if let Some(name) = table.get(row.job) {
                        input.send((shard_key(row), row.job, name.to_string()));
                    }
                }
            }
            update_all(&mut self.jobs, jobs.jobs);
            self.advance_rows(epoch + 1);
        }
        if fed.contexts {
            debug_assert!(epoch >= *self.priority_facts.time());
            self.advance_contexts(epoch);
            update_all(&mut self.priority_facts, jobs.facts);
            update_all(&mut self.combos, jobs.combos);
            update_all(&mut self.partition_refs, jobs.partition_refs);
            self.advance_contexts(epoch + 1);
        }
        fed
    }

    /// Advance every input to `epoch` and flush.
    pub(crate) fn advance_and_flush(&mut self, epoch: Epoch) {
        self.advance_rows(epoch);
        self.advance_contexts(epoch);
    }

    fn advance_rows(&mut self, epoch: Epoch) {
        self.jobs.advance_to(epoch);
        self.jobs.flush();
        if let Some((input, _)) = &mut self.names {
            input.advance_to(epoch);
        }
    }

    fn advance_contexts(&mut self, epoch: Epoch) {
        self.priority_facts.advance_to(epoch);
        self.combos.advance_to(epoch);
        self.partition_refs.advance_to(epoch);
        self.priority_facts.flush();
        self.combos.flush();
        self.partition_refs.flush();
    }
}

/// Every dataflow of one worker: the two priority dataflows and one tree
/// dataflow per [`Family`], each with its own inputs and probe, so that a
/// batch steps only the dataflows it feeds (a usage event the configured
/// family's tree, a job event the rows dataflow, and the context dataflow
/// only when a fact changes or a job names a combination no other job
/// names) and the families not configured never step.
pub(crate) struct Dataflows {
    /// By [`Family::index`].
    pub(crate) trees: Vec<TreeDataflow>,
    /// The priority dataflows' inputs.
    pub(crate) jobs: JobInputs,
    /// Passes a time once the rows dataflow's captured updates reflect it.
    pub(crate) rows_probe: ProbeHandle<Epoch>,
    /// Passes a time once the context dataflow's captured updates reflect it.
    pub(crate) contexts_probe: ProbeHandle<Epoch>,
    /// The reader of everything captured on this worker (worker 0's is the one read).
    pub(crate) reader: PriorityReader,
}

impl Dataflows {
    /// Whether the priority dataflows `fed` have not yet passed `epoch`.
    pub(crate) fn priority_behind(&self, fed: Fed, epoch: Epoch) -> bool {
        (fed.rows && self.rows_probe.less_than(&(epoch + 1)))
            || (fed.contexts && self.contexts_probe.less_than(&(epoch + 1)))
    }
}

/// Send every `(record, diff)` of `updates` into `input` (at its time).
pub(crate) fn update_all<D, R>(input: &mut InputSession<Epoch, D, R>, updates: Vec<(D, R)>)
where
    D: differential_dataflow::Data,
    R: differential_dataflow::difference::Semigroup + 'static,
{
    for (record, diff) in updates {
        input.update(record, diff);
    }
}

/// The first time either priority dataflow may still capture updates at,
/// by their probes (`None`: both finished).
pub(crate) fn priority_upper(
    rows_probe: &ProbeHandle<Epoch>,
    contexts_probe: &ProbeHandle<Epoch>,
) -> Option<Epoch> {
    let rows = rows_probe.with_frontier(|f| f.first().copied());
    let contexts = contexts_probe.with_frontier(|f| f.first().copied());
    match (rows, contexts) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Build every dataflow on this worker (every worker builds the same, in the
/// same order). `touched` counts the records the stages emit (the tree
/// part's facts and every priority stage). With `share_names` (several
/// processes), the names of inserted jobs travel to the process whose shard
/// holds them, into its `names`.
pub(crate) fn build(
    worker: &mut Worker,
    touched: &TouchCounter,
    names: JobNames,
    share_names: bool,
) -> Dataflows {
    let capture: Capture = Capture::default();
    let (jobs_input, names_input, rows_probe) = worker.dataflow::<Epoch, _, _>(|scope| {
        let (jobs_input, jobs) = scope.new_collection::<JobRow, isize>();
        let probe = ProbeHandle::new();
        capture_rows(jobs, &capture, Sharding::ByShardKey).probe_with(&probe);
        let names = share_names.then(|| {
            let (input, stream) = scope.new_input::<(u64, JobId, String)>();
            let table = names.clone();
            stream
                .unary::<CapacityContainerBuilder<Vec<()>>, _, _, _>(
                    Exchange::new(|(key, _, _): &(u64, JobId, String)| *key),
                    "JobNamesOnShards",
                    |_capability, _info| {
                        move |input, _output| {
                            input.for_each(|_time, data| {
                                for (_, job, name) in data.drain(..) {
                                    table.set(job, Some(name.into()));
                                }
                            })
                        }
                    },
                )
                .probe_with(&probe);
            (input, names.clone())
        });
        (jobs_input, names, probe)
    });
    let (contexts_inputs, contexts_probe) = worker.dataflow::<Epoch, _, _>(|scope| {
        let (priority_facts_input, facts) = scope.new_collection::<Fact, isize>();
        let (combos_input, combos) = scope.new_collection::<Combo, isize>();
        let (partition_refs_input, partition_refs) = scope.new_collection::<(NameId, u8), isize>();
        let priority = build_priority(
            PriorityInputs {
                facts,
                combos,
                partition_refs,
            },
            &capture,
            touched,
        );
        let probe = ProbeHandle::new();
        for stream in priority.captured {
            stream.probe_with(&probe);
        }
        (
            (priority_facts_input, combos_input, partition_refs_input),
            probe,
        )
    });
    let (priority_facts, combos, partition_refs) = contexts_inputs;
    let jobs = JobInputs {
        jobs: jobs_input,
        names: names_input,
        priority_facts,
        combos,
        partition_refs,
    };
    let trees = Family::ALL
        .into_iter()
        .map(|family| build_tree(worker, family, touched, &capture))
        .collect();
    Dataflows {
        trees,
        jobs,
        rows_probe,
        contexts_probe,
        reader: PriorityReader::new(names, capture, touched.clone()),
    }
}

/// Build one family's tree dataflow: subtree usage, fair-share parents and
/// level shares (the sshare facts, kept on worker 0 in a [`FactStore`]), and the family's
/// factors, captured on worker 0 into `capture` with the priority
/// dataflow's updates.
fn build_tree(
    worker: &mut Worker,
    family: Family,
    touched: &TouchCounter,
    capture: &Capture,
) -> TreeDataflow {
    worker.dataflow::<Epoch, _, _>(|scope| {
        let (edges_input, edges) = scope.new_collection::<(NodeId, NodeId), Diff>();
        let (shares_input, shares) = scope.new_collection::<(NodeId, Shares), Diff>();
        let (usage_input, usage) = scope.new_collection::<NodeId, Diff>();
        let (users_input, users) = scope.new_collection::<NodeId, Diff>();
        let (user_names_input, user_names) = scope.new_collection::<(NodeId, AssocId), Diff>();
        let (fs_params_input, fs_params) = scope.new_collection::<FsParams, Diff>();
        let (pending_jobs_input, pending_jobs) = scope.new_collection::<AssocId, Diff>();
        let shares_for_factors = shares.clone();

        let edges_by_child = edges.arrange_by_key();
        let shares_by_node = shares.arrange_by_key();

        // Subtree usage: every own usage (in the diff) moved up the edges
        // and summed per node (no ancestor pairs).
        let subtree_usage_sums = sums_up_the_tree(&edges_by_child, usage);

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
        let factors = crate::factors::build(
            FactorInputs {
                edges_by_child,
                fs_parent: fs_parent.clone(),
                fs_parent_by_node,
                shares: shares_for_factors,
                shares_by_node,
                subtree_usage: subtree_usage_sums.clone(),
                level_shares: level_share_sums.clone(),
                users,
                user_names,
                params: fs_params,
                pending_jobs,
            },
            family,
            touched,
        );
        let mut facts = subtree_usage_sums
            .map(|(node, usage)| (node, NodeFact::SubtreeUsage(usage)))
            .concat(fs_parent.map(|(node, parent)| (node, NodeFact::FsParent(parent))))
            .concat(level_share_sums.map(|(node, level)| (node, NodeFact::LevelShares(level))));
        if let Some(tickets) = factors.tickets {
            facts = facts.concat(tickets.map(|(node, tickets)| (node, NodeFact::Tickets(tickets))));
        }
        let facts_touched = touched.clone();
        let facts = facts.inspect(move |_| facts_touched.add(1));
        // Kept on worker 0, where the driver's reads are served.
        let store = FactStore::default();
        let fact_sink = store.clone();
        let (probe, _) = capture_on_worker_0(
            facts
                .inner
                .map(|(fact, time, diff)| (fact, time, diff as isize)),
            "FactsOnWorker0",
            move |data| fact_sink.absorb(data),
        )
        .probe();
        // The factors reach every shard's queue with the priority
        // dataflow's updates.
        let sink = capture.clone();
        capture_on_every_worker(
            factors.fairshare_facts.inner,
            "CaptureFactors",
            move |data| sink.borrow_mut().facts.append(data),
        )
        .probe_with(&probe);
        let inputs = TreeInputs {
            edges: edges_input,
            shares: shares_input,
            usage: usage_input,
            users: users_input,
            user_names: user_names_input,
            fs_params: fs_params_input,
            pending_jobs: pending_jobs_input,
        };
        TreeDataflow {
            inputs,
            facts: store,
            probe,
        }
    })
}
