//! The queue sharded across workers, and the reads that need every shard.
//!
//! Each worker's [`PriorityReader`] holds the queue of its shard: the job
//! records the priority dataflow exchanges to it ([`crate::priority::shard_key`]:
//! by user association, under Moab by user) and every fact (broadcast: the
//! factors, the sorted tree, the context). A read that needs every shard
//! (the top `k` of a batch or of a read, `sprio`, one job, the queue through
//! a job, the `INCR_ONLY` memory, what the shards hold) cannot reach the other
//! workers through the driver's channel: in timely's multi-process mode the
//! other processes have no driver. So it travels through a small control
//! dataflow built by every worker: worker 0 sends a [`Request`] on an
//! input, broadcast to every worker; each worker answers it from its shard
//! on its own `answers` input, exchanged to worker 0, at the request's
//! logical time (every worker answers every request, in order), and worker
//! 0 steps until its probe on the answers passed that time: then every
//! shard's answer is in. With one worker there is no control dataflow:
//! worker 0 reads its one queue directly (no round trip, no merge).
//!
//! Merges are exact: a shard's top `k` is the first `k` of the whole
//! queue's order restricted to the shard (the order is a total order on
//! `QueueKey`, the same in every shard), so the first `k` of the shards'
//! lists merged are the whole queue's first `k`; the jobs ahead of a target
//! are the union of each shard's; `sprio` is every shard's jobs in name
//! order. A request is answered only after every update of the batches
//! before it is in the shard's capture: worker 0 sends it once its probes
//! passed the batch, and a probe passes a time only once every worker's
//! capture operator consumed its updates up to it.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

use fairflow_model::report::{CompactJobs, JobPriority, JobState, PairPriority, PriorityFactor};
use fairflow_model::{PriorityModel, Time};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::{Exchange, Pipeline};
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::probe::Handle as ProbeHandle;
use timely::dataflow::operators::vec::{Broadcast, Input};
use timely::dataflow::operators::Probe;
use timely::dataflow::InputHandleVec;
use timely::worker::Worker;

use crate::priority::reader::ahead::{AheadCounts, Target};
use crate::priority::reader::factors::TrialFactor;
use crate::priority::reader::page::WindowCount;
use crate::priority::reader::waiting::WaitingEntry;
use crate::priority::reader::whatif::{Tally, TallyRequest, TrialJob};
use crate::priority::{IncrFloors, PriorityReader};
use crate::types::{AccountId, AssocId, JobId, NameId};

/// Job priorities as they travel between processes. `JobPriority`'s own
/// serde form skips an empty `pairs` (for JSON), which a non-self-describing
/// encoding such as timely's cannot read back, so between processes each
/// job travels as [`WireJob`], every field written. (Within a process
/// timely moves the values themselves, never encoded.)
#[derive(Debug, Clone, Default)]
pub(crate) struct Jobs(pub Vec<JobPriority>);

/// [`JobPriority`] with every field written (see [`Jobs`]).
#[derive(serde::Serialize, serde::Deserialize)]
struct WireJob {
    job: String,
    user: String,
    account: String,
    partition: String,
    qos: String,
    submit_at: Time,
    priority: u64,
    state: JobState,
    model: PriorityModel,
    factors: Vec<PriorityFactor>,
    pairs: Vec<PairPriority>,
}

impl serde::Serialize for Jobs {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        for p in &self.0 {
            seq.serialize_element(&WireJob {
                job: p.job.clone(),
                user: p.user.clone(),
                account: p.account.clone(),
                partition: p.partition.clone(),
                qos: p.qos.clone(),
                submit_at: p.submit_at,
                priority: p.priority,
                state: p.state,
                model: p.model,
                factors: p.factors.clone(),
                pairs: p.pairs.clone(),
            })?;
        }
        seq.end()
    }
}

impl<'de> serde::Deserialize<'de> for Jobs {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let wire = Vec::<WireJob>::deserialize(deserializer)?;
        Ok(Jobs(
            wire.into_iter()
                .map(|w| JobPriority {
                    job: w.job,
                    user: w.user,
                    account: w.account,
                    partition: w.partition,
                    qos: w.qos,
                    submit_at: w.submit_at,
                    priority: w.priority,
                    state: w.state,
                    model: w.model,
                    factors: w.factors,
                    pairs: w.pairs,
                    // The driver marks results (`job_feed::queue_marks`).
                    priority_tier: 0,
                    expedited: false,
                })
                .collect(),
        ))
    }
}

