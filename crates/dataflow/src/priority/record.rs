//! One job's time-invariant priority record (built inside the dataflow when
//! the job meets its context) and its exact evaluation at a query time.
//!
//! A record is the job's compact [`JobRow`] and its combination's
//! [`JobContext`] (shared, one per combination), plus how the model lists
//! the job and its rank key. Evaluating it calls the per-job assembly the
//! oracle calls (`fairflow_model::job_priority`), with the same inputs, so
//! the integer priority and every factor are bit-identical to the oracle's;
//! the time factor (Slurm's age, Flux's wait time) is the only one that moves
//! with `now`.
//!
//! The record also carries its *rank key* for the queue index: with `S` the
//! weighted sum without the time factor and without the fair-share term,
//! `w` the time factor's weight and `m` its maximum (`PriorityMaxAge`,
//! `FluxMaxWaitTime`), the sum at `now` is
//! `S + F(u) + w·min(1, (now − origin)/m)`, where `F(u) = w_fs · f(u)` is the
//! fair-share term of the job's user association `u`. Below the cap that is
//! `K + F(u) + r·now` with `K = S − r·origin`, `r = w/m` the same for every
//! job; at the cap it is `S + F(u) + w`. Neither depends on `now` or on the
//! user's fair-share factor, so passing time and usage change no record: the
//! fair-share term meets the record in the queue ([`super::queue`]), per
//! user. `key_hi` adds a bound on the floating-point error of the
//! approximate sum (for any factor in `0..=1`), so that reading in bound
//! order bounds every unread job's exact sum.

use std::sync::Arc;

use fairflow_model::job_priority::{
    flux_job_factors, flux_job_priority, flux_job_priority_at, priority_as_listed,
    slurm_job_factors, slurm_job_priority, slurm_job_priority_at, FluxJobInputs, FluxWeights,
    SlurmJobInputs, SlurmRawFactors, SlurmTresInput, SlurmWeights, FLUX_WAIT_FACTOR,
    SLURM_AGE_FACTOR,
};
use fairflow_model::priority_formula::{eligible_at, JobSizeInputs, FLUX_URGENCY_EXPEDITE};
use fairflow_model::report::{JobPriority, JobState, PriorityFactor};
use fairflow_model::{PriorityModel, Time};

use super::combo::JobContext;
use super::inputs::{JobRow, Phase, PriorityParams, TresBits};
use crate::types::JobId;

/// Relative slack on the floating-point error of the approximate sums: far
/// above the `~1e-15` relative error of a dozen additions, so reading a few
/// extra candidates is the only cost of it.
pub(crate) const RELATIVE_SLACK: f64 = 1e-9;

/// Where a job is, as the model lists it (`None`: not evaluated now).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum Listed {
    /// Pending and not held: ranked.
    Pending,
    /// Held: priority 0, not ranked.
    Held,
    /// Running (Slurm with `CALCULATE_RUNNING`).
    Running,
}

impl Listed {
    pub(crate) fn job_state(self) -> JobState {
        match self {
            Listed::Pending => JobState::Pending,
            Listed::Held => JobState::Held,
            Listed::Running => JobState::Running,
        }
    }
}

/// Which queue index a job's entry is in.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum RankClass {
    /// Not in the ranked queue (held, running, not listed).
    Unranked,
    /// Below the age (wait-time) cap: value `key + rate·now`.
    Uncapped,
    /// At the cap (or no time factor): value `key`.
    Capped,
}

/// A job's time-invariant priority record; see the module documentation.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct PriorityRecord {
    /// The job's row.
    pub row: JobRow,
    /// Its combination's context and the globals.
    pub context: Arc<JobContext>,
    /// How the model lists the job (`None`: not evaluated).
    pub listed: Option<Listed>,
    /// Which queue index the job is in.
    pub class: RankClass,
    /// The rank key plus its error bound (ordered `f64` bits, see [`ordered_bits`]).
    pub key_hi: u64,
    /// The rank key minus the same error bound: with `key_hi`, what the
    /// counted read (`super::queue` `count`) knows of the job's sum without
    /// evaluating it (`-inf` for an expedited Flux job).
    pub key_lo: u64,
}

