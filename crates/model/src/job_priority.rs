//! One job's Slurm multifactor and Flux priority, assembled from its inputs:
//! the factor list in each model's order and the final integer priority.
//! Both engines call these functions (the batch oracle with values read from
//! its state, the incremental engine with values from its records), so that
//! only aggregation (maxima, fair-share, the queue's order) is written twice;
//! Moab's counterpart is [`crate::moab::job_factors`].
//!
//! The time factor (Slurm's age, Flux's wait time) is the one input that
//! moves with `now`: with `now = None` it is left at 0 (weight kept), so an
//! engine can keep the time-invariant part and fill it in later with the
//! same bits. Its position in the list is [`SLURM_AGE_FACTOR`] and
//! [`FLUX_WAIT_FACTOR`].

use crate::priority_formula::{
    flux_final_priority, flux_user_contribution, flux_user_factor, flux_wait_time_factor,
    slurm_age_factor, slurm_final_priority, slurm_job_size_factor, slurm_normalize,
    slurm_priority_sum, slurm_tres_factor, JobSizeInputs, FLUX_URGENCY_DEFAULT,
};
use crate::report::{JobState, PriorityFactor};
use crate::Time;

/// The index of the age factor in [`slurm_job_factors`]' list.
pub const SLURM_AGE_FACTOR: usize = 1;

/// The index of the wait-time factor in [`flux_job_factors`]' list.
pub const FLUX_WAIT_FACTOR: usize = 4;

/// Slurm's `PriorityWeight*` (besides TRES), as configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SlurmWeights {
    /// `PriorityWeightAge`.
    pub age: u32,
    /// `PriorityWeightAssoc`.
    pub assoc: u32,
    /// `PriorityWeightFairshare`.
    pub fairshare: u32,
    /// `PriorityWeightJobSize`.
    pub job_size: u32,
    /// `PriorityWeightPartition`.
    pub partition: u32,
    /// `PriorityWeightQOS`.
    pub qos: u32,
}

impl SlurmWeights {
    /// The weights `config` sets.
    pub fn of(config: &crate::Config) -> Self {
        SlurmWeights {
            age: config.weight_age,
            assoc: config.weight_assoc,
            fairshare: config.weight_fairshare,
            job_size: config.weight_job_size,
            partition: config.weight_partition,
            qos: config.weight_qos,
        }
    }
}

/// The `NO_NORMAL_*` flags: a factor taken raw instead of normalised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SlurmRawFactors {
    /// `NO_NORMAL_ASSOC`.
    pub assoc: bool,
    /// `NO_NORMAL_PART`.
    pub partition: bool,
    /// `NO_NORMAL_QOS`.
    pub qos: bool,
    /// `NO_NORMAL_TRES`.
    pub tres: bool,
}

impl SlurmRawFactors {
    /// The `NO_NORMAL_*` flags `config` sets.
    pub fn of(config: &crate::Config) -> Self {
        let flags = config.flags;
        SlurmRawFactors {
            assoc: flags.no_normal_assoc,
            partition: flags.no_normal_part,
            qos: flags.no_normal_qos,
            tres: flags.no_normal_tres,
        }
    }
}

/// One TRES with a nonzero `PriorityWeightTRES` weight, as the job counts it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SlurmTresInput<'a> {
    /// The TRES name (`cpu`, `mem`, `gres/gpu`, ...).
    pub name: &'a str,
    /// Its weight.
    pub weight: f64,
    /// The job's count (allocated while running, else requested; 0 when absent).
    pub count: f64,
    /// The partition's total of it, else the cluster's; `None` when neither says.
    pub total: Option<f64>,
}

