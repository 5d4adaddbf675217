//! Slurm's multifactor priority (`priority_multifactor.c`,
//! `../shared/notes/slurm-priority.md` §5), per job:
//!
//! `W_age*age + W_assoc*assoc + W_fs*fs + W_js*jobsize + W_part*part +
//! W_qos*qos + Σ W_tres[i]*tres[i] + site - nice`, below 1 -> 1, above
//! `0xFFFFFFFF` -> `0xFFFFFFFF`, truncated; held jobs 0.
//!
//! - A factor whose weight is 0 is 0 (Slurm's `set_priority_factors` does not
//!   compute it), so `sprio -n` shows 0 for it as Slurm does.
//! - Age: `min(1, (now - accrue_at) / PriorityMaxAge)`, `accrue_at` the last
//!   queue entry (submit or requeue) with `ACCRUE_ALWAYS`, else that or the
//!   begin time, whichever is later.
//! - Association: the user association's `priority`, else its nearest
//!   account's (Slurm inherits it), divided by the largest over all
//!   associations (`NO_NORMAL_ASSOC`: raw).
//! - Partition: `PriorityJobFactor / max over partitions` (`NO_NORMAL_PART`:
//!   raw); 0 when the job's factor is 0. Partitions that no event defined but
//!   a listed job names count with the default factor 1.
//! - QOS: `priority / max over QOS` when the job's QOS priority is not 0
//!   (`NO_NORMAL_QOS`: raw).
//! - Job size: `priority_formula::slurm_job_size_factor` with the job's
//!   `node` (1 by default) and `cpu` (1 by default) against the `cluster`
//!   event's size; the time limit is the job's or its partition's maximum.
//! - TRES: per TRES with a nonzero `PriorityWeightTRES` weight, the job's
//!   count (allocated when running) over its partition's total (the
//!   `partition` event's `tres`, else the cluster's), `NO_NORMAL_TRES` raw.
//! - Site and nice: the job's `site_factor` and `nice` (0 by default); the
//!   nice factor is listed with weight -1.
//! - A job submitted to several partitions or several QOS is priced with its
//!   primary pair (its first partition, its highest-priority QOS:
//!   `State::primary_qos`), and gets one priority per (partition, QOS) pair
//!   in `State::job_pairs`' order (`JobPriority::pairs`), each from
//!   `slurm_pair_factors` / `slurm_pair_priority`; 0 while held; not floored
//!   by `INCR_ONLY` (docs/semantics.md).

use fairflow_model::job_priority::{
    slurm_job_factors, slurm_job_priority, slurm_pair_factors, slurm_pair_priority, SlurmJobInputs,
    SlurmPairInputs, SlurmRawFactors, SlurmTresInput, SlurmWeights,
};
use fairflow_model::priority_formula::JobSizeInputs;
use fairflow_model::report::{JobPriority, JobState, PairPriority};
use fairflow_model::tres::TresCounts;
use fairflow_model::PriorityModel;

use super::{
    eligible_at, job_tres, listed_state, partition_of, priority_row, time_limit_secs, tres_count,
    FairshareFactors,
};
use crate::state::{Job, Partition};
use crate::State;

/// The association priority Slurm uses: the user association's own, else the
/// nearest account's up the tree, else 0.
pub fn assoc_priority(state: &State, account: &str, user: Option<&str>) -> i64 {
    if let Some(user) = user {
        if let Some(p) = state
            .users
            .get(&(account.to_string(), user.to_string()))
            .and_then(|u| u.priority)
        {
            return p;
        }
    }
    let mut name = Some(account.to_string());
    while let Some(current) = name {
        let Some(record) = state.accounts.get(&current) else {
            break;
        };
        if let Some(p) = record.priority {
            return p;
        }
        name = record.parent.clone();
    }
    0
}

/// The maxima Slurm normalises by.
struct Maxima {
    assoc: i64,
    partition: u32,
    qos: i64,
}

fn maxima(state: &State, jobs: &[&Job]) -> Maxima {
    // Every association's priority is its own, an ancestor account's, or 0,
    // and every priority set is some association's own: so the maximum over
    // associations is the maximum of the priorities set, without a walk up
    // the tree per account (O(accounts x depth) on a deep tree).
    let accounts = state.accounts.values().filter_map(|a| a.priority);
    let users = state.users.values().filter_map(|u| u.priority);
    let assoc = accounts.chain(users).max().unwrap_or(0).max(0);
    let defined = state.partitions.values().map(|p| p.priority_job_factor);
    let referenced = jobs
        .iter()
        .map(|j| partition_of(state, j).priority_job_factor);
    let partition = defined.chain(referenced).max().unwrap_or(0);
    let qos = state.max_qos_priority();
    Maxima {
        assoc,
        partition,
        qos,
    }
}

