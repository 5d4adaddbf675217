//! A restored state's values (a snapshot's, decoded without the events'
//! checks) held to the rules those checks apply (`fairflow_ingest::check`):
//! the cluster's and partitions' TRES, billing weights, QOS usage factors,
//! every job's spec and allocation, and Moab's wallclock sums (finite, not
//! negative). A value no event could have set (a NaN count, say, which
//! would make the book unequal to itself) makes the snapshot damaged.

use fairflow_ingest::check::{check_bounded, check_spec, check_tres, check_weights};
use fairflow_model::limits::MAX_USAGE_FACTOR;

use super::State;
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
        Ok(())
    }
}