/// Everything Slurm's multifactor priority reads about one job, with the
/// maxima the engine aggregated.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SlurmJobInputs<'a> {
    /// The weights.
    pub weights: SlurmWeights,
    /// The `NO_NORMAL_*` flags.
    pub raw: SlurmRawFactors,
    /// `PriorityMaxAge`, seconds.
    pub max_age_secs: i64,
    /// When the age starts counting (the last queue entry with `ACCRUE_ALWAYS`,
    /// else that or the begin time, whichever is later).
    pub accrue_at: Time,
    /// The association priority (the user association's own, else the nearest
    /// account's, else 0).
    pub assoc_priority: i64,
    /// The largest association priority (at least 0).
    pub max_assoc: i64,
    /// The user association's fair-share factor.
    pub fairshare: f64,
    /// The job-size inputs (the time limit already the job's or its partition's).
    pub size: JobSizeInputs,
    /// The partition's `PriorityJobFactor`.
    pub partition_job_factor: u32,
    /// The largest partition factor.
    pub max_partition: u32,
    /// The QOS's priority (0 when none).
    pub qos_priority: i64,
    /// The largest QOS priority (at least 0).
    pub max_qos: i64,
    /// The job's site factor.
    pub site: i64,
    /// The job's nice.
    pub nice: i64,
    /// The TRES with a nonzero weight, in `PriorityWeightTRES` order.
    pub tres: &'a [SlurmTresInput<'a>],
}

/// Slurm's factors of one job, in Slurm's order: site, age, assoc,
/// fair-share, job size, partition, QOS, nice (weight -1), then one
/// `tres/<name>` per weighted TRES. A factor whose weight is 0 is 0 (Slurm's
/// `set_priority_factors` does not compute it). With `now = None` the age is
/// 0 (see the module documentation).
pub fn slurm_job_factors(job: &SlurmJobInputs, now: Option<Time>) -> Vec<PriorityFactor> {
    let fixed = slurm_fixed_values(job, now);
    let mut factors = Vec::with_capacity(8 + job.tres.len());
    factors.extend(
        SLURM_FIXED_FACTORS
            .iter()
            .zip(fixed)
            .map(|(&name, (normalized, weight))| PriorityFactor::new(name, normalized, weight)),
    );
    for (name, normalized, weight) in slurm_tres_values(job) {
        factors.push(PriorityFactor::new(
            format!("tres/{name}"),
            normalized,
            weight,
        ));
    }
    factors
}

/// The names of Slurm's factors before the TRES, in [`slurm_job_factors`]' order.
const SLURM_FIXED_FACTORS: [&str; 8] = [
    "site",
    "age",
    "assoc",
    "fairshare",
    "jobsize",
    "partition",
    "qos",
    "nice",
];

/// `(normalized, weight)` of each of [`SLURM_FIXED_FACTORS`]: the one
/// computation behind both [`slurm_job_factors`] and
/// [`slurm_job_priority_at`].
fn slurm_fixed_values(job: &SlurmJobInputs, now: Option<Time>) -> [(f64, f64); 8] {
    let w = job.weights;
    let gated = |weight: u32, value: &dyn Fn() -> f64| -> f64 {
        if weight == 0 {
            0.0
        } else {
            value()
        }
    };
    let age = match now {
        Some(now) => gated(w.age, &|| {
            slurm_age_factor(now, job.accrue_at, job.max_age_secs)
        }),
        None => 0.0,
    };
    let assoc = gated(w.assoc, &|| {
        slurm_normalize(
            job.assoc_priority as f64,
            job.max_assoc as f64,
            job.raw.assoc,
        )
    });
    let fairshare = gated(w.fairshare, &|| job.fairshare);
    let job_size = gated(w.job_size, &|| slurm_job_size_factor(&job.size));
    let partition = gated(w.partition, &|| {
        if job.partition_job_factor == 0 {
            0.0
        } else {
            slurm_normalize(
                f64::from(job.partition_job_factor),
                f64::from(job.max_partition),
                job.raw.partition,
            )
        }
    });
    let qos = gated(w.qos, &|| {
        if job.qos_priority == 0 {
            0.0
        } else {
            slurm_normalize(job.qos_priority as f64, job.max_qos as f64, job.raw.qos)
        }
    });
    [
        (job.site as f64, 1.0),
        (age, f64::from(w.age)),
        (assoc, f64::from(w.assoc)),
        (fairshare, f64::from(w.fairshare)),
        (job_size, f64::from(w.job_size)),
        (partition, f64::from(w.partition)),
        (qos, f64::from(w.qos)),
        (job.nice as f64, -1.0),
    ]
}

