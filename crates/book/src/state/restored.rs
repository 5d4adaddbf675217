//! A restored state's values (a snapshot's, decoded without the events'
//! checks) held to the rules those checks apply (`fairflow_ingest::check`):
//! the cluster's and partitions' TRES, billing weights, QOS usage factors,
//! every job's spec and allocation, and Moab's wallclock sums (finite, not
//! negative). A value no event could have set (a NaN count, say, which
//! would make the book unequal to itself) makes the snapshot damaged.
//!
//! The decay frame's half-life is the configuration's, and the settled
//! usage totals at most `usage::MAX_SETTLED_TOTAL` (what the engines sum).
//! Times and the running jobs' accrual, which a restore converts, are
//! checked before it ([`clock`]).

use fairflow_ingest::check::{check_bounded, check_spec, check_tres, check_weights};
use fairflow_model::limits::MAX_USAGE_FACTOR;
use fairflow_model::usage::{FrameUsage, MAX_SETTLED_TOTAL};

use super::State;
use crate::RestoreError;

mod clock;

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
        self.check_restored_totals()
    }

    /// The frame's half-life the configuration's, the settled usage's total
    /// in range.
    fn check_restored_totals(&self) -> Result<(), RestoreError> {
        let half_life_secs = self.config.frame_half_life_secs();
        if self.frame.half_life_secs != half_life_secs {
            return Err(RestoreError::InvalidValue {
                holder: "the decay frame".into(),
                field: "half_life_secs".into(),
                reason: format!(
                    "is {}, but the configuration's is {half_life_secs}",
                    self.frame.half_life_secs
                ),
            });
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
}
