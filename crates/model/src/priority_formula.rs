//! The scalar formulas of job priority (Slurm's multifactor plugin, Flux's
//! design and flux-accounting's plugin, Moab's components), shared by the
//! batch oracle and the incremental engine so that both compute the same bits.
//! Aggregation (maxima over partitions, sums of usage, the queue's order)
//! stays in the engines; everything here is a pure function of scalars.
//!
//! # Notation
//! - `w_*`: a weight; `f_*`: a factor in 0..1 (unless said otherwise).
//! - Times are Unix seconds; durations are seconds unless the name says otherwise.
//!
//! # Invariants
//! - Every function is total: zero or negative denominators, NaN and infinite
//!   inputs give a documented finite result, never a panic.
//! - Integer results are within the model's range: Slurm `1..=2^32-1` (0 is
//!   reserved for held jobs), Flux `0..=2^32-1`, Moab `0..=10^9`.

/// The largest 32-bit priority (`0xFFFFFFFF`, Flux's `FLUX_JOB_PRIORITY_MAX`).
pub const PRIORITY_MAX_U32: u64 = 0xFFFF_FFFF;

/// Moab's largest priority (`MAX_PRIO_VAL`).
pub const MOAB_PRIORITY_MAX: u64 = 1_000_000_000;

/// Flux's default urgency.
pub const FLUX_URGENCY_DEFAULT: u8 = 16;

/// Flux's expedite urgency: priority `PRIORITY_MAX_U32` whatever the factors.
pub const FLUX_URGENCY_EXPEDITE: u8 = 31;

/// Slurm's final priority (`_get_priority_internal`): the weighted sum
/// (already including `site - nice`) below 1 becomes 1 (0 is reserved for
/// held jobs), above `0xFFFFFFFF` becomes `0xFFFFFFFF`, and is otherwise
/// truncated toward zero. NaN becomes 1.
pub fn slurm_final_priority(weighted_sum: f64) -> u64 {
    if weighted_sum.is_nan() || weighted_sum < 1.0 {
        1
    } else if weighted_sum > PRIORITY_MAX_U32 as f64 {
        PRIORITY_MAX_U32
    } else {
        weighted_sum.trunc() as u64
    }
}

/// Slurm's weighted sum, in Slurm's order: the weighted factors in the order
/// given (age, assoc, fair-share, job size, partition, QOS, then each TRES),
/// then `+ site_factor - nice`. Both engines add in this order, so they get
/// the same bits.
pub fn slurm_priority_sum(
    weighted_factors: impl IntoIterator<Item = f64>,
    site_factor: i64,
    nice: i64,
) -> f64 {
    let mut sum = 0.0;
    for weighted in weighted_factors {
        sum += weighted;
    }
    sum + site_factor as f64 - nice as f64
}

/// Slurm's age factor: `min(1, (now - accrue_at) / max_age_secs)`, 0 before
/// `accrue_at`. As in Slurm, a wait at least `max_age_secs` (so any wait with
/// `PriorityMaxAge=0`) gives 1.
pub fn slurm_age_factor(now: i64, accrue_at: i64, max_age_secs: i64) -> f64 {
    let waited_secs = now - accrue_at;
    if waited_secs <= 0 && max_age_secs > 0 {
        0.0
    } else if waited_secs >= max_age_secs {
        1.0
    } else {
        waited_secs as f64 / max_age_secs as f64
    }
}

/// A value normalised by the maximum over its kind (`priority_norm`):
/// `value / max`, 0 when `max <= 0`; the raw value when `raw` (a
/// `NO_NORMAL_*` flag).
pub fn slurm_normalize(value: f64, max: f64, raw: bool) -> f64 {
    if raw {
        value
    } else if max > 0.0 {
        value / max
    } else {
        0.0
    }
}

/// The inputs of Slurm's job-size factor.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JobSizeInputs {
    /// Nodes the job asks for (`min_nodes`).
    pub min_nodes: f64,
    /// CPUs the job asks for (`cpu_cnt`; 0 when unknown).
    pub cpus: f64,
    /// The cluster's node count.
    pub cluster_nodes: f64,
    /// The cluster's CPU count.
    pub cluster_cpus: f64,
    /// The time limit in minutes (the job's, else its partition's maximum);
    /// `None` when neither is set.
    pub time_limit_mins: Option<f64>,
    /// `PriorityFavorSmall`.
    pub favor_small: bool,
    /// `PriorityFlags=SMALL_RELATIVE_TO_TIME`.
    pub small_relative_to_time: bool,
}