/// `(TRES name, normalized, weight)` of each TRES with a nonzero weight, in
/// `PriorityWeightTRES` order.
fn slurm_tres_values<'a>(
    job: &'a SlurmJobInputs<'a>,
) -> impl Iterator<Item = (&'a str, f64, f64)> + 'a {
    job.tres.iter().filter(|t| t.weight != 0.0).map(|tres| {
        let value = slurm_tres_factor(tres.count, tres.total, job.raw.tres);
        (tres.name, value, tres.weight)
    })
}

/// Slurm's priority from [`slurm_job_factors`]' list (before `INCR_ONLY` and
/// holds): the weighted factors summed in Slurm's order (age, assoc,
/// fair-share, job size, partition, QOS, TRES), then `+ site - nice`,
/// truncated into `1..=2^32-1`.
pub fn slurm_job_priority(factors: &[PriorityFactor], site: i64, nice: i64) -> u64 {
    let weighted = factors
        .iter()
        .filter(|f| !matches!(f.name.as_ref(), "site" | "nice"))
        .map(|f| f.weighted);
    slurm_final_priority(slurm_priority_sum(weighted, site, nice))
}

/// A listed job's priority from the one its model `computed`: 0 while held;
/// a pending job's under Slurm's `INCR_ONLY` (`incr_only`, false for other
/// models) is `floored()`, the computed one raised to the job's remembered
/// floor; else `computed`. Both engines apply it (the book for the oracle,
/// the dataflow's records), each with its own floor memory.
pub fn priority_as_listed(
    state: JobState,
    incr_only: bool,
    computed: u64,
    floored: impl FnOnce() -> u64,
) -> u64 {
    match state {
        JobState::Held => 0,
        JobState::Pending if incr_only => floored(),
        _ => computed,
    }
}

/// `slurm_job_priority(&slurm_job_factors(job, now), job.site, job.nice)`
/// without building the list (no allocation): the same values, weighted as
/// [`PriorityFactor::new`] weights them and summed in the same order, so the
/// same bits. For an engine that ranks many candidates and names only the
/// ones it returns.
pub fn slurm_job_priority_at(job: &SlurmJobInputs, now: Option<Time>) -> u64 {
    let fixed = slurm_fixed_values(job, now);
    let weighted = fixed[1..7]
        .iter()
        .map(|&(normalized, weight)| weight * normalized)
        .chain(slurm_tres_values(job).map(|(_, normalized, weight)| weight * normalized));
    slurm_final_priority(slurm_priority_sum(weighted, job.site, job.nice))
}

/// What differs between the (partition, QOS) pairs of a job submitted to
/// several partitions (`-p a,b`) or, since Slurm 24.11, several QOS: the
/// partition's factor and TRES totals, and the QOS's priority. Every other
/// input (age, association, fair-share, job size, site, nice) is the job's
/// and shared by its pairs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SlurmPairInputs<'a> {
    /// The pair partition's `PriorityJobFactor`.
    pub partition_job_factor: u32,
    /// The weighted TRES with the pair partition's totals (else the
    /// cluster's), in `PriorityWeightTRES` order.
    pub tres: &'a [SlurmTresInput<'a>],
    /// The pair QOS's priority (0 when it has none).
    pub qos_priority: i64,
}

/// Slurm's factors of one (partition, QOS) pair of `job` (whose own inputs
/// are its primary pair's), as Slurm's `_priority_each_partition` /
/// `_priority_each_qos` and sprio's `_create_prio_list_qos` set them
/// (SchedMD/slurm `src/plugins/priority/multifactor/priority_multifactor.c`):
/// the partition factor and the TRES factors from the pair's partition; the
/// QOS factor from the pair's QOS when its priority is nonzero, else the
/// job's own QOS factor (Slurm keeps `prio_factors->priority_qos` then); the
/// rest shared. The list is in [`slurm_job_factors`]' order.
pub fn slurm_pair_factors(
    job: &SlurmJobInputs,
    pair: &SlurmPairInputs,
    now: Option<Time>,
) -> Vec<PriorityFactor> {
    let qos_priority = if pair.qos_priority != 0 {
        pair.qos_priority
    } else {
        job.qos_priority
    };
    let inputs = SlurmJobInputs {
        partition_job_factor: pair.partition_job_factor,
        tres: pair.tres,
        qos_priority,
        ..*job
    };
    slurm_job_factors(&inputs, now)
}

