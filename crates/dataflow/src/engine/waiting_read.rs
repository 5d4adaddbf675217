//! `audit`'s waiting users from the incremental engine: every shard's
//! candidates (`crate::priority::reader::waiting`), named, ranked
//! (`WaitingUser::rank`) and cut to the limit here; and every user's
//! pending (ranked) job count alone, from the queue's per-user sets
//! (the fair-share history's steps: by name, or dense by association for
//! `tree_read` to place beside the table's rows).

use fairflow_model::report::{PendingJobsByUser, WaitingUser};
use fairflow_model::Time;

use super::{Engine, EngineError};
use crate::types::AssocId;
use crate::worker::{Command, Reply};

impl Engine {
    /// The users with ranked jobs whose fair-share factor is at least
    /// `min_factor`: the first `limit` in `WaitingUser::rank`'s order, as
    /// `fairflow_engine::Engine::waiting_users` states them; each wait
    /// until `now`.
    pub fn waiting_users(
        &self,
        min_factor: f64,
        limit: usize,
        now: Time,
    ) -> Result<Vec<WaitingUser>, EngineError> {
        self.send(Command::Waiting(min_factor.to_bits(), limit))?;
        let Ok(Reply::Waiting(entries)) = self.reply() else {
            return Err(EngineError::WorkersGone);
        };
        let mut waiting: Vec<WaitingUser> = entries
            .into_iter()
            .filter_map(|entry| {
                let (account, user) = self.names.assocs.name(entry.assoc)?.clone();
                Some(WaitingUser {
                    account,
                    user,
                    factor: f64::from_bits(entry.factor_bits),
                    pending_jobs: entry.pending_jobs,
                    longest_wait_secs: now - entry.oldest_submit,
                    oldest_job: entry.oldest_job,
                })
            })
            .collect();
        WaitingUser::rank(&mut waiting);
        waiting.truncate(limit);
        Ok(waiting)
    }

    /// Every user association with ranked (pending) jobs, with how many:
    /// the counts `waiting_users` gives, read from each shard's per-user
    /// job sets (`PriorityReader::ranked_counts`): no job is read, so the
    /// read costs the associations, not the jobs.
    pub fn pending_jobs_by_user(&self) -> Result<PendingJobsByUser, EngineError> {
        Ok(self
            .ranked_counts()?
            .into_iter()
            .filter_map(|(assoc, jobs)| Some((self.names.assocs.name(assoc)?.clone(), jobs)))
            .collect())
    }

    /// [`Engine::pending_jobs_by_user`]'s counts unnamed, dense by user
    /// association id (0: none pending).
    pub(super) fn pending_jobs_by_assoc(&self) -> Result<Vec<u64>, EngineError> {
        let mut dense = Vec::new();
        for (assoc, jobs) in self.ranked_counts()? {
            *crate::types::grow(&mut dense, assoc as usize) = jobs;
        }
        Ok(dense)
    }

    /// Every shard's user associations with ranked jobs, with how many.
    fn ranked_counts(&self) -> Result<Vec<(AssocId, u64)>, EngineError> {
        let assocs = self.names.assocs.len();
        self.send(Command::RankedCounts(
            u32::try_from(assocs).unwrap_or(u32::MAX),
        ))?;
        let Ok(Reply::Counts(counts)) = self.reply() else {
            return Err(EngineError::WorkersGone);
        };
        Ok(counts)
    }
}
