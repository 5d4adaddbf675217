//! A restored state's values (a snapshot's, decoded without the events'
//! checks) held to the rules those checks apply (`fairflow_ingest::check`):
//! the cluster's and partitions' TRES, billing weights, QOS usage factors,
//! every job's spec and allocation, and Moab's wallclock sums (finite, not
//! negative). A value no event could have set (a NaN count, say, which
//! would make the book unequal to itself) makes the snapshot damaged.
//!
//! Usage is held to what the running jobs and the engines' range allow
//! ([`State::check_restored_usage`]): an association's accrual rate and
//! offset are sums over its running jobs, which the snapshot also holds, so
//! they must be those sums (a later `end` subtracts a job's rate from them);
//! no job accrues above `usage::MAX_FIXED_RATE` or from after the state's
//! time; the settled usage totals at most `usage::MAX_SETTLED_TOTAL`.

use fairflow_ingest::check::{check_bounded, check_spec, check_tres, check_weights};
use std::collections::BTreeMap;

use fairflow_model::limits::MAX_USAGE_FACTOR;
use fairflow_model::usage::{FrameUsage, OwnUsage, MAX_FIXED_RATE, MAX_SETTLED_TOTAL};

use super::{JobPhase, State};
use crate::RestoreError;

impl State {
    /// The first value out of its rule, named by where it is held.
    pub(crate) fn check_restored_values(&self) -> Result<(), RestoreError> {
        let invalid = |holder: String| {
            move |(field, reason): (String, String)| RestoreError::InvalidValue {
                holder,
                field,
                reason,
            }
        };
        check_tres("tres", &self.cluster.tres).map_err(invalid("the cluster".into()))?;
        for (name, partition) in &self.partitions {
            let holder = || format!("partition `{name}`");
            if let Some(tres) = &partition.tres {
                check_tres("tres", tres).map_err(invalid(holder()))?;
            }
            check_weights(&partition.billing_weights).map_err(invalid(holder()))?;
        }
        for (name, qos) in &self.qos {
            check_bounded("usage_factor", qos.usage_factor, MAX_USAGE_FACTOR)
                .map_err(invalid(format!("QOS `{name}`")))?;
        }
        for (id, job) in self.jobs.iter() {
            let holder = || format!("job `{id}`");
            check_spec(&job.spec).map_err(invalid(holder()))?;
            if let Some(allocated) = &job.allocated {
                check_tres("allocated", allocated).map_err(invalid(holder()))?;
            }
        }
        for (user, &(used, requested)) in &self.wallclock_accuracy {
            for (field, cpu_secs) in [("used_cpu_secs", used), ("requested_cpu_secs", requested)] {
                check_bounded(field, cpu_secs, f64::MAX)
                    .map_err(invalid(format!("the wallclock accuracy of `{user}`")))?;
            }
        }
        self.check_restored_usage()
    }

    /// Every association's accrual equal to its running jobs' sums, each
    /// job's rate and start in range, the settled total in range.
    fn check_restored_usage(&self) -> Result<(), RestoreError> {
        let running = self.running_sums()?;
        for ((account, user), assoc) in &self.users {
            let sums = running
                .get(&(account.as_str(), user.as_str()))
                .copied()
                .unwrap_or((0, 0));
            let holder = || format!("association `{account}`/`{user}`");
            check_accrual(&assoc.usage, sums).map_err(|(field, reason)| {
                RestoreError::InvalidValue {
                    holder: holder(),
                    field,
                    reason,
                }
            })?;
        }
        for (name, account) in &self.accounts {
            check_accrual(&account.usage, (0, 0)).map_err(|(field, reason)| {
                RestoreError::InvalidValue {
                    holder: format!("account `{name}`"),
                    field,
                    reason,
                }
            })?;
        }
        let settled = (self.accounts.values().map(|a| a.usage.settled))
            .chain(self.users.values().map(|u| u.usage.settled))
            .chain(self.credential_usage.values().copied())
            .try_fold(0 as FrameUsage, |total, usage| total.checked_add(usage))
            .filter(|total| *total <= MAX_SETTLED_TOTAL);
        if settled.is_none() {
            return Err(RestoreError::InvalidValue {
                holder: "the state".into(),
                field: "usage".into(),
                reason: format!(
                    "the settled usage of every association and credential totals more than \
                     {MAX_SETTLED_TOTAL} frame units, beyond what the engines sum"
                ),
            });
        }
        Ok(())
    }

    /// Per user association, its running jobs' `(rate, rate · G(since))`
    /// sums; a job whose rate or start no event could have set is an error.
    fn running_sums(&self) -> Result<AccrualSums<'_>, RestoreError> {
        let mut sums = AccrualSums::new();
        for (id, job) in self.jobs.iter() {
            let JobPhase::Running { since, rate } = job.phase else {
                continue;
            };
            let invalid = |field: &str, reason: String| RestoreError::InvalidValue {
                holder: format!("job `{id}`"),
                field: field.into(),
                reason,
            };
            if rate > MAX_FIXED_RATE {
                return Err(invalid(
                    "rate",
                    format!("{rate} is above the largest fixed-point rate {MAX_FIXED_RATE}"),
                ));
            }
            if since > self.now {
                return Err(invalid(
                    "since",
                    format!("{since} is after the state's time {}", self.now),
                ));
            }
            let sum = sums.entry((&job.account, &job.user)).or_default();
            let offset = rate.checked_mul(self.frame.clock(since));
            match (
                sum.0.checked_add(rate),
                offset.and_then(|o| sum.1.checked_add(o)),
            ) {
                (Some(rates), Some(offsets)) => *sum = (rates, offsets),
                _ => {
                    return Err(invalid(
                        "rate",
                        "its association's running jobs' rates sum past 2^128".into(),
                    ))
                }
            }
        }
        Ok(sums)
    }
}

/// Per user association `(account, user)`, its running jobs' summed
/// fixed-point rates and summed `rate · G(since)` offsets.
type AccrualSums<'a> = BTreeMap<(&'a str, &'a str), (u128, u128)>;

/// `usage`'s accrual rate and offset against the running jobs' `sums`: the
/// field that differs and why.
fn check_accrual(usage: &OwnUsage, sums: (u128, u128)) -> Result<(), (String, String)> {
    for (field, held, expected) in [
        ("usage.rate", usage.rate, sums.0),
        ("usage.rate_offset", usage.rate_offset, sums.1),
    ] {
        if held != expected {
            return Err((
                field.into(),
                format!("is {held}, but its running jobs' sum is {expected}"),
            ));
        }
    }
    Ok(())
}
