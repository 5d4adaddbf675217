//! The engine as its callers see it: [`Engine::start`] launches the timely
//! workers, [`Engine::apply_batch`] checks and applies a batch of log lines to
//! the book (`fairflow_book::Book`), turns what the book says changed into
//! input deltas (through the [`TreeFeed`] and the [`JobFeed`]) and waits
//! until the dataflow reflects them; the read methods ask worker 0 for the
//! tree's facts (kept there) and for the queue's reads (merged from every
//! worker's shard), and assemble the tree and the fair-share table.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender};
use fairflow_book::Book;
use fairflow_ingest::{LogLine, Rejection};
use fairflow_model::report::{CompactJobs, JobPriority, JobState, SharedJobs};
use fairflow_model::{Config, Time};
use timely::WorkerConfig;

use crate::cluster::{Communication, ShardHoldings, WorkerLayout};

use crate::factors::{Family, FsParams};
use crate::job_feed::{JobDeltas, JobFeed};
use crate::names::{JobNames, Names};
use crate::thresholds::{self, Threshold};
use crate::tree_feed::{Deltas, TreeFeed};
use crate::types::{Epoch, TouchCounter};
use crate::worker::{handoff_spin, recv_polling, run_worker, Command, Feeder, Reply};
use free_apart::FREE_APART_MIN_JOBS;

mod free_apart;
mod page_read;
mod position_read;
mod snapshot;
mod tree_read;
mod waiting_read;
mod whatif_live;

/// Why the engine could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// Timely could not start its workers.
    #[error("cannot start {workers} timely workers: {reason}")]
    Start {
        /// How many workers were asked for.
        workers: usize,
        /// Timely's message.
        reason: String,
    },
    /// A snapshot could not be restored (foreign, another version, damaged).
    #[error(transparent)]
    Snapshot(#[from] fairflow_book::snapshot::SnapshotError),
    /// The workers stopped (a worker panicked); this is a bug.
    #[error("the timely workers stopped unexpectedly (this is a bug)")]
    WorkersGone,
}

/// What one batch did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BatchReport {
    /// Events applied.
    pub applied: u64,
    /// Rejected lines, in order.
    pub rejected: Vec<Rejection>,
    /// Input records the batch sent to the dataflow (edges, shares, usage,
    /// job rows and priority facts).
    pub input_records: usize,
}

/// The incremental engine; see the crate documentation.
pub struct Engine {
    book: Book,
    /// The interned names of accounts, associations, partitions and QOS.
    names: Names,
    tree_feed: TreeFeed,
    job_feed: JobFeed,
    /// The family of fair-share algorithms whose tree dataflow holds the
    /// tree (`None` before the first batch).
    family: Option<Family>,
    applied: u64,
    epoch: Epoch,
    workers: usize,
    /// Timely workers per process (every process runs as many).
    workers_per_process: usize,
    commands: Option<Sender<Command>>,
    replies: Receiver<Reply>,
    /// How long to poll for a reply before parking ([`handoff_spin`]).
    spin: Option<Duration>,
    worker0: std::thread::Thread,
    guards: Option<timely::communication::initialize::WorkerGuards<()>>,
    /// Records emitted by the dataflow stages of this process's workers.
    touched: TouchCounter,
    /// Bumped by every command that can change a result (batches, the
    /// `INCR_ONLY` memory): the key of `last_top`.
    generation: AtomicU64,
    /// The last `top` read, named; a read with nothing changed since copies it.
    last_top: Mutex<Option<LastTop>>,
    /// The `k'` kept current: the largest `k` (at most [`KEEP_TOP_MAX`]) a
    /// `top` read asked for so far (0: none yet). Each batch that
    /// [`Engine::apply_batch`] or [`Engine::advance_to`] sends asks worker 0
    /// for the top `k'` at the batch's time in the same round trip, so the
    /// next `top(k <= k')` copies it.
    keep_top: std::sync::atomic::AtomicUsize,
    /// The sshare order of the tree's last shape read, by the tree feed's
    /// shape version (`tree_read`): the order changes only with the shape.
    sshare_order: Mutex<Option<(u64, Arc<tree_read::TreeOrder>)>>,
}

