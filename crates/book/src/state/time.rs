//! Time passing in the book's state: moving time forward ([`State::advance_to`]:
//! usage resets whose boundaries pass, the decay frame's re-base, the running
//! jobs' accrual settled at `PriorityCalcPeriod` boundaries), and starting,
//! stopping and restarting running jobs' accrual.

use std::collections::BTreeMap;
use std::sync::Arc;

use fairflow_model::config::UsageModel;
use fairflow_model::reset::{next_reset_after, reset_at_or_before};
use fairflow_model::usage::{fixed_rate, DecayFrame, FrameUsage, OwnUsage};
use fairflow_model::Time;

use super::{accrued_between, Job, JobPhase, RunningIndex, State};
use crate::flux_bins::BinParams;

impl State {
    /// Move time forward to `t`: apply the usage resets whose boundaries pass,
    /// then re-base the frame if it is too far behind. Never moves backwards.
    pub fn advance_to(&mut self, t: Time) {
        if t < self.now {
            return;
        }
        let params = BinParams::of(&self.config);
        if let Some(bins) = &mut self.flux_bins {
            if bins.update(t, params) {
                self.settle_flux_bins();
            }
        }
        if let Some(first) = self.next_reset.filter(|b| *b <= t) {
            let period = self.config.usage_reset_period;
            // The last boundary passed, in closed form (no walk over the gap).
            let boundary = reset_at_or_before(period, t)
                .filter(|b| *b >= first)
                .unwrap_or(first);
            self.reset_usage_at(boundary);
            self.next_reset = next_reset_after(period, boundary);
        }
        if self.frame.needs_rebase(t) {
            self.rebase(DecayFrame::new(self.frame.half_life_secs, t), t);
        }
        self.settle_accrual_to_boundary(t);
        self.now = t;
    }

    /// Move all usage into the frame `next`, keeping every decayed value as of
    /// `t`: settled usage is converted, and running jobs' accrual offsets are
    /// recomputed in the new frame (their accrual start does not move).
    pub(super) fn rebase(&mut self, next: DecayFrame, t: Time) {
        let old = self.frame;
        self.convert_usage(|usage| old.rebased(usage, &next, t));
        self.frame = next;
        self.recompute_rate_offsets();
    }

    /// Convert a state whose usage is in the frame units of snapshot format 2
    /// (`2^-20` TRES-seconds) to this build's (`2^-20 · 5^-6`): every settled
    /// value times `5^6`, exactly, and the running jobs' accrual offsets
    /// recomputed on this build's clock.
    pub(crate) fn convert_binary_frame_units(&mut self) {
        let fives = 5u128.pow(fairflow_model::usage::FRAME_FIVES);
        self.convert_usage(|usage| usage.saturating_mul(fives));
        self.recompute_rate_offsets();
    }

    /// Convert every settled usage value (associations' and Moab's
    /// credentials') with `convert`; the accrual offsets are cleared for the
    /// caller to recompute ([`State::recompute_rate_offsets`]).
    pub(super) fn convert_usage(&mut self, convert: impl Fn(FrameUsage) -> FrameUsage) {
        let own = |usage: &mut OwnUsage| {
            usage.settled = convert(usage.settled);
            usage.rate_offset = 0;
        };
        self.accounts.values_mut().for_each(|a| own(&mut a.usage));
        self.users.values_mut().for_each(|u| own(&mut u.usage));
        self.credential_usage
            .values_mut()
            .for_each(|u| *u = convert(*u));
    }

    /// Recompute every association's `rate_offset` from its running jobs.
    pub(super) fn recompute_rate_offsets(&mut self) {
        let frame = self.frame;
        let mut offsets: BTreeMap<(String, String), u128> = BTreeMap::new();
        for job in self.jobs.values() {
            if let JobPhase::Running { since, rate } = job.phase {
                *offsets
                    .entry((job.account.clone(), job.user.clone()))
                    .or_default() += rate * frame.clock(since);
            }
        }
        self.users.for_each_mut(|key, assoc| {
            assoc.usage.rate_offset = offsets.get(key).copied().unwrap_or(0);
        });
    }

    /// With a `PriorityCalcPeriod`, settle every running job's accrual up to
    /// the latest period boundary `<= t` (accrual becomes visible only there).
    /// Settling is exact at any time: `G` is an integer clock, so the pieces
    /// telescope to the same sum.
    pub(super) fn settle_accrual_to_boundary(&mut self, t: Time) {
        if let Some(boundary) = self.config.calc_period_boundary(t) {
            self.settle_accrual_to(boundary);
        }
    }

