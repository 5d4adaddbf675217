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
                    .or_default() += rate * frame.clock(self.accrual_since(since));
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

    /// Settle every running job's accrual up to `boundary`, in the current
    /// frame.
    ///
    /// When no running job's accrual started after `boundary` (always, but
    /// after a configuration change shortened the period or a reset within
    /// the same move of time), each association is
    /// settled whole: its jobs accrued `Σ rate·(G(b) − G(since))`, which is
    /// `rate·G(b) − rate_offset` of its own sums, exactly; the jobs are not
    /// visited and keep their `since` (their accrual counts from
    /// [`State::accrual_since`], the later of `since` and this boundary).
    /// Visiting each of 10,000 running jobs among a million, by name in the
    /// shared job map, was most of a boundary's settlement in the book.
    pub(super) fn settle_accrual_to(&mut self, boundary: Time) {
        if boundary <= self.accrual_settled_to {
            // Every running job's accrual is settled to it already.
            return;
        }
        // Every running job's `since` is at or before the state's time or
        // the last reset (which restarts them all at its boundary).
        let latest_since = self.last_reset_at.map_or(self.now, |r| r.max(self.now));
        if boundary < latest_since {
            self.settle_jobs_to(boundary);
            return;
        }
        self.accrual_settled_to = boundary;
        let clock = self.frame.clock(boundary);
        for assoc in self.users.values_mut() {
            let usage = &mut assoc.usage;
            if usage.rate > 0 {
                let offset = usage.rate * clock;
                usage.settled += offset - usage.rate_offset;
                usage.rate_offset = offset;
            }
        }
    }

    /// [`State::settle_accrual_to`] job by job, for a `boundary` before the
    /// state's time: jobs that started after it are left as they are.
    fn settle_jobs_to(&mut self, boundary: Time) {
        let settled_to = self.accrual_settled_to;
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
            let from = (*since).max(settled_to);
            if from < boundary {
                let accrued = frame.accrued(*rate, from, boundary);
                let offset_change = (*rate * frame.clock(from), *rate * frame.clock(boundary));
                settled.push((
                    (job.account.clone(), job.user.clone()),
                    accrued,
                    offset_change.0,
                    offset_change.1,
                ));
            }
            // Its accrual counts from here on: the boundary, or its start.
            *since = from.max(boundary);
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

    /// Where a running job's unsettled accrual starts: its `since`, or the
    /// last settlement if later ([`State::settle_accrual_to`] settles whole
    /// associations without moving their jobs' `since`).
    pub fn accrual_since(&self, since: Time) -> Time {
        since.max(self.accrual_settled_to)
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
        let since = self.accrual_since(since);
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

#[cfg(test)]
mod tests {
    use crate::state::tests::{replay, user_usage_tres_secs, SETUP};

    /// `SETUP` (job 1: 4 CPUs from 1010, no decay) with a one-minute
    /// `PriorityCalcPeriod` from 900, then `events`.
    fn with_period(events: &str) -> String {
        format!(
            "{}\n{SETUP}{events}",
            r#"{"op":"config","t":900,"set":{"PriorityCalcPeriod":"1:00"}}"#
        )
    }

    #[test]
    fn a_shortened_period_settles_only_the_jobs_started_before_its_boundary() {
        // Settled to 1140 by the tick at 1190 (4 CPUs x 130 s = 520). Job 2
        // (2 CPUs) starts at 1192; at 1195 the period becomes 7 s. The next
        // event at 1195 settles to 1190 (the last multiple of 7), which is
        // before the state's time: job 1 gains 4 x 50 = 200, job 2 nothing.
        let log = with_period(
            r#"{"op":"tick","t":1190}
{"op":"submit","t":1190,"job":"2","user":"u","account":"root","tres":{"cpu":2}}
{"op":"start","t":1192,"job":"2"}
{"op":"config","t":1195,"set":{"PriorityCalcPeriod":"0:07"}}
{"op":"tick","t":1195}
"#,
        );
        let r = replay(&log);
        assert_eq!(user_usage_tres_secs(&r.state, "root", "u"), 720.0);
        // At 1197 (a boundary): job 1 4 x 7 = 28, job 2 2 x 5 = 10.
        let log = format!("{log}{{\"op\":\"tick\",\"t\":1197}}\n");
        assert_eq!(
            user_usage_tres_secs(&replay(&log).state, "root", "u"),
            758.0
        );
        // Both end at 1200: 4 x 3 + 2 x 3 more, all settled, nothing running.
        let log = format!(
            "{log}{}",
            r#"{"op":"end","t":1200,"job":"1"}
{"op":"end","t":1200,"job":"2"}
"#
        );
        let r = replay(&log);
        assert_eq!(user_usage_tres_secs(&r.state, "root", "u"), 776.0);
        let own = r.state.users[&("root".to_string(), "u".to_string())].usage;
        assert_eq!((own.rate, own.rate_offset), (0, 0));
    }

    #[test]
    fn a_reset_after_the_period_boundary_in_the_same_move_leaves_nothing_accrued() {
        // Daily resets (midnight, 86,400), a 7 s period and the default
        // 7-day half-life: moving to 86,400 resets there (a new decay frame
        // from 86,400), and the period's last boundary (86,394) comes before
        // the reset, when every running job restarted: nothing is settled
        // (settled whole, its clock before the reset's would be negative).
        let log = r#"{"op":"config","t":900,"set":{"PriorityCalcPeriod":"0:07","PriorityUsageResetPeriod":"DAILY"}}
{"op":"user","t":1000,"user":"u","account":"root"}
{"op":"submit","t":1000,"job":"1","user":"u","account":"root","tres":{"cpu":4}}
{"op":"start","t":1010,"job":"1"}
{"op":"tick","t":86400}
"#;
        assert_eq!(user_usage_tres_secs(&replay(log).state, "root", "u"), 0.0);
        // 86,407 settles to 86,401; the end at 86,410 settles the rest: 4
        // CPUs x 10 s since the reset, decayed by at most 10 s of 7 days.
        let log = format!(
            "{log}{}",
            r#"{"op":"tick","t":86407}
{"op":"end","t":86410,"job":"1"}
"#
        );
        let usage = user_usage_tres_secs(&replay(&log).state, "root", "u");
        assert!((39.99..=40.0).contains(&usage), "{usage}");
    }
}
