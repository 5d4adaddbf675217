//! Moab's job priority, evaluated exactly at read time over the arranged
//! records (`fairflow_oracle::priority::moab` is the definition). Each job's
//! values and factors come from `fairflow_model::moab::job_factors`, the
//! function the oracle calls; only the aggregates it takes (credential
//! usage, each user's running totals, summed in the oracle's job-id order)
//! are gathered here, so the results are bit-identical.
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

use fairflow_model::moab::{
    job_factors, CredentialUsage, MoabJobInputs, MoabParams, UserRunningTotals,
};
use fairflow_model::report::JobPriority;
use fairflow_model::{PriorityModel, Time};

use super::inputs::{Fact, MoabRow, Phase, TresBits};
use super::record::PriorityRecord;

/// The read-time context: parameters, credential usage, accuracy, and the
/// per-user running totals.
struct Context {
    params: MoabParams,
    usage: CredentialUsage,
    accuracy: BTreeMap<String, (f64, f64)>,
    running: BTreeMap<String, UserRunningTotals>,
}

/// TRES bits as `(name, count)` pairs.
fn tres_pairs(tres: &TresBits) -> Vec<(&str, f64)> {
    tres.iter()
        .map(|(name, bits)| (name.as_str(), f64::from_bits(*bits)))
        .collect()
}

fn time_limit_secs(record: &PriorityRecord) -> Option<u64> {
    Some(record.row.time_limit_secs)
        .filter(|l| *l > 0)
        .or(record
            .context
            .ctx
            .partition
            .max_time_secs
            .filter(|l| *l > 0))
}

/// The record's Moab attributes, if it was built under Moab.
fn moab_row(record: &PriorityRecord) -> Option<&MoabRow> {
    record.row.moab.as_deref()
}

/// Every listed job's Moab priority at `now`, in job-id order (the oracle's
/// order: `records` are sorted here by the job's name).
pub fn evaluate<'r>(
    records: impl IntoIterator<Item = &'r PriorityRecord>,
    facts: &[Fact],
    now: Time,
) -> Vec<JobPriority> {
    let mut records: Vec<(&MoabRow, &PriorityRecord)> = records
        .into_iter()
        .filter_map(|r| moab_row(r).map(|m| (m, r)))
        .collect();
    records.sort_by(|a, b| a.0.id.cmp(&b.0.id));
    let mut context = Context::of(facts);
    // The oracle sums each user's running jobs in job-id order.
    for (moab, record) in &records {
        if record.row.phase == Phase::Running {
            let cpus = fairflow_model::moab::tres_count(&tres_pairs(&moab.tres), "cpu", 1.0);
            context
                .running
                .entry(moab.user.clone())
                .or_default()
                .add_job(cpus, time_limit_secs(record), moab.started_at, now);
        }
    }
    records
        .iter()
        .filter_map(|(moab, record)| evaluate_one(&context, moab, record, now))
        .collect()
}

impl Context {
    /// The context the facts give (the running totals still empty).
    fn of(facts: &[Fact]) -> Context {
        let mut context = Context {
            params: MoabParams::default(),
            usage: CredentialUsage::default(),
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
                    context
                        .usage
                        .by_credential
                        .insert((*kind, name.clone()), *usage);
                }
                Fact::MoabUsageTotal(total) => context.usage.total = *total,
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
        context
    }
}

/// One listed job's Moab priority at `now` (`None`: not listed).
fn evaluate_one(
    context: &Context,
    moab: &MoabRow,
    record: &PriorityRecord,
    now: Time,
) -> Option<JobPriority> {
    let listed = record.listed?;
    let row = &record.row;
    let ctx = &record.context.ctx;
    let group = moab.group.as_deref().unwrap_or(&moab.account);
    let inputs = MoabJobInputs {
        id: &moab.id,
        user: &moab.user,
        group,
        account: &moab.account,
        qos: &moab.qos,
        class: &moab.partition,
        account_priority: ctx.account_priority,
        qos_priority: Some(ctx.qos_priority),
        class_priority: ctx.partition.priority,
        state: listed.job_state(),
        running: row.phase == Phase::Running,
        started_at: moab.started_at,
        start_count: row.start_count,
        queued_at: row.queued_at,
        begin_at: row.begin,
        held_spans: &moab.held_spans,
        held_since: moab.held_since,
        time_limit_secs: time_limit_secs(record),
        tres: &tres_pairs(&moab.tres),
        cluster_tres: &tres_pairs(&record.context.globals.cluster_tres),
        bypass_count: moab.bypass_count,
        deadline: moab.deadline,
        soft_policy_violation: moab.soft_policy_violation.unwrap_or(false),
        user_priority: moab.user_priority,
        attributes: moab.attributes.as_deref().unwrap_or(&[]),
        credential_usage: &context.usage,
        user_running: context.running.get(&moab.user).copied().unwrap_or_default(),
        wallclock_accuracy: context.accuracy.get(&moab.user).copied(),
        now,
    };
    let (factors, priority) = job_factors(&context.params, &inputs);
    Some(JobPriority {
        job: moab.id.clone(),
        user: moab.user.clone(),
        account: moab.account.clone(),
        partition: moab.partition.clone(),
        qos: moab.qos.clone(),
        submit_at: row.submit_at,
        priority,
        state: listed.job_state(),
        model: PriorityModel::Moab,
        factors,
        pairs: Vec::new(),
        priority_tier: 0,
        expedited: false,
    })
}