/// Slurm's job-size factor (`set_priority_factors`), clamped to 0..1.
///
/// - Default: `(min_nodes/cluster_nodes + cpus/cluster_cpus) / 2`, or only
///   the node term when `cpus` (or the cluster's CPU count) is 0.
/// - `PriorityFavorSmall`: `((cluster_nodes - min_nodes)/cluster_nodes [0 when
///   min_nodes >= cluster_nodes] + (cluster_cpus - cpus)/cluster_cpus) / 2`,
///   or only the node term.
/// - `SMALL_RELATIVE_TO_TIME`: `max(min_nodes*cluster_cpus/cluster_nodes,
///   cpus) / time_limit_mins / cluster_cpus`, then `1 - that` with
///   FavorSmall. Without any time limit fairflow takes the job as infinitely
///   long: 0 (1 with FavorSmall).
/// - A cluster of 0 nodes (no `cluster` event yet) gives 0.
pub fn slurm_job_size_factor(inputs: &JobSizeInputs) -> f64 {
    let JobSizeInputs {
        min_nodes,
        cpus,
        cluster_nodes,
        cluster_cpus,
        time_limit_mins,
        favor_small,
        small_relative_to_time,
    } = *inputs;
    if cluster_nodes <= 0.0 {
        return 0.0;
    }
    let size = if small_relative_to_time {
        let relative = match time_limit_mins.filter(|m| *m > 0.0) {
            Some(minutes) if cluster_cpus > 0.0 => {
                (min_nodes * cluster_cpus / cluster_nodes).max(cpus) / minutes / cluster_cpus
            }
            _ => 0.0,
        };
        if favor_small {
            1.0 - relative
        } else {
            relative
        }
    } else if favor_small {
        let node_term = if min_nodes >= cluster_nodes {
            0.0
        } else {
            (cluster_nodes - min_nodes) / cluster_nodes
        };
        if cpus > 0.0 && cluster_cpus > 0.0 {
            (node_term + (cluster_cpus - cpus) / cluster_cpus) / 2.0
        } else {
            node_term
        }
    } else {
        let node_term = min_nodes / cluster_nodes;
        if cpus > 0.0 && cluster_cpus > 0.0 {
            (node_term + cpus / cluster_cpus) / 2.0
        } else {
            node_term
        }
    };
    if size.is_nan() {
        0.0
    } else {
        size.clamp(0.0, 1.0)
    }
}

/// A TRES factor: the count normalised by the partition's (or cluster's)
/// total of that TRES, 0 when the total is unknown or 0; the raw count with
/// `NO_NORMAL_TRES`.
pub fn slurm_tres_factor(count: f64, total: Option<f64>, raw: bool) -> f64 {
    if raw {
        count
    } else {
        match total {
            Some(total) if total > 0.0 => count / total,
            _ => 0.0,
        }
    }
}

/// flux-accounting's final priority (`priority_calculation`): urgency 0 is 0
/// (held), urgency 31 is `2^32-1` (expedite); otherwise the weighted sum
/// rounded half away from zero (C `round`), below 0 becomes 0 and above
/// `2^32-1` becomes `2^32-1` (fairflow clamps where the plugin does not).
pub fn flux_final_priority(weighted_sum: f64, urgency: u8) -> u64 {
    if urgency == 0 {
        return 0;
    }
    if urgency >= FLUX_URGENCY_EXPEDITE {
        return PRIORITY_MAX_U32;
    }
    let rounded = weighted_sum.round();
    if rounded.is_nan() || rounded < 0.0 {
        0
    } else if rounded > PRIORITY_MAX_U32 as f64 {
        PRIORITY_MAX_U32
    } else {
        rounded as u64
    }
}

/// The Flux design's wait-time factor: `min(1, waited / max_wait)`, 0 before
/// the job was queued or when `max_wait_secs <= 0`.
pub fn flux_wait_time_factor(waited_secs: i64, max_wait_secs: i64) -> f64 {
    if waited_secs <= 0 || max_wait_secs <= 0 {
        0.0
    } else if waited_secs >= max_wait_secs {
        1.0
    } else {
        waited_secs as f64 / max_wait_secs as f64
    }
}