/// An order-preserving map of non-NaN `f64` to `u64`.
pub fn ordered_bits(x: f64) -> u64 {
    let bits = x.to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    }
}

/// The inverse of [`ordered_bits`].
pub fn from_ordered_bits(bits: u64) -> f64 {
    if bits >> 63 == 1 {
        f64::from_bits(bits & !(1 << 63))
    } else {
        f64::from_bits(!bits)
    }
}

fn tres_get(tres: &TresBits, name: &str) -> Option<f64> {
    tres.iter()
        .find(|(n, _)| n == name)
        .map(|(_, bits)| f64::from_bits(*bits))
}

/// How the model lists a job with this phase (`begun`: its begin time, if
/// any, has passed).
pub fn listed(params: &PriorityParams, phase: Phase, begun: bool) -> Option<Listed> {
    let (running_listed, before_begin_listed) = match params.model {
        PriorityModel::Slurm => (params.calculate_running, params.accrue_always),
        PriorityModel::Flux => (false, false),
        PriorityModel::Moab => (true, false),
    };
    match phase {
        Phase::Pending if begun || before_begin_listed => Some(Listed::Pending),
        Phase::Held if begun || before_begin_listed => Some(Listed::Held),
        Phase::Running if running_listed => Some(Listed::Running),
        _ => None,
    }
}

/// The time factor's common rate `r = w/m`, its value at the cap, and
/// whether every job is at the cap (weight 0 or maximum not positive).
fn time_rate(params: &PriorityParams) -> (f64, f64, bool) {
    match params.model {
        PriorityModel::Slurm => {
            let weight_age = f64::from(params.weight_age);
            // Slurm gates a weight of 0 (age 0); a max age of 0 or less is always 1.
            if params.weight_age == 0 {
                (0.0, 0.0, true)
            } else if params.max_age_secs <= 0 {
                (0.0, weight_age, true)
            } else {
                (weight_age / params.max_age_secs as f64, weight_age, false)
            }
        }
        PriorityModel::Flux => {
            let weight_wait = params.flux_wait_time as f64;
            // The wait factor is 0 when the maximum is not positive.
            if params.flux_max_wait_secs <= 0 {
                (0.0, 0.0, true)
            } else {
                (
                    weight_wait / params.flux_max_wait_secs as f64,
                    weight_wait,
                    false,
                )
            }
        }
        PriorityModel::Moab => (0.0, 0.0, true),
    }
}

/// The job's factors under Slurm's multifactor model (`now = None`: age 0).
fn slurm_factors(
    row: &JobRow,
    context: &JobContext,
    fairshare: f64,
    now: Option<Time>,
) -> Vec<PriorityFactor> {
    with_slurm_inputs(row, context, fairshare, |inputs| {
        slurm_job_factors(inputs, now)
    })
}

/// Slurm's per-job assembly's inputs for the job, given to `then`: the one
/// place the record's fields become [`SlurmJobInputs`], for both the factor
/// list and the priority alone.
fn with_slurm_inputs<R>(
    row: &JobRow,
    context: &JobContext,
    fairshare: f64,
    then: impl FnOnce(&SlurmJobInputs) -> R,
) -> R {
    let (ctx, globals) = (&context.ctx, &context.globals);
    let p = &globals.params;
    let partition = &ctx.partition;
    let tres: Vec<SlurmTresInput> = p
        .weight_tres
        .iter()
        .enumerate()
        .map(|(i, (name, weight_bits))| SlurmTresInput {
            name,
            weight: f64::from_bits(*weight_bits),
            count: row.weighted_tres.get(i).map_or(0.0, |b| f64::from_bits(*b)),
            total: partition
                .tres
                .as_ref()
                .and_then(|t| tres_get(t, name))
                .or_else(|| tres_get(&globals.cluster_tres, name)),
        })
        .collect();
    let time_limit_secs = Some(row.time_limit_secs)
        .filter(|l| *l > 0)
        .or(partition.max_time_secs.filter(|l| *l > 0));
    let inputs = SlurmJobInputs {
        weights: SlurmWeights {
            age: p.weight_age,
            assoc: p.weight_assoc,
            fairshare: p.weight_fairshare,
            job_size: p.weight_job_size,
            partition: p.weight_partition,
            qos: p.weight_qos,
        },
        raw: SlurmRawFactors {
            assoc: p.no_normal_assoc,
            partition: p.no_normal_part,
            qos: p.no_normal_qos,
            tres: p.no_normal_tres,
        },
        max_age_secs: p.max_age_secs,
        accrue_at: time_origin(row, p),
        assoc_priority: ctx.assoc_priority,
        max_assoc: globals.max_assoc,
        fairshare,
        size: JobSizeInputs {
            min_nodes: f64::from_bits(row.nodes_bits),
            cpus: f64::from_bits(row.cpus_bits),
            cluster_nodes: globals.cluster_nodes as f64,
            cluster_cpus: tres_get(&globals.cluster_tres, "cpu").unwrap_or(0.0),
            time_limit_mins: time_limit_secs.map(|s| s as f64 / 60.0),
            favor_small: p.favor_small,
            small_relative_to_time: p.small_relative_to_time,
        },
        partition_job_factor: partition.job_factor,
        max_partition: globals.max_partition,
        qos_priority: ctx.qos_priority,
        max_qos: globals.max_qos,
        site: row.site_factor,
        nice: row.nice,
        tres: &tres,
    };
    then(&inputs)
}