/// The largest `k` kept current after each batch: larger reads (a whole
/// queue for a selection or a page far down) are read when asked.
const KEEP_TOP_MAX: usize = 1000;

/// A `top` read and what it was read at.
#[derive(Debug)]
struct LastTop {
    /// The engine's generation (see `Engine::generation`).
    generation: u64,
    /// The engine's time.
    now: Time,
    /// How many jobs were asked for.
    k: usize,
    /// The result, named, shared with every reader.
    result: SharedJobs,
}

/// Run `work` on every worker `communication` builds. More workers than
/// cores is common here (tests run 4 on 2 cores): the workers park at once
/// instead of spinning.
// String: timely's `execute_from` reports its errors as text.
fn execute(
    communication: Communication,
    work: impl Fn(&mut timely::worker::Worker) + Send + Sync + 'static,
) -> Result<timely::communication::initialize::WorkerGuards<()>, String> {
    let worker_config = WorkerConfig::default().idle_spin(Duration::ZERO);
    timely::execute::execute_from(
        communication.builders,
        communication.guard,
        worker_config,
        work,
    )
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("workers", &self.workers)
            .field("epoch", &self.epoch)
            .finish_non_exhaustive()
    }
}

/// Start the process's pool of threads for reads spread over the cores
/// (rayon's global pool) now, not in the first read that uses it: at
/// 100,000 associations and 1,000,000 jobs starting it took 25 ms, which
/// the first what-if after a service start waited behind
/// (`perf/results/2026-12-03-whatif-unnamed-s44.md`).
fn warm_thread_pool() {
    rayon::broadcast(|_| ());
}

impl Engine {
    /// Start `workers` timely workers in this process, under `config` (the
    /// configuration in force before the first event, as for the oracle).
    pub fn start(workers: usize, config: Config) -> Result<Engine, EngineError> {
        let workers = workers.max(1);
        Engine::start_with(workers, Communication::process(workers), config)
    }

    /// Start on the workers `communication` builds (the cluster modes
    /// connect the processes first: [`WorkerLayout::communication`]). The
    /// driver talks to the worker with global index 0, which must run in
    /// this process.
    pub fn start_with(
        workers: usize,
        communication: Communication,
        config: Config,
    ) -> Result<Engine, EngineError> {
        let (command_tx, command_rx) = crossbeam_channel::unbounded();
        let (reply_tx, reply_rx) = crossbeam_channel::unbounded();
        let share_names = communication.cluster;
        let workers_per_process = communication.workers_per_process;
        let spin = handoff_spin(workers_per_process);
        let feeder = Feeder {
            commands: command_rx,
            replies: reply_tx,
            spin,
        };
        let touched = TouchCounter::new();
        let worker_touched = touched.clone();
        let job_names = JobNames::default();
        let worker_names = job_names.clone();
        let guards = execute(communication, move |worker| {
            let feeder = (worker.index() == 0).then(|| feeder.clone());
            run_worker(
                worker,
                feeder,
                worker_touched.clone(),
                worker_names.clone(),
                share_names,
            );
        })
        .map_err(|reason| EngineError::Start { workers, reason })?;
        let worker0 = match reply_rx.recv() {
            Ok(Reply::Ready(thread)) => thread,
            _ => return Err(EngineError::WorkersGone),
        };
        let mut book = Book::new(config);
        book.track_changes(true);
        let mut engine = Engine {
            book,
            names: Names::default(),
            tree_feed: TreeFeed::new(),
            job_feed: JobFeed::new(job_names),
            family: None,
            applied: 0,
            epoch: 0,
            workers,
            workers_per_process: workers_per_process.max(1),
            commands: Some(command_tx),
            replies: reply_rx,
            spin,
            worker0,
            guards: Some(guards),
            touched,
            generation: AtomicU64::new(0),
            last_top: Mutex::new(None),
            sshare_order: Mutex::new(None),
            keep_top: std::sync::atomic::AtomicUsize::new(0),
        };
        // Root exists from the start.
        engine.flush(false)?;
        warm_thread_pool();
        Ok(engine)
    }

