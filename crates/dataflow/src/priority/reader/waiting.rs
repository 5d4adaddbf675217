//! `audit`'s waiting users from one shard's queue: the users whose ranked
//! jobs have waited longest, read from the queue's submit-time order
//! (`Queue::by_submit`) from its oldest job on, only as far as the answer
//! needs. A user is met at its oldest ranked job; once `limit` users with a
//! factor of at least the minimum are found, the jobs of that same second
//! are read too (a user first met there may rank higher by factor), then
//! the read stops. Every user's pending count is its ranked-job sets' sizes
//! (kept by the queue), so no job's priority is evaluated. The driver
//! merges the shards' lists and ranks them (`WaitingUser::rank`); the
//! oracle's rule is the engine trait's default (`Engine::waiting_users`),
//! which groups every listed job.
//!
//! Cost: `O(jobs read × log)`, the jobs read being those older than the
//! `limit`-th user's oldest; every job when fewer users qualify.

use std::collections::HashMap;

use fairflow_model::report::JobIdKey;

use fairflow_model::Time;

use super::PriorityReader;
use crate::types::AssocId;

/// One waiting user as a shard reports it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct WaitingEntry {
    /// The user association.
    pub assoc: AssocId,
    /// Its fair-share factor (`f64` bits).
    pub factor_bits: u64,
    /// Its ranked (pending) jobs.
    pub pending_jobs: u64,
    /// Its oldest ranked job's submit time.
    pub oldest_submit: Time,
    /// That job (of that second, the first by job id).
    pub oldest_job: String,
}

impl PriorityReader {
    /// The shard's users with ranked jobs and a factor of at least
    /// `min_factor`, enough of them for the first `limit` of all shards
    /// (see the module documentation), in the order they were met.
    pub fn waiting(&mut self, min_factor: f64, limit: usize) -> Vec<WaitingEntry> {
        self.absorb();
        let mut found: Vec<WaitingEntry> = Vec::new();
        if limit == 0 {
            return found;
        }
        // Each user met: `Some(index in found)`, or `None` (factor too low).
        let mut met: HashMap<AssocId, Option<usize>> = HashMap::new();
        let mut last_second: Option<u64> = None;
        for (second, job) in self.queue.by_submit() {
            if last_second.is_some_and(|last| second > last) {
                break;
            }
            let Some(record) = self.queue.record(job) else {
                continue;
            };
            let assoc = record.row.assoc;
            match met.get(&assoc) {
                Some(None) => continue,
                Some(&Some(at)) => {
                    let entry = &mut found[at];
                    if record.row.submit_at == entry.oldest_submit {
                        let name = self.name_of(record);
                        if JobIdKey::new(&name) < JobIdKey::new(&entry.oldest_job) {
                            entry.oldest_job = name.to_string();
                        }
                    }
                    continue;
                }
                None => {}
            }
            let factor = self.queue.fairshare_factor(assoc).unwrap_or(0.0);
            let qualifies = factor >= min_factor;
            if !qualifies {
                met.insert(assoc, None);
                continue;
            }
            met.insert(assoc, Some(found.len()));
            found.push(WaitingEntry {
                assoc,
                factor_bits: factor.to_bits(),
                pending_jobs: self.queue.ranked_jobs_of(assoc),
                oldest_submit: record.row.submit_at,
                oldest_job: self.name_of(record).to_string(),
            });
            if found.len() == limit {
                last_second = Some(second);
            }
        }
        found
    }

    /// Every user association of this shard with ranked jobs, with how
    /// many: its ranked-job sets' sizes (kept by the queue), for the ids
    /// below `assocs`; no job is read.
    pub fn ranked_counts(&mut self, assocs: u32) -> Vec<(AssocId, u64)> {
        self.absorb();
        (0..assocs)
            .filter_map(|assoc| {
                let jobs = self.queue.ranked_jobs_of(assoc);
                (jobs > 0).then_some((assoc, jobs))
            })
            .collect()
    }
}