/// A read every shard answers (see the module documentation).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) enum Request {
    /// The shard's first `k` at `now`.
    Top(usize, Time),
    /// The shard's listed jobs' priorities at `now`.
    EvaluateAll(Time),
    /// The same, held compactly, ordered by job id.
    EvaluateAllCompact(Time),
    /// One job's priority at `now`, from the shard that holds it.
    Job(JobId, Time),
    /// The shard's ranked jobs at `now` at or ahead of this one (one job).
    Ahead(Jobs, Time),
    /// `INCR_ONLY`: remember the shard's jobs' priorities at `now`.
    RememberIncrOnly(Time),
    /// The shard's `INCR_ONLY` memory.
    ReadFloors,
    /// Replace the `INCR_ONLY` memory (each shard keeps its own jobs'
    /// floors from its next remembering on).
    SetFloors(IncrFloors),
    /// What the shard holds (`crate::cluster::ShardHoldings`).
    Holdings,
    /// The shard's waiting users (`PriorityReader::waiting`): minimum
    /// factor (`f64` bits), limit.
    Waiting(u64, usize),
    /// The shard's users' ranked-job counts
    /// (`PriorityReader::ranked_counts`), for ids below this.
    RankedCounts(u32),
    /// What the shard counts ahead of this job (one job: its id and
    /// partition follow), `PriorityReader::count_ahead`.
    CountAhead(Jobs, JobId, NameId, Time),
    /// The shard's jobs of the user associations whose factor a trial
    /// changed (sorted) and whose priority moves with it, every listed one
    /// or the ranked ones, at a time (`PriorityReader::trial_jobs`).
    TrialJobs(Vec<TrialFactor>, bool, Time),
    /// The shard's tally against a what-if's probes
    /// (`PriorityReader::tally_probes`).
    Tally(TallyRequest),
    /// How many of the shard's ranked jobs are above a priority at a time
    /// (`PriorityReader::count_above`).
    CountAbove(u64, Time),
    /// The shard's ranked jobs above and inside a window of priorities
    /// `[low, high]` at a time (`PriorityReader::window`).
    Window((u64, u64), Time),
    /// The shard's listed jobs among these, evaluated at a time.
    Jobs(Vec<JobId>, Time),
}

/// One shard's answer to a [`Request`].
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) enum Answer {
    /// Job priorities (`Top`, `EvaluateAll`, `Ahead`).
    Priorities(Jobs),
    /// Job priorities held compactly, ordered by job id
    /// (`EvaluateAllCompact`).
    Compact(CompactJobs),
    /// One job's priority, if the shard holds it (none or one).
    Job(Jobs),
    /// The shard's `INCR_ONLY` memory.
    Floors(IncrFloors),
    /// What the shard holds.
    Holdings(crate::cluster::ShardHoldings),
    /// The shard's waiting users.
    Waiting(Vec<WaitingEntry>),
    /// The shard's users' ranked-job counts.
    Counts(Vec<(AssocId, u64)>),
    /// What the shard counted ahead of a job (`CountAhead`; `None`: the
    /// model is not counted): jobs ahead, by account, in the job's
    /// partition; the job just ahead (none or one).
    Ahead(Option<ShardCounts>, Jobs),
    /// The shard's jobs a trial moves (`TrialJobs`).
    TrialJobs(Vec<TrialJob>),
    /// The shard's tally (`None`: the model is not tallied): its counts,
    /// and its kept jobs' intervals beside the jobs.
    Tally(Option<(Vec<u64>, Vec<u64>)>, Jobs),
    /// The shard's count above a priority (`None`: not counted).
    Above(Option<u64>),
    /// The shard's window of priorities (`None`: not counted).
    Window(Option<WindowCount>),
    /// Done (requests without a result).
    Done,
}

/// One shard's counts ahead of a job: the jobs ahead, by account, and in
/// the job's partition.
pub(crate) type ShardCounts = (u64, Vec<(AccountId, u64)>, u64);

