//! The events that take fairflow's queue from the jobs it holds to the jobs
//! squeue lists: submits, holds and releases, updates of a pending job's
//! attributes, starts, requeues, and the end (a running job gone) or cancel
//! (a pending job gone) of each job no longer listed, at the times sacct
//! gives when it has the job ([`finished`](super::finished)); and the jobs
//! that were submitted and finished between two polls, never listed.
//!
//! Every event is timed within the poll's [`PollWindow`]: a start at the
//! job's own start time and an end at its own end time (brought into the
//! window: fairflow cannot apply anything before its current time), all
//! else at the window's start, so that a job's events keep their order
//! when the poll's events are put in time order.

use std::collections::HashMap;

use rustc_hash::{FxHashMap, FxHashSet};

use fairflow_model::event::{JobSpec, Op};
use fairflow_model::{Event, Time};

use super::finished::FinishedJob;
use super::jobs::{JobChanges, JobTable, ListedJob, LiveJob, LiveState};

/// The times one poll's events may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PollWindow {
    /// fairflow's current time: no event before it.
    pub since: Time,
    /// The poll's time (`since` or later).
    pub now: Time,
    /// The latest submit time of a job the follower has read (squeue or
    /// sacct, Slurm's clock), if any: a finished job submitted after it was
    /// never listed.
    pub submitted_through: Option<Time>,
}

impl PollWindow {
    /// `real` (a start or end time Slurm gave) brought into the window;
    /// `since` when Slurm gave none.
    pub fn at(&self, real: Option<Time>) -> Time {
        real.unwrap_or(self.since)
            .clamp(self.since, self.now.max(self.since))
    }
}

/// What fairflow holds of one job: its state, and its attributes when
/// known (the last poll applied; unknown when the state came from the
/// engine's own list, at start).
#[derive(Debug, Clone, Copy)]
pub struct Held<'a> {
    /// Pending, held or running.
    pub state: LiveState,
    /// The job as last applied, if known.
    pub job: Option<&'a LiveJob>,
}

/// The attributes of `next` that differ from `before`'s (partition, QOS,
/// CPUs and nodes, time limit, nice, eligible time, SLUID), as an update's
/// spec; `None` when none does.
fn changed_spec(before: &LiveJob, next: &LiveJob) -> Option<JobSpec> {
    let mut patch = changed_attributes(&before.spec, &next.spec).unwrap_or_default();
    if next.sluid.is_some() && before.sluid != next.sluid {
        patch.sluid = next.sluid;
    }
    (patch != JobSpec::default()).then_some(patch)
}

/// [`changed_spec`]'s attributes but the SLUID.
fn changed_attributes(before: &JobSpec, next: &JobSpec) -> Option<JobSpec> {
    let mut patch = JobSpec::default();
    let mut any = false;
    macro_rules! diff {
        ($($f:ident),*) => { $(
            if next.$f.is_some() && before.$f != next.$f {
                patch.$f = next.$f.clone();
                any = true;
            }
        )* };
    }
    diff!(partition, qos, tres, time_limit_secs, nice, begin);
    any.then_some(patch)
}

