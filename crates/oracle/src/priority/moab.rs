//! Moab's job priority (`moab-job-priority-factors.txt`,
//! `../shared/notes/peer-schedulers.md` §1): seven components, each the
//! capped sum of its weighted, capped subcomponents, times the component's
//! weight:
//!
//! `priority = Σ_c CW_c * cap_c(Σ_s cap_s(SW_s * value_s))`, clamped to
//! `0..=10^9` and truncated; held jobs 0. A positive `*CAP` bounds both
//! directions; weights default to 1 for components, 0 for subcomponents
//! except `QUEUETIMEWEIGHT` 1; `QOSCFG[q] QTWEIGHT`/`XFWEIGHT` add to the
//! queue-time and expansion-factor weights of that QOS's jobs, and
//! `GROUPCFG[g] FSWEIGHT` adds to the FS component's weight (`FSWEIGHT`) for
//! the jobs of group `g` (the seed: "group credentials can adjust fairshare
//! subfactor weight"). fairflow adjusts the component's weight, not one
//! subcomponent's, so a group's adjustment scales all of its jobs' fair-share
//! terms (user, group, account, QOS, class targets and the per-user activity
//! terms) together and respects `FSCAP`; the FS row then shows the summed
//! weight.
//!
//! The per-job assembly is shared with the incremental engine:
//! `fairflow_model::moab::subcomponent_values` defines every subcomponent's
//! value and the effective queue time (`JOBPRIOACCRUALPOLICY`), and
//! `fairflow_model::moab::job_factors` weighs them. This module reads the
//! state into a `MoabJobInputs`: the CRED defaults are the `account` and
//! `qos` events' and the partition's `priority`; the aggregates it computes
//! itself are every credential's usage (`State::moab_credential_usage`) and each
//! user's running jobs (`FSJPU`, `FSPPU`, `FSPSPU`).

pub use fairflow_model::moab::CredentialUsage;
use fairflow_model::moab::{job_factors, MoabJobInputs, MoabParams, UserRunningTotals};
use fairflow_model::report::{JobPriority, JobState};
use fairflow_model::tres::TresCounts;
use fairflow_model::PriorityModel;

use super::FairshareFactors;
use super::{job_tres, listed_state, partition_of, priority_row, time_limit_secs, tres_count};
use crate::state::{Job, JobPhase};
use crate::State;

/// Every evaluated job's Moab priority. The fair-share factors are not
/// used: Moab's FS component works from credential usage and targets.
pub fn listed<'a>(
    state: &'a State,
    _fs: &'a FairshareFactors,
) -> impl Iterator<Item = JobPriority> + 'a {
    // Values are validated when stored; a hand-built map that does not
    // parse falls back to Moab's defaults rather than failing a query.
    let params = MoabParams::from_map(&state.config.moab).unwrap_or_default();
    let usage = state.moab_credential_usage();
    state
        .jobs
        .values()
        .filter_map(|job| listed_state(state, job, true, false).map(|s| (job, s)))
        .map(move |(job, job_state)| job_priority(state, &params, &usage, job, job_state))
}

/// A job's TRES as `(name, count)` pairs.
fn tres_pairs(tres: &TresCounts) -> Vec<(&str, f64)> {
    tres.iter()
        .map(|(name, count)| (name.as_str(), *count))
        .collect()
}

/// The user's running jobs, in job-id order.
fn user_running_totals(state: &State, user: &str) -> UserRunningTotals {
    let mut totals = UserRunningTotals::default();
    for other in state.jobs.values().filter(|j| j.user == user) {
        if let JobPhase::Running { .. } = other.phase {
            totals.add_job(
                tres_count(&job_tres(other), "cpu", 1.0),
                time_limit_secs(other, &partition_of(state, other)),
                other.started_at,
                state.now,
            );
        }
    }
    totals
}

fn job_priority(
    state: &State,
    params: &MoabParams,
    usage: &CredentialUsage,
    job: &Job,
    job_state: JobState,
) -> JobPriority {
    let partition = partition_of(state, job);
    let tres = job_tres(job);
    let group = job
        .spec
        .group
        .clone()
        .unwrap_or_else(|| job.account.clone());
    let inputs = MoabJobInputs {
        id: &job.id,
        user: &job.user,
        group: &group,
        account: &job.account,
        qos: job.qos(),
        class: job.partition(),
        account_priority: state.accounts.get(&job.account).and_then(|a| a.priority),
        qos_priority: state.qos.get(job.qos()).map(|q| q.priority),
        class_priority: partition.priority,
        state: job_state,
        running: matches!(job.phase, JobPhase::Running { .. }),
        started_at: job.started_at,
        start_count: job.start_count,
        queued_at: job.queued_at,
        begin_at: job.spec.begin,
        held_spans: &job.held_spans,
        held_since: job.held_since,
        time_limit_secs: time_limit_secs(job, &partition),
        tres: &tres_pairs(&tres),
        cluster_tres: &tres_pairs(&state.cluster.tres),
        bypass_count: job.spec.bypass_count,
        deadline: job.spec.deadline,
        soft_policy_violation: job.spec.soft_policy_violation.unwrap_or(false),
        user_priority: job.spec.user_priority,
        attributes: job.spec.attributes.as_deref().unwrap_or(&[]),
        credential_usage: usage,
        user_running: user_running_totals(state, &job.user),
        wallclock_accuracy: state.wallclock_accuracy.get(&job.user).copied(),
        now: state.now,
    };
    let (factors, priority) = job_factors(params, &inputs);
    priority_row(job, PriorityModel::Moab, job_state, priority, factors)
}