    /// Start under a command-line layout (`--workers`, `--processes`,
    /// `--process`, `--hostfile`): the process hosting worker 0 gets the
    /// engine; any other process runs its workers until the computation ends
    /// and gets `None`. With several processes this first connects to the
    /// others, within the layout's `connect_timeout`.
    pub fn start_layout(
        layout: &WorkerLayout,
        config: Config,
    ) -> Result<Option<Engine>, EngineError> {
        let communication = layout.communication().map_err(|e| EngineError::Start {
            workers: layout.total_workers(),
            reason: e.0,
        })?;
        if layout.hosts_worker_zero() {
            Engine::start_with(layout.total_workers(), communication, config).map(Some)
        } else {
            Engine::run_follower(communication).map(|()| None)
        }
    }

    /// Run this process's workers of a multi-process computation whose
    /// worker 0 (and driver) lives in another process: every worker here
    /// builds the same dataflow, closes its inputs and steps until the driver
    /// shuts the computation down.
    pub fn run_follower(communication: Communication) -> Result<(), EngineError> {
        let touched = TouchCounter::new();
        let names = JobNames::default();
        let share_names = communication.cluster;
        let guards = execute(communication, move |worker| {
            run_worker(worker, None, touched.clone(), names.clone(), share_names)
        })
        .map_err(|reason| EngineError::Start { workers: 0, reason })?;
        warm_thread_pool();
        if guards.join().iter().any(Result::is_err) {
            return Err(EngineError::WorkersGone);
        }
        Ok(())
    }

    /// The number of timely workers.
    pub fn workers(&self) -> usize {
        self.workers
    }

    /// What each worker's shard holds, by worker index, each read by its
    /// worker in its own process (its process's peak memory included).
    pub fn holdings(&self) -> Result<Vec<ShardHoldings>, EngineError> {
        let Reply::Holdings(mut shards) = self.priority_read(Command::Holdings)? else {
            return Err(EngineError::WorkersGone);
        };
        for (worker, shard) in shards.iter_mut().enumerate() {
            shard.worker = worker;
            shard.process = worker / self.workers_per_process;
        }
        Ok(shards)
    }

    /// How many active jobs each worker's shard of the queue holds, by
    /// worker index (the jobs are sharded by user association; see
    /// `priority::shard_key`).
    pub fn jobs_per_worker(&self) -> Result<Vec<usize>, EngineError> {
        Ok(self.holdings()?.iter().map(|shard| shard.jobs).collect())
    }

    /// How many active jobs each process's shards hold, by process index
    /// (process `p` runs workers `p · w .. (p + 1) · w`).
    pub fn jobs_per_process(&self) -> Result<Vec<usize>, EngineError> {
        Ok(self
            .jobs_per_worker()?
            .chunks(self.workers_per_process)
            .map(|chunk| chunk.iter().sum())
            .collect())
    }

    /// The book (every accepted event applied).
    pub fn book(&self) -> &Book {
        &self.book
    }

    /// Worker 0's reply to the last command ([`recv_polling`]).
    fn reply(&self) -> Result<Reply, crossbeam_channel::RecvError> {
        recv_polling(&self.replies, self.spin)
    }

    fn send(&self, command: Command) -> Result<(), EngineError> {
        if matches!(
            command,
            Command::Batch { .. } | Command::RememberIncrOnly(_) | Command::SetFloors(_)
        ) {
            self.generation.fetch_add(1, Ordering::Relaxed);
        }
        self.commands
            .as_ref()
            .ok_or(EngineError::WorkersGone)?
            .send(command)
            .map_err(|_| EngineError::WorkersGone)?;
        self.worker0.unpark();
        Ok(())
    }