/// The answer of one shard's `reader` to `request`.
pub(crate) fn answer(reader: &mut PriorityReader, request: Request) -> Answer {
    match request {
        Request::Top(k, now) => Answer::Priorities(Jobs(reader.top(k, now))),
        Request::EvaluateAll(now) => Answer::Priorities(Jobs(reader.evaluate_all(now))),
        Request::EvaluateAllCompact(now) => Answer::Compact(reader.evaluate_all_compact(now)),
        Request::Job(job, now) => Answer::Job(Jobs(reader.job(job, now).into_iter().collect())),
        Request::Ahead(target, now) => Answer::Priorities(Jobs(
            target
                .0
                .first()
                .map(|target| reader.ahead_of(target, now))
                .unwrap_or_default(),
        )),
        Request::RememberIncrOnly(now) => {
            reader.remember_incr_only(now);
            Answer::Done
        }
        Request::ReadFloors => Answer::Floors(reader.floors().clone()),
        Request::SetFloors(floors) => {
            reader.set_floors(floors);
            Answer::Done
        }
        Request::Holdings => Answer::Holdings(reader.holdings()),
        Request::Waiting(min_factor_bits, limit) => {
            Answer::Waiting(reader.waiting(f64::from_bits(min_factor_bits), limit))
        }
        Request::RankedCounts(assocs) => Answer::Counts(reader.ranked_counts(assocs)),
        Request::CountAhead(target, job, partition, now) => {
            count_ahead(reader, target, job, partition, now)
        }
        Request::TrialJobs(factors, all_listed, now) => {
            Answer::TrialJobs(reader.trial_jobs(&factors, all_listed, now))
        }
        Request::CountAbove(threshold, now) => Answer::Above(reader.count_above(threshold, now)),
        Request::Window(window, now) => Answer::Window(reader.window(window, now)),
        Request::Jobs(jobs, now) => Answer::Priorities(Jobs(
            (jobs.iter())
                .filter_map(|&job| reader.job(job, now))
                .collect(),
        )),
        Request::Tally(request) => match reader.tally_probes(&request) {
            Some(tally) => {
                let (at, jobs) = tally.moved.into_iter().unzip();
                Answer::Tally(Some((tally.counts, at)), Jobs(jobs))
            }
            None => Answer::Tally(None, Jobs::default()),
        },
    }
}

/// One shard's [`Answer::Ahead`] for `target` (no job: nothing ahead).
fn count_ahead(
    reader: &mut PriorityReader,
    target: Jobs,
    job: JobId,
    partition: NameId,
    now: Time,
) -> Answer {
    let Some(target) = target.0.first() else {
        return Answer::Ahead(Some((0, Vec::new(), 0)), Jobs::default());
    };
    let target = Target {
        job,
        priority: target.priority,
        submit_at: target.submit_at,
        name: &target.job,
        partition,
    };
    match reader.count_ahead(&target, now) {
        Some(counts) => Answer::Ahead(
            Some((counts.ahead, counts.by_account, counts.in_partition)),
            Jobs(counts.just_ahead.into_iter().collect()),
        ),
        None => Answer::Ahead(None, Jobs::default()),
    }
}

/// Every shard's counts ahead of a job, together (`None` when a shard did
/// not count: the model's reads evaluate every record).
pub(crate) fn merge_ahead(answers: Vec<Answer>) -> Option<AheadCounts> {
    let mut all = Vec::with_capacity(answers.len());
    for answer in answers {
        let Answer::Ahead(Some((ahead, by_account, in_partition)), Jobs(just_ahead)) = answer
        else {
            return None;
        };
        all.push(AheadCounts {
            ahead,
            by_account,
            in_partition,
            just_ahead: just_ahead.into_iter().next(),
        });
    }
    Some(AheadCounts::merge(all))
}

/// Every shard's tallies together (`None` when a shard did not tally).
pub(crate) fn merge_tallies(answers: Vec<Answer>, shifts: &[i64], keep: usize) -> Option<Tally> {
    let mut all = Vec::with_capacity(answers.len());
    for answer in answers {
        let Answer::Tally(Some((counts, at)), Jobs(jobs)) = answer else {
            return None;
        };
        let moved = at.into_iter().zip(jobs).collect();
        all.push(Tally { counts, moved });
    }
    Some(Tally::merge(all, shifts, keep))
}

