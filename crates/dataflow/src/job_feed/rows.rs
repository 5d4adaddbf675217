//! A job's row as the feed sends it ([`row_of`]): interned ids and only what
//! priority needs, its primary (partition, QOS) pair.

use fairflow_book::{JobPhase, State};
use fairflow_model::priority_formula::FLUX_URGENCY_DEFAULT;
use fairflow_model::report::JobIdOrder;
use fairflow_model::PriorityModel;

use crate::names::Names;
use crate::priority::{tres_bits, JobRow, MoabRow, Phase, PriorityParams};
use crate::types::JobId;

/// A job's row with the driver-kept flags (`begun`, `age_capped`) unset:
/// interned ids and only what priority needs (under Moab, its credentials
/// and Moab's attributes too). A job in several partitions or with several
/// QOS is sent as its primary pair (its first partition; under Slurm its
/// highest-priority QOS, else its first): `super::identify` adds the other pairs.
pub fn row_of(
    state: &State,
    job: &fairflow_book::Job,
    id: JobId,
    names: &mut Names,
    params: &PriorityParams,
) -> JobRow {
    let phase = match job.phase {
        JobPhase::Pending => Phase::Pending,
        JobPhase::Held => Phase::Held,
        JobPhase::Running { .. } => Phase::Running,
    };
    let tres = match (&job.phase, &job.allocated) {
        (JobPhase::Running { .. }, Some(allocated)) => allocated,
        _ => job.spec.tres.as_ref().unwrap_or(&EMPTY_TRES),
    };
    let count = |name: &str, default: f64| tres.get(name).copied().unwrap_or(default).to_bits();
    let moab = (params.model == PriorityModel::Moab).then(|| {
        Box::new(MoabRow {
            id: job.id.clone(),
            user: job.user.clone(),
            account: job.account.clone(),
            partition: job.partition().to_string(),
            qos: job.qos().to_string(),
            tres: tres_bits(tres),
            group: job.spec.group.clone(),
            bypass_count: job.spec.bypass_count,
            deadline: job.spec.deadline,
            soft_policy_violation: job.spec.soft_policy_violation,
            attributes: job.spec.attributes.clone(),
            started_at: job.started_at,
            held_spans: job.held_spans.clone(),
            held_since: job.held_since,
            user_priority: job.spec.user_priority,
        })
    });
    JobRow {
        job: id,
        id_number: JobIdOrder::plain_number(&job.id).unwrap_or(0),
        assoc: names
            .assocs
            .intern(&(job.account.clone(), job.user.clone())),
        account: names.accounts.intern_str(&job.account),
        partition: names.labels.intern_str(job.partition()),
        qos: names.labels.intern_str(model_qos(state, job, params.model)),
        phase,
        begun: false,
        age_capped: false,
        urgency: job.spec.urgency.unwrap_or(FLUX_URGENCY_DEFAULT),
        start_count: job.start_count,
        submit_at: job.submit_at,
        queued_at: job.queued_at,
        begin: job.spec.begin,
        nodes_bits: count("node", 1.0),
        cpus_bits: count("cpu", 1.0),
        weighted_tres: params
            .weight_tres
            .iter()
            .map(|(name, _)| count(name, 0.0))
            .collect(),
        time_limit_secs: job.spec.time_limit_secs.unwrap_or(0),
        nice: job.spec.nice.unwrap_or(0),
        site_factor: job.spec.site_factor.unwrap_or(0),
        user_priority: job.spec.user_priority.unwrap_or(0),
        moab,
    }
}

/// The QOS a model prices a job with: Slurm's primary QOS (the highest
/// priority of several), else the first listed.
pub(super) fn model_qos<'a>(
    state: &State,
    job: &'a fairflow_book::Job,
    model: PriorityModel,
) -> &'a str {
    match model {
        PriorityModel::Slurm => state.primary_qos(&job.spec),
        _ => job.qos(),
    }
}

/// The TRES of a job that gives none.
pub(super) static EMPTY_TRES: fairflow_model::tres::TresCounts =
    fairflow_model::tres::TresCounts::new();
