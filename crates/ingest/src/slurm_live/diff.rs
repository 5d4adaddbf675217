//! The events that take fairflow's queue from the jobs it holds to the jobs
//! squeue lists: submits, holds and releases, updates of a pending job's
//! attributes, starts, requeues, and the end (a running job gone) or cancel
//! (a pending job gone) of each job no longer listed.

use std::collections::HashMap;

use fairflow_model::event::{JobSpec, Op};
use fairflow_model::Time;

use super::jobs::{JobTable, LiveJob, LiveState};

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
/// CPUs and nodes, time limit, nice, eligible time), as an update's spec;
/// `None` when none does.
fn changed_spec(before: &JobSpec, next: &JobSpec) -> Option<JobSpec> {
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

/// The events (in order) for one listed job, given what fairflow holds of it.
pub fn job_events(id: &str, held: Option<Held<'_>>, next: &LiveJob, t: Time) -> Vec<Op> {
    let job = || id.to_string();
    let mut ops = Vec::new();
    let update = |before: Option<&LiveJob>| -> Option<Op> {
        let before = before?;
        let spec = changed_spec(&before.spec, &next.spec);
        let account = (before.account != next.account).then(|| next.account.clone());
        (spec.is_some() || account.is_some()).then(|| Op::Update {
            job: id.to_string(),
            account,
            spec: spec.unwrap_or_default(),
        })
    };
    let start = || Op::Start {
        job: id.to_string(),
        tres: next.spec.tres.clone(),
    };
    match (held.map(|h| h.state), next.state) {
        (None, state) => {
            ops.push(Op::Submit {
                job: job(),
                user: next.user.clone(),
                account: next.account.clone(),
                spec: next.spec.clone(),
                submitted: Some(next.submitted.min(t)),
            });
            match state {
                LiveState::Pending => {}
                LiveState::Held => ops.push(Op::Hold { job: job() }),
                LiveState::Running => ops.push(start()),
            }
        }
        (Some(before), state) => {
            let before_job = held.and_then(|h| h.job);
            let pending_before = before != LiveState::Running;
            if before == LiveState::Running && state != LiveState::Running {
                ops.push(Op::Requeue { job: job() });
            }
            if state != LiveState::Running || pending_before {
                ops.extend(update(before_job));
            }
            match (before, state) {
                (LiveState::Held, LiveState::Pending | LiveState::Running) => {
                    ops.push(Op::Release { job: job() })
                }
                (LiveState::Pending | LiveState::Running, LiveState::Held) => {
                    ops.push(Op::Hold { job: job() })
                }
                _ => {}
            }
            if pending_before && state == LiveState::Running {
                ops.push(start());
            }
        }
    }
    ops
}

/// The end (it was running) or cancel (it was pending or held) of a job no
/// longer listed.
pub fn gone_event(id: &str, state: LiveState) -> Op {
    match state {
        LiveState::Running => Op::End {
            job: id.to_string(),
        },
        LiveState::Pending | LiveState::Held => Op::Cancel {
            job: id.to_string(),
        },
    }
}

/// Every job event from what fairflow holds to `next`: `previous` is the
/// last applied table, `engine` (when given: the full comparison) the
/// states the engine itself holds, which override `previous`'s. Jobs whose
/// squeue line did not change (and whose state the engine agrees on) are
/// skipped without a look at their attributes.
pub fn queue_events(
    previous: &JobTable,
    engine: Option<&HashMap<String, LiveState>>,
    next: &JobTable,
    t: Time,
) -> Vec<Op> {
    let mut listed: Vec<(&str, &LiveJob)> = next
        .jobs()
        .filter(|(id, _)| engine.is_some() || next.changed_since(previous, id))
        .collect();
    listed.sort_unstable_by_key(|(id, _)| *id);
    let mut ops = Vec::new();
    for (id, job) in listed {
        let held = match engine {
            // The engine does not say a job's attributes: those of the last
            // poll if known, else the job is taken as listed.
            Some(states) => states.get(id).map(|&state| Held {
                state,
                job: Some(previous.get(id).unwrap_or(job)),
            }),
            None => previous.get(id).map(|before| Held {
                state: before.state,
                job: Some(before),
            }),
        };
        ops.extend(job_events(id, held, job, t));
    }
    let mut gone: Vec<(String, LiveState)> = match engine {
        Some(states) => states
            .iter()
            .filter(|(id, _)| next.get(id).is_none())
            .map(|(id, state)| (id.clone(), *state))
            .collect(),
        None => previous
            .jobs()
            .filter(|(id, _)| next.get(id).is_none())
            .map(|(id, job)| (id.to_string(), job.state))
            .collect(),
    };
    gone.sort_unstable();
    ops.extend(gone.into_iter().map(|(id, state)| gone_event(&id, state)));
    ops
}