/// Every shard's waiting users, together (a user is on one shard).
pub(crate) fn merge_waiting(answers: Vec<Answer>) -> Vec<WaitingEntry> {
    answers
        .into_iter()
        .flat_map(|answer| match answer {
            Answer::Waiting(entries) => entries,
            _ => Vec::new(),
        })
        .collect()
}

/// Every shard's users' ranked-job counts, together (a user is on one
/// shard).
pub(crate) fn merge_counts(answers: Vec<Answer>) -> Vec<(AssocId, u64)> {
    answers
        .into_iter()
        .flat_map(|answer| match answer {
            Answer::Counts(counts) => counts,
            _ => Vec::new(),
        })
        .collect()
}

/// One worker's end of the control dataflow (built with more than one
/// worker only).
pub(crate) struct Shards {
    /// This worker's index.
    index: usize,
    /// Worker 0's input of requests (`None` on every other worker, which
    /// closes its own).
    requests: Option<InputHandleVec<u64, Request>>,
    /// The requests that reached this worker, in order.
    inbox: Rc<RefCell<VecDeque<Request>>>,
    /// Done once worker 0 closed its requests input (the engine stopped).
    requests_probe: ProbeHandle<u64>,
    /// This worker's answers, one per request, at the request's time.
    answers: Option<InputHandleVec<u64, (usize, Answer)>>,
    /// On worker 0: every worker's answers, `(worker, answer)`.
    outbox: Rc<RefCell<Vec<(usize, Answer)>>>,
    /// Passes a time once every worker's answer to it reached worker 0.
    answers_probe: ProbeHandle<u64>,
}

impl Shards {
    /// Build the control dataflow on `worker` (every worker, identically);
    /// `None` with one worker.
    pub(crate) fn build(worker: &mut Worker) -> Option<Shards> {
        if worker.peers() == 1 {
            return None;
        }
        let index = worker.index();
        let inbox: Rc<RefCell<VecDeque<Request>>> = Rc::default();
        let outbox: Rc<RefCell<Vec<(usize, Answer)>>> = Rc::default();
        let requests_probe = ProbeHandle::new();
        let answers_probe = ProbeHandle::new();
        let (requests, answers) = worker.dataflow::<u64, _, _>(|scope| {
            let (requests, stream) = scope.new_input::<Request>();
            let sink = inbox.clone();
            stream
                .broadcast()
                .unary::<CapacityContainerBuilder<Vec<()>>, _, _, _>(
                    Pipeline,
                    "Requests",
                    |_capability, _info| {
                        move |input, _output| {
                            input.for_each(|_time, data| sink.borrow_mut().extend(data.drain(..)))
                        }
                    },
                )
                .probe_with(&requests_probe);
            let (answers, stream) = scope.new_input::<(usize, Answer)>();
            let sink = outbox.clone();
            stream
                .unary::<CapacityContainerBuilder<Vec<()>>, _, _, _>(
                    Exchange::new(|_: &(usize, Answer)| 0u64),
                    "Answers",
                    |_capability, _info| {
                        move |input, _output| {
                            input.for_each(|_time, data| sink.borrow_mut().append(data))
                        }
                    },
                )
                .probe_with(&answers_probe);
            (requests, answers)
        });
        Some(Shards {
            index,
            requests: (index == 0).then_some(requests),
            inbox,
            requests_probe,
            answers: Some(answers),
            outbox,
            answers_probe,
        })
    }

    /// Answer every request that reached this worker, from `reader`.
    pub(crate) fn serve(&mut self, reader: &mut PriorityReader) {
        loop {
            let Some(request) = self.inbox.borrow_mut().pop_front() else {
                return;
            };
            let reply = answer(reader, request);
            if let Some(answers) = &mut self.answers {
                let time = *answers.time();
                answers.send((self.index, reply));
                answers.advance_to(time + 1);
            }
        }
    }

    /// Has the engine stopped (worker 0 closed its requests)? Then this
    /// worker closes its answers, so that the dataflow can complete.
    pub(crate) fn stopped(&mut self) -> bool {
        let stopped = self.requests_probe.done();
        if stopped {
            self.answers.take();
        }
        stopped
    }