/// The events (in order) for one listed job, given what fairflow holds of
/// it: all at the window's start but the start, at the job's start time.
pub fn job_events(
    id: &str,
    held: Option<Held<'_>>,
    next: &LiveJob,
    window: &PollWindow,
) -> Vec<Event> {
    let job = || id.to_string();
    let at_since = |op: Op| Event {
        t: window.since,
        op,
    };
    let mut events = Vec::new();
    let update = |before: Option<&LiveJob>| -> Option<Op> {
        let before = before?;
        let spec = changed_spec(before, next);
        let account = (before.account != next.account).then(|| next.account.clone());
        (spec.is_some() || account.is_some()).then(|| Op::Update {
            job: id.to_string(),
            account,
            spec: spec.unwrap_or_default(),
        })
    };
    let start = || Event {
        t: window.at(next.started),
        op: Op::Start {
            job: id.to_string(),
            tres: next.spec.tres.clone(),
        },
    };
    match (held.map(|h| h.state), next.state) {
        (None, state) => {
            events.push(at_since(Op::Submit {
                job: job(),
                user: next.user.clone(),
                account: next.account.clone(),
                spec: JobSpec {
                    sluid: next.sluid,
                    ..next.spec.clone()
                },
                submitted: Some(next.submitted.min(window.since)),
            }));
            match state {
                LiveState::Pending => {}
                LiveState::Held => events.push(at_since(Op::Hold { job: job() })),
                LiveState::Running => events.push(start()),
            }
        }
        (Some(before), state) => {
            let before_job = held.and_then(|h| h.job);
            let pending_before = before != LiveState::Running;
            if before == LiveState::Running && state != LiveState::Running {
                // squeue's format here does not carry Slurm 25.11's
                // JOB_EXPEDITING mark: a followed requeue is a plain one.
                events.push(at_since(Op::Requeue {
                    job: job(),
                    expedite: false,
                }));
            }
            if state != LiveState::Running || pending_before {
                events.extend(update(before_job).map(at_since));
            }
            match (before, state) {
                (LiveState::Held, LiveState::Pending | LiveState::Running) => {
                    events.push(at_since(Op::Release { job: job() }))
                }
                (LiveState::Pending | LiveState::Running, LiveState::Held) => {
                    events.push(at_since(Op::Hold { job: job() }))
                }
                _ => {}
            }
            if pending_before && state == LiveState::Running {
                events.push(start());
            }
        }
    }
    events
}

/// The events of a job no longer listed that was `state` in fairflow: with
/// sacct's record, a running job's end at its end time, a pending job's
/// start and end if it ran, else its cancel; without one (slurmdbd has not
/// got it yet), its end or cancel at the window's start.
pub fn gone_events(
    id: &str,
    state: LiveState,
    finished: Option<&FinishedJob>,
    window: &PollWindow,
) -> Vec<Event> {
    let job = || id.to_string();
    let at = |t: Time, op: Op| Event { t, op };
    match (state, finished) {
        (LiveState::Running, Some(done)) => {
            vec![at(window.at(Some(done.ended)), Op::End { job: job() })]
        }
        (LiveState::Running, None) => vec![at(window.since, Op::End { job: job() })],
        (LiveState::Pending | LiveState::Held, Some(done)) if done.started.is_some() => {
            let started = window.at(done.started);
            let mut events = Vec::new();
            if state == LiveState::Held {
                events.push(at(window.since, Op::Release { job: job() }));
            }
            events.push(at(
                started,
                Op::Start {
                    job: job(),
                    tres: done.spec.tres.clone(),
                },
            ));
            events.push(at(
                window.at(Some(done.ended)).max(started),
                Op::End { job: job() },
            ));
            events
        }
        (LiveState::Pending | LiveState::Held, _) => {
            vec![at(window.since, Op::Cancel { job: job() })]
        }
    }
}

/// The events of a job sacct lists as finished that fairflow never held:
/// submitted after every job the follower has read
/// (`PollWindow::submitted_through`), it was never listed; if it ran, it is
/// submitted, started and ended at Slurm's times, so its run is charged as
/// Slurm charges it. A job submitted in the same second as the last one
/// read is left out (it might have been read): Slurm's usage, reconciled
/// at its next decay pass, has it.
fn unseen_events(id: &str, done: &FinishedJob, window: &PollWindow) -> Vec<Event> {
    let Some(through) = window.submitted_through else {
        return Vec::new();
    };
    if done.submitted <= through || done.started.is_none() {
        return Vec::new();
    }
    let started = window.at(done.started);
    vec![
        Event {
            t: window.since,
            op: Op::Submit {
                job: id.to_string(),
                user: done.user.clone(),
                account: done.account.clone(),
                spec: done.spec.clone(),
                submitted: Some(done.submitted.min(window.since)),
            },
        },
        Event {
            t: started,
            op: Op::Start {
                job: id.to_string(),
                tres: done.spec.tres.clone(),
            },
        },
        Event {
            t: window.at(Some(done.ended)).max(started),
            op: Op::End {
                job: id.to_string(),
            },
        },
    ]
}

