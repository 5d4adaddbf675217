//! The loop each timely worker runs, and the command protocol between the
//! driver and worker 0. Worker 0 of the process that hosts the driver
//! receives [`Command`]s on a channel, feeds the inputs of the dataflow
//! (`graph::build`), steps until the probe passed the batch and serves
//! reads between batches; every other worker closes its (empty) inputs at
//! once, steps, and answers the reads worker 0 sends every shard of the
//! queue through the control dataflow (`shards`), so the worker logic
//! does not depend on how the workers were started (threads of one
//! process, or timely's multi-process cluster mode).

use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvError, Sender, TryRecvError};
use fairflow_model::report::{CompactJobs, JobPriority, JobState, SharedJobs};
use fairflow_model::Time;
use timely::worker::Worker;

use crate::factors::Family;
use crate::graph::{build, priority_upper, Dataflows, ListedFacts};
use crate::job_feed::JobDeltas;
use crate::names::JobNames;
use crate::priority::reader::ahead::AheadCounts;
use crate::priority::reader::factors::TrialFactor;
use crate::priority::reader::waiting::WaitingEntry;
use crate::priority::reader::whatif::{Tally, TallyRequest, TrialJob};
use crate::priority::{IncrFloors, PriorityReader};
use crate::tree_feed::Deltas;
use crate::types::{AssocId, Epoch, JobId, NameId, NodeId, TouchCounter};

mod page;
mod shards;
use shards::{
    ask_all, compact_lists, found_job, holdings, merge_ahead, merge_by_name, merge_counts,
    merge_floors, merge_ranked, merge_tallies, merge_waiting, trial_jobs, Jobs, Request, Shards,
};

/// What the driver asks worker 0 to do.
#[derive(Debug)]
pub enum Command {
    /// Insert the deltas at `epoch` into the dataflows they are for, then
    /// step until every result reflects it.
    Batch {
        /// The batch's logical time.
        epoch: Epoch,
        /// The family whose tree dataflow holds the tree after the batch
        /// (the one the tree's reads come from).
        family: Family,
        /// The tree dataflows' input changes, by family (usually one; two
        /// when the tree moves between families).
        trees: Vec<(Family, Deltas)>,
        /// The priority dataflow's input changes, if any.
        jobs: Option<JobDeltas>,
        /// Then read the first `k` of the queue at this time (the top `k'`
        /// the driver keeps current), answered with `BatchDone`.
        top: Option<(usize, Time)>,
    },
    /// Send every user association's fair-share factor (by interned name).
    ReadFactors,
    /// Send every user association's fair-share factor as a dense table by
    /// interned name (`None`: none).
    ReadFactorTable,
    /// Absorb what worker 0's reader captured and watch the factors the
    /// next absorb changes (a what-if's trial: `PriorityReader::watch_factors`).
    WatchFactors,
    /// Send the factors the watched absorb changed.
    ReadFactorChanges,
    /// Send the facts of these nodes (the whole tree in sshare order, or
    /// `explain`'s path), by their index in the list.
    ReadFactsOf(Arc<[NodeId]>),
    /// Send the fair-share factors of these user associations only.
    ReadFactorsOf(Vec<AssocId>),
    /// `INCR_ONLY`: remember every listed job's priority at this time
    /// (`PriorityReader::remember_incr_only`).
    RememberIncrOnly(Time),
    /// Every listed job's priority at this time (`evaluate_all`).
    EvaluateAll(Time),
    /// The same, each shard's held compactly and ordered by job id
    /// (`evaluate_all_compact`).
    EvaluateAllCompact(Time),
    /// Send the `INCR_ONLY` memory (a snapshot).
    ReadFloors,
    /// Replace the `INCR_ONLY` memory (a restore).
    SetFloors(IncrFloors),
    /// The first `k` of the queue at this time.
    Top(usize, Time),
    /// One job's priority at this time.
    Job(JobId, Time),
    /// The queue at this time up to and including a job
    /// (`PriorityReader::through`).
    Through(JobId, Time),
    /// The page of `k` entries from `offset` of the queue at this time,
    /// counted (`page`): offset, `k`, the time.
    Page(u64, u64, Time),
    /// A job's place counted, not built (`PriorityReader::count_ahead`):
    /// the job, its partition, the time.
    CountAhead(JobId, NameId, Time),
    /// Every shard's jobs of the user associations whose factor a trial
    /// changed (sorted by association) whose priority moves, every listed
    /// one or the ranked ones, keyed on both sides at this time (a
    /// what-if's changed jobs).
    TrialJobs(Vec<TrialFactor>, bool, Time),
    /// Every shard's tally against a what-if's probes, merged.
    Tally(TallyRequest),
    /// What each worker's shard holds.
    Holdings,
    /// The waiting users (`PriorityReader::waiting`) of every shard:
    /// minimum factor (`f64` bits), limit.
    Waiting(u64, usize),
    /// Every shard's users' ranked-job counts, for ids below this.
    RankedCounts(u32),
    /// A read the driver replaced, freed on worker 0's thread while it
    /// waits for the next command (`Engine::discard`); not answered.
    Discard(SharedJobs),
}