    /// Worker 0: send `request` to every shard (this one included, answered
    /// from `reader`) and step until every answer is in; the answers in
    /// worker order.
    pub(crate) fn ask(
        &mut self,
        worker: &mut Worker,
        reader: &mut PriorityReader,
        request: Request,
    ) -> Vec<Answer> {
        let requests = self
            .requests
            .as_mut()
            .expect("only worker 0 asks the shards");
        let time = *requests.time();
        requests.send(request);
        requests.advance_to(time + 1);
        while self.answers_probe.less_than(&(time + 1)) {
            worker.step_or_park(None);
            self.serve(reader);
        }
        let mut answers = std::mem::take(&mut *self.outbox.borrow_mut());
        answers.sort_by_key(|(index, _)| *index);
        answers.into_iter().map(|(_, answer)| answer).collect()
    }
}

/// Ask every shard (`shards`) or the one queue (`None`: one worker).
pub(crate) fn ask_all(
    shards: &mut Option<Shards>,
    worker: &mut Worker,
    reader: &mut PriorityReader,
    request: Request,
) -> Vec<Answer> {
    match shards {
        Some(shards) => shards.ask(worker, reader, request),
        None => vec![answer(reader, request)],
    }
}

/// The shards' job lists, each in queue order, merged in queue order and
/// cut at `k` (one list is returned as it is).
pub(crate) fn merge_ranked(answers: Vec<Answer>, k: usize) -> Vec<JobPriority> {
    let mut lists = priorities(answers);
    if lists.len() == 1 {
        let mut only = lists.pop().unwrap_or_default();
        only.truncate(k);
        return only;
    }
    let mut all: Vec<JobPriority> = lists.into_iter().flatten().collect();
    all.sort_by_cached_key(JobPriority::queue_key);
    all.truncate(k);
    all
}

/// The shards' `sprio` lists merged in job-name order.
pub(crate) fn merge_by_name(answers: Vec<Answer>) -> Vec<JobPriority> {
    let mut lists = priorities(answers);
    if lists.len() == 1 {
        return lists.pop().unwrap_or_default();
    }
    let mut all: Vec<JobPriority> = lists.into_iter().flatten().collect();
    all.sort_by(|a, b| a.job.cmp(&b.job));
    all
}

/// The shards' compact lists (`EvaluateAllCompact`), each ordered by job id.
pub(crate) fn compact_lists(answers: Vec<Answer>) -> Vec<CompactJobs> {
    answers
        .into_iter()
        .filter_map(|answer| match answer {
            Answer::Compact(list) => Some(list),
            _ => None,
        })
        .collect()
}

/// The one job a shard found.
pub(crate) fn found_job(answers: Vec<Answer>) -> Option<JobPriority> {
    answers.into_iter().find_map(|answer| match answer {
        Answer::Job(Jobs(job)) => job.into_iter().next(),
        _ => None,
    })
}

/// The shards' `INCR_ONLY` memories, together (a job is on one shard).
pub(crate) fn merge_floors(answers: Vec<Answer>) -> IncrFloors {
    let mut all = IncrFloors::new();
    for answer in answers {
        if let Answer::Floors(floors) = answer {
            all.extend(floors);
        }
    }
    all
}

/// What the shards hold, in worker order.
pub(crate) fn holdings(answers: Vec<Answer>) -> Vec<crate::cluster::ShardHoldings> {
    answers
        .into_iter()
        .filter_map(|answer| match answer {
            Answer::Holdings(shard) => Some(shard),
            _ => None,
        })
        .collect()
}

/// The shards' jobs a trial moves, together.
pub(crate) fn trial_jobs(answers: Vec<Answer>) -> Vec<TrialJob> {
    (answers.into_iter())
        .flat_map(|answer| match answer {
            Answer::TrialJobs(jobs) => jobs,
            _ => Vec::new(),
        })
        .collect()
}

/// The shards' job lists.
pub(crate) fn priorities(answers: Vec<Answer>) -> Vec<Vec<JobPriority>> {
    answers
        .into_iter()
        .filter_map(|answer| match answer {
            Answer::Priorities(Jobs(list)) => Some(list),
            _ => None,
        })
        .collect()
}