/// Every job event from what fairflow holds to what squeue listed and sacct
/// finished, in time order (stable: each job's events in their order).
/// `table` is the last applied table and `changes` squeue's answer read
/// against it; `engine` (when given: the full comparison) the jobs the
/// engine itself holds, which override the table's. Without `engine` only
/// the changed and gone jobs are looked at.
pub fn queue_events(
    table: &JobTable,
    engine: Option<&HashMap<String, LiveJob>>,
    changes: &JobChanges,
    finished: &FxHashMap<String, FinishedJob>,
    window: &PollWindow,
) -> Vec<Event> {
    let (mut events, mut gone) = match engine {
        None => changed_events(table, changes, window),
        Some(jobs) => compared_events(table, jobs, changes, window),
    };
    gone.sort_unstable();
    for (id, state) in gone {
        events.extend(gone_events(id, state, finished.get(id), window));
    }
    if !finished.is_empty() {
        let listed: FxHashSet<&str> = changes.listed.iter().map(|l| &*l.id).collect();
        let gone: FxHashSet<&str> = changes.gone.iter().map(|id| &**id).collect();
        let held = |id: &str| match engine {
            Some(jobs) => jobs.contains_key(id),
            None => table.get(id).is_some(),
        };
        let in_squeue =
            |id: &str| listed.contains(id) || (table.get(id).is_some() && !gone.contains(id));
        let mut unseen: Vec<(&String, &FinishedJob)> = finished
            .iter()
            .filter(|(id, _)| !held(id) && !in_squeue(id))
            .collect();
        unseen.sort_unstable_by_key(|(id, _)| *id);
        for (id, done) in unseen {
            events.extend(unseen_events(id, done, window));
        }
    }
    events.sort_by_key(|event| event.t);
    events
}

/// The events of the new and changed jobs against the table, and the jobs
/// the table holds that squeue no longer lists.
fn changed_events<'a>(
    table: &'a JobTable,
    changes: &'a JobChanges,
    window: &PollWindow,
) -> (Vec<Event>, Vec<(&'a str, LiveState)>) {
    let mut events = Vec::new();
    let mut listed: Vec<&ListedJob> = changes.listed.iter().collect();
    listed.sort_unstable_by(|a, b| a.id.cmp(&b.id));
    for listed in listed {
        let held = table.get(&listed.id).map(|before| Held {
            state: before.state,
            job: Some(before),
        });
        events.extend(job_events(&listed.id, held, &listed.job, window));
    }
    let gone = changes
        .gone
        .iter()
        .filter_map(|id| table.get(id).map(|job| (&**id, job.state)))
        .collect();
    (events, gone)
}

/// The full comparison: the events of every listed job against the job the
/// engine holds, and the engine's jobs squeue no longer lists.
fn compared_events<'a>(
    table: &'a JobTable,
    engine: &'a HashMap<String, LiveJob>,
    changes: &'a JobChanges,
    window: &PollWindow,
) -> (Vec<Event>, Vec<(&'a str, LiveState)>) {
    let mut events = Vec::new();
    let gone: FxHashSet<&str> = changes.gone.iter().map(|id| &**id).collect();
    let changed: FxHashMap<&str, &LiveJob> = changes
        .listed
        .iter()
        .map(|listed| (&*listed.id, &*listed.job))
        .collect();
    let mut listed: Vec<(&str, &LiveJob)> = table
        .jobs()
        .filter(|(id, _)| !gone.contains(id) && !changed.contains_key(id))
        .chain(changed.iter().map(|(id, job)| (*id, *job)))
        .collect();
    listed.sort_unstable_by_key(|(id, _)| *id);
    for (id, job) in &listed {
        let held = engine.get(*id).map(|before| Held {
            state: before.state,
            job: Some(before),
        });
        events.extend(job_events(id, held, job, window));
    }
    let listed: FxHashSet<&str> = listed.iter().map(|(id, _)| *id).collect();
    let ended = engine
        .iter()
        .filter(|(id, _)| !listed.contains(id.as_str()))
        .map(|(id, job)| (id.as_str(), job.state))
        .collect();
    (events, ended)
}
