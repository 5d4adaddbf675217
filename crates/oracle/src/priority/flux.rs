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

use fairflow_model::job_priority::{
    flux_job_factors, flux_job_priority, FluxJobInputs, FluxWeights,
};
use fairflow_model::priority_formula::FLUX_URGENCY_DEFAULT;
use fairflow_model::report::{JobPriority, JobState};
use fairflow_model::PriorityModel;

use super::{
    eligible_at, job_tres, listed_state, partition_of, priority_row, tres_count, FairshareFactors,
};
use crate::state::Job;
use crate::State;

/// Every evaluated job's Flux priority, one at a time (`super::evaluate`'s order).
pub fn listed<'a>(
    state: &'a State,
    fs: &'a FairshareFactors,
) -> impl Iterator<Item = JobPriority> + 'a {
    let max_qos = state.max_qos_priority();
    state
        .jobs
        .values()
        .filter_map(|job| listed_state(state, job, false, false).map(|s| (job, s)))
        .map(move |(job, job_state)| job_priority(state, fs, max_qos, job, job_state))
}

fn job_priority(
    state: &State,
    fs: &FairshareFactors,
    max_qos: i64,
    job: &Job,
    job_state: JobState,
) -> JobPriority {
    let weights = &state.config.flux;
    let urgency = job.spec.urgency.unwrap_or(FLUX_URGENCY_DEFAULT);
    let inputs = FluxJobInputs {
        weights: FluxWeights {
            fairshare: weights.fairshare,
            queue: weights.queue,
            bank: weights.bank,
            urgency: weights.urgency,
            wait_time: weights.wait_time,
            qos: weights.qos,
            job_size: weights.job_size,
            user: weights.user,
            max_wait_secs: weights.max_wait_time_secs,
        },
        fairshare: fs
            .get(&(job.account.clone(), job.user.clone()))
            .copied()
            .unwrap_or(0.0),
        queue_priority: partition_of(state, job).priority,
        bank_priority: state
            .accounts
            .get(&job.account)
            .and_then(|a| a.priority)
            .unwrap_or(0),
        urgency,
        eligible_at: eligible_at(job),
        qos_priority: state.qos.get(job.qos()).map_or(0, |q| q.priority),
        max_qos,
        nodes: tres_count(&job_tres(job), "node", 1.0),
        cluster_nodes: state.cluster.nodes,
        user_priority: job.spec.user_priority,
    };
    let factors = flux_job_factors(&inputs, Some(state.now));
    let held = job_state == JobState::Held || urgency == 0;
    let (job_state, priority) = if held && job_state != JobState::Running {
        (JobState::Held, 0)
    } else {
        (job_state, flux_job_priority(&factors, urgency))
    };
    priority_row(job, PriorityModel::Flux, job_state, priority, factors)
}