/// The job's factors under the Flux model (`now = None`: wait time 0).
fn flux_factors(
    row: &JobRow,
    context: &JobContext,
    fairshare: f64,
    now: Option<Time>,
) -> Vec<PriorityFactor> {
    flux_job_factors(&flux_inputs(row, context, fairshare), now)
}

/// The Flux model's per-job assembly's inputs for the job.
fn flux_inputs(row: &JobRow, context: &JobContext, fairshare: f64) -> FluxJobInputs {
    let (ctx, globals) = (&context.ctx, &context.globals);
    let w = &globals.params;
    FluxJobInputs {
        weights: FluxWeights {
            fairshare: w.flux_fairshare,
            queue: w.flux_queue,
            bank: w.flux_bank,
            urgency: w.flux_urgency,
            wait_time: w.flux_wait_time,
            qos: w.flux_qos,
            job_size: w.flux_job_size,
            user: w.flux_user,
            max_wait_secs: w.flux_max_wait_secs,
        },
        fairshare,
        queue_priority: ctx.partition.priority,
        bank_priority: ctx.account_priority.unwrap_or(0),
        urgency: row.urgency,
        eligible_at: time_origin(row, w),
        qos_priority: ctx.qos_priority,
        max_qos: globals.max_qos,
        nodes: f64::from_bits(row.nodes_bits),
        cluster_nodes: globals.cluster_nodes,
        user_priority: Some(row.user_priority),
    }
}

/// The fair-share factor's weight `w_fs` (the term is `w_fs · factor`).
pub fn fairshare_weight(params: &PriorityParams) -> f64 {
    match params.model {
        PriorityModel::Slurm => f64::from(params.weight_fairshare),
        PriorityModel::Flux => params.flux_fairshare as f64,
        PriorityModel::Moab => 0.0,
    }
}

/// When the time factor starts counting: Slurm's `accrue_at` (the last
/// queue entry with `ACCRUE_ALWAYS`, else eligibility), Flux's eligibility.
fn time_origin(row: &JobRow, params: &PriorityParams) -> Time {
    if params.model == PriorityModel::Slurm && params.accrue_always {
        row.queued_at
    } else {
        eligible_at(row.queued_at, row.begin)
    }
}

