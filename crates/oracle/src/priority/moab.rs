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
//! # Effective queue time (`JOBPRIOACCRUALPOLICY`)
//! QUEUETIME, XFACTOR, TARGETQUEUETIME and TARGETXFACTOR read the job's
//! effective queue time (`moab_effective_queue_secs`), measured up to now
//! (up to its start for a running job, whose queue time is frozen):
//! - `QUEUEPOLICY` (the default) and `FULLPOLICY`: only the time the job was
//!   eligible counts: from its last queue entry (submit or requeue) or its
//!   begin time, whichever is later, minus every span it spent held. A job
//!   held for a week and then released has the queue time of the time it
//!   was not held, so pre-submitted held jobs bank nothing (the seed's
//!   stated purpose). Moab also stops accrual while a job breaks a
//!   throttling policy (idle-job limits for `QUEUEPOLICY`, run limits too for
//!   `FULLPOLICY`); fairflow models no throttling policy, so the two are
//!   the same here.
//! - `ALWAYS`: from the last queue entry, held time and time before the
//!   begin time included. Either way a job before its begin time is not
//!   evaluated; a requeue restarts the queue time.
//!
//! Each subcomponent's value (what each takes, where the seed leaves it open):
//! - CRED: `USER`/`GROUP`/`ACCOUNT`/`QOS`/`CLASS` are the `PRIORITY=` of the
//!   job's `USERCFG`, `GROUPCFG` (group: the job's `group`, else its account),
//!   `ACCOUNTCFG` (else the `account` event's `priority`), `QOSCFG` (else the
//!   `qos` event's `priority`), `CLASSCFG` (else the partition's `priority`,
//!   as Moab takes a resource manager's queue priority).
//! - FS: `FSUSER`..`FSCLASS` are `FSTARGET - usage%` of that credential
//!   (`moab_fs_delta`: floors `+` only raise, ceilings `-` only lower; ratio
//!   form with `FSPOLICY ...%`; 0 without a target). usage% is the
//!   credential's decayed usage over all decayed usage, times 100: users sum
//!   their associations, an account is its own usage plus its users' (Moab
//!   accounts are flat), groups, QOS and classes are what their jobs (and,
//!   for the group named like an account, that account's usage events)
//!   charged. `FSGUSER`/`FSGGROUP`/`FSGACCOUNT` (imported global usage) have
//!   no source in the log: 0. `FSJPU`: the user's running jobs; `FSPPU`:
//!   their allocated CPUs; `FSPSPU`: their CPUs times time limit (elapsed
//!   time when a job has none); `WCACCURACY`: the user's ended jobs' used
//!   CPU-seconds over requested CPU-seconds (0 before any).
//! - RES: `NODE` (1 by default), `PROC` (CPUs, 1 by default), `MEM`, `SWAP`,
//!   `DISK` (MB, from the job's TRES `mem`, `swap`, `disk`), `PS` (CPUs times
//!   time limit), `PE` (the largest fraction of the cluster's CPU, memory,
//!   swap or disk the job asks for, times the cluster's CPUs; the CPU count
//!   without a cluster), `WALLTIME` (the time limit, seconds). With
//!   `PRIORITYTARGETPROCCOUNT` (resp. `PRIORITYTARGETDURATION`) set, PROC
//!   (resp. WALLTIME) is instead `moab_target_closeness(request, ideal) =
//!   ideal - |request - ideal|`: the ideal scores highest, falling off
//!   linearly on both sides (equal to the request up to the ideal); PS and
//!   PE are unchanged.
//! - SERV: `QUEUETIME` the effective queue time in minutes (above),
//!   `XFACTOR = 1 + queuetime / max(XFMINWCLIMIT, limit)`, `BYPASS` (the
//!   job's `bypass_count`), `STARTCOUNT` (times started before this stay:
//!   starts, minus the current one for a running job), `DEADLINE` (the
//!   fraction of the time from eligibility to `deadline` that has passed,
//!   0..1, 1 at or past it), `SPVIOLATION` (1 when `soft_policy_violation`),
//!   `USERPRIO` (`user_priority`, -1024..0, or ..1023 with
//!   `ENABLEPOSUSERPRIORITY`).
//! - TARGET: `moab_target_value` of the queue time against the QOS's
//!   `QTTARGET` and of the expansion factor against its `XFTARGET`.
//! - USAGE (running jobs only, else 0): `USAGECONSUMED` CPU-seconds since
//!   the start, `USAGEHUNGER` 0 (no dynamic jobs), `USAGEREMAINING`
//!   CPU-seconds left of the limit, `USAGEEXECUTIONTIME` seconds since the
//!   start, `USAGEPERCENT` percent of the limit used.
//! - ATTR: `ATTRATTR` sums `JOBPRIOF ATTR[a]` over the job's `attributes`,
//!   `ATTRSTATE` is `JOBPRIOF STATE[s]` of its state (`Idle`, `Hold`,
//!   `Running`), `ATTRGRES` sums `JOBPRIOF GRES[g]` over the `gres/g` it
//!   asks for, `JOBID` is a numeric id's value (0 otherwise), `JOBNAME` 0
//!   (jobs have no names in the log).

