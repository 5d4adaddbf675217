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
//! itself are every credential's usage ([`credential_usage`]) and each
//! user's running jobs (`FSJPU`, `FSPPU`, `FSPSPU`).

pub use fairflow_model::moab::CredentialUsage;
use fairflow_model::moab::{job_factors, Credential, MoabJobInputs, MoabParams, UserRunningTotals};
use fairflow_model::report::{JobPriority, JobState};
use fairflow_model::tres::TresCounts;
use fairflow_model::usage::FrameUsage;
use fairflow_model::PriorityModel;

use super::FairshareFactors;
use super::{job_tres, listed_state, partition_of, priority_row, time_limit_secs, tres_count};
use crate::state::{accrued_between, Job, JobPhase};
use crate::State;

/// The usage of every Moab credential at `state.now`.
pub fn credential_usage(state: &State) -> CredentialUsage {
    let mut out = CredentialUsage::default();
    let mut add = |kind: Credential, name: &str, usage: FrameUsage| {
        *out.by_credential
            .entry((kind, name.to_string()))
            .or_default() += usage;
    };
    let mut total: FrameUsage = 0;
    for (name, account) in &state.accounts {
        let usage = state.visible_usage(&account.usage);
        add(Credential::Account, name, usage);
        total += usage;
    }
    for ((account, user), assoc) in &state.users {
        let usage = state.visible_usage(&assoc.usage);
        add(Credential::Account, account, usage);
        add(Credential::User, user, usage);
        total += usage;
    }
    for (credential, usage) in &state.credential_usage {
        add(credential.0, &credential.1, *usage);
    }
    // Running jobs' accrual so far (to the last calc-period boundary with one).
    let visible_to = state
        .config
        .calc_period_boundary(state.now)
        .unwrap_or(state.now);
    for job in state.jobs.values() {
        if let JobPhase::Running { rate, .. } = job.phase {
            let from = job
                .started_at
                .unwrap_or(state.now)
                .max(state.last_reset_at.unwrap_or(i64::MIN));
            let accrued = accrued_between(&state.frame, rate, from, visible_to);
            for (kind, name) in job.extra_credentials() {
                add(kind, &name, accrued);
            }
        }
    }
    out.total = total;
    out
}

/// Every evaluated job's Moab priority. The fair-share factors are not
/// used: Moab's FS component works from credential usage and targets.
pub fn evaluate(state: &State, _fs: &FairshareFactors) -> Vec<JobPriority> {
    // Values are validated when stored; a hand-built map that does not
    // parse falls back to Moab's defaults rather than failing a query.
    let params = MoabParams::from_map(&state.config.moab).unwrap_or_default();
    let usage = credential_usage(state);
    state
        .jobs
        .values()
        .filter_map(|job| listed_state(state, job, true, false).map(|s| (job, s)))
        .map(|(job, job_state)| job_priority(state, &params, &usage, job, job_state))
        .collect()
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