    /// Settle every running job's accrual up to `boundary`, in the current frame.
    pub(super) fn settle_accrual_to(&mut self, boundary: Time) {
        if boundary <= self.accrual_settled_to {
            // Every running job started or was settled at or after it.
            return;
        }
        self.accrual_settled_to = boundary;
        let frame = self.frame;
        let mut settled: Vec<((String, String), u128, u128, u128)> = Vec::new();
        if !self.running_index.complete {
            self.running_index = RunningIndex {
                ids: self
                    .jobs
                    .iter()
                    .filter(|(_, job)| matches!(job.phase, JobPhase::Running { .. }))
                    .map(|(id, _)| id.clone())
                    .collect(),
                complete: true,
            };
        }
        let jobs = &mut self.jobs;
        // One pass in id order: jobs no longer running leave the index, the
        // others are settled (one lookup each).
        self.running_index.ids.retain(|id| {
            let Some(job) = jobs.get_mut(id).map(Arc::make_mut) else {
                return false;
            };
            let JobPhase::Running { since, rate } = &mut job.phase else {
                return false;
            };
            if *since < boundary {
                let accrued = frame.accrued(*rate, *since, boundary);
                let offset_change = (*rate * frame.clock(*since), *rate * frame.clock(boundary));
                settled.push((
                    (job.account.clone(), job.user.clone()),
                    accrued,
                    offset_change.0,
                    offset_change.1,
                ));
                *since = boundary;
            }
            true
        });
        for (key, accrued, old_offset, new_offset) in settled {
            let usage = &mut self
                .users
                .get_mut(&key)
                .expect("a running job's association exists")
                .usage;
            usage.settled += accrued;
            usage.rate_offset = usage.rate_offset - old_offset + new_offset;
        }
    }

    /// Zero all usage at `t`; running jobs accrue again from `t`.
    pub(super) fn reset_usage_at(&mut self, t: Time) {
        let next = DecayFrame::new(self.frame.half_life_secs, t);
        let zero = |usage: &mut OwnUsage| {
            usage.settled = 0;
            usage.rate_offset = usage.rate * next.clock(t);
        };
        self.accounts.values_mut().for_each(|a| zero(&mut a.usage));
        self.users.values_mut().for_each(|u| zero(&mut u.usage));
        let running: Vec<String> = self
            .jobs
            .values()
            .filter(|job| matches!(job.phase, JobPhase::Running { .. }))
            .map(|job| job.id.clone())
            .collect();
        for id in running {
            if let Some(Job {
                phase: JobPhase::Running { since, .. },
                ..
            }) = self.job_mut(&id)
            {
                *since = t;
            }
        }
        self.credential_usage.clear();
        self.last_reset_at = Some(t);
        self.frame = next;
        if let Some(bins) = &mut self.flux_bins {
            bins.bins.clear();
        }
    }

    /// Every running job accrues from `t` at the rate of the usage model in
    /// force (none under `UsageModel=flux`), and each association's rate and
    /// offset follow.
    pub(super) fn restart_running_accrual(&mut self, t: Time) {
        let flux = self.config.usage_model == UsageModel::Flux;
        let rates: Vec<(String, u128)> = self
            .jobs
            .values()
            .filter(|job| matches!(job.phase, JobPhase::Running { .. }))
            .map(|job| {
                let rate = if flux {
                    0
                } else {
                    let allocated = job.allocated.clone().unwrap_or_default();
                    fixed_rate(self.billable_rate(&job.spec, &allocated))
                };
                (job.id.clone(), rate)
            })
            .collect();
        let mut per_assoc: BTreeMap<(String, String), u128> = BTreeMap::new();
        for (id, rate) in rates {
            let job = self.job_mut(&id).expect("listed above");
            job.phase = JobPhase::Running { since: t, rate };
            *per_assoc
                .entry((job.account.clone(), job.user.clone()))
                .or_default() += rate;
        }
        self.users.for_each_mut(|key, assoc| {
            assoc.usage.rate = per_assoc.get(key).copied().unwrap_or(0);
        });
        self.accrual_settled_to = self.accrual_settled_to.max(t);
        self.recompute_rate_offsets();
    }

    /// Stop `job`'s accrual at `t` (it is running: the check of the `end`
    /// or `requeue` found it so), settling what it accrued.
    pub(super) fn stop_accrual(&mut self, job: &Job, t: Time) {
        let JobPhase::Running { since, rate } = job.phase else {
            return;
        };
        let frame = self.frame;
        if let Some(usage) = self.own_usage_mut(&job.account, Some(&job.user)) {
            usage.settled += frame.accrued(rate, since, t);
            usage.rate -= rate;
            usage.rate_offset -= rate * frame.clock(since);
        }
        let from = job
            .started_at
            .unwrap_or(t)
            .max(self.last_reset_at.unwrap_or(Time::MIN));
        let accrued = accrued_between(&frame, rate, from, t);
        for credential in job.extra_credentials() {
            *self
                .credential_usage
                .get_or_insert_with(credential, FrameUsage::default) += accrued;
        }
    }
}
