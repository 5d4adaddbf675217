//! flux-accounting's usage bins under `UsageModel=flux`: v0.60's
//! `PeriodicUsageCalculator` (`usage_calculators/periodic.py`), which both
//! engines read through the book (an association's usage is the sum of its
//! bins, in frame units without continuous decay).
//!
//! # What flux-accounting does
//! Each association keeps `N = FluxUsageResetPeriod / PriorityDecayHalfLife`
//! bins (`job_usage_per_association_table`, period 0 the current half-life
//! period). One global `end_half_life_period` (`E`, set when the database is
//! created to its creation time plus one half-life `hl`) marks the periods.
//! Each run of `flux account-update-usage` (hourly, from cron) at time `now`:
//! - an association without newly completed jobs: if `E < now - hl` its bins
//!   *shift*: `bin[k+1] = bin[k] * decay` from the oldest down (the oldest is
//!   dropped), `bin[0] = 0`; otherwise nothing changes;
//! - an association with new jobs (their usage `cur`, each job's
//!   `round(weighted usage, 5)`; the last completing at `last`): if
//!   `last - E < hl`, `bin[0] += cur`; otherwise the bins shift and then
//!   `bin[0] = cur + sum(bin[1..])`, the whole total written into bin 0 (so it
//!   is counted again, decayed, at the next shift: a quirk kept here);
//! - the association's usage is the sum of its bins;
//! - then, once for the run, if `E < now - hl`: `E += hl` (one period, even if
//!   several passed).
//!
//! # How fairflow runs it
//! The book runs the update at every event time it moves to (each distinct
//! time once), as if `update-usage` ran at every event rather than hourly: a
//! job's whole usage counts at its end (not while it runs), in the update at
//! the end's time; a shift happens at the first event after `E + hl`, not at
//! the boundary itself, and one per event time. A `usage` event charges like
//! a completed job (or, with `period`, adds to that bin as it is: an import).
//! The decay factor is taken to six decimals and bin values are exact frame
//! units where flux-accounting adds and multiplies `double`s.

use std::collections::{BTreeMap, BTreeSet};

use fairflow_model::config::Config;
use fairflow_model::usage::{decayed, micros, FrameUsage};
use fairflow_model::Time;

/// An association: its account and user (`None`: the account's own usage).
pub type BinKey = (String, Option<String>);

/// Every association's bins and the period clock.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct FluxBins {
    /// Each association's bins, period 0 first; an association without an
    /// entry has all bins 0.
    pub bins: BTreeMap<BinKey, Vec<FrameUsage>>,
    /// flux-accounting's `end_half_life_period`.
    pub period_end: Option<Time>,
    /// The time of the last update.
    pub updated_at: Option<Time>,
    /// `end_half_life_period` as the last update found it (before it moved).
    pub period_end_at_update: Option<Time>,
    /// The associations whose bin 0 the last update rewrote with their total
    /// (more jobs of theirs at that time add to it: one run's `cur`).
    pub rewritten: BTreeSet<BinKey>,
    /// When the model came into force: a job running then counts its usage
    /// from here.
    pub since: Time,
}

/// The parameters of the bins in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BinParams {
    /// The period's length (`PriorityDecayHalfLife`), seconds; 0: never shift.
    pub half_life_secs: i64,
    /// The number of bins.
    pub count: usize,
    /// The decay factor in millionths.
    pub decay_millionths: u128,
}

impl BinParams {
    /// The parameters `config` sets.
    pub fn of(config: &Config) -> Self {
        BinParams {
            half_life_secs: config.decay_half_life_secs,
            count: config.flux_bins.count(config.decay_half_life_secs),
            decay_millionths: micros(config.flux_bins.decay_factor),
        }
    }
}

/// Shift one association's bins: each one period older, decayed, the oldest
/// dropped, the current one empty.
pub fn shift(bins: &mut [FrameUsage], decay_millionths: u128) {
    for k in (1..bins.len()).rev() {
        bins[k] = decayed(bins[k - 1], decay_millionths);
    }
    if let Some(current) = bins.first_mut() {
        *current = 0;
    }
}

impl FluxBins {
    /// No usage, the period clock starting at `period_end`, in force since `since`.
    pub fn new(period_end: Time, since: Time) -> Self {
        FluxBins {
            bins: BTreeMap::new(),
            period_end: Some(period_end),
            updated_at: None,
            period_end_at_update: None,
            rewritten: BTreeSet::new(),
            since,
        }
    }

