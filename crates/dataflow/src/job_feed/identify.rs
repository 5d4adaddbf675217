//! Naming a read's results from the book (the dataflow's records carry only
//! ids): user, account, partition and QOS, the scheduler queue's marks,
//! and under Slurm a job's other (partition, QOS) pairs, priced from its
//! record's evaluated factors.

use fairflow_book::{JobPhase, State};
use fairflow_model::job_priority::{
    slurm_pair_factors_from_job, slurm_pair_priority, SlurmPairInputs, SlurmPairNorms,
    SlurmRawFactors, SlurmWeights,
};
use fairflow_model::report::{JobPriority, PairPriority};
use fairflow_model::PriorityModel;

use super::rows::{model_qos, EMPTY_TRES};

/// Name a priority result's user, account, partition and QOS from the book
/// (the dataflow's records carry only ids); under Slurm, a job in several
/// partitions or with several QOS gets its pairs ([`pairs_of`]).
pub fn identify(state: &State, priority: &mut JobPriority) {
    if let Some(job) = state.jobs.get(&priority.job) {
        priority.user.clone_from(&job.user);
        priority.account.clone_from(&job.account);
        job.partition().clone_into(&mut priority.partition);
        model_qos(state, job, priority.model).clone_into(&mut priority.qos);
        if priority.model == PriorityModel::Slurm && job.has_pairs() {
            priority.pairs = pairs_of(state, job, priority);
        }
    }
}

/// Mark a named result as the scheduler's queue ranks it: under Slurm its
/// partition's `PriorityTier` and whether the job is marked for expedited
/// requeue (the oracle's `priority::slurm` sets the same).
pub fn queue_marks(state: &State, priority: &mut JobPriority) {
    if priority.model == PriorityModel::Slurm {
        priority.priority_tier = state
            .partitions
            .get(&priority.partition)
            .map_or(0, |p| p.priority_tier);
        priority.expedited = state.expedited.contains(&priority.job);
    }
}

/// Slurm's (partition, QOS) pairs of a listed job from its own evaluated
/// factors (its record's, the primary pair's): per pair the partition, QOS
/// and TRES factors are replaced by the pair's
/// (`fairflow_model::job_priority::slurm_pair_factors_from_job`) and summed
/// in Slurm's per-pair order; a held job's pairs are 0; under `INCR_ONLY` a
/// pending job's pair is floored by the book's pair floor
/// (`State::pair_priority_with_floor`). Cost per read of
/// the job: `O(pairs + QOS + partitions)`.
///
/// The maxima are the ones the dataflow normalised the job's own factors
/// with: the largest QOS priority (at least 0) is over the defined QOS; the
/// largest partition factor over the defined partitions and those listed
/// jobs name undefined (factor 1) is taken as `max(defined, 1)`, which
/// gives every pair the same factor: each partition of a job in several is
/// defined (the book's rule), so a pair's partition factor is at most the
/// defined maximum, and where that maximum is 0 every such factor is 0
/// whatever the divisor; a single undefined partition (with several QOS)
/// is this listed job's, so the maximum is at least its factor 1.
fn pairs_of(state: &State, job: &fairflow_book::Job, own: &JobPriority) -> Vec<PairPriority> {
    let norms = SlurmPairNorms {
        weights: SlurmWeights::of(&state.config),
        raw: SlurmRawFactors::of(&state.config),
        max_partition: state
            .partitions
            .values()
            .map(|p| p.priority_job_factor)
            .fold(1, u32::max),
        max_qos: state.max_qos_priority(),
    };
    let counted = match (&job.phase, &job.allocated) {
        (JobPhase::Running { .. }, Some(allocated)) => allocated,
        _ => job.spec.tres.as_ref().unwrap_or(&EMPTY_TRES),
    };
    let site = job.spec.site_factor.unwrap_or(0);
    let nice = job.spec.nice.unwrap_or(0);
    let job_pairs = state.job_pairs(job);
    let pair_count = job_pairs.len();
    job_pairs
        .into_iter()
        .enumerate()
        .map(|(index, (partition_name, qos))| {
            let partition = state.partitions.get(partition_name);
            let tres = state.slurm_tres_inputs(counted, partition.and_then(|p| p.tres.as_ref()));
            let pair = SlurmPairInputs {
                partition_job_factor: partition.map_or(1, |p| p.priority_job_factor),
                tres: &tres,
                qos_priority: state.qos.get(qos).map_or(0, |q| q.priority),
            };
            let factors = slurm_pair_factors_from_job(&own.factors, &norms, &pair);
            let computed = slurm_pair_priority(&factors, site, nice);
            let priority = state.slurm_pair_priority_as_listed(
                &job.id,
                own.state,
                (index, pair_count),
                computed,
            );
            PairPriority {
                partition: partition_name.to_string(),
                qos: qos.to_string(),
                priority,
                factors,
                priority_tier: partition.map_or(0, |p| p.priority_tier),
            }
        })
        .collect()
}