/// What worker 0 answers.
#[derive(Debug)]
pub enum Reply {
    /// Worker 0 is running on this thread (unpark it after sending a command).
    Ready(std::thread::Thread),
    /// The batch is reflected in every result; the top `k'` if
    /// the batch asked for it.
    BatchDone(Option<Vec<JobPriority>>),
    /// The listed nodes' facts (`ReadFactsOf`).
    Facts(ListedFacts),
    /// Fair-share factors by interned `(account, user)`.
    Factors(std::collections::BTreeMap<AssocId, f64>),
    /// Job priorities (`EvaluateAll`, `Top`).
    Priorities(Vec<JobPriority>),
    /// Each shard's job priorities held compactly, ordered by job id
    /// (`EvaluateAllCompact`).
    Compact(Vec<CompactJobs>),
    /// One job's priority, if it is listed.
    Job(Option<JobPriority>),
    /// The queue up to and including a job, if it is ranked.
    Through(Option<Vec<JobPriority>>),
    /// A page of the queue counted (`None`: not counted).
    Page(Option<Vec<JobPriority>>),
    /// A ranked job and the counts ahead of it (`None`: the job is not
    /// ranked; no counts: the model is not counted).
    Ahead(Option<Box<(JobPriority, Option<AheadCounts>)>>),
    /// The `INCR_ONLY` memory.
    Floors(IncrFloors),
    /// What each worker's shard holds, by worker index.
    Holdings(Vec<crate::cluster::ShardHoldings>),
    /// Fair-share factors as a dense table by interned `(account, user)`.
    FactorTable(Vec<Option<f64>>),
    /// The factors a trial changed: `(association, before, after)`.
    FactorChanges(Vec<TrialFactor>),
    /// Every shard's waiting users.
    Waiting(Vec<WaitingEntry>),
    /// Every user association with ranked jobs, with how many.
    Counts(Vec<(AssocId, u64)>),
    /// Every shard's jobs a trial moves.
    TrialJobs(Vec<TrialJob>),
    /// Every shard's tally, merged (`None`: the model is not tallied).
    Tally(Option<Tally>),
    /// A command without a result is done.
    Done,
}

/// The channels worker 0 is driven through.
#[derive(Debug, Clone)]
pub struct Feeder {
    /// Commands from the driver.
    pub commands: Receiver<Command>,
    /// Replies to the driver.
    pub replies: Sender<Reply>,
    /// How long worker 0 polls for the next command after serving one
    /// before it parks (`None`: park at once); see [`HANDOFF_SPIN`].
    pub spin: Option<Duration>,
}

/// How long the driver polls for worker 0's reply, and worker 0 for the
/// driver's next command, before parking, when every thread of the
/// process has a core of its own (the driver and one worker on two cores).
/// Waking a parked thread costs tens of microseconds on a virtual machine,
/// twice per command: more than a whole single-job batch's work in the
/// dataflow. With more threads than cores the poll would take a core from
/// a worker that has work, so both sides park at once (`None`).
pub const HANDOFF_SPIN: Duration = Duration::from_millis(2);

