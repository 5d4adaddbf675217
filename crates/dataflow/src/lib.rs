//! The incremental engine: the oracle's computations maintained by timely and
//! differential dataflow operators, so that a change costs what it touches.
//!
//! # Process layout
//! [`Engine::start`] runs `n` timely workers in this process;
//! [`Engine::start_with`] takes the workers' communication
//! (`cluster::Communication`), so the cluster modes
//! (`--processes/--process/--hostfile`) only connect the processes first
//! ([`Engine::start_layout`] from a `cluster::WorkerLayout`: process 0 gets
//! the engine, the others run [`Engine::run_follower`]; tested with two
//! processes over TCP on localhost, threads of one test and real `fairflow`
//! processes). `cluster` says which state stays in process 0. Every worker builds the same dataflows
//! (`worker::run_worker`, `graph::build`: the priority dataflow and one tree
//! dataflow per family of fair-share algorithms, `factors::Family`); the
//! worker with global index 0 is *fed* by the
//! driver over crossbeam channels, every other worker closes its empty input
//! sessions at once and only steps (`step_or_park`), so the worker closure does
//! not depend on how workers were started.
//!
//! # The driver
//! The caller's thread owns the book (`fairflow_book::Book`: every rule about
//! events and every effect of one, in one place, shared with the oracle) and
//! two feeds that hold only what was sent to the dataflow: the
//! [`tree_feed::TreeFeed`] (interned [`types::NodeId`]s for accounts and
//! user associations, and each one's last sent parent edge, shares and
//! visible own usage, so a change retracts exactly the old record) and the
//! [`job_feed::JobFeed`] (each job's last sent row, the priority facts, the
//! crossings). Dataflow records carry interned integers, never strings
//! ([`names`]). After a batch the book says what changed
//! (`fairflow_book::Changes`) and each feed emits, for those only, the
//! differences from what it last sent. One batch is one logical time `u64`.
//!
//! # Several dataflows, and only the fed ones step
//! Timely's progress tracking and operator scheduling cost something per
//! operator at every logical time, whatever the batch holds: at a handful of
//! records that fixed cost is most of a batch's. So the graph is cut where
//! no collection crosses: the priority dataflow (job rows and priority
//! facts), and one tree dataflow per [`factors`] family (Fair Tree under
//! Slurm's ties, under the documented ties, classic and depth-oblivious,
//! ticket-based, level-based), each holding only its own algorithm's stages.
//! A batch feeds and steps only the dataflows it has records for (a usage
//! event the configured family's tree dataflow, a submit the priority
//! dataflow); each dataflow has its own probe. Only the configured family's
//! tree dataflow holds the tree: when a configuration switches family, the
//! driver retracts everything it sent from the old family's dataflow and
//! sends it all to the new one, in the same batch (`TreeFeed::sent_records`;
//! ticket-based's pending-job counts move with it), so the switch costs a
//! reload of the tree, not of the jobs. The factors leave every tree dataflow
//! through a capture on worker 0 into the same buffer as the priority
//! dataflow's updates, so the queue sees both of one batch together.
//!
//! # Collections (time `u64`, diff `i128` everywhere; no floats)
//! - inputs: `edges (child, parent)`, `shares (node, Shares)` (which also
//!   defines the set of live nodes), `usage node` with the own-usage delta in
//!   the **diff**;
//! - subtree usage: a stateful operator on worker 0 keeps the parent links
//!   and every subtree sum and pushes each batch's own-usage deltas (in the
//!   diff) up the union of their paths once: a usage delta changes `depth +
//!   1` sums, in one pass (no round per level);
//! - fair-share parent: an `iterate` over the parent links (a node whose
//!   parent is not `FairShare=parent` takes the parent, else its parent's
//!   answer); a shares change between a number and `parent` touches the
//!   nodes whose answer changes;
//! - level shares: `fs_parent ⋈ shares`, raw shares moved into the diff,
//!   `count_total` per fair-share parent: a shares change touches one group;
//! - fair-share factors ([`factors`]): per-association records, Fair Tree
//!   placements per (merged) group (Slurm's rule: sent as they are, the
//!   queue derives ranks; the documented rule: ranks by top-down sums),
//!   top-down recurrences for the other algorithms;
//!   they reach the queue as `Fairshare` (or `TreeSlot`) facts in the same time;
//! - the subtree sums, the nearest ancestor, the
//!   top-down recurrences and the group sums are the generic stages of
//!   `stages`;
//! - the results are concatenated as `(node, Fact)` and arranged on
//!   worker 0 (an `Exchange(|_| 0)` pact), probed.
//!
//! # Reading results
//! Between batches the driver sends `ReadFactsOf` with the nodes it reads
//! (the whole tree in sshare order, or `explain`'s path); worker 0 answers
//! from its facts store (`graph::FactStore`, kept current by a capture) with
//! each listed node's facts at its index in the list (no dataflow runs per
//! query). The driver joins them with the tree feed's names (borrowed) and
//! sent structure into an [`EngineTree`] in sshare order.
//!
//! # Fair-share (modules [`factors`] and [`fairshare`])
//! Every algorithm's user factors (Fair Tree, classic, depth-oblivious,
//! ticket-based, level-based) are maintained in the dataflow ([`factors`]),
//! in the same logical time as the changes that move them, and reach the
//! priority dataflow as facts (classic and depth-oblivious: each
//! association's inputs, from which the queue evaluates every user's factor,
//! [`priority::classic`]). The sshare table ([`fairshare`]) computes the
//! per-association columns from the tree at read time with the shared
//! scalar formulas of `fairflow_model::formula` (bit-identical to the
//! oracle), taking the users' factors and the ticket-based tickets from the
//! dataflow. A read is `O(n)` in the associations; a batch costs what it
//! touches.
//!
//! # Job priority (module [`priority`], driven by [`job_feed`])
//! The priority dataflow: `jobs` ([`priority::JobRow`])
//! and priority `facts` inputs; its records (without the fair-share term)
//! and facts are captured on worker 0 into the queue
//! ([`priority::queue`]), where a [`priority::PriorityReader`] serves
//! [`Engine::priorities`], [`Engine::top`] and [`Engine::job`] as of the
//! engine's time. Per batch the driver sends the tree and usage deltas, the
//! changed job rows and the changed priority facts as one logical time; the
//! fair-share factors meet the job records in the queue. Job
//! attributes are the book's; with `INCR_ONLY` the driver
//! flushes and remembers at each event-time boundary exactly where the
//! oracle's `Replay` does. Every fair-share algorithm is maintained
//! ([`factors`]).
//!
//! # Snapshots
//! [`Engine::snapshot`] writes the book (with the `INCR_ONLY` memory the
//! dataflow keeps) in the one snapshot format both engines read
//! (`fairflow_book::snapshot`); [`Engine::restore`] replaces the engine's book
//! by a snapshot's and rebuilds the dataflow's inputs from it as one batch
//! (the old records retracted, every record of the book sent). The results
//! are the snapshotting engine's, whatever either engine's worker count.
//!
//! # Time
//! With `PriorityCalcPeriod = 0` the driver settles running jobs' accrual
//! into their associations at every batch whose time advanced (exact: the
//! clock `G` is an integer, the pieces telescope), so a batch touches every
//! association with a running job. The alternative that makes passing time
//! free (send `rate` and `rate·G(since)` as separate summed components and
//! evaluate `settled + rate·G(now) − offset` per subtree at read time) is
//! exact too, but keeps the current usage out of the dataflow, where the
//! in-dataflow ranking needs it. With a period set, running jobs cost
//! nothing between period boundaries.

#![warn(missing_docs)]

pub mod cluster;
pub mod engine;
mod factors;
mod fairshare;
mod graph;
mod job_feed;
mod names;
mod priority;
mod stages;
#[cfg(test)]
mod tests;
pub mod thread_priority;
pub mod thresholds;
mod tree_feed;
pub mod types;
mod worker;

pub use engine::{BatchReport, Engine, EngineError};
pub use fairshare::{EngineTree, TreeNode, PARALLEL_ROWS_MIN};