/// One pair's entry of Slurm's `priority_array` (before `INCR_ONLY`): Slurm
/// adds a pair's terms in another order than a job's, the weighted partition
/// factor plus `(age + assoc + fair-share + job size + QOS + TRES + site) -
/// nice`, with the TRES summed first (`_get_tres_prio_weighted`), then
/// truncated into `1..=2^32-1` like a job's priority.
pub fn slurm_pair_priority(factors: &[PriorityFactor], site: i64, nice: i64) -> u64 {
    let weighted = |name: &str| {
        factors
            .iter()
            .find(|f| f.name == name)
            .map_or(0.0, |f| f.weighted)
    };
    let mut tres = 0.0;
    for factor in factors.iter().filter(|f| f.name.starts_with("tres/")) {
        tres += factor.weighted;
    }
    let shared = weighted("age")
        + weighted("assoc")
        + weighted("fairshare")
        + weighted("jobsize")
        + weighted("qos")
        + tres
        + site as f64
        - nice as f64;
    slurm_final_priority(weighted("partition") + shared)
}

/// What a pair's own factors are normalised with: the weights, the
/// `NO_NORMAL_*` flags and the maxima (the same for every pair of every job).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SlurmPairNorms {
    /// The weights (only the partition and QOS weights are read).
    pub weights: SlurmWeights,
    /// The `NO_NORMAL_*` flags.
    pub raw: SlurmRawFactors,
    /// The largest partition factor.
    pub max_partition: u32,
    /// The largest QOS priority (at least 0).
    pub max_qos: i64,
}

/// A pair's factors from the job's own factor list ([`slurm_job_factors`]
/// of its primary pair) and what differs for the pair: the same list as
/// [`slurm_pair_factors`] gives (every factor is computed on its own, so
/// replacing the partition, QOS and TRES entries of the job's list is
/// exact), for an engine that holds the job's evaluated factors rather than
/// its inputs.
pub fn slurm_pair_factors_from_job(
    own: &[PriorityFactor],
    norms: &SlurmPairNorms,
    pair: &SlurmPairInputs,
) -> Vec<PriorityFactor> {
    let inputs = SlurmJobInputs {
        weights: norms.weights,
        raw: norms.raw,
        max_age_secs: 0,
        accrue_at: 0,
        assoc_priority: 0,
        max_assoc: 0,
        fairshare: 0.0,
        size: JobSizeInputs {
            min_nodes: 0.0,
            cpus: 0.0,
            cluster_nodes: 0.0,
            cluster_cpus: 0.0,
            time_limit_mins: None,
            favor_small: false,
            small_relative_to_time: false,
        },
        partition_job_factor: pair.partition_job_factor,
        max_partition: norms.max_partition,
        qos_priority: pair.qos_priority,
        max_qos: norms.max_qos,
        site: 0,
        nice: 0,
        tres: pair.tres,
    };
    let pair_factors = slurm_job_factors(&inputs, None);
    own.iter()
        .map(|factor| {
            let replaced = factor.name == "partition"
                || factor.name.starts_with("tres/")
                || (factor.name == "qos" && pair.qos_priority != 0);
            if replaced {
                if let Some(theirs) = pair_factors.iter().find(|f| f.name == factor.name) {
                    return theirs.clone();
                }
            }
            factor.clone()
        })
        .collect()
}

/// The Flux model's weights (`priority_factor_weight_table` and the Flux
/// design's additions) and its wait-time maximum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FluxWeights {
    /// Fair-share.
    pub fairshare: i64,
    /// Queue (partition) priority.
    pub queue: i64,
    /// Bank (account) priority.
    pub bank: i64,
    /// Urgency.
    pub urgency: i64,
    /// Wait time.
    pub wait_time: i64,
    /// QOS.
    pub qos: i64,
    /// Job size.
    pub job_size: i64,
    /// User factor.
    pub user: i64,
    /// `FluxMaxWaitTime`, seconds.
    pub max_wait_secs: i64,
}

