//! One job's time-invariant priority record (built inside the dataflow when
//! the job meets its context) and its exact evaluation at a query time.
//!
//! The record keeps every factor that does not depend on `now` as exact
//! `f64` bits, computed with the shared scalar formulas of
//! `fairflow_model::priority_formula` from exactly the inputs the oracle uses
//! (`fairflow_oracle::priority::{slurm, flux}`), in the oracle's factor
//! order. The one factor that moves with time (Slurm's age, Flux's wait time)
//! is a placeholder filled in by [`PriorityRecord::evaluate`], which then sums
//! in the oracle's order, so the integer priority and every factor are
//! bit-identical to the oracle's.
//!
//! The record also carries its *rank key* for the queue indexes: with `S` the
//! weighted sum without the time factor, `w` the time factor's weight and
//! `m` its maximum (`PriorityMaxAge`, `FluxMaxWaitTime`), the sum at `now`
//! is `S + w·min(1, (now − origin)/m)`. Below the cap that is
//! `K + r·now` with `K = S − r·origin`, `r = w/m` the same for every job;
//! at the cap it is `S + w`. Both are independent of `now`, so passing time
//! changes no record. `key_hi` adds a bound on the floating-point error
//! of the approximate sum, so that reading in `key_hi` order bounds every
//! unread job's exact sum (see `priority::reader`).

use fairflow_model::priority_formula::{
    eligible_at, flux_final_priority, flux_user_contribution, flux_user_factor,
    flux_wait_time_factor, slurm_age_factor, slurm_final_priority, slurm_job_size_factor,
    slurm_normalize, slurm_priority_sum, slurm_tres_factor, JobSizeInputs, FLUX_URGENCY_DEFAULT,
    FLUX_URGENCY_EXPEDITE,
};
use fairflow_model::report::{JobPriority, JobState, PriorityFactor};
use fairflow_model::{PriorityModel, Time};

use super::moab::MoabJob;
use std::borrow::Cow;

use super::{Globals, JobRow, KeyCtx, Phase, PriorityParams, TresBits};

/// Relative slack on the floating-point error of the approximate sums: far
/// above the `~1e-15` relative error of a dozen additions, so reading a few
/// extra candidates is the only cost of it.
const RELATIVE_SLACK: f64 = 1e-9;

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

/// One factor with its values as exact `f64` bits.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct StoredFactor {
    /// The factor's name, as the oracle names it (borrowed from
    /// [`FACTOR_NAMES`] when it is one of them: no allocation per record).
    pub name: Cow<'static, str>,
    /// `normalized` as bits.
    pub normalized: u64,
    /// `weight` as bits.
    pub weight: u64,
    /// `weighted` as bits.
    pub weighted: u64,
}

impl StoredFactor {
    fn from_factor(f: &PriorityFactor) -> Self {
        StoredFactor {
            name: factor_name(&f.name),
            normalized: f.normalized.to_bits(),
            weight: f.weight.to_bits(),
            weighted: f.weighted.to_bits(),
        }
    }

    fn to_factor(&self) -> PriorityFactor {
        PriorityFactor {
            name: self.name.to_string(),
            component: None,
            normalized: f64::from_bits(self.normalized),
            weight: f64::from_bits(self.weight),
            weighted: f64::from_bits(self.weighted),
            cap: None,
        }
    }
}

/// The factor names of Slurm's and Flux's records other than `tres/*`.
pub const FACTOR_NAMES: [&str; 13] = [
    "site",
    "age",
    "assoc",
    "fairshare",
    "jobsize",
    "partition",
    "qos",
    "nice",
    "queue",
    "bank",
    "urgency",
    "wait_time",
    "user",
];

/// `name` borrowed from [`FACTOR_NAMES`] when it is one of them, else owned.
fn factor_name(name: &str) -> Cow<'static, str> {
    match FACTOR_NAMES.iter().find(|known| **known == name) {
        Some(known) => Cow::Borrowed(known),
        None => Cow::Owned(name.to_string()),
    }
}

