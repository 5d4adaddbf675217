//! `position` from the incremental engine counted, not built: every shard
//! counts the jobs ahead of the job (`PriorityReader::count_ahead`: how
//! many, by account id, in the job's partition, and the one just ahead),
//! and the counts are named here once, into the model's [`Position`] (the
//! names of the accounts the answer lists only). Where the queue's entries
//! are not its jobs (several partition/QOS pairs, expedited requeue, several
//! tiers), or the model's
//! priorities are read over every record (Moab, Slurm's `INCR_ONLY`), the
//! answer is left to [`Engine::queue_through`]'s path.

use std::collections::BTreeMap;

use fairflow_model::report::position::{most_ahead, partitions_of, PartitionPlace, Position};

use super::{Engine, EngineError};
use crate::types::NONE;
use crate::worker::{Command, Reply};

impl Engine {
    /// A job's place in line counted by the shards (see the module
    /// documentation); `None` when it is not answered this way: the job is
    /// not ranked, has several entries, or the queue or the model needs
    /// the whole read. Only the `shown` accounts with the most entries
    /// ahead are named ([`most_ahead`]).
    pub fn position_counted(
        &self,
        id: &str,
        shown: usize,
    ) -> Result<Option<Position>, EngineError> {
        if !self.entries_are_jobs() {
            return Ok(None);
        }
        let Some(job) = self.job_feed.job_id(id) else {
            return Ok(None);
        };
        let partition = self.job_feed.sent_partition(job).unwrap_or(NONE);
        let Reply::Ahead(counted) =
            self.priority_read(Command::CountAhead(job, partition, self.now()))?
        else {
            return Err(EngineError::WorkersGone);
        };
        let Some((target, Some(counts))) = counted.map(|boxed| *boxed) else {
            return Ok(None);
        };
        let target = self.identify(target);
        if !target.pairs.is_empty() {
            return Ok(None);
        }
        let mut partitions = Vec::new();
        for name in partitions_of(&target) {
            if name != target.partition {
                return Ok(None);
            }
            partitions.push(PartitionPlace {
                partition: name,
                rank: counts.in_partition + 1,
                priority: target.priority,
            });
        }
        let accounts = counts.by_account.len() as u64;
        let mut named: Vec<(&str, u64)> = Vec::with_capacity(counts.by_account.len());
        for (account, count) in counts.by_account {
            let Some(name) = self.names.accounts.name(account) else {
                return Ok(None);
            };
            named.push((name.as_str(), count));
        }
        let mut ahead_by_account: BTreeMap<String, u64> = BTreeMap::new();
        for (name, count) in most_ahead(named, shown, |name: &&str| name) {
            *ahead_by_account.entry(name.to_string()).or_default() += count;
        }
        let just_ahead = counts.just_ahead.map(|ahead| self.identify(ahead));
        Ok(Some(Position::from_counts(
            target,
            counts.ahead + 1,
            partitions,
            (ahead_by_account, accounts),
            just_ahead.as_ref(),
        )))
    }
}