/// Build a job's record from its row and its combination's context (a pure
/// function: the dataflow re-runs it on retraction and gets the same bits).
pub fn build_record(row: &JobRow, context: &Arc<JobContext>) -> PriorityRecord {
    let params = &context.globals.params;
    let mut record = PriorityRecord {
        row: row.clone(),
        context: context.clone(),
        listed: listed(params, row.phase, row.begun),
        class: RankClass::Unranked,
        key_hi: ordered_bits(0.0),
        key_lo: ordered_bits(0.0),
    };
    let (factors, time_factor, expedite) = match params.model {
        PriorityModel::Slurm => (
            slurm_factors(row, context, 0.0, None),
            SLURM_AGE_FACTOR,
            false,
        ),
        PriorityModel::Flux => {
            let urgency = row.urgency;
            // Urgency 0 holds the job; urgency 31 (expedite) is the maximum whatever the sum.
            if urgency == 0 && record.listed == Some(Listed::Pending) {
                record.listed = Some(Listed::Held);
            }
            (
                flux_factors(row, context, 0.0, None),
                FLUX_WAIT_FACTOR,
                urgency >= FLUX_URGENCY_EXPEDITE,
            )
        }
        // Moab is evaluated at read time (`priority::moab`): unranked here.
        PriorityModel::Moab => return record,
    };
    // The rank key: everything but the time factor (Slurm: site and nice
    // enter as `+ site - nice`, which their factors' weights 1 and -1 give).
    let mut static_sum = 0.0;
    let mut magnitude = 0.0;
    for (i, f) in factors.iter().enumerate() {
        if i != time_factor {
            static_sum += f.weighted;
            magnitude += f.weighted.abs();
        }
    }
    let (rate, cap_value, always_capped) = time_rate(params);
    // The fair-share term is added at read time; its size enters the error bound.
    magnitude += fairshare_weight(params).abs();
    rank(
        &mut record,
        static_sum,
        magnitude,
        rate,
        cap_value,
        always_capped || row.age_capped,
        expedite,
    );
    record
}

/// Set the record's rank class and key (see the module documentation).
fn rank(
    record: &mut PriorityRecord,
    static_sum: f64,
    magnitude: f64,
    rate: f64,
    cap_value: f64,
    capped: bool,
    expedite: bool,
) {
    if record.listed != Some(Listed::Pending) {
        record.class = RankClass::Unranked;
        return;
    }
    let (class, key, key_magnitude) = if capped {
        (
            RankClass::Capped,
            static_sum + cap_value,
            magnitude + cap_value.abs(),
        )
    } else {
        let shift = rate * time_origin(&record.row, &record.context.globals.params) as f64;
        (
            RankClass::Uncapped,
            static_sum - shift,
            magnitude + shift.abs() + cap_value.abs(),
        )
    };
    record.class = class;
    let (key_lo, key_hi) = if expedite || key.is_nan() {
        (f64::NEG_INFINITY, f64::INFINITY)
    } else {
        let error = RELATIVE_SLACK * key_magnitude + RELATIVE_SLACK;
        (key - error, key + error)
    };
    record.key_hi = ordered_bits(key_hi);
    record.key_lo = ordered_bits(key_lo);
}

/// A rank key (`key_hi`'s ordered bits) with a fair-share term added and
/// its error bound ([`PriorityRecord::key_with_fairshare`]; the search
/// bounds tree members and jobs from the keys its indexes hold, without
/// reading their records).
pub fn key_with_term(key_hi: u64, term: f64) -> f64 {
    from_ordered_bits(key_hi) + term + RELATIVE_SLACK * term.abs()
}

impl PriorityRecord {
    /// The job.
    pub fn job(&self) -> JobId {
        self.row.job
    }

    /// The model the record was built under.
    pub fn model(&self) -> PriorityModel {
        self.context.globals.params.model
    }

    /// Is Slurm's `INCR_ONLY` in force?
    pub fn incr_only(&self) -> bool {
        self.model() == PriorityModel::Slurm && self.context.globals.params.incr_only
    }

    /// Identifies one stay in the queue, for `INCR_ONLY` memory:
    /// `(submit_at, start_count)`.
    pub fn stay(&self) -> (Time, u32) {
        (self.row.submit_at, self.row.start_count)
    }

    /// The fair-share term `w_fs · fairshare` of this record's model.
    pub fn fairshare_term(&self, fairshare: f64) -> f64 {
        fairshare_weight(&self.context.globals.params) * fairshare
    }

    /// The rank key with the user's fair-share term added and its error
    /// bound: the value the queue orders a user's best job by (ordered
    /// bits); passing time adds [`PriorityRecord::time_shift`] to it.
    pub fn key_with_fairshare(&self, fairshare: f64) -> f64 {
        key_with_term(self.key_hi, self.fairshare_term(fairshare))
    }