    /// Send one batch; with `keep_top`, worker 0 also reads the top `k'`
    /// (`Engine::keep_top`) at the engine's time once the batch is
    /// reflected, and the named result becomes the last `top` read.
    fn send_batch(
        &mut self,
        family: Family,
        trees: Vec<(Family, Deltas)>,
        jobs: Option<JobDeltas>,
        keep_top: bool,
    ) -> Result<(), EngineError> {
        self.epoch += 1;
        let now = self.now();
        let kept = *self.keep_top.get_mut();
        // A queue whose entries are not its jobs is read whole (`top`).
        let top = (keep_top && kept > 0 && self.entries_are_jobs()).then_some((kept, now));
        self.send(Command::Batch {
            epoch: self.epoch,
            family,
            trees,
            jobs,
            top,
        })?;
        let reply = match self.reply() {
            Ok(Reply::BatchDone(reply)) => reply,
            _ => return Err(EngineError::WorkersGone),
        };
        let kept_top = reply.map(|top| LastTop {
            generation: self.generation.load(Ordering::Relaxed),
            now,
            k: kept,
            result: self.identify_all(top),
        });
        let replaced = std::mem::replace(
            self.last_top
                .get_mut()
                .unwrap_or_else(PoisonError::into_inner),
            kept_top,
        );
        self.discard(replaced);
        Ok(())
    }

    /// Free a replaced `top` read on worker 0's thread, while it waits for
    /// the next command, instead of on the caller's: a read of 100 jobs
    /// holds about a thousand allocations (names, factor lists), whose
    /// freeing was about a third of the driver's share of a computed read
    /// (instructions counted by callgrind, `perf/results/`).
    /// Worker 0 frees it at its next poll (a parked worker 0, at its next
    /// command); the command is not answered.
    ///
    /// A read holding at least [`FREE_APART_MIN_JOBS`] jobs (a whole queue)
    /// is freed on a thread of its own instead (`free_apart`).
    fn discard(&self, replaced: Option<LastTop>) {
        let Some(replaced) = replaced else {
            return;
        };
        if replaced.result.held().len() >= FREE_APART_MIN_JOBS {
            free_apart::free_apart(replaced.result);
        } else if let Some(commands) = self.commands.as_ref() {
            // Gone workers free nothing: the value is dropped here.
            let _ = commands.send(Command::Discard(replaced.result));
        }
    }

    /// The family of the configuration in force.
    fn configured_family(&self) -> Family {
        Family::of(&FsParams::from_config(&self.book.state().config))
    }

    /// Send what changed since the last flush as one logical time: the
    /// tree, usage and fair-share parameter deltas, the job rows and the
    /// priority facts' differences (the fair-share factors are computed in
    /// the dataflow, in the same time). Returns the input records sent.
    ///
    /// With nothing to send, no logical time is used: every result already
    /// reflects the last batch (the probe passed it), and an empty time
    /// would only make every operator of the dataflow step for nothing.
    ///
    /// With `keep_top`, the batch also reads the top `k'` at the engine's
    /// time (see [`Engine::send_batch`]): the flushes that end a public
    /// write (`apply_batch`, `advance_to`), not the one before `INCR_ONLY`'s
    /// memory moves.
    fn flush(&mut self, keep_top: bool) -> Result<usize, EngineError> {
        let changes = self.book.take_changes();
        self.flush_changes(changes, keep_top)
    }

    /// [`Engine::flush`] of `changes` (the subjects whose state the feeds
    /// compare with what they sent last).
    fn flush_changes(
        &mut self,
        changes: fairflow_book::Changes,
        keep_top: bool,
    ) -> Result<usize, EngineError> {
        let family = self.configured_family();
        let old = self.family;
        let trees = if old.is_some_and(|old| old != family) {
            // A switch of family: the old family's dataflow is emptied and
            // the new one's filled, in the same batch.
            let retracted = self.tree_feed.sent_records(false);
            self.tree_feed.deltas(&self.book, &changes, &mut self.names);
            tree_sends(old, family, retracted, self.tree_feed.sent_records(true))
        } else {
            let deltas = self.tree_feed.deltas(&self.book, &changes, &mut self.names);
            vec![(family, deltas)]
        };
        self.send_changes(old, family, trees, &changes, keep_top)
    }

