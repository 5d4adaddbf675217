//! Moab's per-job assembly, which both engines call so they get the same
//! bits: the inputs a job's priority reads ([`MoabJobInputs`], with the
//! aggregates each engine computes itself: [`CredentialUsage`],
//! [`UserRunningTotals`]), every subcomponent's raw value
//! ([`subcomponent_values`]), and their weighing into components and the
//! final priority ([`weigh_components`], [`job_factors`]).

use std::collections::BTreeMap;

use super::{Credential, MoabParams, COMPONENTS};
use crate::priority_formula::{
    eligible_at, moab_effective_queue_secs, moab_final_priority, moab_fs_delta,
    moab_target_closeness, moab_target_value, moab_xfactor,
};
use crate::report::JobState;
use crate::usage::FrameUsage;
use crate::Time;

/// Weigh a job's raw subcomponent values into Moab's components, as both
/// engines must: each subcomponent's weight (plus the job QOS's `QTWEIGHT` /
/// `XFWEIGHT` for QUEUETIME / XFACTOR) times its value, bounded by its cap;
/// each component the capped sum of its subcomponents, times the component
/// weight (plus the job group's `FSWEIGHT` for FS). Returns the factors (each
/// component followed by its subcomponents) and the priority before the final
/// clamp (`priority_formula::moab_final_priority`).
pub fn weigh_components(
    params: &MoabParams,
    values: &BTreeMap<&'static str, f64>,
    qos: &str,
    group: &str,
) -> (Vec<crate::report::PriorityFactor>, f64) {
    use crate::priority_formula::moab_cap;
    use crate::report::PriorityFactor;
    let qos_cfg = params.credential(Credential::Qos, qos);
    let group_fs_weight = params
        .credential(Credential::Group, group)
        .map_or(0, |c| c.fs_weight);
    let mut factors = Vec::new();
    let mut sum = 0.0;
    for (component, subcomponents) in COMPONENTS {
        let mut component_sum = 0.0;
        let mut rows = Vec::with_capacity(subcomponents.len());
        for sub in subcomponents {
            let extra_weight = match *sub {
                "QUEUETIME" => qos_cfg.map_or(0, |c| c.qt_weight),
                "XFACTOR" => qos_cfg.map_or(0, |c| c.xf_weight),
                _ => 0,
            };
            let weight = (params.weight(sub) + extra_weight) as f64;
            let cap = params.cap(sub) as f64;
            let value = values.get(sub).copied().unwrap_or(0.0);
            let weighted = moab_cap(weight * value, cap);
            component_sum += weighted;
            rows.push(PriorityFactor {
                name: sub.to_string().into(),
                component: Some(component.to_string()),
                normalized: value,
                weight,
                weighted,
                cap: (cap > 0.0).then_some(cap),
            });
        }
        let cap = params.cap(component) as f64;
        let extra_weight = if component == "FS" {
            group_fs_weight
        } else {
            0
        };
        let weight = (params.weight(component) + extra_weight) as f64;
        let capped = moab_cap(component_sum, cap);
        let contribution = weight * capped;
        sum += contribution;
        factors.push(PriorityFactor {
            name: component.to_string().into(),
            component: None,
            normalized: capped,
            weight,
            weighted: contribution,
            cap: (cap > 0.0).then_some(cap),
        });
        factors.extend(rows);
    }
    (factors, sum)
}

/// Every credential's decayed usage (frame units) and the total: what the FS
/// subcomponents `FSUSER`..`FSCLASS` compare with their targets. Each engine
/// sums it its own way (the oracle's `priority::moab::credential_usage`, the
/// incremental engine from its facts); this type only holds the sums.
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

/// One user's running jobs as `FSJPU`, `FSPPU` and `FSPSPU` read them. Each
/// engine adds the user's running jobs in job-id order ([`Self::add_job`]),
/// so the float sums agree bit for bit.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct UserRunningTotals {
    /// Running jobs (`FSJPU`).
    pub jobs: f64,
    /// Their CPUs (`FSPPU`).
    pub cpus: f64,
    /// Their CPUs times time limit, seconds (`FSPSPU`).
    pub cpu_secs: f64,
}

