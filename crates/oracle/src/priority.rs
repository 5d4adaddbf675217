//! Job priority as a plain batch computation over the state: Slurm's
//! multifactor plugin (`slurm`), the Flux design with flux-accounting's
//! plugin (`flux`), Moab's components (`moab`), and the ranked queue.
//!
//! Fair-share factors come in as a parameter, `(account, user) -> factor`
//! (`fairshare::user_factors` computes them under the configured algorithm),
//! so each model can be checked with hand-chosen factors. An association
//! missing from the map has factor 0.
//!
//! # Which jobs are evaluated
//! - Pending and held jobs whose `begin` is not after `now` (Slurm with
//!   `ACCRUE_ALWAYS` lists them before their begin time too, as sprio does).
//! - Running jobs with `PriorityFlags=CALCULATE_RUNNING` (Slurm), and always
//!   under Moab, whose USAGE component applies to active jobs only. Never
//!   under Flux.
//!
//! # `INCR_ONLY`
//! Slurm stores a new priority only if it is larger than the stored one.
//! fairflow's definition, independent of when a scheduler would recompute: a
//! pending job's priority is the maximum of the priorities computed at every
//! distinct event time since it last entered the queue (submit or requeue)
//! at which it was pending and not held, and of the priority computed at the
//! query time. [`remembered_incr_only`] records the maximum in
//! `State::priority_floor`; `Replay` calls it after each distinct event time
//! when the flag is on; [`evaluate`] applies it. Held jobs are 0 regardless.
//! A job with several (partition, QOS) pairs has a floor per pair too, by
//! the pair's index, as Slurm floors each `priority_array` entry
//! ([`IncrOnlyMemory::pair_priorities`], `State::pair_floor`); a `partition`
//! event forgets every job's pair floors (Slurm rebuilds the array when a
//! partition changed), not the job's own floor.

use std::collections::BTreeMap;

use fairflow_model::report::{JobPriority, JobState, PriorityFactor};
use fairflow_model::tres::TresCounts;
use fairflow_model::PriorityModel;

use crate::state::{Job, JobPhase, Partition};
use crate::State;

pub mod flux;
pub mod moab;
pub mod slurm;

#[cfg(test)]
mod tests;

/// Fair-share factors by `(account, user)`.
pub type FairshareFactors = BTreeMap<(String, String), f64>;

/// Every evaluated job's priority under the configured model, as of
/// `state.now`, in job-id order (see the module documentation for which jobs).
pub fn evaluate(state: &State, fs: &FairshareFactors) -> Vec<JobPriority> {
    listed(state, fs).collect()
}

/// [`evaluate`]'s rows one at a time, in the same order, for a reader that
/// keeps only some of them (the first entries of the queue:
/// `fairflow_model::report::first_entries`).
pub fn listed<'a>(
    state: &'a State,
    fs: &'a FairshareFactors,
) -> Box<dyn Iterator<Item = JobPriority> + 'a> {
    match state.config.model {
        PriorityModel::Slurm => Box::new(slurm::listed(state, fs)),
        PriorityModel::Flux => Box::new(flux::listed(state, fs)),
        PriorityModel::Moab => Box::new(moab::listed(state, fs)),
    }
}

/// The scheduler's queue (`top`, `position`): every entry of every pending
/// job (under Slurm one per (partition, QOS) pair), expedited jobs first,
/// then by the entry's partition `PriorityTier`, then as [`queue`] ranks
/// (`fairflow_model::report::entries`).
pub fn entry_queue(priorities: &[JobPriority]) -> Vec<JobPriority> {
    fairflow_model::report::entries::entry_queue(priorities)
}

/// The ranked queue of jobs: pending jobs that are not held, highest
/// priority first, then earlier submit time, then job id (numeric ids as
/// numbers, before other ids, which compare as strings); each job once, at
/// its own priority (the order the incremental engine's queue index keeps).
pub fn queue(priorities: &[JobPriority]) -> Vec<JobPriority> {
    let mut pending: Vec<JobPriority> = priorities
        .iter()
        .filter(|p| p.state == JobState::Pending)
        .cloned()
        .collect();
    pending.sort_by_cached_key(JobPriority::queue_key);
    pending
}

