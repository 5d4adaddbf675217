//! [`State::apply`] for the jobs' lifecycle: submit, update, hold,
//! release, cancel, start, end and requeue. Every event has passed
//! [`crate::Book::check`], so the job it names exists in the phase the
//! event needs; each effect changes the job where it is found (one lookup,
//! no second guess: a job that is not there has nothing to change).

use std::sync::Arc;

use fairflow_model::event::Op;
use fairflow_model::tres::TresCounts;
use fairflow_model::usage::fixed_rate;
use fairflow_model::Time;

use super::{Job, JobPhase, State};

impl State {
    /// The jobs' events. (Other events are another family's:
    /// [`State::apply`] routes them.)
    pub(super) fn apply_job_event(&mut self, op: &Op, t: Time) {
        match op {
            Op::Submit {
                job,
                user,
                account,
                spec,
                submitted,
            } => {
                let submit_at = submitted.unwrap_or(t);
                self.jobs.insert(
                    job.clone(),
                    Arc::new(Job {
                        id: job.clone(),
                        user: user.clone(),
                        account: account.clone(),
                        spec: spec.clone(),
                        submit_at,
                        queued_at: submit_at,
                        allocated: None,
                        phase: JobPhase::Pending,
                        start_count: 0,
                        started_at: None,
                        held_spans: Vec::new(),
                        held_since: None,
                    }),
                );
                self.priority_floor.remove(job);
                self.pair_floor.remove(job);
                self.order_partitions(job);
            }
            Op::Update { job, account, spec } => {
                if let Some(entry) = self.job_mut(job) {
                    entry.spec.apply(spec);
                    if let Some(account) = account {
                        entry.account = account.clone();
                    }
                }
                self.order_partitions(job);
            }
            Op::Hold { job } => {
                if let Some(entry) = self.job_mut(job) {
                    entry.phase = JobPhase::Held;
                    entry.held_since = Some(t);
                }
            }
            Op::Release { job } => {
                if let Some(entry) = self.job_mut(job) {
                    entry.phase = JobPhase::Pending;
                    if let Some(held_at) = entry.held_since.take() {
                        entry.held_spans.push((held_at, t));
                    }
                }
            }
            Op::Cancel { job } => {
                self.jobs.remove(job);
                self.expedited.remove(job);
            }
            Op::Start { job, tres } => self.start_job(job, tres.as_ref(), t),
            Op::End { job } => self.end_job(job, t),
            Op::Requeue { job, expedite } => {
                if *expedite {
                    self.expedited.insert(job.clone());
                }
                self.requeue_job(job, t);
            }
            _ => {}
        }
    }

    /// Start a job at `t` with `tres` allocated (its asked TRES if none):
    /// its association accrues its rate from `t`.
    fn start_job(&mut self, job: &str, tres: Option<&TresCounts>, t: Time) {
        let Some(entry) = self.jobs.get(job) else {
            return;
        };
        let allocated = tres
            .cloned()
            .or_else(|| entry.spec.tres.clone())
            .unwrap_or_default();
        // Under `UsageModel=flux` a job charges nothing while it runs:
        // its whole usage counts when it ends (`charge_flux_job`).
        let rate = if self.flux_bins.is_some() {
            0
        } else {
            fixed_rate(self.billable_rate(&entry.spec, &allocated))
        };
        let (account, user) = (entry.account.clone(), entry.user.clone());
        let clock = self.frame.clock(t);
        if let Some(usage) = self.own_usage_mut(&account, Some(&user)) {
            usage.rate += rate;
            usage.rate_offset += rate * clock;
        }
        let Some(entry) = self.jobs.get_mut(job).map(Arc::make_mut) else {
            return;
        };
        entry.phase = JobPhase::Running { since: t, rate };
        entry.allocated = Some(allocated);
        if self.running_index.complete {
            self.running_index.ids.insert(job.to_string());
        }
        entry.start_count += 1;
        entry.started_at = Some(t);
        self.priority_floor.remove(job);
        self.pair_floor.remove(job);
        // Slurm clears `JOB_EXPEDITING` when the job launches again.
        self.expedited.remove(job);
    }

    /// End a job at `t`: its accrual settled (or, under `UsageModel=flux`,
    /// its whole usage charged), its wallclock accuracy counted, and it goes.
    fn end_job(&mut self, job: &str, t: Time) {
        self.expedited.remove(job);
        let Some(ended) = self.jobs.remove(job) else {
            return;
        };
        self.charge_flux_job(&ended, t);
        self.stop_accrual(&ended, t);
        if let (Some(started_at), Some(limit_secs)) = (ended.started_at, ended.spec.time_limit_secs)
        {
            let cpus = ended
                .allocated
                .as_ref()
                .and_then(|a| a.get("cpu").copied())
                .unwrap_or(1.0);
            let entry = self
                .wallclock_accuracy
                .entry(ended.user.clone())
                .or_default();
            entry.0 += cpus * (t - started_at) as f64;
            entry.1 += cpus * limit_secs as f64;
        }
    }

    /// Requeue a job at `t`: its accrual settled, pending again from `t`
    /// (after `requeue_delay_secs` if set), its holds forgotten.
    fn requeue_job(&mut self, job: &str, t: Time) {
        let Some(running) = self.jobs.get(job).cloned() else {
            return;
        };
        self.charge_flux_job(&running, t);
        self.stop_accrual(&running, t);
        // Unshared again, the job changes in place.
        drop(running);
        let Some(entry) = self.jobs.get_mut(job).map(Arc::make_mut) else {
            return;
        };
        entry.phase = JobPhase::Pending;
        entry.queued_at = t;
        if let Some(delay) = self.config.requeue_delay_secs {
            entry.spec.begin =
                fairflow_model::priority_formula::slurm_requeue_begin(entry.spec.begin, t, delay);
        }
        // A new stay in the queue: earlier holds are before it.
        entry.held_spans.clear();
        entry.held_since = None;
        self.order_partitions(job);
    }
}