use std::collections::BTreeMap;

use fairflow_model::moab::{weigh_components, Credential, MoabParams};
use fairflow_model::priority_formula::{
    moab_effective_queue_secs, moab_final_priority, moab_fs_delta, moab_target_closeness,
    moab_target_value, moab_xfactor,
};
use fairflow_model::report::{JobPriority, JobState};
use fairflow_model::usage::FrameUsage;
use fairflow_model::PriorityModel;

use super::FairshareFactors;
use super::{eligible_at, job_tres, listed_state, partition_of, time_limit_secs, tres_count};
use crate::state::{accrued_between, Job, JobPhase};
use crate::State;

/// Every credential's decayed usage (frame units) and the total.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CredentialUsage {
    /// All usage.
    pub total: FrameUsage,
    /// Per credential.
    pub by_credential: BTreeMap<(Credential, String), FrameUsage>,
}

impl CredentialUsage {
    /// A credential's share of all usage, in percent (0 when there is none).
    pub fn percent(&self, kind: Credential, name: &str) -> f64 {
        if self.total == 0 {
            return 0.0;
        }
        let usage = self
            .by_credential
            .get(&(kind, name.to_string()))
            .copied()
            .unwrap_or(0);
        100.0 * usage as f64 / self.total as f64
    }
}

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
    let period = state.config.calc_period_secs;
    let visible_to = if period > 0 {
        state.now.div_euclid(period) * period
    } else {
        state.now
    };
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

/// A job's effective queue time in seconds, up to `until` (now, or its
/// start), under the configured `JOBPRIOACCRUALPOLICY` (module docs).
pub fn effective_queue_secs(params: &MoabParams, job: &Job, until: fairflow_model::Time) -> i64 {
    if params.accrual_policy.counts_ineligible_time() {
        moab_effective_queue_secs(job.queued_at, until, &[])
    } else {
        moab_effective_queue_secs(eligible_at(job), until, &job.held_spans_until(until))
    }
}