/// A job's time-invariant priority record; see the module documentation.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct PriorityRecord {
    /// The job id.
    pub job: String,
    /// The user.
    pub user: String,
    /// The account.
    pub account: String,
    /// The partition (`""` for none).
    pub partition: String,
    /// The QOS (`""` for none).
    pub qos: String,
    /// Submit time.
    pub submit_at: Time,
    /// How the model lists the job (`None`: not evaluated).
    pub listed: Option<Listed>,
    /// The model.
    pub model: PriorityModel,
    /// Every factor in the oracle's order; the time factor's values are
    /// placeholders (0).
    pub factors: Vec<StoredFactor>,
    /// The index of the time factor in `factors`.
    pub time_factor: usize,
    /// The time factor's weight.
    pub time_weight: u64,
    /// When the time factor starts counting (Slurm `accrue_at`, Flux eligible).
    pub time_origin: Time,
    /// The time factor's maximum, seconds (`PriorityMaxAge`, `FluxMaxWaitTime`).
    pub time_max_secs: i64,
    /// Slurm's site factor.
    pub site: i64,
    /// Slurm's nice.
    pub nice: i64,
    /// Flux's urgency.
    pub urgency: u8,
    /// Where the job is (whatever the model lists).
    pub phase: Phase,
    /// Slurm `INCR_ONLY` in force.
    pub incr_only: bool,
    /// Identifies one stay in the queue, for `INCR_ONLY` memory:
    /// `(submit_at, start_count)`.
    pub stay: (Time, u32),
    /// Which queue index the job is in.
    pub class: RankClass,
    /// The rank key plus its error bound (ordered `f64` bits, see [`ordered_bits`]).
    pub key_hi: u64,
    /// The common rate `w/m` of uncapped jobs (bits).
    pub rate: u64,
    /// Under Moab, what the read-time evaluation needs ([`super::moab`]).
    pub moab: Option<Box<MoabJob>>,
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