/// Everything the Flux model reads about one job.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FluxJobInputs {
    /// The weights.
    pub weights: FluxWeights,
    /// The association's fair-share factor.
    pub fairshare: f64,
    /// The job's queue (partition) priority, 0 when none.
    pub queue_priority: i64,
    /// The job's bank (account) priority, 0 when none.
    pub bank_priority: i64,
    /// The job's urgency.
    pub urgency: u8,
    /// When the job became eligible (last queue entry, or begin time if later).
    pub eligible_at: Time,
    /// The QOS's priority (0 when none).
    pub qos_priority: i64,
    /// The largest QOS priority (at least 0).
    pub max_qos: i64,
    /// The job's node count (1 when it does not say).
    pub nodes: f64,
    /// The cluster's node count.
    pub cluster_nodes: u64,
    /// The job's user priority.
    pub user_priority: Option<i64>,
}

/// The Flux model's factors of one job, in its order: fair-share, queue,
/// bank, urgency (`urgency - 16`), wait time, QOS, job size, user (whose
/// weighted value is never positive). With `now = None` the wait time is 0.
pub fn flux_job_factors(job: &FluxJobInputs, now: Option<Time>) -> Vec<PriorityFactor> {
    FLUX_FACTORS
        .iter()
        .zip(flux_values(job, now))
        .map(|(&name, (normalized, weight, weighted))| {
            let mut factor = PriorityFactor::new(name, normalized, weight);
            factor.weighted = weighted;
            factor
        })
        .collect()
}

/// The names of the Flux model's factors, in [`flux_job_factors`]' order.
const FLUX_FACTORS: [&str; 8] = [
    "fairshare",
    "queue",
    "bank",
    "urgency",
    "wait_time",
    "qos",
    "jobsize",
    "user",
];

/// `(normalized, weight, weighted)` of each of [`FLUX_FACTORS`]: the one
/// computation behind both [`flux_job_factors`] and
/// [`flux_job_priority_at`]. Every weighted value is `weight * normalized`
/// but the user factor's ([`flux_user_contribution`]).
fn flux_values(job: &FluxJobInputs, now: Option<Time>) -> [(f64, f64, f64); 8] {
    let w = job.weights;
    let wait = now.map_or(0.0, |now| {
        flux_wait_time_factor(now - job.eligible_at, w.max_wait_secs)
    });
    let qos = slurm_normalize(job.qos_priority as f64, job.max_qos as f64, false);
    let size = if job.cluster_nodes > 0 {
        (job.nodes / job.cluster_nodes as f64).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let user = flux_user_factor(job.user_priority);
    let product = |normalized: f64, weight: i64| {
        let weight = weight as f64;
        (normalized, weight, weight * normalized)
    };
    [
        product(job.fairshare, w.fairshare),
        product(job.queue_priority as f64, w.queue),
        product(job.bank_priority as f64, w.bank),
        product(
            f64::from(job.urgency) - f64::from(FLUX_URGENCY_DEFAULT),
            w.urgency,
        ),
        product(wait, w.wait_time),
        product(qos, w.qos),
        product(size, w.job_size),
        (
            user,
            w.user as f64,
            flux_user_contribution(w.user as f64, user),
        ),
    ]
}

/// The Flux priority from [`flux_job_factors`]' list: the weighted values
/// summed in order, rounded (urgency 0: 0, urgency 31: `2^32-1`).
pub fn flux_job_priority(factors: &[PriorityFactor], urgency: u8) -> u64 {
    flux_priority_of(factors.iter().map(|f| f.weighted), urgency)
}

/// `flux_job_priority(&flux_job_factors(job, now), job.urgency)` without
/// building the list (no allocation): the same weighted values summed in the
/// same order, so the same bits.
pub fn flux_job_priority_at(job: &FluxJobInputs, now: Option<Time>) -> u64 {
    flux_priority_of(
        flux_values(job, now)
            .iter()
            .map(|&(_, _, weighted)| weighted),
        job.urgency,
    )
}

/// The weighted values summed in order, then rounded ([`flux_final_priority`]).
fn flux_priority_of(weighted: impl Iterator<Item = f64>, urgency: u8) -> u64 {
    let mut sum = 0.0;
    for value in weighted {
        sum += value;
    }
    flux_final_priority(sum, urgency)
}

#[cfg(test)]
mod tests;