/// The handoff's poll for this many threads per process: [`HANDOFF_SPIN`]
/// when the driver and the process's workers each have a core.
pub fn handoff_spin(workers_per_process: usize) -> Option<Duration> {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    (workers_per_process < cores).then_some(HANDOFF_SPIN)
}

/// Receive from `channel`, polling it for up to `spin` before blocking.
pub fn recv_polling<T>(channel: &Receiver<T>, spin: Option<Duration>) -> Result<T, RecvError> {
    if let Some(spin) = spin {
        let started = Instant::now();
        let mut polls = 0u32;
        loop {
            match channel.try_recv() {
                Ok(message) => return Ok(message),
                Err(TryRecvError::Disconnected) => return Err(RecvError),
                Err(TryRecvError::Empty) => {}
            }
            // Yield, not spin: a thread with work (another engine's, in
            // the tests) gets the core; with none, this returns at once.
            std::thread::yield_now();
            polls = polls.wrapping_add(1);
            // The clock only now and then: it is not free.
            if polls.is_multiple_of(8) && started.elapsed() >= spin {
                break;
            }
        }
    }
    channel.recv()
}

/// The loop of one worker. `feeder` is `Some` only for the worker the driver
/// talks to; `touched` is the process's one record counter (shared by its
/// workers); `names` the process's job names (filled by the driver in
/// process 0, and with `share_names` from the dataflow for the jobs on this
/// process's shards).
pub fn run_worker(
    worker: &mut Worker,
    feeder: Option<Feeder>,
    touched: TouchCounter,
    names: JobNames,
    share_names: bool,
) {
    let mut dataflows = build(worker, &touched, names, share_names);
    let mut shards = Shards::build(worker);
    let Some(feeder) = feeder else {
        serve_shard(worker, dataflows, shards);
        return;
    };
    // Nothing is sent for epoch 0: results start at epoch 1.
    dataflows.jobs.advance_and_flush(1);
    for tree in &mut dataflows.trees {
        tree.inputs.advance_and_flush(1);
    }
    let mut active = Family::FairTreeSlurm;
    if feeder
        .replies
        .send(Reply::Ready(std::thread::current()))
        .is_err()
    {
        return;
    }
    while let Some(command) = next_command(worker, &feeder) {
        if let Command::Discard(replaced) = command {
            drop(replaced);
            continue;
        }
        let reply = serve_command(command, worker, &mut dataflows, &mut shards, &mut active);
        if feeder.replies.send(reply).is_err() {
            break;
        }
    }
    // Closing the requests (with the inputs) lets every other worker stop.
    drop(shards);
    drop(dataflows);
    while worker.step_or_park(None) {}
}

/// A worker the driver does not feed: close the inputs so only the feeding
/// worker drives progress; keep the shard's reader and answer worker 0's
/// requests until they close.
fn serve_shard(worker: &mut Worker, dataflows: Dataflows, mut shards: Option<Shards>) {
    let Dataflows {
        trees,
        jobs,
        rows_probe,
        contexts_probe,
        mut reader,
    } = dataflows;
    drop(jobs);
    drop(trees);
    if let Some(shards) = &mut shards {
        while !shards.stopped() {
            worker.step_or_park(None);
            // The shard's jobs of every batch both priority dataflows
            // passed, absorbed while worker 0 absorbs its own.
            let upper = priority_upper(&rows_probe, &contexts_probe);
            reader.absorb_records_before(upper.unwrap_or(Epoch::MAX));
            shards.serve(&mut reader);
        }
    }
    drop(shards);
    drop(reader);
    while worker.step_or_park(None) {}
}

/// The driver's next command, stepping what is active while none has come:
/// polling for `feeder.spin` since the last one, then parking. `None` once
/// the driver has gone.
fn next_command(worker: &mut Worker, feeder: &Feeder) -> Option<Command> {
    // Since when worker 0 has had no command (`None`: it just served one).
    let mut idle_since: Option<Instant> = None;
    loop {
        match feeder.commands.try_recv() {
            Ok(command) => return Some(command),
            Err(TryRecvError::Empty) => {
                let idle = idle_since.get_or_insert_with(Instant::now).elapsed();
                match feeder.spin {
                    // Poll: step what is active without parking, look again.
                    Some(spin) if idle < spin => {
                        worker.step_or_park(Some(Duration::ZERO));
                        std::thread::yield_now();
                    }
                    _ => {
                        worker.step_or_park(None);
                    }
                }
            }
            Err(TryRecvError::Disconnected) => return None,
        }
    }
}

