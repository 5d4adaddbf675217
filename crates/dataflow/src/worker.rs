//! The loop each timely worker runs, and the command protocol between the
//! driver and worker 0. Worker 0 of the process that hosts the driver
//! receives [`Command`]s on a channel, feeds the inputs of the dataflow
//! (`graph::build`), steps until the probe passed the batch and serves
//! reads between batches; every other worker closes its (empty) inputs at
//! once and only steps, so the worker logic does not depend on how the
//! workers were started (threads of one process, or timely's multi-process
//! cluster mode).

use crossbeam_channel::{Receiver, Sender, TryRecvError};
use fairflow_model::report::JobPriority;
use timely::worker::Worker;

use crate::factors::Family;
use crate::graph::{build, Fact};
use crate::job_feed::JobDeltas;
use crate::names::JobNames;
use crate::priority::{IncrFloors, Time64};
use crate::tree_feed::Deltas;
use crate::types::{AssocId, Epoch, JobId, NodeId, TouchCounter};

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
        top: Option<(usize, Time64)>,
    },
    /// Send every fact of the result arrangement (consolidated).
    ReadFacts,
    /// Send every user association's fair-share factor (by interned name).
    ReadFactors,
    /// `INCR_ONLY`: remember every listed job's priority at this time
    /// (`PriorityReader::remember_incr_only`).
    RememberIncrOnly(Time64),
    /// Every listed job's priority at this time (`evaluate_all`).
    EvaluateAll(Time64),
    /// Send the `INCR_ONLY` memory (a snapshot).
    ReadFloors,
    /// Replace the `INCR_ONLY` memory (a restore).
    SetFloors(IncrFloors),
    /// The first `k` of the queue at this time.
    Top(usize, Time64),
    /// One job's priority at this time.
    Job(JobId, Time64),
    /// The queue at this time up to and including a job
    /// (`PriorityReader::through`).
    Through(JobId, Time64),
}

/// What worker 0 answers.
#[derive(Debug)]
pub enum Reply {
    /// Worker 0 is running on this thread (unpark it after sending a command).
    Ready(std::thread::Thread),
    /// The batch is reflected in the result arrangement; the top `k'` if
    /// the batch asked for it.
    BatchDone(Option<Vec<JobPriority>>),
    /// Every `(node, fact)` with a positive count.
    Facts(Vec<(NodeId, Fact)>),
    /// Fair-share factors by interned `(account, user)`.
    Factors(std::collections::BTreeMap<AssocId, f64>),
    /// Job priorities (`EvaluateAll`, `Top`).
    Priorities(Vec<JobPriority>),
    /// One job's priority, if it is listed.
    Job(Option<JobPriority>),
    /// The queue up to and including a job, if it is ranked.
    Through(Option<Vec<JobPriority>>),
    /// The `INCR_ONLY` memory.
    Floors(IncrFloors),
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
}

/// The loop of one worker. `feeder` is `Some` only for the worker the driver
/// talks to; `touched` is the process's one record counter (shared by its workers).
pub fn run_worker(
    worker: &mut Worker,
    feeder: Option<Feeder>,
    touched: TouchCounter,
    names: JobNames,
) {
    let mut dataflows = build(worker, &touched, names);
    let Some(feeder) = feeder else {
        // Not fed: close the inputs so only the feeding worker drives progress.
        drop(dataflows);
        while worker.step_or_park(None) {}
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
    loop {
        match feeder.commands.try_recv() {
            Ok(Command::Batch {
                epoch,
                family,
                trees,
                jobs,
                top,
            }) => {
                active = family;
                // Only the dataflows fed at `epoch` move to it; the others
                // stay where they are and do not step.
                let mut fed: Vec<usize> = Vec::with_capacity(trees.len());
                for (family, deltas) in trees {
                    dataflows.trees[family.index()].inputs.feed(epoch, deltas);
                    fed.push(family.index());
                }
                let jobs_fed = jobs.is_some();
                if let Some(jobs) = jobs {
                    dataflows.jobs.feed(epoch, jobs);
                }
                let behind = |dataflows: &crate::graph::Dataflows| {
                    (jobs_fed && dataflows.jobs_probe.less_than(&(epoch + 1)))
                        || fed
                            .iter()
                            .any(|&at| dataflows.trees[at].probe.less_than(&(epoch + 1)))
                };
                while behind(&dataflows) {
                    worker.step();
                }
                dataflows.reader.absorb();
                let top = top.map(|(k, now)| dataflows.reader.top(k, now));
                if feeder.replies.send(Reply::BatchDone(top)).is_err() {
                    break;
                }
            }
            Ok(Command::RememberIncrOnly(now)) => {
                dataflows.reader.remember_incr_only(now);
                if feeder.replies.send(Reply::Done).is_err() {
                    break;
                }
            }
            Ok(Command::ReadFloors) => {
                let floors = dataflows.reader.floors().clone();
                if feeder.replies.send(Reply::Floors(floors)).is_err() {
                    break;
                }
            }
            Ok(Command::SetFloors(floors)) => {
                dataflows.reader.set_floors(floors);
                if feeder.replies.send(Reply::Done).is_err() {
                    break;
                }
            }
            Ok(Command::EvaluateAll(now)) => {
                let all = dataflows.reader.evaluate_all(now);
                if feeder.replies.send(Reply::Priorities(all)).is_err() {
                    break;
                }
            }
            Ok(Command::Top(k, now)) => {
                let top = dataflows.reader.top(k, now);
                if feeder.replies.send(Reply::Priorities(top)).is_err() {
                    break;
                }
            }
            Ok(Command::Through(id, now)) => {
                let through = dataflows.reader.through(id, now);
                if feeder.replies.send(Reply::Through(through)).is_err() {
                    break;
                }
            }
            Ok(Command::Job(id, now)) => {
                let job = dataflows.reader.job(id, now);
                if feeder.replies.send(Reply::Job(job)).is_err() {
                    break;
                }
            }
            Ok(Command::ReadFactors) => {
                let factors = dataflows.reader.fairshare_factors();
                if feeder.replies.send(Reply::Factors(factors)).is_err() {
                    break;
                }
            }
            Ok(Command::ReadFacts) => {
                if feeder
                    .replies
                    .send(Reply::Facts(dataflows.trees[active.index()].facts.read()))
                    .is_err()
                {
                    break;
                }
            }
            Err(TryRecvError::Empty) => {
                worker.step_or_park(None);
            }
            Err(TryRecvError::Disconnected) => break,
        }
    }
    drop(dataflows);
    while worker.step_or_park(None) {}
}