/// The Flux design's user factor, which "can only lower a job's priority":
/// fairflow takes it from the job's `user_priority`, clamped to `-1024..=0`
/// (positive values count as 0) and divided by 1024, so it lies in `-1..=0`.
pub fn flux_user_factor(user_priority: Option<i64>) -> f64 {
    let clamped = user_priority.unwrap_or(0).clamp(-1024, 0);
    clamped as f64 / 1024.0
}

/// The Flux user factor's contribution, `weight * factor`, never positive:
/// whatever the sign of the weight, the user factor only lowers a job.
pub fn flux_user_contribution(weight: f64, factor: f64) -> f64 {
    (weight * factor).min(0.0)
}

/// Moab's cap: a positive `cap` bounds `value` to `-cap..=cap`; a cap of 0
/// (or below) means no cap.
pub fn moab_cap(value: f64, cap: f64) -> f64 {
    if cap > 0.0 {
        value.clamp(-cap, cap)
    } else {
        value
    }
}

/// Moab's expansion factor: `1 + queue_time / max(XFMINWCLIMIT, wallclock
/// limit)`, both in seconds. With neither a limit nor `XFMINWCLIMIT` (both 0
/// or absent), fairflow takes the job as infinitely long: 1.
pub fn moab_xfactor(queue_secs: f64, wallclock_limit_secs: f64, xf_min_wclimit_secs: f64) -> f64 {
    let denominator = wallclock_limit_secs.max(xf_min_wclimit_secs);
    if denominator > 0.0 {
        1.0 + queue_secs.max(0.0) / denominator
    } else {
        1.0
    }
}

/// Moab's RES value for a request with an ideal (`PRIORITYTARGETPROCCOUNT`
/// for PROC, `PRIORITYTARGETDURATION` for WALLTIME): `target - |requested -
/// target|`. The ideal scores highest (`target`), and the value falls off
/// linearly, one unit per processor (second) of distance, on both sides: 0
/// for an empty request and for one twice the ideal, negative beyond (a
/// positive `*CAP` bounds it both ways). Why this form:
/// - it peaks at the ideal and treats a shortfall and an excess of the same
///   size alike, which is what the seed's "ideal value" asks for;
/// - up to the ideal it equals the request itself (`target - (target -
///   requested)`), the untargeted value, so setting a target changes only
///   jobs larger than the ideal and keeps the scale `PROCWEIGHT` /
///   `WALLTIMEWEIGHT` were tuned for;
/// - it is linear, so it stays exact in the same units as the untargeted
///   value (processors, seconds) and needs no new parameter.
///
/// A target of 0 or below means no target: the request itself. NaN is 0.
pub fn moab_target_closeness(requested: f64, target: f64) -> f64 {
    if requested.is_nan() {
        return 0.0;
    }
    if target > 0.0 {
        target - (requested - target).abs()
    } else {
        requested
    }
}

/// Slurm's default requeue delay: `requeue_delay=` of `SchedulerParameters`
/// unset, the credential lifetime (`cred_expire`, 120 s).
pub const SLURM_REQUEUE_DELAY_SECS: i64 = 120;

/// A requeued job's begin time as Slurm sets it (`batch_requeue_fini` in
/// `job_mgr.c`): a begin time not in the future becomes
/// `now + requeue_delay + 1`, so the job's age starts again from there; a
/// later one is kept. Since 24.05.5 (and 24.11) Slurm also recomputes the
/// priority at once, which fairflow always does.
pub fn slurm_requeue_begin(begin_at: Option<i64>, now: i64, delay_secs: i64) -> Option<i64> {
    match begin_at {
        Some(begin) if begin > now => Some(begin),
        _ => Some(now + delay_secs + 1),
    }
}

/// When a job became eligible in its current stay in the queue: its last
/// queue entry (submit or requeue), or its begin time if later. Slurm's age,
/// Flux's wait time and Moab's queue time all count from here.
pub fn eligible_at(queued_at: i64, begin_at: Option<i64>) -> i64 {
    queued_at.max(begin_at.unwrap_or(queued_at))
}

/// Moab's effective queue time, seconds: the length of `[from, until]`
/// minus its overlap with the job's held spans (each `(held_at,
/// released_at)`, disjoint, as a job is held at most once at a time), at
/// least 0. Under `JOBPRIOACCRUALPOLICY ALWAYS` the caller passes no spans
/// (and `from` = the queue entry); otherwise `from` is when the job became
/// eligible and the spans make held time not count.
pub fn moab_effective_queue_secs(from: i64, until: i64, held_spans: &[(i64, i64)]) -> i64 {
    if until <= from {
        return 0;
    }
    let mut held = 0i64;
    for (held_at, released_at) in held_spans {
        let overlap = (*released_at).min(until) - (*held_at).max(from);
        if overlap > 0 {
            held += overlap;
        }
    }
    (until - from - held).max(0)
}