/// The pending job `job` at `now` and what every shard counted ahead of it
/// in `partition` (`Command::CountAhead`); `None` when it is not pending.
fn count_ahead(
    shards: &mut Option<Shards>,
    worker: &mut Worker,
    reader: &mut PriorityReader,
    (job, partition): (JobId, NameId),
    now: Time,
) -> Option<Box<(JobPriority, Option<AheadCounts>)>> {
    let target = found_job(ask_all(shards, worker, reader, Request::Job(job, now)))?;
    if target.state != JobState::Pending {
        return None;
    }
    let request = Request::CountAhead(Jobs(vec![target.clone()]), job, partition, now);
    let counts = merge_ahead(ask_all(shards, worker, reader, request));
    Some(Box::new((target, counts)))
}

/// Serve a what-if's read of the shards (`engine::whatif_live`): the jobs
/// of some associations, or a tally.
fn serve_whatif(
    read: Command,
    worker: &mut Worker,
    shards: &mut Option<Shards>,
    reader: &mut PriorityReader,
) -> Reply {
    match read {
        Command::TrialJobs(factors, all_listed, now) => {
            let request = Request::TrialJobs(factors, all_listed, now);
            Reply::TrialJobs(trial_jobs(ask_all(shards, worker, reader, request)))
        }
        Command::Tally(request) => {
            let (shifts, keep) = (request.shifts.clone(), request.keep);
            let answers = ask_all(shards, worker, reader, Request::Tally(request));
            Reply::Tally(merge_tallies(answers, &shifts, keep))
        }
        _ => Reply::Done,
    }
}

/// Serve a read of the users' factors: worker 0's own (every shard holds
/// every factor: the facts are broadcast).
fn serve_factors(read: Command, reader: &mut PriorityReader) -> Reply {
    match read {
        Command::ReadFactors => Reply::Factors(reader.fairshare_factors()),
        Command::ReadFactorsOf(assocs) => Reply::Factors(reader.fairshare_factors_of(&assocs)),
        Command::ReadFactorTable => Reply::FactorTable(reader.fairshare_factors_dense()),
        Command::WatchFactors => {
            reader.watch_factors();
            Reply::Done
        }
        Command::ReadFactorChanges => Reply::FactorChanges(reader.take_factor_changes()),
        _ => Reply::Done,
    }
}