impl UserRunningTotals {
    /// Count one running job at `now`: its CPUs, and its CPUs times its time
    /// limit (times its elapsed seconds when it has no limit).
    pub fn add_job(
        &mut self,
        cpus: f64,
        time_limit_secs: Option<u64>,
        started_at: Option<Time>,
        now: Time,
    ) {
        let elapsed_secs = (now - started_at.unwrap_or(now)).max(0) as f64;
        self.jobs += 1.0;
        self.cpus += cpus;
        self.cpu_secs += cpus * time_limit_secs.map_or(elapsed_secs, |l| l as f64);
    }
}

/// A TRES count from `(name, count)` pairs, with a default when the list
/// does not name it.
pub fn tres_count(tres: &[(&str, f64)], name: &str, default: f64) -> f64 {
    tres.iter()
        .find(|(n, _)| *n == name)
        .map_or(default, |(_, count)| *count)
}

/// Everything Moab's subcomponents read about one listed job, as each engine
/// extracts it from its own records; [`subcomponent_values`] turns it into
/// the raw values. The credential usage and the per-user running totals are
/// aggregates the engine computes; everything else is the job's own.
#[derive(Debug, Clone, Copy)]
pub struct MoabJobInputs<'a> {
    /// The job id (`JOBID` reads an all-digit id as a number).
    pub id: &'a str,
    /// The user credential.
    pub user: &'a str,
    /// The group credential: the job's `group`, else its account.
    pub group: &'a str,
    /// The account credential.
    pub account: &'a str,
    /// The QOS credential (`""` for none).
    pub qos: &'a str,
    /// The class credential: the partition (`""` for none).
    pub class: &'a str,
    /// The account event's `priority`, the `ACCOUNT` value without
    /// `ACCOUNTCFG[a] PRIORITY=`.
    pub account_priority: Option<i64>,
    /// The QOS event's `priority`, the `QOS` value without `QOSCFG`.
    pub qos_priority: Option<i64>,
    /// The partition's `priority`, the `CLASS` value without `CLASSCFG`.
    pub class_priority: i64,
    /// How the job is listed.
    pub state: JobState,
    /// Is the job running?
    pub running: bool,
    /// When it last started (a running job without one counts from `now`).
    pub started_at: Option<Time>,
    /// How many times it started (a running job's count includes this stay).
    pub start_count: u32,
    /// When it last entered the queue (submit or requeue).
    pub queued_at: Time,
    /// Its begin time, if any.
    pub begin_at: Option<Time>,
    /// The closed spans it was held since it last entered the queue.
    pub held_spans: &'a [(Time, Time)],
    /// When its current hold began, if it is held.
    pub held_since: Option<Time>,
    /// Its time limit, seconds: its own, else its partition's maximum.
    pub time_limit_secs: Option<u64>,
    /// The TRES it counts (allocated while running, else requested).
    pub tres: &'a [(&'a str, f64)],
    /// The cluster's TRES totals.
    pub cluster_tres: &'a [(&'a str, f64)],
    /// Times backfill bypassed it (`BYPASS`).
    pub bypass_count: Option<u64>,
    /// Its deadline, Unix seconds (`DEADLINE`).
    pub deadline: Option<Time>,
    /// Does it violate a soft policy (`SPVIOLATION`)?
    pub soft_policy_violation: bool,
    /// Its user priority (`USERPRIO`).
    pub user_priority: Option<i64>,
    /// Its attributes (`ATTRATTR`).
    pub attributes: &'a [String],
    /// Every credential's usage at `now` (aggregate).
    pub credential_usage: &'a CredentialUsage,
    /// The user's running jobs (aggregate).
    pub user_running: UserRunningTotals,
    /// The user's ended jobs' `(used, requested)` CPU-seconds, if any ended.
    pub wallclock_accuracy: Option<(f64, f64)>,
    /// The time of evaluation.
    pub now: Time,
}

/// A job's effective queue time in seconds up to `until` (now, or its start)
/// under `JOBPRIOACCRUALPOLICY` (module docs of `subcomponent_values`).
pub fn effective_queue_secs(params: &MoabParams, job: &MoabJobInputs<'_>, until: Time) -> i64 {
    if params.accrual_policy.counts_ineligible_time() {
        moab_effective_queue_secs(job.queued_at, until, &[])
    } else {
        let mut held = job.held_spans.to_vec();
        if let Some(held_at) = job.held_since {
            held.push((held_at, until.max(held_at)));
        }
        moab_effective_queue_secs(eligible_at(job.queued_at, job.begin_at), until, &held)
    }
}

