//! `fairflow bench`'s fair baselines (issue 36 item 8), beside the oracle's
//! full recomputation (`full_recompute_us`, an upper bound: the whole
//! sshare table, every job's full factor list with its strings, a sort of
//! every pending job):
//! - **lean full recomputation** (`lean_full_recompute_us`): what a lean
//!   batch scheduler pays per cycle at the least: every pending job's
//!   scalar priority from its factors and the already-aggregated fair-share
//!   factor of its user association (a dense array), by the model's own
//!   sum and clamp (`priority_formula::slurm_priority_sum`,
//!   `slurm_final_priority`), then a partial selection of the top `k`
//!   (`select_nth_unstable` on one integer key: priority, then submission
//!   order, as the queue ranks) and a sort of those `k`. The rows are
//!   prepared untimed from the oracle's evaluation of the same state; only
//!   the pass is timed. Its top `k` is compared with the oracle's.
//! - **Slurm's cycle** (`slurm_cycle_us`): the cost of one
//!   `PriorityCalcPeriod` cycle of Slurm's multifactor plugin at the same
//!   size, from [`SLURM_CYCLE_US_PER_PENDING_JOB`] and
//!   [`SLURM_CYCLE_US_PER_ASSOCIATION`].

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::{Duration, Instant};

use fairflow_model::priority_formula::{slurm_final_priority, slurm_priority_sum};
use fairflow_model::report::{JobIdKey, JobPriority, JobState};
use fairflow_oracle::State;

/// Slurm's priority cycle per pending job, microseconds: a real Slurm 22.05
/// (`slurmctld`, multifactor, Fair Tree) measured on this kind of machine
/// (a 2-core VM), as recorded in issue 36 and `perf/baselines.md`.
pub(crate) const SLURM_CYCLE_US_PER_PENDING_JOB: f64 = 0.7;
/// Slurm's priority cycle per association, microseconds (same source).
pub(crate) const SLURM_CYCLE_US_PER_ASSOCIATION: f64 = 0.6;

/// Slurm's cycle at `pending_jobs` and `associations`, microseconds.
pub(crate) fn slurm_cycle_us(pending_jobs: u64, associations: u64) -> f64 {
    SLURM_CYCLE_US_PER_PENDING_JOB * pending_jobs as f64
        + SLURM_CYCLE_US_PER_ASSOCIATION * associations as f64
}

/// Every pending job's inputs of the lean pass, in submission order (the
/// queue's tie-break), and the fair-share factors by association index.
pub(crate) struct LeanRows {
    /// The weighted factors other than fair-share, site and nice, summed.
    rest: Vec<f64>,
    site_nice: Vec<(i64, i64)>,
    /// The fair-share weight.
    fairshare_weight: Vec<f64>,
    /// Index into `factors`.
    user: Vec<u32>,
    /// The job ids.
    jobs: Vec<String>,
    /// Fair-share factor per user association.
    factors: Vec<f64>,
}

/// The lean rows of `state`'s pending jobs from the oracle's `priorities`
/// and `factors` of the same state (untimed).
pub(crate) fn prepare(
    state: &State,
    priorities: &[JobPriority],
    factors: &BTreeMap<(String, String), f64>,
) -> LeanRows {
    let mut pending: Vec<&JobPriority> = priorities
        .iter()
        .filter(|p| p.state == JobState::Pending)
        .collect();
    pending.sort_by_cached_key(|p| (p.submit_at, JobIdKey::new(&p.job)));
    let index: BTreeMap<&(String, String), u32> =
        factors.keys().zip(0..).collect::<BTreeMap<_, _>>();
    let mut rows = LeanRows {
        rest: Vec::with_capacity(pending.len()),
        site_nice: Vec::with_capacity(pending.len()),
        fairshare_weight: Vec::with_capacity(pending.len()),
        user: Vec::with_capacity(pending.len()),
        jobs: Vec::with_capacity(pending.len()),
        factors: factors.values().copied().collect(),
    };
    for job in pending {
        let spec = state.jobs.get(job.job.as_str()).map(|j| &j.spec);
        let site = spec.and_then(|s| s.site_factor).unwrap_or(0);
        let nice = spec.and_then(|s| s.nice).unwrap_or(0);
        let weight = |name: &str| job.factors.iter().find(|f| f.name == name);
        let rest = job
            .factors
            .iter()
            .filter(|f| !matches!(f.name.as_ref(), "fairshare" | "site" | "nice"))
            .map(|f| f.weighted)
            .sum();
        let key = (job.account.clone(), job.user.clone());
        rows.rest.push(rest);
        rows.site_nice.push((site, nice));
        rows.fairshare_weight
            .push(weight("fairshare").map_or(0.0, |f| f.weight));
        rows.user.push(index.get(&key).copied().unwrap_or(u32::MAX));
        rows.jobs.push(job.job.clone());
    }
    rows
}

/// One timed lean pass over `rows`: the time and the top `k` job ids.
pub(crate) fn lean_pass(rows: &LeanRows, k: usize) -> (Duration, Vec<String>) {
    let started = Instant::now();
    // Higher priority first, then earlier in submission order: one u64.
    let mut keys: Vec<u64> = (0..rows.rest.len())
        .map(|i| {
            let factor = rows.factors.get(rows.user[i] as usize).copied();
            let fairshare = rows.fairshare_weight[i] * factor.unwrap_or(0.0);
            let (site, nice) = rows.site_nice[i];
            let sum = slurm_priority_sum([rows.rest[i], fairshare], site, nice);
            let priority = slurm_final_priority(sum).min(u32::MAX as u64);
            ((u32::MAX as u64 - priority) << 32) | i as u64
        })
        .collect();
    let k = k.min(keys.len());
    if k > 0 && k < keys.len() {
        keys.select_nth_unstable(k - 1);
    }
    keys.truncate(k);
    keys.sort_unstable();
    let elapsed = started.elapsed();
    let top = keys
        .iter()
        .map(|key| rows.jobs[(key & u64::from(u32::MAX)) as usize].clone())
        .collect();
    (elapsed, black_box(top))
}
