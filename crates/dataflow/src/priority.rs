//! Job priority, maintained incrementally: each job's time-invariant
//! priority record (Slurm's multifactor, the Flux model, Moab's inputs),
//! built in the dataflow, and the ranked pending queue ([`queue`]) the
//! records meet their users' fair-share factors in, from which
//! [`PriorityReader::top`] returns exactly the oracle's first `k`
//! `JobPriority` values (`fairflow_oracle::priority::queue`), at any `now`.
//!
//! # Inputs (time `u64`, diff `isize`)
//! - job rows, into the *rows dataflow* ([`capture_rows`]): one [`JobRow`]
//!   per active job (pending, held, running): its id, user association,
//!   the attributes priority needs, and two flags the driver keeps current
//!   as time passes (`begun`, `age_capped`; see [`crossings`]). A change is
//!   a retraction of the old row and an insertion of the new one. The
//!   dataflow only routes each row update to its job's shard
//!   ([`shard_key`]: the user association, under Moab the user): a job
//!   event steps a graph of two operators.
//! - into the *context dataflow* ([`PriorityInputs`], [`build`]):
//!   `facts`, everything else, as [`Fact`]s: the priority configuration
//!   ([`PriorityParams`], one), the cluster size (one), each user
//!   association's fair-share factor (exact `f64` bits, from the fair-share
//!   part), every association's effective Slurm association priority
//!   (the user association's own, else its nearest account's; accounts
//!   too), accounts' own priorities (Flux's bank priority), QOS priorities
//!   and partitions; `combos`, the distinct `(association, QOS, partition)`
//!   combinations active jobs name ([`Combo`]), and `partition_refs`, the
//!   distinct (partition, job category) pairs. The driver counts the rows
//!   it sends per combination and pair ([`ComboRefs`]) and sends only those
//!   that start or stop being named, so most job events do not feed (or
//!   step) the context dataflow at all.
//!
//! # Operators (what an update touches)
//! - `resolve`: one `reduce` per context key (association, account, QOS,
//!   partition) over that key's facts and one *reference* per combination
//!   naming it (and per job category, for partitions), giving the key's
//!   context with the oracle's defaults for what no fact defines (QOS
//!   priority 0, partition factor 1, ...). Fair-share factors do not enter
//!   here.
//! - `globals`: one `reduce` on the unit key over the *distinct* values of
//!   association priorities, QOS priorities, partition factors (plus the
//!   partitions that listed jobs name without a definition, which count
//!   with factor 1), the configuration and the cluster: the normalisation
//!   maxima. `O(distinct values)` per change, typically a few dozen.
//! - the context joins run over *combinations*, not jobs. Four `join_core`
//!   stages carry each combination through its association, account, QOS
//!   and partition contexts, a fifth joins the globals, giving one
//!   [`JobContext`](combo::JobContext) per combination, captured on every worker.
//! - each shard's reader meets its rows with their combinations' contexts
//!   (`PriorityReader::join_rows`) into [`PriorityRecord`](record::PriorityRecord)s: a job event
//!   re-derives its record; a change of a QOS or partition priority touches
//!   the combinations and jobs naming it; a change of a maximum, the
//!   cluster or the configuration touches every combination and job (every
//!   normalised factor changes). **A fair-share change touches no record**:
//!   the records' keys leave the fair-share term out ([`record`]).
//! - the queue is sharded across the workers: each worker's reader applies
//!   its records and every fact to its shard's [`queue::Queue`] (worker 0
//!   after each batch, the others when a read reaches them; reads merge the
//!   shards, see `worker::shards`): records by job id (`explain`),
//!   per user association its ranked jobs by key, the users ordered by
//!   their best key plus their fair-share term, and the ranked jobs by
//!   submit time. A fair-share change re-keys that user's two entries.
//!   Passing time changes nothing.
//!
//! Records carry no strings: jobs, associations, accounts, partitions and
//! QOS are interned integers ([`crate::names`]); a [`JobRow`] holds only what
//! priority needs (the job's name and other attributes stay in the book),
//! and a record is its row plus its combination's shared context (one
//! `Arc` per combination). Memory per active job: its record in the queue
//! (which holds its row), one entry in its combination's jobs, one entry in
//! its user's ranked jobs and one submit-time entry (pending jobs); no
//! arrangement holds rows. Results name their job
//! from the shared [`JobNames`](crate::names::JobNames) table (the queue breaks ties by name); the
//! driver fills in the other names from the book.
//!
//! [`TouchCounter`] counts every update leaving each stage (resolve,
//! globals, the five joins), every record the readers remove or add, and
//! every job and user entry the queue changes, for the benchmark's
//! `touched_records_mean`.
//!
//! # Costs that are not incremental
//! - **Slurm `INCR_ONLY`** (the oracle's definition, `fairflow_oracle::
//!   priority`): a pending job's priority is the maximum of the priorities
//!   evaluated at every distinct event time since it entered the queue. The
//!   reader keeps that memory ([`PriorityReader::remember_incr_only`]), which
//!   the driver calls exactly where `Replay` does (before applying the first
//!   accepted event of a later time, and before a query's `--at`), at
//!   `O(listed jobs)` each; with the flag on, `top` evaluates every listed
//!   job (`O(listed jobs)` per read), because `max(floor, K + r·now)` has no
//!   single time-invariant order. A batch must not span two event times
//!   when the flag is on.
//! - **Slurm `CALCULATE_RUNNING`**: running jobs are listed (their records
//!   carry their priority, evaluated for `sprio`/`explain`, never ranked);
//!   it costs one record per running job and their updates, nothing per read.
//! - **Moab**: its XFACTOR, TARGET, USAGE and DEADLINE terms move every job
//!   at its own rate and its caps make even QUEUETIME non-linear, so no
//!   time-invariant key exists and the exact plan is to evaluate every job at
//!   read time: [`moab`] does, over the queue's records and its
//!   facts (configuration, credential usage, wallclock accuracy), computing
//!   the per-user running totals from the records: `O(listed jobs)` per
//!   read whatever the XFACTOR weight; updates stay incremental.
//!
//! # Plugging into the engine
//! 1. In `graph::build`, create a rows dataflow (`new_collection::<JobRow,
//!    isize>()` into [`capture_rows`]) and a context dataflow (the
//!    [`PriorityInputs`] into [`build`], with a [`TouchCounter`]), both
//!    capturing into the worker's one [`queue::Capture`], which its
//!    [`PriorityReader`] (its shard) reads; `probe_with` every stream of
//!    [`PriorityOutputs::captured`](context::PriorityOutputs::captured) and the rows' capture. Call
//!    `reader.absorb()` once the probes passed a batch.
//! 2. The job feed keeps each job's last sent [`JobRow`] (retract exactly the
//!    old row) and a [`crossings::Crossings`]; per batch at time `t`: re-send
//!    the rows of `due(t)` jobs with `begun_at`/`age_capped_at` recomputed,
//!    and `schedule(job, next_crossing(..))` for every row it sends; on a
//!    `config` event re-derive every row (crossings move).
//! 3. Facts: `Config(PriorityParams::from_config(..))` on config change;
//!    `Cluster`, `Qos`, `Partition`, `AccountPriority` from their events;
//!    `AssocPriority` (effective: own, else nearest ancestor account's, for
//!    every association); `Fairshare` per user association from the
//!    fair-share part (inside the dataflow); under Moab
//!    `MoabUsage`/`MoabUsageTotal`/`WallclockAccuracy`.
//! 4. `INCR_ONLY`: split batches at event-time boundaries and call
//!    `reader.remember_incr_only(prev_t)` where `Replay::feed` would.
//! 5. Reads: `reader.top(k, now)`, `reader.job(id, now)`,
//!    `reader.evaluate_all(now)` (sprio), `reader.ahead_of(target, now)` on
//!    every shard between steps, merged (`worker::shards`).
//!
//! # Driver contract
//! Before reading at `now`, the driver has run a batch at a time `<= now`
//! with every begin crossing `<= now` applied ([`crossings::Crossings::due`]).
//! Age-cap crossings may lag when the time factor's weight is not negative
//! (always for Slurm, whose weights are unsigned): past the cap the uncapped
//! bound over-estimates, so the read stays exact and only reads more. With
//! a negative Flux wait-time weight a lagging flag would under-estimate, so
//! the driver applies the age-cap crossings `<= now` too.

pub mod capture;
pub mod classic;
pub mod combo;
pub mod context;
pub mod crossings;
pub mod fair_tree;
pub mod inputs;
pub mod moab;
pub mod queue;
pub mod reader;
pub mod record;

pub use crate::types::TouchCounter;
pub use capture::shard_key;
pub(crate) use capture::{capture_on_every_worker, capture_on_worker_0, capture_rows, Sharding};
pub use combo::Combo;
pub use context::{build, ComboDeltas, ComboRefs, PriorityInputs};
pub use inputs::{tres_bits, AssocRef, Fact, JobRow, MoabRow, PartitionRec, Phase, PriorityParams};
pub use reader::{IncrFloors, PriorityReader};