/// The raw value of every subcomponent of one job, by name; both engines
/// call this, so they get the same bits.
///
/// # Effective queue time (`JOBPRIOACCRUALPOLICY`)
/// QUEUETIME, XFACTOR, TARGETQUEUETIME and TARGETXFACTOR read the job's
/// effective queue time (`moab_effective_queue_secs`), measured up to now
/// (up to its start for a running job, whose queue time is frozen):
/// - `QUEUEPOLICY` (the default) and `FULLPOLICY`: only the time the job was
///   eligible counts: from its last queue entry (submit or requeue) or its
///   begin time, whichever is later, minus every span it spent held. A job
///   held for a week and then released has the queue time of the time it
///   was not held, so pre-submitted held jobs bank nothing (the seed's
///   stated purpose). Moab also stops accrual while a job breaks a
///   throttling policy (idle-job limits for `QUEUEPOLICY`, run limits too for
///   `FULLPOLICY`); fairflow models no throttling policy, so the two are
///   the same here.
/// - `ALWAYS`: from the last queue entry, held time and time before the
///   begin time included. Either way a job before its begin time is not
///   evaluated; a requeue restarts the queue time.
///
/// # Each subcomponent's value (where the seed leaves it open)
/// - CRED: `USER`/`GROUP`/`ACCOUNT`/`QOS`/`CLASS` are the `PRIORITY=` of the
///   job's `USERCFG`, `GROUPCFG` (group: the job's `group`, else its account),
///   `ACCOUNTCFG` (else the `account` event's `priority`), `QOSCFG` (else the
///   `qos` event's `priority`), `CLASSCFG` (else the partition's `priority`,
///   as Moab takes a resource manager's queue priority).
/// - FS: `FSUSER`..`FSCLASS` are `FSTARGET - usage%` of that credential
///   (`moab_fs_delta`: floors `+` only raise, ceilings `-` only lower; ratio
///   form with `FSPOLICY ...%`; 0 without a target). usage% is the
///   credential's decayed usage over all decayed usage, times 100: users sum
///   their associations, an account is its own usage plus its users' (Moab
///   accounts are flat), groups, QOS and classes are what their jobs (and,
///   for the group named like an account, that account's usage events)
///   charged. `FSGUSER`/`FSGGROUP`/`FSGACCOUNT` (imported global usage) have
///   no source in the log: 0. `FSJPU`: the user's running jobs; `FSPPU`:
///   their allocated CPUs; `FSPSPU`: their CPUs times time limit (elapsed
///   time when a job has none); `WCACCURACY`: the user's ended jobs' used
///   CPU-seconds over requested CPU-seconds (0 before any).
/// - RES: `NODE` (1 by default), `PROC` (CPUs, 1 by default), `MEM`, `SWAP`,
///   `DISK` (MB, from the job's TRES `mem`, `swap`, `disk`), `PS` (CPUs times
///   time limit), `PE` (the largest fraction of the cluster's CPU, memory,
///   swap or disk the job asks for, times the cluster's CPUs; the CPU count
///   without a cluster), `WALLTIME` (the time limit, seconds). With
///   `PRIORITYTARGETPROCCOUNT` (resp. `PRIORITYTARGETDURATION`) set, PROC
///   (resp. WALLTIME) is instead `moab_target_closeness(request, ideal) =
///   ideal - |request - ideal|`: the ideal scores highest, falling off
///   linearly on both sides (equal to the request up to the ideal); PS and
///   PE are unchanged.
/// - SERV: `QUEUETIME` the effective queue time in minutes (above),
///   `XFACTOR = 1 + queuetime / max(XFMINWCLIMIT, limit)`, `BYPASS` (the
///   job's `bypass_count`), `STARTCOUNT` (times started before this stay:
///   starts, minus the current one for a running job), `DEADLINE` (the
///   fraction of the time from eligibility to `deadline` that has passed,
///   0..1, 1 at or past it), `SPVIOLATION` (1 when `soft_policy_violation`),
///   `USERPRIO` (`user_priority`, -1024..0, or ..1023 with
///   `ENABLEPOSUSERPRIORITY`).
/// - TARGET: `moab_target_value` of the queue time against the QOS's
///   `QTTARGET` and of the expansion factor against its `XFTARGET`.
/// - USAGE (running jobs only, else 0): `USAGECONSUMED` CPU-seconds since
///   the start, `USAGEHUNGER` 0 (no dynamic jobs), `USAGEREMAINING`
///   CPU-seconds left of the limit, `USAGEEXECUTIONTIME` seconds since the
///   start, `USAGEPERCENT` percent of the limit used.
/// - ATTR: `ATTRATTR` sums `JOBPRIOF ATTR[a]` over the job's `attributes`,
///   `ATTRSTATE` is `JOBPRIOF STATE[s]` of its state (`Idle`, `Hold`,
///   `Running`), `ATTRGRES` sums `JOBPRIOF GRES[g]` over the `gres/g` it
///   asks for, `JOBID` is a numeric id's value (0 otherwise), `JOBNAME` 0
///   (jobs have no names in the log).
pub fn subcomponent_values(
    params: &MoabParams,
    job: &MoabJobInputs<'_>,
) -> BTreeMap<&'static str, f64> {
    let now = job.now;
    let limit_secs = job.time_limit_secs.map(|l| l as f64);
    let running_since = job.running.then(|| job.started_at.unwrap_or(now));
    let queue_secs = effective_queue_secs(params, job, running_since.unwrap_or(now)) as f64;
    let derived = Derived {
        limit_secs,
        cpus: tres_count(job.tres, "cpu", 1.0),
        running_since,
        queue_secs,
        xfactor: moab_xfactor(
            queue_secs,
            limit_secs.unwrap_or(0.0),
            params.xf_min_wclimit_secs as f64,
        ),
    };
    let mut values: BTreeMap<&'static str, f64> = BTreeMap::new();
    cred_and_fs_values(params, job, &mut values);
    res_values(params, job, &derived, &mut values);
    serv_and_target_values(params, job, &derived, &mut values);
    usage_values(job, &derived, &mut values);
    attr_values(params, job, &mut values);
    values
}

