//! A restored state's times and running jobs' accrual, checked before the
//! restore converts anything (format 2's frame units, format 5's flux bins),
//! since the conversions compute with them:
//! - every time is one an event could carry (`0..=limits::MAX_TIME`) and
//!   none is after the state's: the decay frame's epoch, the last reset, the
//!   last settlement, every job's submit, queue entry, start, hold and
//!   accrual start; the next reset is after it; the frame's half-life is a
//!   duration an event could set;
//! - no job accrues above `usage::MAX_FIXED_RATE`;
//! - an association's accrual rate (and offset, when held in this build's
//!   clock units) is the sum over its running jobs, which the snapshot also
//!   holds: a later `end` subtracts a job's rate and offset from them.

use std::collections::BTreeMap;

use fairflow_model::limits::{time_in_range, MAX_DURATION_SECS};
use fairflow_model::usage::{OwnUsage, MAX_FIXED_RATE};
use fairflow_model::Time;

use super::super::{Job, JobPhase, State};
use crate::RestoreError;

/// Per user association `(account, user)`, its running jobs' summed
/// fixed-point rates and summed `rate · G(since)` offsets.
type AccrualSums<'a> = BTreeMap<(&'a str, &'a str), (u128, u128)>;

/// A field of `holder` out of its rule, and why.
fn invalid(holder: impl Into<String>, field: &str, reason: String) -> RestoreError {
    RestoreError::InvalidValue {
        holder: holder.into(),
        field: field.into(),
        reason,
    }
}

impl State {
    /// The first time out of its rule (see the module documentation).
    pub(crate) fn check_restored_times(&self) -> Result<(), RestoreError> {
        let now = self.now;
        if !time_in_range(now) {
            return Err(invalid("the state", "now", out_of_range(now)));
        }
        let not_after_now = |holder: &str, field: &str, t: Time| {
            if !time_in_range(t) {
                Err(invalid(holder, field, out_of_range(t)))
            } else if t > now {
                Err(invalid(
                    holder,
                    field,
                    format!("{t} is after the state's time {now}"),
                ))
            } else {
                Ok(())
            }
        };
        not_after_now("the decay frame", "epoch", self.frame.epoch)?;
        let half_life_secs = self.frame.half_life_secs;
        if !(0..=MAX_DURATION_SECS as i64).contains(&half_life_secs) {
            return Err(invalid(
                "the decay frame",
                "half_life_secs",
                format!("{half_life_secs} is not a duration from 0 to {MAX_DURATION_SECS} s"),
            ));
        }
        if let Some(t) = self.last_reset_at {
            not_after_now("the state", "last_reset_at", t)?;
        }
        if self.accrual_settled_to != Time::MIN {
            not_after_now("the state", "accrual_settled_to", self.accrual_settled_to)?;
        }
        if let Some(t) = self.next_reset.filter(|t| *t <= now) {
            return Err(invalid(
                "the state",
                "next_reset",
                format!("{t} is not after the state's time {now}"),
            ));
        }
        for (id, job) in self.jobs.iter() {
            check_job_times(job, &|field, t| {
                not_after_now(&format!("job `{id}`"), field, t)
            })?;
        }
        Ok(())
    }

    /// Every association's accrual rate equal to its running jobs' sum, and
    /// its offset too when `offsets_held` (a format-2 snapshot's offsets are
    /// in another clock's units: the restore recomputes them).
    pub(crate) fn check_restored_accrual(&self, offsets_held: bool) -> Result<(), RestoreError> {
        let running = self.running_sums()?;
        let check = |holder: String, usage: &OwnUsage, sums: (u128, u128)| {
            let fields = [
                ("usage.rate", usage.rate, sums.0),
                ("usage.rate_offset", usage.rate_offset, sums.1),
            ];
            let checked = if offsets_held { 2 } else { 1 };
            match fields[..checked].iter().find(|(_, held, sum)| held != sum) {
                Some((field, held, sum)) => Err(invalid(
                    holder,
                    field,
                    format!("is {held}, but its running jobs' sum is {sum}"),
                )),
                None => Ok(()),
            }
        };
        for ((account, user), assoc) in &self.users {
            let sums = running
                .get(&(account.as_str(), user.as_str()))
                .copied()
                .unwrap_or((0, 0));
            check(
                format!("association `{account}`/`{user}`"),
                &assoc.usage,
                sums,
            )?;
        }
        for (name, account) in &self.accounts {
            check(format!("account `{name}`"), &account.usage, (0, 0))?;
        }
        Ok(())
    }

    /// Per user association, its running jobs' `(rate, rate · G(since))`
    /// sums; a rate above the largest is an error.
    fn running_sums(&self) -> Result<AccrualSums<'_>, RestoreError> {
        let mut sums = AccrualSums::new();
        for (id, job) in self.jobs.iter() {
            let JobPhase::Running { since, rate } = job.phase else {
                continue;
            };
            if rate > MAX_FIXED_RATE {
                return Err(invalid(
                    format!("job `{id}`"),
                    "rate",
                    format!("{rate} is above the largest fixed-point rate {MAX_FIXED_RATE}"),
                ));
            }
            let sum = sums.entry((&job.account, &job.user)).or_default();
            let offset = rate.checked_mul(self.frame.clock(self.accrual_since(since)));
            match (
                sum.0.checked_add(rate),
                offset.and_then(|o| sum.1.checked_add(o)),
            ) {
                (Some(rates), Some(offsets)) => *sum = (rates, offsets),
                _ => {
                    return Err(invalid(
                        format!("job `{id}`"),
                        "rate",
                        "its association's running jobs' rates sum past 2^128".into(),
                    ))
                }
            }
        }
        Ok(sums)
    }
}

/// A job's times, each through `check` (a time in range and not after the
/// state's); a hold span must end after it begins.
fn check_job_times(
    job: &Job,
    check: &dyn Fn(&str, Time) -> Result<(), RestoreError>,
) -> Result<(), RestoreError> {
    check("submit_at", job.submit_at)?;
    check("queued_at", job.queued_at)?;
    if let Some(t) = job.started_at {
        check("started_at", t)?;
    }
    if let Some(t) = job.held_since {
        check("held_since", t)?;
    }
    for &(held_at, released_at) in &job.held_spans {
        check("held_spans", held_at)?;
        check("held_spans", released_at)?;
        if released_at < held_at {
            return Err(invalid(
                format!("job `{}`", job.id),
                "held_spans",
                format!("a span released at {released_at} before it was held at {held_at}"),
            ));
        }
    }
    if let JobPhase::Running { since, .. } = job.phase {
        check("since", since)?;
    }
    Ok(())
}

/// Why `t` is no event's time.
fn out_of_range(t: Time) -> String {
    format!(
        "{t} is not a time from 0 to {}",
        fairflow_model::limits::MAX_TIME
    )
}