    /// An association's usage: the sum of its bins.
    pub fn total(&self, key: &BinKey) -> FrameUsage {
        self.bins.get(key).map_or(0, |bins| bins.iter().sum())
    }

    fn bins_mut(&mut self, key: &BinKey, count: usize) -> &mut Vec<FrameUsage> {
        let bins = self.bins.entry(key.clone()).or_default();
        bins.resize(count.max(bins.len()), 0);
        bins
    }

    /// The update at `t` for the associations without new jobs: if a period
    /// ended more than a half-life ago (`E < t - hl`) every association's
    /// bins shift and `E` moves one period. Each time is updated once (an
    /// earlier or repeated time changes nothing). Did the bins shift?
    pub fn update(&mut self, t: Time, params: BinParams) -> bool {
        if self.updated_at.is_some_and(|at| at >= t) {
            return false;
        }
        let period_end = *self.period_end.get_or_insert(t + params.half_life_secs);
        self.updated_at = Some(t);
        self.period_end_at_update = Some(period_end);
        self.rewritten.clear();
        if params.half_life_secs <= 0 || period_end >= t - params.half_life_secs {
            return false;
        }
        for bins in self.bins.values_mut() {
            shift(bins, params.decay_millionths);
        }
        self.period_end = Some(period_end + params.half_life_secs);
        true
    }

    /// A completed job's (or a `usage` event's) `usage` for `key` in the
    /// update at `t` (after [`FluxBins::update`] at `t`): into the current
    /// bin if it completed less than a half-life after `E`; otherwise the
    /// bins shift (unless the update at `t` shifted them already) and bin 0
    /// becomes `usage` plus the older bins' sum (once per update: more usage
    /// of the association at the same time adds to it, as one run's `cur`).
    pub fn charge_completed(
        &mut self,
        key: &BinKey,
        usage: FrameUsage,
        t: Time,
        params: BinParams,
    ) {
        let period_end = self.period_end_at_update.unwrap_or(t);
        let this_update = self.updated_at == Some(t);
        let shifted_by_update =
            params.half_life_secs > 0 && this_update && period_end < t - params.half_life_secs;
        let again = this_update && self.rewritten.contains(key);
        let bins = self.bins_mut(key, params.count);
        if params.half_life_secs <= 0 || t - period_end < params.half_life_secs || again {
            bins[0] += usage;
        } else {
            if !shifted_by_update {
                shift(bins, params.decay_millionths);
            }
            bins[0] = usage + bins[1..].iter().sum::<FrameUsage>();
            self.rewritten.insert(key.clone());
        }
    }

    /// Add `usage` to bin `period` of `key` as it is (an imported bin).
    pub fn charge_into(&mut self, key: &BinKey, period: usize, usage: FrameUsage, count: usize) {
        let bins = self.bins_mut(key, count.max(period + 1));
        bins[period] += usage;
    }

