//! The Flux model: flux-accounting's `mf_priority` plugin
//! (`../shared/notes/flux-accounting.md` §2, §6) extended with the remaining
//! factors of the Flux design (`flux-job-priority-plugin.txt`), whose weights
//! default to 0 so that the defaults are exactly flux-accounting's:
//!
//! `P = round(W_fs*F + W_queue*queue_priority + W_bank*bank_priority +
//! W_urgency*(urgency - 16) + W_wait*wait + W_qos*qos + W_size*size +
//! min(0, W_user*user))`, half away from zero, below 0 -> 0, above `2^32-1`
//! -> `2^32-1`; urgency 0 (or a `hold`) is held: priority 0, not ranked;
//! urgency 31 is `2^32-1`.
//!
//! - F: the association's fair-share factor.
//! - queue priority: the job's partition's `priority` (0 when none); bank
//!   priority: the job's account's `priority` (0 when none). Both raw, per
//!   job (not flux-accounting's per-association quirk).
//! - wait: `min(1, (now - eligible) / FluxMaxWaitTime)`, eligible being the
//!   last queue entry or the begin time, whichever is later.
//! - qos: the QOS's priority over the largest QOS priority (0 when that is 0).
//! - size: the job's nodes (1 by default) over the cluster's, at most 1.
//! - user: from the job's `user_priority`, `-1024..=0` scaled to `-1..=0`
//!   (`priority_formula::flux_user_factor`); it can only lower a job.

use fairflow_model::priority_formula::{
    flux_final_priority, flux_user_contribution, flux_user_factor, flux_wait_time_factor,
    slurm_normalize, FLUX_URGENCY_DEFAULT,
};
use fairflow_model::report::{JobPriority, JobState, PriorityFactor};
use fairflow_model::PriorityModel;

use super::{
    eligible_at, job_tres, listed_state, partition_of, priority_row, tres_count, FairshareFactors,
};
use crate::state::Job;
use crate::State;

/// Every evaluated job's Flux priority.
pub fn evaluate(state: &State, fs: &FairshareFactors) -> Vec<JobPriority> {
    let max_qos = state
        .qos
        .values()
        .map(|q| q.priority)
        .max()
        .unwrap_or(0)
        .max(0) as f64;
    state
        .jobs
        .values()
        .filter_map(|job| listed_state(state, job, false, false).map(|s| (job, s)))
        .map(|(job, job_state)| job_priority(state, fs, max_qos, job, job_state))
        .collect()
}

fn job_priority(
    state: &State,
    fs: &FairshareFactors,
    max_qos: f64,
    job: &Job,
    job_state: JobState,
) -> JobPriority {
    let weights = &state.config.flux;
    let urgency = job.spec.urgency.unwrap_or(FLUX_URGENCY_DEFAULT);
    let fairshare = fs
        .get(&(job.account.clone(), job.user.clone()))
        .copied()
        .unwrap_or(0.0);
    let queue = partition_of(state, job).priority as f64;
    let bank = state
        .accounts
        .get(&job.account)
        .and_then(|a| a.priority)
        .unwrap_or(0) as f64;
    let wait = flux_wait_time_factor(state.now - eligible_at(job), weights.max_wait_time_secs);
    let qos_priority = state.qos.get(job.qos()).map_or(0, |q| q.priority) as f64;
    let qos = slurm_normalize(qos_priority, max_qos, false);
    let size = if state.cluster.nodes > 0 {
        (tres_count(&job_tres(job), "node", 1.0) / state.cluster.nodes as f64).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let user = flux_user_factor(job.spec.user_priority);
    let mut user_factor = PriorityFactor::new("user", user, weights.user as f64);
    user_factor.weighted = flux_user_contribution(weights.user as f64, user);

    let factors = vec![
        PriorityFactor::new("fairshare", fairshare, weights.fairshare as f64),
        PriorityFactor::new("queue", queue, weights.queue as f64),
        PriorityFactor::new("bank", bank, weights.bank as f64),
        PriorityFactor::new(
            "urgency",
            f64::from(urgency) - f64::from(FLUX_URGENCY_DEFAULT),
            weights.urgency as f64,
        ),
        PriorityFactor::new("wait_time", wait, weights.wait_time as f64),
        PriorityFactor::new("qos", qos, weights.qos as f64),
        PriorityFactor::new("jobsize", size, weights.job_size as f64),
        user_factor,
    ];
    let mut sum = 0.0;
    for factor in &factors {
        sum += factor.weighted;
    }
    let held = job_state == JobState::Held || urgency == 0;
    let (job_state, priority) = if held && job_state != JobState::Running {
        (JobState::Held, 0)
    } else {
        (job_state, flux_final_priority(sum, urgency))
    };
    priority_row(job, PriorityModel::Flux, job_state, priority, factors)
}