fn tres_count(tres: &TresBits, name: &str, default: f64) -> f64 {
    tres.iter()
        .find(|(n, _)| n == name)
        .map_or(default, |(_, bits)| f64::from_bits(*bits))
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

/// Build a job's record from its row, its contexts and the globals (a pure
/// function: the dataflow re-runs it on retraction and gets the same bits).
pub fn build_record(row: &JobRow, ctx: &KeyCtx, globals: &Globals) -> PriorityRecord {
    let model = globals.params.model;
    let listed = listed(&globals.params, row.phase, row.begun);
    let mut record = PriorityRecord {
        job: row.id.clone(),
        user: row.user.clone(),
        account: row.account.clone(),
        partition: row.partition.clone(),
        qos: row.qos.clone(),
        submit_at: row.submit_at,
        listed,
        model,
        factors: Vec::new(),
        time_factor: 0,
        time_weight: 0f64.to_bits(),
        time_origin: 0,
        time_max_secs: 0,
        site: row.site_factor.unwrap_or(0),
        nice: row.nice.unwrap_or(0),
        urgency: row.urgency.unwrap_or(FLUX_URGENCY_DEFAULT),
        phase: row.phase,
        incr_only: false,
        stay: (row.submit_at, row.start_count),
        class: RankClass::Unranked,
        key_hi: ordered_bits(0.0),
        rate: 0f64.to_bits(),
        moab: None,
    };
    match model {
        PriorityModel::Slurm => slurm_record(row, ctx, globals, &mut record),
        PriorityModel::Flux => flux_record(row, ctx, globals, &mut record),
        // Moab is evaluated at read time (`priority::moab`): unranked here.
        PriorityModel::Moab => {
            record.moab = Some(Box::new(MoabJob {
                row: row.clone(),
                ctx: ctx.clone(),
                cluster_tres: globals.cluster_tres.clone(),
            }));
        }
    }
    record
}

fn slurm_record(row: &JobRow, ctx: &KeyCtx, globals: &Globals, record: &mut PriorityRecord) {
    let p = &globals.params;
    let gated = |weight: u32, value: &dyn Fn() -> f64| -> f64 {
        if weight == 0 {
            0.0
        } else {
            value()
        }
    };
    let accrue_at = if p.accrue_always {
        row.queued_at
    } else {
        eligible_at(row.queued_at, row.begin)
    };
    let assoc = gated(p.weight_assoc, &|| {
        slurm_normalize(
            ctx.assoc_priority as f64,
            globals.max_assoc as f64,
            p.no_normal_assoc,
        )
    });
    let fairshare = gated(p.weight_fairshare, &|| f64::from_bits(ctx.fairshare_bits));
    let partition = &ctx.partition;
    let time_limit_secs = row
        .time_limit_secs
        .filter(|l| *l > 0)
        .or(partition.max_time_secs.filter(|l| *l > 0));
    let job_size = gated(p.weight_job_size, &|| {
        slurm_job_size_factor(&JobSizeInputs {
            min_nodes: tres_count(&row.tres, "node", 1.0),
            cpus: tres_count(&row.tres, "cpu", 1.0),
            cluster_nodes: globals.cluster_nodes as f64,
            cluster_cpus: tres_count(&globals.cluster_tres, "cpu", 0.0),
            time_limit_mins: time_limit_secs.map(|s| s as f64 / 60.0),
            favor_small: p.favor_small,
            small_relative_to_time: p.small_relative_to_time,
        })
    });
    let part = gated(p.weight_partition, &|| {
        let factor = partition.job_factor;
        if factor == 0 {
            0.0
        } else {
            slurm_normalize(
                f64::from(factor),
                f64::from(globals.max_partition),
                p.no_normal_part,
            )
        }
    });
    let qos = gated(p.weight_qos, &|| {
        if ctx.qos_priority == 0 {
            0.0
        } else {
            slurm_normalize(
                ctx.qos_priority as f64,
                globals.max_qos as f64,
                p.no_normal_qos,
            )
        }
    });
    let site = record.site;
    let nice = record.nice;
    let mut factors = vec![
        PriorityFactor::new("site", site as f64, 1.0),
        PriorityFactor::new("age", 0.0, f64::from(p.weight_age)),
        PriorityFactor::new("assoc", assoc, f64::from(p.weight_assoc)),
        PriorityFactor::new("fairshare", fairshare, f64::from(p.weight_fairshare)),
        PriorityFactor::new("jobsize", job_size, f64::from(p.weight_job_size)),
        PriorityFactor::new("partition", part, f64::from(p.weight_partition)),
        PriorityFactor::new("qos", qos, f64::from(p.weight_qos)),
        PriorityFactor::new("nice", nice as f64, -1.0),
    ];
    for (name, weight_bits) in &p.weight_tres {
        let weight = f64::from_bits(*weight_bits);
        if weight == 0.0 {
            continue;
        }
        let count = tres_count(&row.tres, name, 0.0);
        let total = partition
            .tres
            .as_ref()
            .and_then(|t| tres_get(t, name))
            .or_else(|| tres_get(&globals.cluster_tres, name));
        let value = slurm_tres_factor(count, total, p.no_normal_tres);
        factors.push(PriorityFactor::new(&format!("tres/{name}"), value, weight));
    }
    record.factors = factors.iter().map(StoredFactor::from_factor).collect();
    record.time_factor = 1;
    record.time_weight = f64::from(p.weight_age).to_bits();
    record.time_origin = accrue_at;
    record.time_max_secs = p.max_age_secs;
    record.incr_only = p.incr_only;
    // The rank key: everything but age, plus site - nice.
    let mut static_sum = site as f64 - nice as f64;
    let mut magnitude = (site as f64).abs() + (nice as f64).abs();
    for f in factors
        .iter()
        .filter(|f| !matches!(f.name.as_str(), "site" | "nice" | "age"))
    {
        static_sum += f.weighted;
        magnitude += f.weighted.abs();
    }
    let weight_age = f64::from(p.weight_age);
    // Slurm gates a weight of 0 (age 0); a max age of 0 or less is always 1.
    let (rate, cap_value, always_capped) = if p.weight_age == 0 {
        (0.0, 0.0, true)
    } else if p.max_age_secs <= 0 {
        (0.0, weight_age, true)
    } else {
        (weight_age / p.max_age_secs as f64, weight_age, false)
    };
    rank(
        record,
        static_sum,
        magnitude,
        rate,
        cap_value,
        always_capped || row.age_capped,
        false,
    );
}

fn flux_record(row: &JobRow, ctx: &KeyCtx, globals: &Globals, record: &mut PriorityRecord) {
    let w = &globals.params;
    let urgency = record.urgency;
    let fairshare = f64::from_bits(ctx.fairshare_bits);
    let queue = ctx.partition.priority as f64;
    let bank = ctx.account_priority.unwrap_or(0) as f64;
    let qos = slurm_normalize(ctx.qos_priority as f64, globals.max_qos as f64, false);
    let size = if globals.cluster_nodes > 0 {
        (tres_count(&row.tres, "node", 1.0) / globals.cluster_nodes as f64).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let user = flux_user_factor(row.user_priority);
    let mut user_factor = PriorityFactor::new("user", user, w.flux_user as f64);
    user_factor.weighted = flux_user_contribution(w.flux_user as f64, user);
    let factors = [
        PriorityFactor::new("fairshare", fairshare, w.flux_fairshare as f64),
        PriorityFactor::new("queue", queue, w.flux_queue as f64),
        PriorityFactor::new("bank", bank, w.flux_bank as f64),
        PriorityFactor::new(
            "urgency",
            f64::from(urgency) - f64::from(FLUX_URGENCY_DEFAULT),
            w.flux_urgency as f64,
        ),
        PriorityFactor::new("wait_time", 0.0, w.flux_wait_time as f64),
        PriorityFactor::new("qos", qos, w.flux_qos as f64),
        PriorityFactor::new("jobsize", size, w.flux_job_size as f64),
        user_factor,
    ];
    record.factors = factors.iter().map(StoredFactor::from_factor).collect();
    record.time_factor = 4;
    record.time_weight = (w.flux_wait_time as f64).to_bits();
    record.time_origin = eligible_at(row.queued_at, row.begin);
    record.time_max_secs = w.flux_max_wait_secs;
    let mut static_sum = 0.0;
    let mut magnitude = 0.0;
    for (i, f) in factors.iter().enumerate() {
        if i != 4 {
            static_sum += f.weighted;
            magnitude += f.weighted.abs();
        }
    }
    let weight_wait = w.flux_wait_time as f64;
    // The wait factor is 0 when the maximum is not positive.
    let (rate, cap_value, always_capped) = if w.flux_max_wait_secs <= 0 {
        (0.0, 0.0, true)
    } else {
        (
            weight_wait / w.flux_max_wait_secs as f64,
            weight_wait,
            false,
        )
    };
    // Urgency 0 holds the job; urgency 31 (expedite) is the maximum whatever the sum.
    if urgency == 0 && record.listed == Some(Listed::Pending) {
        record.listed = Some(Listed::Held);
    }
    rank(
        record,
        static_sum,
        magnitude,
        rate,
        cap_value,
        always_capped || row.age_capped,
        urgency >= FLUX_URGENCY_EXPEDITE,
    );
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
    record.rate = rate.to_bits();
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
        let shift = rate * record.time_origin as f64;
        (
            RankClass::Uncapped,
            static_sum - shift,
            magnitude + shift.abs() + cap_value.abs(),
        )
    };
    record.class = class;
    let key_hi = if expedite || key.is_nan() {
        f64::INFINITY
    } else {
        key + RELATIVE_SLACK * key_magnitude + RELATIVE_SLACK
    };
    record.key_hi = ordered_bits(key_hi);
}

impl PriorityRecord {
    /// An upper bound on the job's exact weighted sum at `now` (see the
    /// module documentation); `+inf` for an expedited Flux job.
    pub fn upper_bound(&self, now: Time) -> f64 {
        let key_hi = from_ordered_bits(self.key_hi);
        match self.class {
            RankClass::Uncapped => {
                let moved = f64::from_bits(self.rate) * now as f64;
                key_hi + moved + RELATIVE_SLACK * moved.abs()
            }
            _ => key_hi,
        }
    }

    /// The job's exact priority at `now`, bit-identical to the oracle's;
    /// `floor` is its `INCR_ONLY` memory (used only when that flag is on).
    /// `None` when the job is not listed or the model is not maintained here.
    pub fn evaluate(&self, now: Time, floor: Option<u64>) -> Option<JobPriority> {
        let listed = self.listed?;
        let mut factors: Vec<PriorityFactor> =
            self.factors.iter().map(StoredFactor::to_factor).collect();
        let weight = f64::from_bits(self.time_weight);
        let (state, priority) = match self.model {
            PriorityModel::Slurm => {
                let age = if weight == 0.0 {
                    0.0
                } else {
                    slurm_age_factor(now, self.time_origin, self.time_max_secs)
                };
                factors[self.time_factor] = PriorityFactor::new("age", age, weight);
                let weighted: Vec<f64> = factors
                    .iter()
                    .filter(|f| !matches!(f.name.as_str(), "site" | "nice"))
                    .map(|f| f.weighted)
                    .collect();
                let computed =
                    slurm_final_priority(slurm_priority_sum(&weighted, self.site, self.nice));
                let priority = match listed {
                    Listed::Held => 0,
                    Listed::Pending if self.incr_only => {
                        floor.map_or(computed, |f| computed.max(f))
                    }
                    _ => computed,
                };
                (listed.job_state(), priority)
            }
            PriorityModel::Flux => {
                let wait = flux_wait_time_factor(now - self.time_origin, self.time_max_secs);
                factors[self.time_factor] = PriorityFactor::new("wait_time", wait, weight);
                let mut sum = 0.0;
                for factor in &factors {
                    sum += factor.weighted;
                }
                match listed {
                    Listed::Held => (JobState::Held, 0),
                    other => (other.job_state(), flux_final_priority(sum, self.urgency)),
                }
            }
            PriorityModel::Moab => return None,
        };
        Some(JobPriority {
            job: self.job.clone(),
            user: self.user.clone(),
            account: self.account.clone(),
            partition: self.partition.clone(),
            qos: self.qos.clone(),
            submit_at: self.submit_at,
            priority,
            state,
            model: self.model,
            factors,
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
