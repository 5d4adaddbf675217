//! `UsageModel=flux` in the book's state: flux-accounting's usage bins
//! charged as jobs complete, settled into each association's usage, entered
//! and left when the usage model changes, and reconfigured by `config`
//! events.

use fairflow_model::tres::TresCounts;
use fairflow_model::usage::{DecayFrame, FrameUsage};
use fairflow_model::Time;

use super::{Job, State};
use crate::flux_bins::{BinKey, BinParams, FluxBins};

impl State {
    /// Set every association's settled usage to the sum of its bins (under
    /// `UsageModel=flux`).
    pub(super) fn settle_flux_bins(&mut self) {
        let Some(bins) = &self.flux_bins else {
            return;
        };
        self.accounts.for_each_mut(|name, account| {
            account.usage.settled = bins.total(&(name.clone(), None));
        });
        self.users.for_each_mut(|(account, user), assoc| {
            assoc.usage.settled = bins.total(&(account.clone(), Some(user.clone())));
        });
    }

    /// Charge `usage` (frame units) to an association under
    /// `UsageModel=flux`, as a job completing at `t` (flux-accounting's
    /// update), or into bin `period` as it is.
    pub(super) fn charge_flux(
        &mut self,
        key: BinKey,
        usage: FrameUsage,
        t: Time,
        period: Option<u32>,
    ) {
        let params = BinParams::of(&self.config);
        let bins = self.flux_bins.as_mut().expect("UsageModel=flux");
        match period {
            Some(period) => bins.charge_into(&key, period as usize, usage, params.count),
            None => bins.charge_completed(&key, usage, t, params),
        }
        let total = bins.total(&key);
        if let Some(usage) = self.own_usage_mut(&key.0, key.1.as_deref()) {
            usage.settled = total;
        }
    }

    /// A job's usage ending at `t` as flux-accounting counts it: its weighted
    /// rate times its run (from its start, or from when `UsageModel=flux` came
    /// into force if later), rounded to five decimals.
    pub(super) fn flux_job_usage(&self, job: &Job, t: Time) -> FrameUsage {
        let since = self.flux_bins.as_ref().map_or(Time::MIN, |b| b.since);
        let from = job.started_at.unwrap_or(t).max(since);
        let rate = self.billable_rate(
            &job.spec,
            job.allocated.as_ref().unwrap_or(&TresCounts::default()),
        );
        fairflow_model::usage::flux_job_usage(rate * (t - from).max(0) as f64)
    }

    /// Bring `UsageModel=flux` into force at `t` (a `config` event, or a
    /// snapshot of an older format restored): what running jobs accrued so
    /// far is settled, usage is kept as of `t` without continuous decay, each
    /// association's usage becomes its bin 0, and running jobs stop accruing
    /// (their usage counts when they end, from `t`).
    pub(crate) fn enter_flux_usage(&mut self, t: Time) {
        self.settle_accrual_to(t);
        let old = self.frame;
        let next = DecayFrame::new(0, t);
        self.convert_usage(|usage| old.rebased(usage, &next, t));
        self.frame = next;
        let period_end = self
            .config
            .flux_bins
            .period_end
            .unwrap_or(t + self.config.decay_half_life_secs);
        let mut bins = FluxBins::new(period_end, t);
        let count = BinParams::of(&self.config).count;
        let own = self
            .accounts
            .iter()
            .map(|(name, a)| ((name.clone(), None), a.usage.settled))
            .chain(
                self.users
                    .iter()
                    .map(|((a, u), assoc)| ((a.clone(), Some(u.clone())), assoc.usage.settled)),
            );
        for (key, usage) in own.filter(|(_, usage)| *usage > 0) {
            bins.charge_into(&key, 0, usage, count);
        }
        self.flux_bins = Some(bins);
        self.restart_running_accrual(t);
    }

    /// Leave `UsageModel=flux` at `t`: the bins go (each association keeps
    /// their sum), usage decays continuously again from `t`, and running jobs
    /// accrue at Slurm's rate from `t`.
    pub(super) fn leave_flux_usage(&mut self, t: Time) {
        self.flux_bins = None;
        let old = self.frame;
        let next = DecayFrame::new(self.config.frame_half_life_secs(), t);
        self.convert_usage(|usage| old.rebased(usage, &next, t));
        self.frame = next;
        self.restart_running_accrual(t);
    }

    /// A `config` event under `UsageModel=flux`: a new half-life, span or
    /// decay factor empties every bin (flux-accounting's `edit-config`
    /// clears the bins); `FluxHalfLifePeriodEnd` restarts the period clock.
    pub(super) fn reconfigure_flux_bins(
        &mut self,
        t: Time,
        period_end_given: bool,
        (old_params, old_bins): (BinParams, fairflow_model::config::FluxUsageBins),
    ) {
        let params = BinParams::of(&self.config);
        let bins = self.flux_bins.as_mut().expect("UsageModel=flux");
        if params != old_params
            || self.config.flux_bins.reset_period_secs != old_bins.reset_period_secs
        {
            bins.bins.clear();
        }
        if period_end_given {
            bins.period_end = self.config.flux_bins.period_end;
            // The clock restarts: the next update reads it afresh.
            bins.updated_at = None;
            let _ = bins.update(t, params);
        }
        self.settle_flux_bins();
    }

    /// Under `UsageModel=flux`, charge a running job's whole usage as it ends
    /// (or is requeued) at `t`.
    pub(super) fn charge_flux_job(&mut self, job: &Job, t: Time) {
        if self.flux_bins.is_some() {
            let usage = self.flux_job_usage(job, t);
            let key = (job.account.clone(), Some(job.user.clone()));
            self.charge_flux(key, usage, t, None);
        }
    }
}