/// What `INCR_ONLY` remembers at `state.now` ([`remembered_incr_only`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IncrOnlyMemory {
    /// Each pending job's floor: the larger of its floor and its priority
    /// now; floors of jobs no longer queued are dropped.
    pub floors: BTreeMap<String, u64>,
    /// Every pending job with several (partition, QOS) pairs and each pair's
    /// priority now (floors applied), which the caller remembers
    /// (`Book::remember_pair_priorities`).
    pub pair_priorities: Vec<(String, Vec<u64>)>,
}

/// `INCR_ONLY` memory at `state.now`, from one evaluation of every job. Empty
/// (every floor forgotten) unless the Slurm model runs with `INCR_ONLY`. The
/// caller stores it (`Book::priority_floor_mut`,
/// `Book::remember_pair_priorities`).
pub fn remembered_incr_only(state: &State, fs: &FairshareFactors) -> IncrOnlyMemory {
    if !(state.config.flags.incr_only && state.config.model == PriorityModel::Slurm) {
        return IncrOnlyMemory::default();
    }
    let mut memory = IncrOnlyMemory {
        floors: state.priority_floor.clone(),
        pair_priorities: Vec::new(),
    };
    for p in evaluate(state, fs) {
        if p.state == JobState::Pending {
            let floor = memory.floors.entry(p.job.clone()).or_insert(0);
            *floor = (*floor).max(p.priority);
            if !p.pairs.is_empty() {
                let pairs = p.pairs.iter().map(|pair| pair.priority).collect();
                memory.pair_priorities.push((p.job, pairs));
            }
        }
    }
    memory
        .floors
        .retain(|id, _| state.keeps_incr_only_floor(id));
    memory
}

/// Where a job is, and whether the model evaluates it now.
fn listed_state(
    state: &State,
    job: &Job,
    running_listed: bool,
    before_begin_listed: bool,
) -> Option<JobState> {
    let begun = job.spec.begin.is_none_or(|b| b <= state.now);
    match job.phase {
        JobPhase::Pending if begun || before_begin_listed => Some(JobState::Pending),
        JobPhase::Held if begun || before_begin_listed => Some(JobState::Held),
        JobPhase::Running { .. } if running_listed => Some(JobState::Running),
        _ => None,
    }
}

/// A job's partition: its definition, or the defaults (`PriorityJobFactor`
/// 1, no totals) for a partition no `partition` event defined (`""` for
/// none).
fn partition_of(state: &State, job: &Job) -> Partition {
    state
        .partitions
        .get(job.partition())
        .cloned()
        .unwrap_or_default()
}

/// The TRES a job counts: what it was allocated while running, else what it
/// asked for.
fn job_tres(job: &Job) -> TresCounts {
    match (&job.phase, &job.allocated) {
        (JobPhase::Running { .. }, Some(allocated)) => allocated.clone(),
        _ => job.spec.tres.clone().unwrap_or_default(),
    }
}

/// A count from a job's TRES, with a default when it does not say.
fn tres_count(tres: &TresCounts, name: &str, default: f64) -> f64 {
    tres.get(name).copied().unwrap_or(default)
}

/// The job's time limit in seconds: its own, else its partition's maximum.
fn time_limit_secs(job: &Job, partition: &Partition) -> Option<u64> {
    job.spec
        .time_limit_secs
        .filter(|l| *l > 0)
        .or(partition.max_time_secs.filter(|l| *l > 0))
}

/// When a job became eligible in its current stay in the queue: its last
/// queue entry, or its begin time if later.
fn eligible_at(job: &Job) -> fairflow_model::Time {
    fairflow_model::priority_formula::eligible_at(job.queued_at, job.spec.begin)
}

/// A job's row of the results: its identity, as the model listed it, with
/// what the model computed.
fn priority_row(
    job: &Job,
    model: PriorityModel,
    job_state: JobState,
    priority: u64,
    factors: Vec<PriorityFactor>,
) -> JobPriority {
    JobPriority {
        job: job.id.clone(),
        user: job.user.clone(),
        account: job.account.clone(),
        partition: job.partition().to_string(),
        qos: job.qos().to_string(),
        submit_at: job.submit_at,
        priority,
        state: job_state,
        model,
        factors,
        pairs: Vec::new(),
        priority_tier: 0,
        expedited: false,
    }
}
