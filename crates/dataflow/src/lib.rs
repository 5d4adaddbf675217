//! The incremental engine: the oracle's computations maintained by timely and
//! differential dataflow operators, so that a change costs what it touches.
//!
//! # Process layout
//! [`Engine::start`] runs `n` timely workers (`timely::execute`) in this
//! process; [`Engine::start_with`] takes any timely configuration, so the
//! cluster modes (`--processes/--process/--hostfile`) only build a different
//! `timely::Config` ([`Engine::start_layout`] from a `cluster::WorkerLayout`:
//! process 0 gets the engine, the others run [`Engine::run_follower`]; tested
//! with two processes over TCP on localhost). Every worker builds the same dataflow
//! (`graph::run_worker`); the worker with global index 0 is *fed* by the
//! driver over crossbeam channels, every other worker closes its empty input
//! sessions at once and only steps (`step_or_park`), so the worker closure does
//! not depend on how workers were started.
//!
//! # The driver
//! The caller's thread owns the `fairflow_ingest::Validator` and a
//! [`ledger::Ledger`]: interned [`ledger::NodeId`]s for accounts and user
//! associations, each one's current parent edge and shares (so a change
//! retracts exactly the old record), own settled usage in exact frame units,
//! running jobs' `(rate, accrual start)`, the decay frame and the next reset.
//! It applies accepted events one by one with the oracle's usage semantics
//! (point usage, running-job accrual `rate·(G(t) − G(since))`, settlement at
//! `PriorityCalcPeriod` boundaries, resets, re-bases, removals absorbed by the
//! parent, moves). After a batch it emits, for each touched association only,
//! the differences from what it last sent: edge and shares retractions and
//! insertions, and own-usage deltas. One batch is one logical time `u64`.
//!
//! # Collections (time `u64`, diff `i128` everywhere; no floats)
//! - inputs: `edges (child, parent)`, `shares (node, Shares)` (which also
//!   defines the set of live nodes), `usage node` with the own-usage delta in
//!   the **diff**;
//! - `closure (node, (ancestor, distance))`: `iterate` over the structure
//!   only (edges arranged by child); changes only on tree edits: a move of a
//!   subtree of `m` nodes at depth `d` changes about `m·d` records;
//! - subtree usage: `closure ⋈ usage` then `count_total`: a usage delta
//!   touches `depth + 1` join outputs and as many sums;
//! - fair-share parent: `closure ⋈ shares` on the ancestor, keeping proper
//!   ancestors that are not `FairShare=parent`, `reduce` per node to the
//!   nearest; a shares change between a number and `parent` touches the
//!   node's subtree;
//! - level shares: `fs_parent ⋈ shares`, raw shares moved into the diff,
//!   `count_total` per fair-share parent: a shares change touches one group;
//! - Fair Tree sibling order: a `reduce` per node assembles
//!   `(fs parent, shares, subtree usage, is a user)` (an outer join over a
//!   tagged `Part` enum: absent usage is 0; the `users` input marks user
//!   associations), then a `reduce` per fair-share parent sorts its children
//!   by exact `LevelFs` (within one group `shares / usage` orders like LF: the
//!   level shares and parent usage cancel), users first on ties, and emits
//!   `(parent, Ranked(block, child))`: a usage delta re-sorts the `depth`
//!   groups on its path, each `O(group)`;
//! - the results are concatenated as `(node, Fact)` and arranged on
//!   worker 0 (an `Exchange(|_| 0)` pact), probed.
//!
//! # Reading results
//! Between batches the driver sends `ReadFacts`; worker 0 reads the pinned
//! arrangement with a cursor (`batches_through` + `cursor_list`) and returns
//! the consolidated facts (pattern A: no dataflow runs per query). The driver
//! joins them with the ledger's names and structure into an [`EngineTree`] in
//! sshare order. Trace compaction follows each batch's time.
//!
//! # Fair-share (module [`fairshare`])
//! Fair Tree, classic and depth-oblivious are computed from that tree when a
//! table or the user factors are asked for, with the shared scalar formulas
//! of `fairflow_model::formula` (bit-identical to the oracle) and this crate's
//! own walks: Fair Tree ranks sibling groups by exact `LevelFs` comparison
//! (users first on ties, tied accounts' children merged, competition ranks
//! counting down from `N`); classic walks the fair-share tree top-down. A read
//! is `O(n)` in the associations; a batch costs what it touches.
//!
//! The order inside each sibling group is the dataflow's (`Ranked` facts);
//! the walk only merges the groups of tied accounts (exact cross-parent
//! `LevelFs` comparison) and assigns ranks.
//!
//! **Not yet in the dataflow** (next steps): the ranks themselves, merged
//! groups and classic effective usage. The planned shape: a per-group `reduce` keyed
//! by a *group key* (a fair-share parent, or a block of tied accounts whose
//! children merge: `group(c) = block(fs_parent(c))`,
//! `block(x) = (group(x), position of x's equal-LF block)`, unrolled per
//! level), ordering members by exact `LevelFs`; block offsets (users under
//! earlier blocks, from closure user counts) summed over the merged-tree
//! ancestry give each user's visit index `v`, and `rank = N − v(head)` where
//! `head` is the first user of the user's tie run. Classic effective usage
//! needs `usage / root usage`, so every usage event changes every node's
//! value: its fan-out is inherent, which is why it is computed at read time.
//!
//! # Job priority (module [`priority`], driven by [`job_ledger`])
//! The same dataflow holds the priority half: `jobs` ([`priority::JobRow`])
//! and priority `facts` inputs, its records and queue indexes pinned to
//! worker 0, where a [`priority::PriorityReader`] serves
//! [`Engine::priorities`], [`Engine::top`] and [`Engine::job`] as of the
//! engine's time. Per batch the driver sends the tree and usage deltas with
//! the changed job rows (one logical time), reads the core's fair-share
//! factors at that time and sends the changed priority facts (a second
//! logical time). Job attributes follow the oracle's job semantics through
//! a job book ([`job_ledger::JobLedger`]); with `INCR_ONLY` the driver
//! flushes and remembers at each event-time boundary exactly where the
//! oracle's `Replay` does. Ticket- and level-based fair-share are not
//! maintained: priority reads then return [`EngineError::Unsupported`].
//!
//! # Snapshots (module [`snapshot`])
//! [`Engine::snapshot`] writes the driver's books (validator, ledger, job
//! book, applied count, `INCR_ONLY` memory) in a versioned, checksummed
//! format; [`Engine::restore`] replaces an engine's books by a snapshot's and
//! rebuilds the dataflow's inputs from them as one batch (the old records
//! retracted, every record of the books sent). The results are the snapshotting
//! engine's, whatever either engine's worker count.
//!
//! # Time
//! With `PriorityCalcPeriod = 0` the driver settles running jobs' accrual
//! into their associations at every batch whose time advanced (exact: the
//! clock `G` is an integer, the pieces telescope), so a batch touches every
//! association with a running job. The alternative that makes passing time
//! free (send `rate` and `rate·G(since)` as separate summed components and
//! evaluate `settled + rate·G(now) − offset` per subtree at read time) is
//! exact too, but keeps the current usage out of the dataflow, where a future
//! in-dataflow ranking needs it.

#![warn(missing_docs)]

pub mod cluster;
pub mod engine;
pub mod factors;
pub mod fairshare;
pub mod graph;
pub mod job_ledger;
pub mod ledger;
pub mod priority;
pub mod snapshot;
pub mod topk;

pub use engine::{BatchReport, Engine, EngineError, EngineTree, TreeNode};