    /// Send the tree dataflows' `trees` and the job feed's differences for
    /// `changes`; `old` is the family that held the tree before, `family`
    /// the one that holds it now (ticket-based's pending jobs move with it).
    fn send_changes(
        &mut self,
        old: Option<Family>,
        family: Family,
        mut trees: Vec<(Family, Deltas)>,
        changes: &fairflow_book::Changes,
        keep_top: bool,
    ) -> Result<usize, EngineError> {
        let moved = old != Some(family);
        if moved && old == Some(Family::Ticket) {
            let pending = self.job_feed.pending_by_assoc(-1);
            tree_entry(&mut trees, Family::Ticket).pending_jobs = pending;
        }
        self.job_feed.note(changes);
        let state = self.book.state();
        let rows = self.job_feed.job_deltas(state, &mut self.names);
        let (combos, partition_refs) = self.job_feed.combo_deltas(&rows);
        let jobs = JobDeltas {
            jobs: rows,
            facts: self.job_feed.fact_deltas(state, &mut self.names),
            combos,
            partition_refs,
        };
        if family == Family::Ticket {
            let pending = if moved {
                self.job_feed.pending_by_assoc(1)
            } else {
                JobFeed::pending_deltas(&jobs.jobs)
            };
            tree_entry(&mut trees, Family::Ticket)
                .pending_jobs
                .extend(pending);
        }
        self.family = Some(family);
        trees.retain(|(_, deltas)| !deltas.is_empty());
        let records = trees.iter().map(|(_, deltas)| deltas.len()).sum::<usize>() + jobs.len();
        if records > 0 {
            let jobs = (jobs.len() > 0).then_some(jobs);
            self.send_batch(family, trees, jobs, keep_top)?;
        }
        Ok(records)
    }

    /// `INCR_ONLY` is on and events were applied: before time moves past
    /// the current event time, remember every listed job's priority at it
    /// (exactly where the oracle's `Replay` does).
    fn remember_before_moving_to(&mut self, t: Time) -> Result<usize, EngineError> {
        let state = self.book.state();
        if !(self.applied > 0 && t > state.now && state.config.flags.incr_only) {
            return Ok(0);
        }
        let now = state.now;
        let records = self.flush(false)?;
        self.send(Command::RememberIncrOnly(now))?;
        match self.reply() {
            Ok(Reply::Done) => {}
            _ => return Err(EngineError::WorkersGone),
        }
        // The floors per (partition, QOS) pair live in the book, as in the
        // oracle: each pending job with several pairs, evaluated now.
        let with_pairs: Vec<String> = self
            .book
            .state()
            .jobs
            .values()
            .filter(|job| job.is_pending() && job.has_pairs())
            .map(|job| job.id.clone())
            .collect();
        for id in with_pairs {
            if let Some(p) = self.job(&id)? {
                if p.state == JobState::Pending && !p.pairs.is_empty() {
                    let priorities: Vec<u64> = p.pairs.iter().map(|pair| pair.priority).collect();
                    self.book.remember_pair_priorities(&id, &priorities);
                }
            }
        }
        self.book.forget_pair_floors_of_unqueued_jobs();
        Ok(records)
    }

    /// Validate and apply a batch of log lines (in order), as one logical
    /// time; returns once every result reflects the batch.
    pub fn apply_batch(&mut self, lines: Vec<LogLine>) -> Result<BatchReport, EngineError> {
        let mut report = BatchReport::default();
        for line in lines {
            let outcome = line.event.and_then(|event| {
                let checked = self.book.check(line.line, &event)?;
                Ok((line.line, event, checked))
            });
            match outcome {
                Ok((number, event, checked)) => {
                    // Remembering sends and reads; it changes no state, so
                    // the token stays current.
                    report.input_records += self.remember_before_moving_to(event.t)?;
                    self.book
                        .apply_checked(number, &event, checked)
                        .expect("checked just before");
                    self.applied += 1;
                    report.applied += 1;
                }
                Err(rejection) => report.rejected.push(rejection),
            }
        }
        report.input_records += self.flush(true)?;
        Ok(report)
    }

    /// Move the engine's time forward to `t` without an event (a query's
    /// `--at`, as the oracle's `Replay::advance_to`): with `INCR_ONLY`, the
    /// last event time's priorities are remembered first. Earlier times
    /// change nothing.
    pub fn advance_to(&mut self, t: Time) -> Result<(), EngineError> {
        if t <= self.now() {
            return Ok(());
        }
        self.remember_before_moving_to(t)?;
        self.book.advance_to(t);
        self.flush(true)?;
        Ok(())
    }

    /// Records the dataflow stages of this process's workers have emitted
    /// since the start (cumulative): the tree part's facts and every
    /// priority stage's output. The input records a batch sent are in
    /// [`BatchReport::input_records`].
    pub fn touched_records(&self) -> u64 {
        self.touched.get()
    }

