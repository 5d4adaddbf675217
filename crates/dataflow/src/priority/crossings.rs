//! The driver-side schedule of time crossings: the moments at which passing
//! time changes a job's *input row* (never its priority record directly).
//!
//! Two crossings exist, both known in advance from the job and the
//! configuration:
//! - **begin**: a job with a `begin` time is listed (evaluated, ranked) only
//!   once `now >= begin` (unless Slurm's `ACCRUE_ALWAYS`), so its row's
//!   `begun` flag must flip when a batch's time reaches `begin`. This one is
//!   *required* before reading at a time past it: an unlisted job has no
//!   queue entry.
//! - **age cap**: the age (Slurm) or wait-time (Flux) factor reaches 1 at
//!   `origin + max`; the row's `age_capped` flag moves the job from the
//!   uncapped index (value `key + rate·now`) to the capped one (value
//!   `key`). Until the flag flips, the uncapped value over-estimates the job,
//!   which the reader tolerates (it computes every candidate's exact
//!   priority), so a late flip costs reading time, never correctness, as
//!   long as the weight is not negative (a negative Flux wait-time weight
//!   makes the stale value an under-estimate: apply these crossings before
//!   reading too).
//!
//! The driver calls [`Crossings::schedule`] whenever it (re)sends a job's row
//! (with the row's next crossing, [`next_crossing`]) and [`Crossings::cancel`]
//! when the job leaves; before each batch at time `t` it calls
//! [`Crossings::due`]`(t)` and re-sends the rows of the returned jobs with
//! their flags recomputed ([`begun_at`], [`age_capped_at`]). A configuration
//! change that moves `PriorityMaxAge`, `FluxMaxWaitTime`, the model or
//! `ACCRUE_ALWAYS` changes every crossing: the driver re-schedules every job
//! (one bulk batch, as the change re-ranks every job anyway).
//!
//! Cost: `O(log n)` per schedule, cancel and due job; nothing per tick.

use std::collections::{BTreeSet, HashMap};

use fairflow_model::{PriorityModel, Time};

use super::inputs::{JobRow, Phase, PriorityParams};
use crate::types::JobId;

/// Pending crossings, by time.
#[derive(Debug, Clone, Default)]
pub struct Crossings {
    by_time: BTreeSet<(Time, JobId)>,
    by_job: HashMap<JobId, Time>,
}

impl Crossings {
    /// An empty schedule.
    pub fn new() -> Self {
        Crossings::default()
    }

    /// Schedule `job`'s next crossing at `at` (replacing any earlier one);
    /// `None` cancels it.
    pub fn schedule(&mut self, job: JobId, at: Option<Time>) {
        self.cancel(job);
        if let Some(at) = at {
            self.by_time.insert((at, job));
            self.by_job.insert(job, at);
        }
    }

    /// Forget `job`'s crossing.
    pub fn cancel(&mut self, job: JobId) {
        if let Some(at) = self.by_job.remove(&job) {
            self.by_time.remove(&(at, job));
        }
    }

    /// The jobs whose crossing is at or before `now`, in time order (then
    /// job id); they are removed from the schedule (the driver re-schedules
    /// them with their next crossing when it re-sends their rows).
    pub fn due(&mut self, now: Time) -> Vec<JobId> {
        let mut out = Vec::new();
        while let Some((at, _)) = self.by_time.first() {
            if *at > now {
                break;
            }
            let (_, job) = self.by_time.pop_first().expect("checked non-empty");
            self.by_job.remove(&job);
            out.push(job);
        }
        out
    }
}

/// Has the job's begin time passed at `now`? Always true for a running job
/// (the flag only matters in the queue; keeping it constant there saves
/// updates).
pub fn begun_at(row: &JobRow, now: Time) -> bool {
    row.phase == Phase::Running || row.begin.is_none_or(|b| b <= now)
}