/// Serve one command: a batch ([`run_batch`]), or a read of the shards
/// (asked of every shard and merged) or of worker 0's own state.
fn serve_command(
    command: Command,
    worker: &mut Worker,
    dataflows: &mut Dataflows,
    shards: &mut Option<Shards>,
    active: &mut Family,
) -> Reply {
    let reader = &mut dataflows.reader;
    match command {
        Command::Batch {
            epoch,
            family,
            trees,
            jobs,
            top,
        } => {
            *active = family;
            let batch = Batch { epoch, trees, jobs };
            Reply::BatchDone(run_batch(worker, dataflows, shards, batch, top))
        }
        Command::RememberIncrOnly(now) => {
            ask_all(shards, worker, reader, Request::RememberIncrOnly(now));
            Reply::Done
        }
        Command::ReadFloors => Reply::Floors(merge_floors(ask_all(
            shards,
            worker,
            reader,
            Request::ReadFloors,
        ))),
        Command::SetFloors(floors) => {
            ask_all(shards, worker, reader, Request::SetFloors(floors));
            Reply::Done
        }
        Command::EvaluateAll(now) => Reply::Priorities(merge_by_name(ask_all(
            shards,
            worker,
            reader,
            Request::EvaluateAll(now),
        ))),
        Command::EvaluateAllCompact(now) => Reply::Compact(compact_lists(ask_all(
            shards,
            worker,
            reader,
            Request::EvaluateAllCompact(now),
        ))),
        Command::Top(k, now) => Reply::Priorities(merge_ranked(
            ask_all(shards, worker, reader, Request::Top(k, now)),
            k,
        )),
        Command::Through(id, now) => {
            let target = found_job(ask_all(shards, worker, reader, Request::Job(id, now)));
            let through = target
                .filter(|target| target.state == JobState::Pending)
                .map(|target| {
                    let request = Request::Ahead(Jobs(vec![target]), now);
                    merge_ranked(ask_all(shards, worker, reader, request), usize::MAX)
                });
            Reply::Through(through)
        }
        Command::Page(offset, k, now) => {
            Reply::Page(page::page_counted(shards, worker, reader, (offset, k), now))
        }
        Command::CountAhead(id, partition, now) => {
            Reply::Ahead(count_ahead(shards, worker, reader, (id, partition), now))
        }
        read @ (Command::TrialJobs(..) | Command::Tally(_)) => {
            serve_whatif(read, worker, shards, reader)
        }
        Command::Job(id, now) => Reply::Job(found_job(ask_all(
            shards,
            worker,
            reader,
            Request::Job(id, now),
        ))),
        read @ (Command::ReadFactors
        | Command::ReadFactorsOf(_)
        | Command::ReadFactorTable
        | Command::WatchFactors
        | Command::ReadFactorChanges) => serve_factors(read, reader),
        Command::Holdings => {
            Reply::Holdings(holdings(ask_all(shards, worker, reader, Request::Holdings)))
        }
        Command::Waiting(min_factor_bits, limit) => {
            let request = Request::Waiting(min_factor_bits, limit);
            Reply::Waiting(merge_waiting(ask_all(shards, worker, reader, request)))
        }
        Command::RankedCounts(assocs) => {
            let request = Request::RankedCounts(assocs);
            Reply::Counts(merge_counts(ask_all(shards, worker, reader, request)))
        }
        Command::ReadFactsOf(nodes) => {
            Reply::Facts(dataflows.trees[active.index()].facts.read_listed(&nodes))
        }
        // Freed by the loop before it serves a command (`run_worker`).
        Command::Discard(_) => Reply::Done,
    }
}

/// One batch's input changes ([`Command::Batch`]'s).
struct Batch {
    epoch: Epoch,
    trees: Vec<(Family, Deltas)>,
    jobs: Option<JobDeltas>,
}

/// Insert a batch's deltas into the dataflows they are for and step until
/// every result reflects it; then the first `k` of the queue at `now` if
/// `top` asks for them.
fn run_batch(
    worker: &mut Worker,
    dataflows: &mut Dataflows,
    shards: &mut Option<Shards>,
    batch: Batch,
    top: Option<(usize, Time)>,
) -> Option<Vec<JobPriority>> {
    let Batch { epoch, trees, jobs } = batch;
    // Only the dataflows fed at `epoch` move to it; the others
    // stay where they are and do not step.
    let mut fed: Vec<usize> = Vec::with_capacity(trees.len());
    for (family, deltas) in trees {
        dataflows.trees[family.index()].inputs.feed(epoch, deltas);
        fed.push(family.index());
    }
    let jobs_fed = jobs
        .map(|jobs| dataflows.jobs.feed(epoch, jobs))
        .unwrap_or_default();
    let behind = |dataflows: &Dataflows| {
        dataflows.priority_behind(jobs_fed, epoch)
            || fed
                .iter()
                .any(|&at| dataflows.trees[at].probe.less_than(&(epoch + 1)))
    };
    while behind(dataflows) {
        worker.step();
    }
    let reader = &mut dataflows.reader;
    // With several shards, a top read absorbs on every worker
    // at once: worker 0 sends the request first and absorbs
    // its own shard as it answers, while the others absorb
    // theirs (each answer absorbs first).
    if top.is_none() || shards.is_none() {
        reader.absorb();
    }
    top.map(|(k, now)| merge_ranked(ask_all(shards, worker, reader, Request::Top(k, now)), k))
}
