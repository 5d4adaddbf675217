//! Moab's job priority, evaluated exactly at read time over the arranged
//! records (`fairflow_oracle::priority::moab` is the definition; every
//! scalar comes from `fairflow_model::priority_formula`, in the oracle's
//! order, so the results are bit-identical).
//!
//! # Why at read time, and what it costs
//! Moab's SERV (`QUEUETIME`, `XFACTOR`, `DEADLINE`), TARGET and USAGE terms
//! move every job at its own rate as time passes (XFACTOR's rate is
//! `1/max(limit, XFMINWCLIMIT)`, per job), and any `*CAP` makes even
//! QUEUETIME non-linear, so no time-invariant order exists. Every read
//! (`top`, `evaluate_all`) evaluates every listed job: `O(listed jobs)`
//! per read, plus `O(running jobs)` for the per-user running totals
//! (`FSJPU`, `FSPPU`, `FSPSPU`) and `O(facts)` for the configuration,
//! credential usage and wallclock accuracy. Updates stay incremental (a job
//! event touches its record only). This holds whether the XFACTOR weight is 0
//! or not.
//!
//! Credential usage (`Fact::MoabUsage`, `Fact::MoabUsageTotal`) is what the
//! oracle's `credential_usage` gives at the batch's time (running jobs'
//! accrual included), so a Moab read is exact at the time of the last batch;
//! with running jobs and nonzero FS weights the driver sends a batch at the
//! read's time first.

use std::collections::BTreeMap;

use fairflow_model::moab::{weigh_components, Credential, MoabParams};
use fairflow_model::priority_formula::{
    moab_effective_queue_secs, moab_final_priority, moab_fs_delta, moab_target_closeness,
    moab_target_value, moab_xfactor,
};
use fairflow_model::report::{JobPriority, JobState};
use fairflow_model::{PriorityModel, Time};

use super::record::{Listed, PriorityRecord};
use super::{Fact, JobRow, KeyCtx, Phase, TresBits};

/// What a Moab record keeps besides the common fields.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct MoabJob {
    /// The job.
    pub row: JobRow,
    /// Its contexts (account, QOS and partition priorities, partition).
    pub ctx: KeyCtx,
    /// The cluster's TRES totals.
    pub cluster_tres: TresBits,
}

/// The read-time context: parameters, credential usage, accuracy, and the
/// per-user running totals.
struct Context {
    params: MoabParams,
    total: u128,
    usage: BTreeMap<(Credential, String), u128>,
    accuracy: BTreeMap<String, (f64, f64)>,
    /// Per user: (running jobs, their CPUs, their CPU-seconds).
    running: BTreeMap<String, (f64, f64, f64)>,
}

impl Context {
    /// The oracle's `CredentialUsage::percent`.
    fn percent(&self, kind: Credential, name: &str) -> f64 {
        if self.total == 0 {
            return 0.0;
        }
        let usage = self
            .usage
            .get(&(kind, name.to_string()))
            .copied()
            .unwrap_or(0);
        100.0 * usage as f64 / self.total as f64
    }
}

fn tres_count(tres: &TresBits, name: &str, default: f64) -> f64 {
    tres.iter()
        .find(|(n, _)| n == name)
        .map_or(default, |(_, bits)| f64::from_bits(*bits))
}

fn time_limit_secs(job: &MoabJob) -> Option<u64> {
    job.row.time_limit_secs.filter(|l| *l > 0).or(job
        .ctx
        .partition
        .max_time_secs
        .filter(|l| *l > 0))
}

/// Every listed job's Moab priority at `now`, in job-id order (`records` in
/// job-id order).
pub fn evaluate(records: &[PriorityRecord], facts: &[Fact], now: Time) -> Vec<JobPriority> {
    let mut context = Context {
        params: MoabParams::default(),
        total: 0,
        usage: BTreeMap::new(),
        accuracy: BTreeMap::new(),
        running: BTreeMap::new(),
    };
    for fact in facts {
        match fact {
            Fact::Config(p) => {
                // Values were validated when stored; as the oracle, fall back
                // to Moab's defaults rather than failing a read.
                context.params = MoabParams::from_map(&p.moab).unwrap_or_default();
            }
            Fact::MoabUsage { kind, name, usage } => {
                context.usage.insert((*kind, name.clone()), *usage);
            }
            Fact::MoabUsageTotal(total) => context.total = *total,
            Fact::WallclockAccuracy {
                user,
                used_bits,
                requested_bits,
            } => {
                context.accuracy.insert(
                    user.clone(),
                    (f64::from_bits(*used_bits), f64::from_bits(*requested_bits)),
                );
            }
            _ => {}
        }
    }
    // The oracle sums each user's running jobs in job-id order.
    for record in records {
        let Some(job) = record.moab.as_deref() else {
            continue;
        };
        if job.row.phase == Phase::Running {
            let cpus = tres_count(&job.row.tres, "cpu", 1.0);
            let limit = time_limit_secs(job);
            let elapsed = (now - job.row.started_at.unwrap_or(now)).max(0) as f64;
            let entry = context.running.entry(job.row.user.clone()).or_default();
            entry.0 += 1.0;
            entry.1 += cpus;
            entry.2 += cpus * limit.map_or(elapsed, |l| l as f64);
        }
    }
    records
        .iter()
        .filter_map(|record| {
            let listed = record.listed?;
            let job = record.moab.as_deref()?;
            Some(job_priority(&context, record, job, listed, now))
        })
        .collect()
}