/// How a Moab fair-share target applies (`FSTARGET=v`, `v+`, `v-`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum FsTargetKind {
    /// A plain target: priority is pushed both ways.
    Target,
    /// A floor (`+`): priority is raised only while usage is under it.
    Floor,
    /// A ceiling (`-`): priority is lowered only while usage is over it.
    Ceiling,
}

/// Moab's fair-share delta for one credential: the difference of the target
/// and the usage (both percent), `target - usage` (or with `FSPOLICY ...%`
/// the ratio form `1 - usage/target`, 0 for a target of 0); a floor keeps
/// only a positive delta, a ceiling only a negative one.
pub fn moab_fs_delta(target_pct: f64, usage_pct: f64, kind: FsTargetKind, ratio: bool) -> f64 {
    let delta = if ratio {
        if target_pct > 0.0 {
            1.0 - usage_pct / target_pct
        } else {
            0.0
        }
    } else {
        target_pct - usage_pct
    };
    match kind {
        FsTargetKind::Target => delta,
        FsTargetKind::Floor => delta.max(0.0),
        FsTargetKind::Ceiling => delta.min(0.0),
    }
}

/// Moab's target-service value for a metric `value` (queue time, or
/// expansion factor) with a target `target` (> 0). The seed says only that it
/// is small far from the target, grows exponentially as the target nears, and
/// keeps growing, not exponentially, once missed. fairflow's definition, with
/// `r = value / target`: `2^(10 r) - 1` up to the target (0 at r = 0, 1023 at
/// r = 1), then the tangent line `1023 + 1024 * 10 * ln 2 * (r - 1)`. No
/// target (0 or below) gives 0.
pub fn moab_target_value(value: f64, target: f64) -> f64 {
    if target <= 0.0 || value.is_nan() {
        return 0.0;
    }
    let r = (value / target).max(0.0);
    if r <= 1.0 {
        (10.0 * r).exp2() - 1.0
    } else {
        1023.0 + 1024.0 * 10.0 * std::f64::consts::LN_2 * (r - 1.0)
    }
}