    /// What passing time adds to a key at `now`, with its error bound
    /// (uncapped jobs; 0 for the others).
    pub fn time_shift(&self, now: Time) -> f64 {
        match self.class {
            RankClass::Uncapped => {
                let (rate, _, _) = time_rate(&self.context.globals.params);
                let moved = rate * now as f64;
                moved + RELATIVE_SLACK * moved.abs()
            }
            _ => 0.0,
        }
    }

    /// An upper bound on the job's exact weighted sum at `now` with its
    /// user's factor `fairshare` (see the module documentation); `+inf` for
    /// an expedited Flux job.
    pub fn upper_bound(&self, now: Time, fairshare: f64) -> f64 {
        self.key_with_fairshare(fairshare) + self.time_shift(now)
    }

    /// The job's exact priority at `now` with its user's fair-share factor
    /// `fairshare`, bit-identical to the oracle's, named `job` (its other
    /// names are left empty: the driver fills them from the book); `floor` is
    /// its `INCR_ONLY` memory (used only when that flag is on). `None` when
    /// the job is not listed or the model is not maintained here.
    pub fn evaluate(
        &self,
        job: &str,
        fairshare: f64,
        now: Time,
        floor: Option<u64>,
    ) -> Option<JobPriority> {
        let listed = self.listed?;
        let row = &self.row;
        let (factors, computed) = match self.model() {
            PriorityModel::Slurm => {
                let factors = slurm_factors(row, &self.context, fairshare, Some(now));
                let computed = slurm_job_priority(&factors, row.site_factor, row.nice);
                (factors, computed)
            }
            PriorityModel::Flux => {
                let factors = flux_factors(row, &self.context, fairshare, Some(now));
                let computed = flux_job_priority(&factors, row.urgency);
                (factors, computed)
            }
            PriorityModel::Moab => return None,
        };
        Some(JobPriority {
            job: job.to_string(),
            user: String::new(),
            account: String::new(),
            partition: String::new(),
            qos: String::new(),
            submit_at: row.submit_at,
            priority: self.listed_priority(listed, computed, floor),
            state: listed.job_state(),
            model: self.model(),
            factors,
            pairs: Vec::new(),
            priority_tier: 0,
            expedited: false,
        })
    }

    /// [`PriorityRecord::evaluate`]'s state and priority alone, without the
    /// factor list or the name (no allocation but the TRES inputs): the
    /// same bits (`fairflow_model::job_priority::slurm_job_priority_at`).
    /// For ranking candidates; only the ones returned are evaluated whole.
    pub fn priority_at(
        &self,
        fairshare: f64,
        now: Time,
        floor: Option<u64>,
    ) -> Option<(JobState, u64)> {
        let listed = self.listed?;
        let row = &self.row;
        let computed = match self.model() {
            PriorityModel::Slurm => with_slurm_inputs(row, &self.context, fairshare, |inputs| {
                slurm_job_priority_at(inputs, Some(now))
            }),
            PriorityModel::Flux => {
                flux_job_priority_at(&flux_inputs(row, &self.context, fairshare), Some(now))
            }
            PriorityModel::Moab => return None,
        };
        Some((
            listed.job_state(),
            self.listed_priority(listed, computed, floor),
        ))
    }

    /// The priority of a job listed as `listed` whose model computed
    /// `computed`, by the model's rule ([`priority_as_listed`]) with this
    /// record's `INCR_ONLY` memory `floor`.
    fn listed_priority(&self, listed: Listed, computed: u64, floor: Option<u64>) -> u64 {
        priority_as_listed(listed.job_state(), self.incr_only(), computed, || {
            floor.map_or(computed, |f| computed.max(f))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordered_bits_preserve_order_and_invert() {
        let values = [
            f64::NEG_INFINITY,
            -1e300,
            -2.5,
            -0.0,
            0.0,
            1e-300,
            3.0,
            1e300,
            f64::INFINITY,
        ];
        for pair in values.windows(2) {
            assert!(ordered_bits(pair[0]) <= ordered_bits(pair[1]), "{pair:?}");
        }
        for v in values {
            assert_eq!(from_ordered_bits(ordered_bits(v)).to_bits(), v.to_bits());
        }
    }
}