/// The time the job's age (wait-time) factor starts counting and its
/// maximum, under `params`; `None` when the model has no such factor or it
/// is constant (weight 0, maximum not positive).
fn time_factor(params: &PriorityParams, row: &JobRow) -> Option<(Time, i64)> {
    let eligible = fairflow_model::priority_formula::eligible_at(row.queued_at, row.begin);
    match params.model {
        PriorityModel::Slurm if params.weight_age > 0 && params.max_age_secs > 0 => {
            let origin = if params.accrue_always {
                row.queued_at
            } else {
                eligible
            };
            Some((origin, params.max_age_secs))
        }
        PriorityModel::Flux if params.flux_max_wait_secs > 0 => {
            Some((eligible, params.flux_max_wait_secs))
        }
        _ => None,
    }
}

/// Is the job's age (wait-time) factor at its cap at `now`? Exactly when the
/// shared formula gives 1 (`now - origin >= max`). Always false for a
/// running job (never ranked).
pub fn age_capped_at(params: &PriorityParams, row: &JobRow, now: Time) -> bool {
    if row.phase == Phase::Running {
        return false;
    }
    match time_factor(params, row) {
        Some((origin, max_secs)) => now - origin >= max_secs,
        None => false,
    }
}

/// When the job's age (wait-time) factor reaches its cap (`None`: it has
/// no time factor, or the job runs): from then on [`age_capped_at`] holds.
pub fn age_cap_at(params: &PriorityParams, row: &JobRow) -> Option<Time> {
    if row.phase == Phase::Running {
        return None;
    }
    time_factor(params, row).map(|(origin, max_secs)| origin.saturating_add(max_secs))
}

/// The next time after `now` at which the row's flags change: its begin
/// time, else its age-cap crossing. Only pending and held jobs have any.
pub fn next_crossing(params: &PriorityParams, row: &JobRow, now: Time) -> Option<Time> {
    if row.phase == Phase::Running {
        return None;
    }
    let begin = row.begin.filter(|b| *b > now);
    let cap = age_cap_at(params, row).filter(|at| *at > now);
    match (begin, cap) {
        (Some(b), Some(c)) => Some(b.min(c)),
        (b, c) => b.or(c),
    }
}

#[cfg(test)]
impl Crossings {
    /// How many crossings are scheduled.
    fn len(&self) -> usize {
        self.by_job.len()
    }

    /// Is nothing scheduled?
    fn is_empty(&self) -> bool {
        self.by_job.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_returns_crossed_jobs_once_in_time_order() {
        let mut c = Crossings::new();
        c.schedule(2, Some(200));
        c.schedule(1, Some(100));
        c.schedule(3, Some(300));
        c.schedule(3, Some(150)); // replaces 300
        c.schedule(4, Some(400));
        c.cancel(4);
        assert_eq!(c.len(), 3);
        assert_eq!(c.due(99), Vec::<JobId>::new());
        assert_eq!(c.due(150), vec![1, 3]);
        assert_eq!(c.due(150), Vec::<JobId>::new());
        assert_eq!(c.due(1000), vec![2]);
        assert!(c.is_empty());
    }

    #[test]
    fn crossings_follow_begin_then_the_age_cap() {
        let params = PriorityParams {
            weight_age: 1000,
            max_age_secs: 600,
            ..PriorityParams::default()
        };
        let row = JobRow {
            queued_at: 100,
            begin: Some(250),
            ..JobRow::default()
        };
        // Eligible at 250 (begin after the queue entry): capped at 250 + 600.
        assert_eq!(next_crossing(&params, &row, 100), Some(250));
        assert_eq!(next_crossing(&params, &row, 250), Some(850));
        assert!(!age_capped_at(&params, &row, 849));
        assert!(age_capped_at(&params, &row, 850));
        assert_eq!(next_crossing(&params, &row, 850), None);
        // ACCRUE_ALWAYS counts from the queue entry: 100 + 600.
        let always = PriorityParams {
            accrue_always: true,
            ..params.clone()
        };
        assert_eq!(next_crossing(&always, &row, 300), Some(700));
        // Weight 0: no age factor, only the begin crossing.
        let no_age = PriorityParams {
            weight_age: 0,
            ..params
        };
        assert_eq!(next_crossing(&no_age, &row, 300), None);
        assert!(!begun_at(&row, 249));
        assert!(begun_at(&row, 250));
    }
}