/// Moab's final priority: the sum of the weighted components, clamped to
/// `0..=MOAB_PRIORITY_MAX` and truncated toward zero. NaN is 0.
pub fn moab_final_priority(weighted_sum: f64) -> u64 {
    if weighted_sum.is_nan() || weighted_sum <= 0.0 {
        0
    } else if weighted_sum >= MOAB_PRIORITY_MAX as f64 {
        MOAB_PRIORITY_MAX
    } else {
        weighted_sum.trunc() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requeue_begin_as_slurm_sets_it() {
        let delay = SLURM_REQUEUE_DELAY_SECS;
        // Requeued at 1000 with no begin time: eligible at 1000 + 120 + 1.
        assert_eq!(slurm_requeue_begin(None, 1000, delay), Some(1121));
        // A begin time already passed (or now) moves too.
        assert_eq!(slurm_requeue_begin(Some(1000), 1000, delay), Some(1121));
        // A begin time still ahead is kept.
        assert_eq!(slurm_requeue_begin(Some(5000), 1000, delay), Some(5000));
        // requeue_delay=0: the next second.
        assert_eq!(slurm_requeue_begin(None, 1000, 0), Some(1001));
    }

    #[test]
    fn slurm_bounds_and_truncation() {
        assert_eq!(slurm_final_priority(0.0), 1);
        assert_eq!(slurm_final_priority(-5000.0), 1);
        assert_eq!(slurm_final_priority(0.99), 1);
        assert_eq!(slurm_final_priority(1.99), 1);
        assert_eq!(slurm_final_priority(1234.999), 1234);
        assert_eq!(slurm_final_priority(4_294_967_295.0), 4_294_967_295);
        assert_eq!(slurm_final_priority(4_294_967_296.0), 4_294_967_295);
        assert_eq!(slurm_final_priority(1e30), 4_294_967_295);
        assert_eq!(slurm_final_priority(f64::NAN), 1);
    }

    #[test]
    fn age_is_linear_up_to_max_age() {
        // 3.5 days of a 7-day max age: 0.5.
        assert_eq!(slurm_age_factor(302_400, 0, 604_800), 0.5);
        assert_eq!(slurm_age_factor(10 * 86_400, 0, 604_800), 1.0);
        assert_eq!(slurm_age_factor(100, 200, 604_800), 0.0);
        // PriorityMaxAge=0: every wait is "at least the maximum".
        assert_eq!(slurm_age_factor(100, 100, 0), 1.0);
    }

    #[test]
    fn flux_rounds_half_away_from_zero_and_clamps() {
        assert_eq!(flux_final_priority(2.5, 16), 3);
        assert_eq!(flux_final_priority(2.4999, 16), 2);
        assert_eq!(flux_final_priority(-0.4, 16), 0);
        assert_eq!(flux_final_priority(-7.0, 16), 0);
        assert_eq!(flux_final_priority(1e12, 16), 4_294_967_295);
        assert_eq!(flux_final_priority(1e12, 0), 0);
        assert_eq!(flux_final_priority(-1e12, 31), 4_294_967_295);
    }

    #[test]
    fn flux_user_factor_only_lowers() {
        assert_eq!(flux_user_factor(Some(-512)), -0.5);
        assert_eq!(flux_user_factor(Some(-4096)), -1.0);
        assert_eq!(flux_user_factor(Some(300)), 0.0);
        assert_eq!(flux_user_factor(None), 0.0);
        assert_eq!(flux_user_contribution(1000.0, -0.5), -500.0);
        assert_eq!(flux_user_contribution(-1000.0, -0.5), 0.0);
    }

    // The seed's XFACTOR table: queue times 1, 2, 4, 8, 16 hours.
    #[test]
    fn moab_xfactor_table_of_the_seed() {
        let hour = 3600.0;
        let queue_hours = [1.0, 2.0, 4.0, 8.0, 16.0];
        let one_hour_job = [2.0, 3.0, 5.0, 9.0, 17.0];
        let four_hour_job = [1.25, 1.5, 2.0, 3.0, 5.0];
        for i in 0..5 {
            assert_eq!(
                moab_xfactor(queue_hours[i] * hour, hour, 0.0),
                one_hour_job[i]
            );
            assert_eq!(
                moab_xfactor(queue_hours[i] * hour, 4.0 * hour, 0.0),
                four_hour_job[i]
            );
        }
        // XFMINWCLIMIT of 4 h makes a 1-hour job count as a 4-hour one: 1 + 2/4.
        assert_eq!(moab_xfactor(2.0 * hour, hour, 4.0 * hour), 1.5);
        assert_eq!(moab_xfactor(2.0 * hour, 0.0, 0.0), 1.0);
    }

    #[test]
    fn moab_caps_bound_both_directions() {
        assert_eq!(moab_cap(150.0, 100.0), 100.0);
        assert_eq!(moab_cap(-150.0, 100.0), -100.0);
        assert_eq!(moab_cap(-150.0, 0.0), -150.0);
        assert_eq!(moab_final_priority(-3.0), 0);
        assert_eq!(moab_final_priority(2e9), 1_000_000_000);
        assert_eq!(moab_final_priority(12.9), 12);
    }

    #[test]
    fn moab_targets_floors_and_ceilings() {
        // Target 30 %, usage 10 %: +20; usage 50 %: -20.
        assert_eq!(moab_fs_delta(30.0, 10.0, FsTargetKind::Target, false), 20.0);
        assert_eq!(
            moab_fs_delta(30.0, 50.0, FsTargetKind::Target, false),
            -20.0
        );
        assert_eq!(moab_fs_delta(30.0, 10.0, FsTargetKind::Floor, false), 20.0);
        assert_eq!(moab_fs_delta(30.0, 50.0, FsTargetKind::Floor, false), 0.0);
        assert_eq!(moab_fs_delta(30.0, 10.0, FsTargetKind::Ceiling, false), 0.0);
        assert_eq!(
            moab_fs_delta(30.0, 50.0, FsTargetKind::Ceiling, false),
            -20.0
        );
        // Ratio form: 1 - 15/30 = 0.5.
        assert_eq!(moab_fs_delta(30.0, 15.0, FsTargetKind::Target, true), 0.5);
    }

    #[test]
    fn moab_target_closeness_peaks_at_the_ideal() {
        // Target 64 processors: 64 at 64; 16 -> 64 - 48 = 16; 96 -> 64 - 32 = 32;
        // 128 (twice the ideal) -> 0; 200 -> 64 - 136 = -72.
        assert_eq!(moab_target_closeness(64.0, 64.0), 64.0);
        assert_eq!(moab_target_closeness(16.0, 64.0), 16.0);
        assert_eq!(moab_target_closeness(96.0, 64.0), 32.0);
        assert_eq!(moab_target_closeness(128.0, 64.0), 0.0);
        assert_eq!(moab_target_closeness(200.0, 64.0), -72.0);
        // Same distance either side scores the same: 32 and 96 are both 32 away.
        assert_eq!(
            moab_target_closeness(32.0, 64.0),
            moab_target_closeness(96.0, 64.0)
        );
        // No target: the request itself.
        assert_eq!(moab_target_closeness(200.0, 0.0), 200.0);
        assert_eq!(moab_target_closeness(f64::NAN, 64.0), 0.0);
    }

    #[test]
    fn moab_effective_queue_time_skips_held_spans() {
        // Eligible from 100 to 1000 (900 s), held 200..300 and 500..650:
        // 900 - 100 - 150 = 650.
        assert_eq!(
            moab_effective_queue_secs(100, 1000, &[(200, 300), (500, 650)]),
            650
        );
        // A span before `from` or after `until` counts only where it overlaps:
        // held 0..150 overlaps 100..150 (50 s); held 900..2000 overlaps 900..1000
        // (100 s): 900 - 50 - 100 = 750.
        assert_eq!(
            moab_effective_queue_secs(100, 1000, &[(0, 150), (900, 2000)]),
            750
        );
        assert_eq!(moab_effective_queue_secs(100, 1000, &[]), 900);
        assert_eq!(moab_effective_queue_secs(1000, 100, &[]), 0);
        // Held the whole time: 0.
        assert_eq!(moab_effective_queue_secs(100, 1000, &[(50, 1000)]), 0);
    }

    #[test]
    fn moab_target_value_grows_exponentially_then_linearly() {
        assert_eq!(moab_target_value(0.0, 60.0), 0.0);
        // Half way: 2^5 - 1 = 31.
        assert_eq!(moab_target_value(30.0, 60.0), 31.0);
        assert_eq!(moab_target_value(60.0, 60.0), 1023.0);
        // Twice the target: 1023 + 10240 ln 2.
        let expected = 1023.0 + 10240.0 * std::f64::consts::LN_2;
        assert_eq!(moab_target_value(120.0, 60.0), expected);
        assert_eq!(moab_target_value(10.0, 0.0), 0.0);
    }

    #[test]
    fn job_size_variants() {
        let base = JobSizeInputs {
            min_nodes: 2.0,
            cpus: 32.0,
            cluster_nodes: 10.0,
            cluster_cpus: 320.0,
            time_limit_mins: Some(60.0),
            favor_small: false,
            small_relative_to_time: false,
        };
        // (2/10 + 32/320)/2 = (0.2 + 0.1)/2 = 0.15.
        assert!((slurm_job_size_factor(&base) - 0.15).abs() < 1e-15);
        // Favor small: (8/10 + 288/320)/2 = (0.8 + 0.9)/2 = 0.85.
        let small = JobSizeInputs {
            favor_small: true,
            ..base
        };
        assert!((slurm_job_size_factor(&small) - 0.85).abs() < 1e-15);
        // Relative to time: max(2*320/10, 32) = 64; 64 / 60 / 320 = 1/300.
        let rel = JobSizeInputs {
            small_relative_to_time: true,
            ..base
        };
        assert!((slurm_job_size_factor(&rel) - 1.0 / 300.0).abs() < 1e-15);
        let rel_small = JobSizeInputs {
            favor_small: true,
            ..rel
        };
        assert!((slurm_job_size_factor(&rel_small) - (1.0 - 1.0 / 300.0)).abs() < 1e-15);
        // A full-system 1-minute job gets 1.
        let full = JobSizeInputs {
            min_nodes: 10.0,
            cpus: 320.0,
            time_limit_mins: Some(1.0),
            ..rel
        };
        assert_eq!(slurm_job_size_factor(&full), 1.0);
        // No cluster yet: 0.
        let none = JobSizeInputs {
            cluster_nodes: 0.0,
            ..base
        };
        assert_eq!(slurm_job_size_factor(&none), 0.0);
    }
}