/// What several components of [`subcomponent_values`] read of one job.
struct Derived {
    /// The time limit, seconds.
    limit_secs: Option<f64>,
    /// CPUs asked for (1 when unsaid).
    cpus: f64,
    /// When a running job's current stay began.
    running_since: Option<Time>,
    /// The effective queue time, seconds ([`effective_queue_secs`]).
    queue_secs: f64,
    /// The expansion factor.
    xfactor: f64,
}

/// The job's credentials with their names, in Moab's order.
fn credentials<'a>(job: &MoabJobInputs<'a>) -> [(Credential, &'a str); 5] {
    [
        (Credential::User, job.user),
        (Credential::Group, job.group),
        (Credential::Account, job.account),
        (Credential::Qos, job.qos),
        (Credential::Class, job.class),
    ]
}

/// CRED's and FS's subcomponents.
fn cred_and_fs_values(
    params: &MoabParams,
    job: &MoabJobInputs<'_>,
    values: &mut BTreeMap<&'static str, f64>,
) {
    let credentials = credentials(job);
    let cfg_priority =
        |kind: Credential, name: &str| params.credential(kind, name).and_then(|c| c.priority);
    // CRED.
    let defaults = [
        None,
        None,
        job.account_priority,
        job.qos_priority,
        Some(job.class_priority),
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
                job.credential_usage.percent(*kind, name),
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
    values.insert("FSJPU", job.user_running.jobs);
    values.insert("FSPPU", job.user_running.cpus);
    values.insert("FSPSPU", job.user_running.cpu_secs);
    let accuracy = match job.wallclock_accuracy {
        Some((used, requested)) if requested > 0.0 => used / requested,
        _ => 0.0,
    };
    values.insert("WCACCURACY", accuracy);
}

/// RES's subcomponents.
fn res_values(
    params: &MoabParams,
    job: &MoabJobInputs<'_>,
    derived: &Derived,
    values: &mut BTreeMap<&'static str, f64>,
) {
    let (tres, cpus, limit_secs) = (job.tres, derived.cpus, derived.limit_secs);
    let cluster = job.cluster_tres;
    let cluster_cpus = tres_count(cluster, "cpu", 0.0);
    let pe = if cluster_cpus > 0.0 {
        let largest_fraction = ["cpu", "mem", "swap", "disk"]
            .iter()
            .filter_map(|name| {
                let total = tres_count(cluster, name, 0.0);
                let asked = tres_count(tres, name, if *name == "cpu" { 1.0 } else { 0.0 });
                (total > 0.0).then(|| asked / total)
            })
            .fold(0.0f64, f64::max);
        largest_fraction * cluster_cpus
    } else {
        cpus
    };
    values.insert("NODE", tres_count(tres, "node", 1.0));
    let ideal_procs = params.target_proc_count.unwrap_or(0) as f64;
    values.insert("PROC", moab_target_closeness(cpus, ideal_procs));
    values.insert("MEM", tres_count(tres, "mem", 0.0));
    values.insert("SWAP", tres_count(tres, "swap", 0.0));
    values.insert("DISK", tres_count(tres, "disk", 0.0));
    values.insert("PS", cpus * limit_secs.unwrap_or(0.0));
    values.insert("PE", pe);
    let ideal_secs = params.target_duration_secs.unwrap_or(0) as f64;
    values.insert(
        "WALLTIME",
        moab_target_closeness(limit_secs.unwrap_or(0.0), ideal_secs),
    );
}

/// SERV's and TARGET's subcomponents.
fn serv_and_target_values(
    params: &MoabParams,
    job: &MoabJobInputs<'_>,
    derived: &Derived,
    values: &mut BTreeMap<&'static str, f64>,
) {
    let now = job.now;
    let eligible = eligible_at(job.queued_at, job.begin_at);
    values.insert("QUEUETIME", derived.queue_secs / 60.0);
    values.insert("XFACTOR", derived.xfactor);
    values.insert("BYPASS", job.bypass_count.unwrap_or(0) as f64);
    let starts_before = if derived.running_since.is_some() {
        job.start_count.saturating_sub(1)
    } else {
        job.start_count
    };
    values.insert("STARTCOUNT", f64::from(starts_before));
    let deadline = match job.deadline {
        Some(deadline) if deadline <= eligible => 1.0,
        Some(deadline) => ((now - eligible) as f64 / (deadline - eligible) as f64).clamp(0.0, 1.0),
        None => 0.0,
    };
    values.insert("DEADLINE", deadline);
    let violation = if job.soft_policy_violation { 1.0 } else { 0.0 };
    values.insert("SPVIOLATION", violation);
    let highest_user_priority = if params.enable_positive_user_priority {
        1023
    } else {
        0
    };
    let user_priority = job
        .user_priority
        .unwrap_or(0)
        .clamp(-1024, highest_user_priority);
    values.insert("USERPRIO", user_priority as f64);
    // TARGET.
    let qos_cfg = params.credential(Credential::Qos, job.qos);
    let qt_target = qos_cfg.and_then(|c| c.qt_target_secs).unwrap_or(0) as f64;
    let xf_target = qos_cfg.and_then(|c| c.xf_target).unwrap_or(0.0);
    values.insert(
        "TARGETQUEUETIME",
        moab_target_value(derived.queue_secs, qt_target),
    );
    values.insert(
        "TARGETXFACTOR",
        moab_target_value(derived.xfactor, xf_target),
    );
}

/// USAGE's subcomponents (running jobs only, else 0).
fn usage_values(
    job: &MoabJobInputs<'_>,
    derived: &Derived,
    values: &mut BTreeMap<&'static str, f64>,
) {
    let (cpus, limit_secs) = (derived.cpus, derived.limit_secs);
    let (consumed, remaining, execution, percent) = match derived.running_since {
        Some(since) => {
            let elapsed = (job.now - since).max(0) as f64;
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
}

/// ATTR's subcomponents.
fn attr_values(
    params: &MoabParams,
    job: &MoabJobInputs<'_>,
    values: &mut BTreeMap<&'static str, f64>,
) {
    let attr: i64 = job
        .attributes
        .iter()
        .filter_map(|a| params.attr_priority.get(&a.to_ascii_lowercase()))
        .sum();
    let state_name = match job.state {
        JobState::Pending => "idle",
        JobState::Held => "hold",
        JobState::Running => "running",
    };
    let gres: i64 = job
        .tres
        .iter()
        .filter(|(_, count)| *count > 0.0)
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
}

/// One job's Moab factors and priority: [`subcomponent_values`] weighed by
/// [`weigh_components`], then `moab_final_priority` (0 for a held job).
pub fn job_factors(
    params: &MoabParams,
    job: &MoabJobInputs<'_>,
) -> (Vec<crate::report::PriorityFactor>, u64) {
    let values = subcomponent_values(params, job);
    let (factors, sum) = weigh_components(params, &values, job.qos, job.group);
    let priority = match job.state {
        JobState::Held => 0,
        _ => moab_final_priority(sum),
    };
    (factors, priority)
}