/// Every evaluated job's Slurm priority, one at a time (`super::evaluate`'s order).
pub fn listed<'a>(
    state: &'a State,
    fs: &'a FairshareFactors,
) -> impl Iterator<Item = JobPriority> + 'a {
    let flags = state.config.flags;
    let listed: Vec<(&Job, JobState)> = state
        .jobs
        .values()
        .filter_map(|job| {
            listed_state(state, job, flags.calculate_running, flags.accrue_always)
                .map(|s| (&**job, s))
        })
        .collect();
    let jobs: Vec<&Job> = listed.iter().map(|(j, _)| *j).collect();
    let maxima = maxima(state, &jobs);
    listed
        .into_iter()
        .map(move |(job, job_state)| job_priority(state, fs, &maxima, job, job_state))
}

fn job_priority(
    state: &State,
    fs: &FairshareFactors,
    maxima: &Maxima,
    job: &Job,
    job_state: JobState,
) -> JobPriority {
    let config = &state.config;
    let flags = config.flags;
    let partition = partition_of(state, job);
    let tres = job_tres(job);
    let weighted_tres = tres_inputs(state, &tres, &partition);
    let site = job.spec.site_factor.unwrap_or(0);
    let nice = job.spec.nice.unwrap_or(0);
    let inputs = SlurmJobInputs {
        weights: SlurmWeights::of(config),
        raw: SlurmRawFactors::of(config),
        max_age_secs: config.max_age_secs,
        accrue_at: if flags.accrue_always {
            job.queued_at
        } else {
            eligible_at(job)
        },
        assoc_priority: assoc_priority(state, &job.account, Some(&job.user)),
        max_assoc: maxima.assoc,
        fairshare: fs
            .get(&(job.account.clone(), job.user.clone()))
            .copied()
            .unwrap_or(0.0),
        size: JobSizeInputs {
            min_nodes: tres_count(&tres, "node", 1.0),
            cpus: tres_count(&tres, "cpu", 1.0),
            cluster_nodes: state.cluster.nodes as f64,
            cluster_cpus: tres_count(&state.cluster.tres, "cpu", 0.0),
            time_limit_mins: time_limit_secs(job, &partition).map(|s| s as f64 / 60.0),
            favor_small: config.favor_small,
            small_relative_to_time: flags.small_relative_to_time,
        },
        partition_job_factor: partition.priority_job_factor,
        max_partition: maxima.partition,
        qos_priority: qos_priority(state, state.primary_qos(&job.spec)),
        max_qos: maxima.qos,
        site,
        nice,
        tres: &weighted_tres,
    };
    let factors = slurm_job_factors(&inputs, Some(state.now));
    let computed = slurm_job_priority(&factors, site, nice);
    let priority = state.slurm_job_priority_as_listed(&job.id, job_state, computed);
    let mut row = priority_row(job, PriorityModel::Slurm, job_state, priority, factors);
    row.qos = state.primary_qos(&job.spec).to_string();
    row.priority_tier = partition.priority_tier;
    row.expedited = state.expedited.contains(&job.id);
    if job.has_pairs() {
        let job_pairs = state.job_pairs(job);
        let pair_count = job_pairs.len();
        row.pairs = job_pairs
            .into_iter()
            .enumerate()
            .map(|(index, (partition_name, qos))| {
                let partition = state
                    .partitions
                    .get(partition_name)
                    .cloned()
                    .unwrap_or_default();
                let pair_tres = tres_inputs(state, &tres, &partition);
                let pair = SlurmPairInputs {
                    partition_job_factor: partition.priority_job_factor,
                    tres: &pair_tres,
                    qos_priority: qos_priority(state, qos),
                };
                let factors = slurm_pair_factors(&inputs, &pair, Some(state.now));
                let computed = slurm_pair_priority(&factors, site, nice);
                let priority = state.slurm_pair_priority_as_listed(
                    &job.id,
                    job_state,
                    (index, pair_count),
                    computed,
                );
                PairPriority {
                    partition: partition_name.to_string(),
                    qos: qos.to_string(),
                    priority,
                    factors,
                    priority_tier: partition.priority_tier,
                }
            })
            .collect();
    }
    row
}

/// A QOS's priority (0 for none or an undefined one).
fn qos_priority(state: &State, qos: &str) -> i64 {
    state.qos.get(qos).map_or(0, |q| q.priority)
}

/// The weighted TRES of a job counting `tres`, against `partition`'s
/// totals (else the cluster's).
fn tres_inputs<'a>(
    state: &'a State,
    tres: &TresCounts,
    partition: &Partition,
) -> Vec<SlurmTresInput<'a>> {
    state.slurm_tres_inputs(tres, partition.tres.as_ref())
}