    /// Events applied since the start.
    pub fn applied(&self) -> u64 {
        self.applied
    }

    /// The time the engine is at (the last event's, or `advance_to`'s).
    pub fn now(&self) -> Time {
        self.book.state().now
    }

    /// The configuration in force.
    pub fn config(&self) -> &Config {
        &self.book.state().config
    }
}

impl Engine {
    fn priority_read(&self, command: Command) -> Result<Reply, EngineError> {
        self.send(command)?;
        self.reply().map_err(|_| EngineError::WorkersGone)
    }

    /// Name a result's user, account, partition and QOS (the dataflow's
    /// records carry only ids): from the row the job feed sent, else (a job
    /// with several partitions or QOS, whose pairs come along) from the book.
    fn identify(&self, mut priority: JobPriority) -> JobPriority {
        if !self.job_feed.identify_from_rows(&self.names, &mut priority) {
            crate::job_feed::identify(self.book.state(), &mut priority);
        }
        crate::job_feed::queue_marks(self.book.state(), &mut priority);
        priority
    }

    /// Is the scheduler's queue (`fairflow_model::report::entries`) the
    /// queue index's jobs in the index's order? Under Flux and Moab always;
    /// under Slurm when no active job has several (partition, QOS) pairs or
    /// is marked for expedited requeue and the partitions the active jobs
    /// name share one `PriorityTier`: `O(named partitions)`.
    fn entries_are_jobs(&self) -> bool {
        let state = self.book.state();
        if state.config.model != fairflow_model::PriorityModel::Slurm {
            return true;
        }
        if self.job_feed.any_paired() || !state.expedited.is_empty() {
            return false;
        }
        let mut tiers = self
            .job_feed
            .named_partitions(&self.names)
            .map(|name| state.partitions.get(name).map_or(0, |p| p.priority_tier));
        let first = tiers.next();
        tiers.all(|tier| Some(tier) == first)
    }

    /// The whole scheduler's queue when its entries are not the index's
    /// jobs (see [`Engine::entries_are_jobs`]): every listed job evaluated
    /// (`Engine::priorities`, named) and its entries sorted
    /// (`fairflow_model::report::entries::entry_queue`): `O(n log n)` per
    /// read, not yet incremental.
    fn entry_queue(&self) -> Result<Vec<JobPriority>, EngineError> {
        Ok(fairflow_model::report::entries::entry_queue(
            &self.priorities()?,
        ))
    }

    /// [`Engine::identify`] every result, shared.
    fn identify_all(&self, top: Vec<JobPriority>) -> SharedJobs {
        top.into_iter()
            .map(|p| self.identify(p))
            .collect::<Vec<_>>()
            .into()
    }

    /// Every listed job's priority as of the engine's time, in the oracle's
    /// `priority::evaluate` order (sprio).
    pub fn priorities(&self) -> Result<Vec<JobPriority>, EngineError> {
        match self.priority_read(Command::EvaluateAll(self.now()))? {
            Reply::Priorities(all) => Ok(all.into_iter().map(|p| self.identify(p)).collect()),
            _ => Err(EngineError::WorkersGone),
        }
    }

    /// [`Engine::priorities`] held compactly, in job-id order: each shard
    /// encodes its jobs as it evaluates them, and each is named here as the
    /// shards' lists are merged, so no step holds every job's decoded
    /// priority at once.
    pub fn priorities_compact(&self) -> Result<CompactJobs, EngineError> {
        match self.priority_read(Command::EvaluateAllCompact(self.now()))? {
            Reply::Compact(lists) => Ok(CompactJobs::merge_by_job(lists, |p| self.identify(p))),
            _ => Err(EngineError::WorkersGone),
        }
    }

