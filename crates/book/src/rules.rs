//! The per-job and per-credential rules both engines apply to the book's
//! state (the incremental dataflow and the oracle call these; each engine
//! keeps only its own aggregation): Moab's credential usage, the highest
//! QOS priority Slurm and Flux normalise by, and a listed Slurm job's
//! priority as listed (0 while held, the `INCR_ONLY` floors).

use fairflow_model::job_priority::priority_as_listed;
use fairflow_model::moab::{Credential, CredentialUsage};
use fairflow_model::report::JobState;
use fairflow_model::usage::FrameUsage;
use fairflow_model::Time;

use crate::state::{accrued_between, JobPhase, State};

impl State {
    /// Moab's credential usage at `now`, frame units: each credential's
    /// share of the associations' visible usage (an association's counts for
    /// its account and its user), the settled group/QOS/class usage, and
    /// running jobs' accrual so far (to the last calc-period boundary, with
    /// one) for their extra credentials; the total is over associations.
    pub fn moab_credential_usage(&self) -> CredentialUsage {
        let mut out = CredentialUsage::default();
        let mut add = |credential: (Credential, &str), usage: FrameUsage| {
            *out.by_credential
                .entry((credential.0, credential.1.to_string()))
                .or_default() += usage;
        };
        let mut total: FrameUsage = 0;
        for (name, account) in &self.accounts {
            let usage = self.visible_usage(&account.usage);
            add((Credential::Account, name), usage);
            total += usage;
        }
        for ((account, user), assoc) in &self.users {
            let usage = self.visible_usage(&assoc.usage);
            add((Credential::Account, account), usage);
            add((Credential::User, user), usage);
            total += usage;
        }
        for ((kind, name), usage) in &self.credential_usage {
            add((*kind, name), *usage);
        }
        let visible_to: Time = self
            .config
            .calc_period_boundary(self.now)
            .unwrap_or(self.now);
        for job in self.jobs.values() {
            if let JobPhase::Running { rate, .. } = job.phase {
                let from = job
                    .started_at
                    .unwrap_or(self.now)
                    .max(self.last_reset_at.unwrap_or(Time::MIN));
                let accrued = accrued_between(&self.frame, rate, from, visible_to);
                for (kind, name) in job.extra_credentials() {
                    add((kind, &name), accrued);
                }
            }
        }
        out.total = total;
        out
    }

    /// The highest priority of the defined QOS, at least 0: the divisor of
    /// Slurm's and Flux's QOS factor.
    pub fn max_qos_priority(&self) -> i64 {
        self.qos.values().map(|q| q.priority).fold(0, i64::max)
    }

    /// A listed Slurm job's priority as listed, from its `computed` one: 0
    /// while held; under `INCR_ONLY` a pending job's is at least its
    /// remembered floor; else `computed`.
    pub fn slurm_job_priority_as_listed(&self, job: &str, state: JobState, computed: u64) -> u64 {
        self.slurm_as_listed(state, computed, || {
            self.priority_floor
                .get(job)
                .map_or(computed, |floor| computed.max(*floor))
        })
    }

    /// The priority of pair `index` (of `pairs`) of a listed Slurm job as
    /// listed, from its `computed` one: 0 while held; under `INCR_ONLY` a
    /// pending job's pair is floored by the pair's remembered floor
    /// ([`State::pair_priority_with_floor`]); else `computed`.
    pub fn slurm_pair_priority_as_listed(
        &self,
        job: &str,
        state: JobState,
        (index, pairs): (usize, usize),
        computed: u64,
    ) -> u64 {
        self.slurm_as_listed(state, computed, || {
            self.pair_priority_with_floor(job, index, pairs, computed)
        })
    }

    /// Slurm's rule for a listed priority under this book's flags
    /// ([`priority_as_listed`]): held 0, pending under `INCR_ONLY`
    /// `floored()`, else `computed`.
    fn slurm_as_listed(
        &self,
        state: JobState,
        computed: u64,
        floored: impl FnOnce() -> u64,
    ) -> u64 {
        priority_as_listed(state, self.config.flags.incr_only, computed, floored)
    }
}