    /// Move `from`'s bins into `into`'s, bin by bin (a removed association's
    /// history stays with its parent).
    pub fn absorb(&mut self, from: &BinKey, into: &BinKey) {
        if let Some(moved) = self.bins.remove(from) {
            let bins = self.bins_mut(into, moved.len());
            for (bin, usage) in bins.iter_mut().zip(moved) {
                *bin += usage;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fairflow_model::usage::FRAME_UNITS_PER_TRES_SEC;

    const WEEK: Time = 604_800;
    /// One node-second.
    const NS: FrameUsage = FRAME_UNITS_PER_TRES_SEC;

    fn params() -> BinParams {
        // flux-accounting's defaults: 1-week periods, 4 weeks of bins, decay 0.5.
        BinParams {
            half_life_secs: WEEK,
            count: 4,
            decay_millionths: 500_000,
        }
    }

    fn key() -> BinKey {
        ("A".to_string(), Some("alice".to_string()))
    }

    fn node_secs(bins: &FluxBins) -> Vec<FrameUsage> {
        bins.bins[&key()].iter().map(|b| b / NS).collect()
    }

    #[test]
    fn jobs_add_to_the_current_bin_and_the_bins_shift_after_a_whole_period_more() {
        // Created at 0: E = 0 + 1 week.
        let mut b = FluxBins::new(WEEK, 0);
        // Job of 128 node-seconds ending at day 1: 1 day - E < 1 week: bin 0.
        assert!(!b.update(86_400, params()));
        b.charge_completed(&key(), 128 * NS, 86_400, params());
        assert_eq!(node_secs(&b), [128, 0, 0, 0]);
        // At 2 weeks exactly, E = 1 week is not below 2 weeks - 1 week: no shift.
        assert!(!b.update(2 * WEEK, params()));
        // A job of 64 ending then: 2 weeks - E = 1 week is not below 1 week:
        // the bins shift (128 -> bin 1 as 64), then bin 0 = 64 + 64 = 128
        // (the whole total: flux-accounting's case 4).
        b.charge_completed(&key(), 64 * NS, 2 * WEEK, params());
        assert_eq!(node_secs(&b), [128, 64, 0, 0]);
        assert_eq!(b.total(&key()) / NS, 192);
        assert_eq!(b.period_end, Some(WEEK));
        // One second later, E = 1 week < 2 weeks + 1 - 1 week: every bin
        // shifts (128 -> 64, 64 -> 32), E moves to 2 weeks.
        assert!(b.update(2 * WEEK + 1, params()));
        assert_eq!(node_secs(&b), [0, 64, 32, 0]);
        assert_eq!(b.period_end, Some(2 * WEEK));
        // A job of 10 ending now is judged in this run, against the E it
        // started with (1 week): 2 weeks + 1 - 1 week is not below a week, so
        // bin 0 = 10 + 64 + 32 = 106.
        b.charge_completed(&key(), 10 * NS, 2 * WEEK + 1, params());
        assert_eq!(node_secs(&b), [106, 64, 32, 0]);
        // A job of 4 at the next time, against E = 2 weeks: bin 0.
        assert!(!b.update(2 * WEEK + 2, params()));
        b.charge_completed(&key(), 4 * NS, 2 * WEEK + 2, params());
        assert_eq!(node_secs(&b), [110, 64, 32, 0]);
    }

    #[test]
    fn a_job_first_in_a_new_period_writes_the_total_into_bin_0() {
        let mut b = FluxBins::new(WEEK, 0);
        b.update(1, params());
        b.charge_completed(&key(), 100 * NS, 1, params());
        // At 3 weeks: E = 1 week < 3 - 1 weeks: the update shifts (100 -> 50
        // in bin 1), E = 2 weeks; the job of 20 ending then: 3 weeks - the
        // update's E (1 week) = 2 weeks, not below 1 week: bin 0 = 20 + 50 = 70.
        assert!(b.update(3 * WEEK, params()));
        b.charge_completed(&key(), 20 * NS, 3 * WEEK, params());
        assert_eq!(node_secs(&b), [70, 50, 0, 0]);
        // Usage 120: 50 is counted twice (bin 1 and within bin 0).
        assert_eq!(b.total(&key()) / NS, 120);
        // A second job of 5 at the same time is in the same run: flux-accounting
        // would have had cur = 20 + 5, bin 0 = 25 + 50 = 75.
        b.charge_completed(&key(), 5 * NS, 3 * WEEK, params());
        assert_eq!(node_secs(&b), [75, 50, 0, 0]);
    }

    #[test]
    fn the_oldest_bin_falls_off_and_one_period_passes_per_update() {
        let mut b = FluxBins::new(WEEK, 0);
        b.update(1, params());
        b.charge_completed(&key(), 1024 * NS, 1, params());
        // Events far apart: each update shifts once and moves E one week.
        // E: 1w -> 2w at 10w, 2w -> 3w at 11w, 3w -> 4w at 12w, 4w -> 5w at 13w.
        let mut seen = Vec::new();
        for week in 10..14 {
            assert!(b.update(week * WEEK, params()));
            seen.push(node_secs(&b));
        }
        assert_eq!(
            seen,
            [
                vec![0, 512, 0, 0],
                vec![0, 0, 256, 0],
                vec![0, 0, 0, 128],
                vec![0, 0, 0, 0],
            ]
        );
        assert_eq!(b.period_end, Some(5 * WEEK));
        // The same time again changes nothing.
        assert!(!b.update(13 * WEEK, params()));
    }

    #[test]
    fn imported_bins_and_a_removed_association_move_whole() {
        let mut b = FluxBins::new(WEEK, 0);
        b.charge_into(&key(), 2, 8 * NS, 4);
        b.charge_into(&key(), 0, 3 * NS, 4);
        assert_eq!(node_secs(&b), [3, 0, 8, 0]);
        let parent = ("A".to_string(), None);
        b.charge_into(&parent, 0, NS, 4);
        b.absorb(&key(), &parent);
        assert!(!b.bins.contains_key(&key()));
        assert_eq!(b.total(&parent) / NS, 12);
    }
}