    /// The first `k` entries of the scheduler's queue as of the engine's
    /// time, in the oracle's `priority::entry_queue` order, shared
    /// ([`SharedJobs`]): the index's jobs when they are the entries
    /// ([`Engine::entries_are_jobs`]), else [`Engine::entry_queue`].
    /// A read at the same time with nothing changed since shares the last
    /// one (named already): one reference count, whatever `k`. After the
    /// first read, every batch keeps the top `k'` (the largest `k` read, up
    /// to [`KEEP_TOP_MAX`]) current, read by worker 0 in the batch's round
    /// trip, so the first read after a batch copies too.
    pub fn top(&self, k: usize) -> Result<SharedJobs, EngineError> {
        let now = self.now();
        let generation = self.generation.load(Ordering::Relaxed);
        let mut last = self.last_top.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(read) = last.as_ref() {
            // A shorter result than asked for is the whole queue.
            let covers = k <= read.k || read.result.len() < read.k;
            if read.generation == generation && read.now == now && covers {
                return Ok(read.result.prefix(k));
            }
        }
        let top = if self.entries_are_jobs() {
            thresholds::decide(Threshold::TopBeyondKept, k > KEEP_TOP_MAX);
            if k <= KEEP_TOP_MAX {
                self.keep_top.fetch_max(k, Ordering::Relaxed);
            }
            match self.priority_read(Command::Top(k, now))? {
                Reply::Priorities(top) => self.identify_all(top),
                _ => return Err(EngineError::WorkersGone),
            }
        } else {
            let mut queue = self.entry_queue()?;
            queue.truncate(k);
            queue.into()
        };
        let replaced = last.replace(LastTop {
            generation,
            now,
            k,
            result: top.clone(),
        });
        drop(last);
        self.discard(replaced);
        Ok(top)
    }

    /// The scheduler's queue as of the engine's time up to and including
    /// the first entry of the job `id`, in the oracle's
    /// `priority::entry_queue` order (`None`: the job is not ranked now),
    /// read from the queue's index (`PriorityReader::through`) when its jobs
    /// are the entries, else cut from [`Engine::entry_queue`].
    pub fn queue_through(&self, id: &str) -> Result<Option<Vec<JobPriority>>, EngineError> {
        if !self.entries_are_jobs() {
            let mut queue = self.entry_queue()?;
            return Ok(queue.iter().position(|p| p.job == id).map(|index| {
                queue.truncate(index + 1);
                queue
            }));
        }
        let Some(id) = self.job_feed.job_id(id) else {
            return Ok(None);
        };
        match self.priority_read(Command::Through(id, self.now()))? {
            Reply::Through(through) => {
                Ok(through.map(|queue| queue.into_iter().map(|p| self.identify(p)).collect()))
            }
            _ => Err(EngineError::WorkersGone),
        }
    }

    /// One listed job's priority as of the engine's time.
    pub fn job(&self, id: &str) -> Result<Option<JobPriority>, EngineError> {
        let Some(id) = self.job_feed.job_id(id) else {
            return Ok(None);
        };
        match self.priority_read(Command::Job(id, self.now()))? {
            Reply::Job(job) => Ok(job.map(|p| self.identify(p))),
            _ => Err(EngineError::WorkersGone),
        }
    }
}

/// The tree dataflows' inputs when the tree moves from `old`'s dataflow
/// (`retracted`: everything it held) to `family`'s (`inserted`); one
/// dataflow gets both when the family stays.
fn tree_sends(
    old: Option<Family>,
    family: Family,
    retracted: Deltas,
    inserted: Deltas,
) -> Vec<(Family, Deltas)> {
    match old {
        Some(old) if old != family => vec![(old, retracted), (family, inserted)],
        _ => {
            let mut deltas = retracted;
            deltas.extend(inserted);
            vec![(family, deltas)]
        }
    }
}

/// `family`'s entry of `trees`, added when missing.
fn tree_entry(trees: &mut Vec<(Family, Deltas)>, family: Family) -> &mut Deltas {
    let at = match trees.iter().position(|(f, _)| *f == family) {
        Some(at) => at,
        None => {
            trees.push((family, Deltas::default()));
            trees.len() - 1
        }
    };
    &mut trees[at].1
}

impl Drop for Engine {
    fn drop(&mut self) {
        // Disconnecting the command channel ends worker 0's loop; dropping its
        // inputs then completes the dataflow on every worker.
        self.commands.take();
        self.worker0.unpark();
        if let Some(guards) = self.guards.take() {
            drop(guards.join());
        }
    }
}