/// The raw value of every subcomponent, by name.
fn subcomponent_values(
    state: &State,
    params: &MoabParams,
    usage: &CredentialUsage,
    job: &Job,
    job_state: JobState,
) -> BTreeMap<&'static str, f64> {
    let partition = partition_of(state, job);
    let tres = job_tres(job);
    let group = job_group(job);
    let class = job.partition().to_string();
    let qos = job.qos().to_string();
    let credentials = [
        (Credential::User, job.user.clone()),
        (Credential::Group, group),
        (Credential::Account, job.account.clone()),
        (Credential::Qos, qos.clone()),
        (Credential::Class, class),
    ];
    let cfg_priority =
        |kind: Credential, name: &str| params.credential(kind, name).and_then(|c| c.priority);
    let qos_cfg = params.credential(Credential::Qos, &qos);
    let limit_secs = time_limit_secs(job, &partition).map(|l| l as f64);
    let cpus = tres_count(&tres, "cpu", 1.0);
    let running_since = match job.phase {
        JobPhase::Running { .. } => Some(job.started_at.unwrap_or(state.now)),
        _ => None,
    };
    let eligible = eligible_at(job);
    let queue_secs = effective_queue_secs(params, job, running_since.unwrap_or(state.now)) as f64;
    let xfactor = moab_xfactor(
        queue_secs,
        limit_secs.unwrap_or(0.0),
        params.xf_min_wclimit_secs as f64,
    );

    let mut values: BTreeMap<&'static str, f64> = BTreeMap::new();
    // CRED.
    let defaults = [
        None,
        None,
        state.accounts.get(&job.account).and_then(|a| a.priority),
        state.qos.get(&qos).map(|q| q.priority),
        Some(partition.priority),
    ];
    for (((kind, name), default), sub) in credentials
        .iter()
        .zip(defaults)
        .zip(["USER", "GROUP", "ACCOUNT", "QOS", "CLASS"])
    {
        let priority = cfg_priority(*kind, name).or(default).unwrap_or(0);
        values.insert(sub, priority as f64);
    }
    // FS.
    for ((kind, name), sub) in
        credentials
            .iter()
            .zip(["FSUSER", "FSGROUP", "FSACCOUNT", "FSQOS", "FSCLASS"])
    {
        let delta = match params.credential(*kind, name).and_then(|c| c.fs_target) {
            Some((target, target_kind)) => moab_fs_delta(
                target,
                usage.percent(*kind, name),
                target_kind,
                params.fs_policy_ratio,
            ),
            None => 0.0,
        };
        values.insert(sub, delta);
    }
    for sub in ["FSGUSER", "FSGGROUP", "FSGACCOUNT"] {
        values.insert(sub, 0.0);
    }
    let (mut user_jobs, mut user_procs, mut user_ps) = (0.0, 0.0, 0.0);
    for other in state.jobs.values().filter(|j| j.user == job.user) {
        if let JobPhase::Running { .. } = other.phase {
            let other_cpus = tres_count(&job_tres(other), "cpu", 1.0);
            let other_limit = time_limit_secs(other, &partition_of(state, other));
            let elapsed = (state.now - other.started_at.unwrap_or(state.now)).max(0) as f64;
            user_jobs += 1.0;
            user_procs += other_cpus;
            user_ps += other_cpus * other_limit.map_or(elapsed, |l| l as f64);
        }
    }
    values.insert("FSJPU", user_jobs);
    values.insert("FSPPU", user_procs);
    values.insert("FSPSPU", user_ps);
    let accuracy = match state.wallclock_accuracy.get(&job.user) {
        Some((used, requested)) if *requested > 0.0 => used / requested,
        _ => 0.0,
    };
    values.insert("WCACCURACY", accuracy);
    // RES.
    let cluster = &state.cluster.tres;
    let cluster_cpus = tres_count(cluster, "cpu", 0.0);
    let pe = if cluster_cpus > 0.0 {
        let largest_fraction = ["cpu", "mem", "swap", "disk"]
            .iter()
            .filter_map(|name| {
                let total = tres_count(cluster, name, 0.0);
                let asked = tres_count(&tres, name, if *name == "cpu" { 1.0 } else { 0.0 });
                (total > 0.0).then(|| asked / total)
            })
            .fold(0.0f64, f64::max);
        largest_fraction * cluster_cpus
    } else {
        cpus
    };
    values.insert("NODE", tres_count(&tres, "node", 1.0));
    let ideal_procs = params.target_proc_count.unwrap_or(0) as f64;
    values.insert("PROC", moab_target_closeness(cpus, ideal_procs));
    values.insert("MEM", tres_count(&tres, "mem", 0.0));
    values.insert("SWAP", tres_count(&tres, "swap", 0.0));
    values.insert("DISK", tres_count(&tres, "disk", 0.0));
    values.insert("PS", cpus * limit_secs.unwrap_or(0.0));
    values.insert("PE", pe);
    let ideal_secs = params.target_duration_secs.unwrap_or(0) as f64;
    values.insert(
        "WALLTIME",
        moab_target_closeness(limit_secs.unwrap_or(0.0), ideal_secs),
    );
    // SERV.
    values.insert("QUEUETIME", queue_secs / 60.0);
    values.insert("XFACTOR", xfactor);
    values.insert("BYPASS", job.spec.bypass_count.unwrap_or(0) as f64);
    let starts_before = if running_since.is_some() {
        job.start_count.saturating_sub(1)
    } else {
        job.start_count
    };
    values.insert("STARTCOUNT", f64::from(starts_before));
    let deadline = match job.spec.deadline {
        Some(deadline) if deadline <= eligible => 1.0,
        Some(deadline) => {
            ((state.now - eligible) as f64 / (deadline - eligible) as f64).clamp(0.0, 1.0)
        }
        None => 0.0,
    };
    values.insert("DEADLINE", deadline);
    let violation = if job.spec.soft_policy_violation.unwrap_or(false) {
        1.0
    } else {
        0.0
    };
    values.insert("SPVIOLATION", violation);
    let highest_user_priority = if params.enable_positive_user_priority {
        1023
    } else {
        0
    };
    let user_priority = job
        .spec
        .user_priority
        .unwrap_or(0)
        .clamp(-1024, highest_user_priority);
    values.insert("USERPRIO", user_priority as f64);
    // TARGET.
    let qt_target = qos_cfg.and_then(|c| c.qt_target_secs).unwrap_or(0) as f64;
    let xf_target = qos_cfg.and_then(|c| c.xf_target).unwrap_or(0.0);
    values.insert("TARGETQUEUETIME", moab_target_value(queue_secs, qt_target));
    values.insert("TARGETXFACTOR", moab_target_value(xfactor, xf_target));
    // USAGE.
    let (consumed, remaining, execution, percent) = match running_since {
        Some(since) => {
            let elapsed = (state.now - since).max(0) as f64;
            let remaining = limit_secs.map_or(0.0, |l| cpus * (l - elapsed).max(0.0));
            let percent = limit_secs
                .filter(|l| *l > 0.0)
                .map_or(0.0, |l| 100.0 * elapsed / l);
            (cpus * elapsed, remaining, elapsed, percent)
        }
        None => (0.0, 0.0, 0.0, 0.0),
    };
    values.insert("USAGECONSUMED", consumed);
    values.insert("USAGEHUNGER", 0.0);
    values.insert("USAGEREMAINING", remaining);
    values.insert("USAGEEXECUTIONTIME", execution);
    values.insert("USAGEPERCENT", percent);
    // ATTR.
    let attr: i64 = job
        .spec
        .attributes
        .iter()
        .flatten()
        .filter_map(|a| params.attr_priority.get(&a.to_ascii_lowercase()))
        .sum();
    let state_name = match job_state {
        JobState::Pending => "idle",
        JobState::Held => "hold",
        JobState::Running => "running",
    };
    let gres: i64 = tres
        .iter()
        .filter(|(_, count)| **count > 0.0)
        .filter_map(|(name, _)| name.strip_prefix("gres/"))
        .filter_map(|g| params.gres_priority.get(&g.to_ascii_lowercase()))
        .sum();
    let job_id = if !job.id.is_empty() && job.id.bytes().all(|b| b.is_ascii_digit()) {
        job.id.parse::<f64>().unwrap_or(0.0)
    } else {
        0.0
    };
    values.insert("ATTRATTR", attr as f64);
    values.insert(
        "ATTRSTATE",
        params.state_priority.get(state_name).copied().unwrap_or(0) as f64,
    );
    values.insert("ATTRGRES", gres as f64);
    values.insert("JOBID", job_id);
    values.insert("JOBNAME", 0.0);
    values
}

/// A job's group credential: its `group`, else its account.
fn job_group(job: &Job) -> String {
    job.spec
        .group
        .clone()
        .unwrap_or_else(|| job.account.clone())
}

fn job_priority(
    state: &State,
    params: &MoabParams,
    usage: &CredentialUsage,
    job: &Job,
    job_state: JobState,
) -> JobPriority {
    let values = subcomponent_values(state, params, usage, job, job_state);
    let (factors, sum) = weigh_components(params, &values, job.qos(), &job_group(job));
    let priority = match job_state {
        JobState::Held => 0,
        _ => moab_final_priority(sum),
    };
    JobPriority {
        job: job.id.clone(),
        user: job.user.clone(),
        account: job.account.clone(),
        partition: job.partition().to_string(),
        qos: job.qos().to_string(),
        submit_at: job.submit_at,
        priority,
        state: job_state,
        model: PriorityModel::Moab,
        factors,
    }
}