fn subcomponent_values(
    context: &Context,
    job: &MoabJob,
    job_state: JobState,
    now: Time,
) -> BTreeMap<&'static str, f64> {
    let params = &context.params;
    let row = &job.row;
    let tres = &row.tres;
    let group = row.group.clone().unwrap_or_else(|| row.account.clone());
    let credentials = [
        (Credential::User, row.user.clone()),
        (Credential::Group, group),
        (Credential::Account, row.account.clone()),
        (Credential::Qos, row.qos.clone()),
        (Credential::Class, row.partition.clone()),
    ];
    let cfg_priority =
        |kind: Credential, name: &str| params.credential(kind, name).and_then(|c| c.priority);
    let qos_cfg = params.credential(Credential::Qos, &row.qos);
    let limit_secs = time_limit_secs(job).map(|l| l as f64);
    let cpus = tres_count(tres, "cpu", 1.0);
    let running_since = match row.phase {
        Phase::Running => Some(row.started_at.unwrap_or(now)),
        _ => None,
    };
    let eligible = row.queued_at.max(row.begin.unwrap_or(row.queued_at));
    // Effective queue time under JOBPRIOACCRUALPOLICY, as the oracle's
    // `effective_queue_secs`: from the last queue entry (ALWAYS), or from
    // eligibility minus the time spent held (the default).
    let until = running_since.unwrap_or(now);
    let queue_secs = if params.accrual_policy.counts_ineligible_time() {
        moab_effective_queue_secs(row.queued_at, until, &[])
    } else {
        let mut held = row.held_spans.clone();
        if let Some(held_at) = row.held_since {
            held.push((held_at, until.max(held_at)));
        }
        moab_effective_queue_secs(eligible, until, &held)
    } as f64;
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
        job.ctx.account_priority,
        Some(job.ctx.qos_priority),
        Some(job.ctx.partition.priority),
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
                context.percent(*kind, name),
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
    let (user_jobs, user_procs, user_ps) = context
        .running
        .get(&row.user)
        .copied()
        .unwrap_or((0.0, 0.0, 0.0));
    values.insert("FSJPU", user_jobs);
    values.insert("FSPPU", user_procs);
    values.insert("FSPSPU", user_ps);
    let accuracy = match context.accuracy.get(&row.user) {
        Some((used, requested)) if *requested > 0.0 => used / requested,
        _ => 0.0,
    };
    values.insert("WCACCURACY", accuracy);
    // RES.
    let cluster = &job.cluster_tres;
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
    // SERV.
    values.insert("QUEUETIME", queue_secs / 60.0);
    values.insert("XFACTOR", xfactor);
    values.insert("BYPASS", row.bypass_count.unwrap_or(0) as f64);
    let starts_before = if running_since.is_some() {
        row.start_count.saturating_sub(1)
    } else {
        row.start_count
    };
    values.insert("STARTCOUNT", f64::from(starts_before));
    let deadline = match row.deadline {
        Some(deadline) if deadline <= eligible => 1.0,
        Some(deadline) => ((now - eligible) as f64 / (deadline - eligible) as f64).clamp(0.0, 1.0),
        None => 0.0,
    };
    values.insert("DEADLINE", deadline);
    let violation = if row.soft_policy_violation.unwrap_or(false) {
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
    let user_priority = row
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
            let elapsed = (now - since).max(0) as f64;
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
    let attr: i64 = row
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
        .filter(|(_, bits)| f64::from_bits(*bits) > 0.0)
        .filter_map(|(name, _)| name.strip_prefix("gres/"))
        .filter_map(|g| params.gres_priority.get(&g.to_ascii_lowercase()))
        .sum();
    let job_id = if !row.id.is_empty() && row.id.bytes().all(|b| b.is_ascii_digit()) {
        row.id.parse::<f64>().unwrap_or(0.0)
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

fn job_priority(
    context: &Context,
    record: &PriorityRecord,
    job: &MoabJob,
    listed: Listed,
    now: Time,
) -> JobPriority {
    let job_state = match listed {
        Listed::Pending => JobState::Pending,
        Listed::Held => JobState::Held,
        Listed::Running => JobState::Running,
    };
    let params = &context.params;
    let values = subcomponent_values(context, job, job_state, now);
    let group = job
        .row
        .group
        .clone()
        .unwrap_or_else(|| job.row.account.clone());
    let (factors, sum) = weigh_components(params, &values, &job.row.qos, &group);
    let priority = match job_state {
        JobState::Held => 0,
        _ => moab_final_priority(sum),
    };
    JobPriority {
        job: record.job.clone(),
        user: record.user.clone(),
        account: record.account.clone(),
        partition: record.partition.clone(),
        qos: record.qos.clone(),
        submit_at: record.submit_at,
        priority,
        state: job_state,
        model: PriorityModel::Moab,
        factors,
    }
}
