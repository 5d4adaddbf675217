//! One interface over fairflow's engines, so that every command and the live
//! service run on either: the batch oracle ([`BatchEngine`], which recomputes
//! everything from scratch for each answer) or the incremental engine
//! ([`IncrementalEngine`], over `fairflow_dataflow::Engine`, which maintains
//! the answers as events arrive). Both must give equal answers; `--engine
//! batch` exists so anyone can compare.
//!
//! Both engines hold one book (`fairflow_book::Book`) and write the same
//! snapshot format (`fairflow_book::snapshot`), so a checkpoint written by
//! either is restored by either.
//!
//! **API boundary:** [`Engine`] and [`EngineError`] are everything the
//! commands and the service know of an engine; they hold one as
//! `Box<dyn Engine>` ([`start`]).

#![warn(missing_docs)]

mod batch;
mod incremental;
pub mod whatif;

use std::collections::BTreeMap;

use fairflow_book::Book;
use fairflow_ingest::{LogLine, Rejection};
use fairflow_model::report::entries::{position_in, position_single};
use fairflow_model::report::position::Position;
use fairflow_model::report::{
    CompactJobs, FairshareRow, FairshareTable, JobIdKey, JobPriority, JobState, PendingJobsByUser,
    Selection, SharedJobs, UsageRow, WaitingUser,
};
use fairflow_model::{Algorithm, Config, Sluid, Time};

pub use batch::BatchEngine;
pub use fairflow_dataflow::cluster::{ShardHoldings, WorkerLayout};
pub use fairflow_dataflow::thread_priority;
pub use incremental::IncrementalEngine;

/// Why an engine has no answer.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The job is active but has no priority now (running without
    /// `CALCULATE_RUNNING`, or before its begin time).
    #[error("job {job} has no priority as of {now}: it is running (PriorityFlags=CALCULATE_RUNNING evaluates running jobs) or not yet past its begin time")]
    NoPriority {
        /// The job.
        job: String,
        /// The time asked about.
        now: Time,
    },
    /// No such job is pending, held or running.
    #[error("job {job} is not pending, held or running as of {now}")]
    UnknownJob {
        /// The job.
        job: String,
        /// The time asked about.
        now: Time,
    },
    /// The job is listed but not in the ranked queue (held, or running
    /// under `CALCULATE_RUNNING` or Moab).
    #[error("job {job} is {state} as of {now}: only pending jobs have a place in the queue")]
    NotQueued {
        /// The job.
        job: String,
        /// Its state (`held`, `running`).
        state: &'static str,
        /// The time asked about.
        now: Time,
    },
    /// A snapshot could not be restored (foreign, another version, damaged);
    /// the engine is unchanged.
    #[error(transparent)]
    Snapshot(#[from] fairflow_book::snapshot::SnapshotError),
    /// The incremental engine failed (its workers could not start, or
    /// stopped: a bug).
    #[error("the incremental engine failed: {0}")]
    Dataflow(fairflow_dataflow::EngineError),
}

impl From<fairflow_dataflow::EngineError> for EngineError {
    fn from(e: fairflow_dataflow::EngineError) -> Self {
        match e {
            fairflow_dataflow::EngineError::Snapshot(e) => EngineError::Snapshot(e),
            other => EngineError::Dataflow(other),
        }
    }
}

impl EngineError {
    /// Is this about the question (an unknown job, a job without a
    /// priority) rather than the engine?
    pub fn is_not_found(&self) -> bool {
        matches!(
            self,
            EngineError::NoPriority { .. }
                | EngineError::UnknownJob { .. }
                | EngineError::NotQueued { .. }
        )
    }
}

/// Why a job has its priority: the job's priority, the algorithm, and the
/// fair-share rows from `root` to its user association.
#[derive(Debug, Clone, PartialEq)]
pub struct Explanation {
    /// The job's priority and factors.
    pub job: JobPriority,
    /// The fair-share algorithm in force.
    pub algorithm: Algorithm,
    /// The fair-share path, root first.
    pub path: Vec<FairshareRow>,
    /// The job's SLUID (Slurm 26.05), if it has one.
    pub sluid: Option<Sluid>,
}

/// An engine: applies batches of log lines and answers queries as of its time.
pub trait Engine: Send {
    /// `batch` or `incremental`.
    fn name(&self) -> &'static str;
    /// The book every accepted event was applied to.
    fn book(&self) -> &Book;
    /// Events applied so far.
    fn applied(&self) -> u64;
    /// Check and apply a batch in order; returns the rejected lines.
    fn apply(&mut self, lines: Vec<LogLine>) -> Result<Vec<Rejection>, EngineError>;
    /// Answer as of `t` from now on (never moves backwards).
    fn advance_to(&mut self, t: Time) -> Result<(), EngineError>;
    /// The fair-share table.
    fn fairshare(&mut self) -> Result<FairshareTable, EngineError>;
    /// Every user association's fair-share factor (the value the priority
    /// formulas read), by `(account, user)`. Under Fair Tree and the classic
    /// algorithm it is the user row's `FairShare`; under the ticket-based
    /// algorithm it is the tickets over the most any user holds, which no
    /// table cell shows.
    fn user_factors(&mut self) -> Result<BTreeMap<(String, String), f64>, EngineError>;
    /// Every listed job's priority (the rows of `sprio`).
    fn priorities(&mut self) -> Result<Vec<JobPriority>, EngineError>;
    /// [`Engine::priorities`] held compactly, in job-id order (as `str`s
    /// compare); an engine that can should never hold every job's decoded
    /// priority at once on the way.
    fn priorities_compact(&mut self) -> Result<CompactJobs, EngineError> {
        let mut all = self.priorities()?;
        all.sort_by(|a, b| a.job.cmp(&b.job));
        Ok(all.iter().collect())
    }
    /// The first `k` jobs of the ranked pending queue, shared: a read with
    /// nothing changed since the last one copies a reference, not the values.
    fn top(&mut self, k: usize) -> Result<SharedJobs, EngineError>;
    /// One listed job's priority (`None`: not listed now).
    fn job(&mut self, id: &str) -> Result<Option<JobPriority>, EngineError>;
    /// The whole state as bytes, for a checkpoint (`fairflow_book::snapshot`).
    fn snapshot(&self) -> Result<Vec<u8>, EngineError>;
    /// Replace the state by a snapshot of either engine; a foreign or
    /// damaged one is an error and changes nothing.
    fn restore(&mut self, snapshot: &[u8]) -> Result<(), EngineError>;

    /// The time answers are as of (`None` before any event).
    fn now(&self) -> Option<Time> {
        let book = self.book();
        book.last_event_at().map(|t| t.max(book.state().now))
    }

    /// The configuration in force.
    fn config(&self) -> &Config {
        &self.book().state().config
    }

    /// Why `job` (its id or its SLUID: `Book::resolve_job`) has its
    /// priority.
    fn explain(&mut self, job: &str) -> Result<Explanation, EngineError> {
        let job = &self.book().resolve_job(job).to_string();
        let now = self.book().state().now;
        let Some(found) = self.job(job)? else {
            let known = self.book().state().jobs.contains_key(job);
            let job = job.to_string();
            return Err(if known {
                EngineError::NoPriority { job, now }
            } else {
                EngineError::UnknownJob { job, now }
            });
        };
        let (algorithm, path) = self.fairshare_path(&found.account, &found.user)?;
        Ok(Explanation {
            job: found,
            algorithm,
            path,
            sluid: self.book().sluid_of(job),
        })
    }

    /// Every association's place, shares and usage in the table's order
    /// (the columns of [`Engine::fairshare`] that no algorithm computes:
    /// what `audit` reads). This default cuts them from the whole table; the
    /// incremental engine reads the tree only (no factor, no algorithm).
    fn usage_rows(&mut self) -> Result<Vec<UsageRow>, EngineError> {
        Ok(self
            .fairshare()?
            .rows
            .into_iter()
            .map(UsageRow::from)
            .collect())
    }

    /// The algorithm in force and the fair-share rows from `root` down to
    /// the user association `(account, user)` (empty when it has none): the
    /// rows of [`Engine::fairshare`] that `explain` shows. This default
    /// reads the whole table; the incremental engine reads the path's
    /// associations only.
    fn fairshare_path(
        &mut self,
        account: &str,
        user: &str,
    ) -> Result<(Algorithm, Vec<FairshareRow>), EngineError> {
        let table = self.fairshare()?;
        let path = table.path_to(account, user);
        Ok((table.algorithm, path))
    }

    /// The users with pending (ranked) jobs whose fair-share factor
    /// ([`Engine::user_factors`]; 0 when it has none) is at least
    /// `min_factor`: the first `limit` in [`WaitingUser::rank`]'s order
    /// (longest wait first), each with its pending jobs and its oldest one
    /// (earliest submitted; of one second, the first in the queue's job-id
    /// order, `JobIdKey`). This
    /// default groups every listed job's priority; the incremental engine
    /// reads its queue's submit-time order only as far as the answer needs.
    fn waiting_users(
        &mut self,
        min_factor: f64,
        limit: usize,
    ) -> Result<Vec<WaitingUser>, EngineError> {
        let factors = self.user_factors()?;
        let now = self.now().unwrap_or(0);
        let mut by_user: BTreeMap<(String, String), (u64, Time, String)> = BTreeMap::new();
        for job in self.priorities()? {
            if job.state != JobState::Pending {
                continue;
            }
            let entry = by_user.entry((job.account, job.user)).or_insert((
                0,
                job.submit_at,
                job.job.clone(),
            ));
            entry.0 += 1;
            if job.submit_at < entry.1
                || (job.submit_at == entry.1 && JobIdKey::new(&job.job) < JobIdKey::new(&entry.2))
            {
                (entry.1, entry.2) = (job.submit_at, job.job);
            }
        }
        let mut waiting: Vec<WaitingUser> = by_user
            .into_iter()
            .filter_map(|((account, user), (pending_jobs, oldest, oldest_job))| {
                let factor = factors
                    .get(&(account.clone(), user.clone()))
                    .copied()
                    .unwrap_or(0.0);
                (factor >= min_factor).then_some(WaitingUser {
                    account,
                    user,
                    factor,
                    pending_jobs,
                    longest_wait_secs: now - oldest,
                    oldest_job,
                })
            })
            .collect();
        WaitingUser::rank(&mut waiting);
        waiting.truncate(limit);
        Ok(waiting)
    }

    /// Each user association with pending (ranked) jobs, by `(account,
    /// user)`, with how many (each job once, whatever its partitions):
    /// [`Engine::waiting_users`]' counts for every user. The incremental
    /// engine reads its queue's per-user job sets' sizes only (no job read).
    fn pending_jobs_by_user(&mut self) -> Result<PendingJobsByUser, EngineError> {
        Ok(self
            .waiting_users(f64::NEG_INFINITY, usize::MAX)?
            .into_iter()
            .map(|user| ((user.account, user.user), user.pending_jobs))
            .collect())
    }

    /// [`Engine::fairshare`] and, beside each of its rows, its user
    /// association's [`Engine::pending_jobs_by_user`] count (0 on account
    /// rows and for a user with none): one read of both, joined by name
    /// here; the incremental engine places its counts by the rows' order
    /// instead (no name copied or hashed).
    fn fairshare_with_pending(&mut self) -> Result<(FairshareTable, Vec<u64>), EngineError> {
        let table = self.fairshare()?;
        let by_user: std::collections::HashMap<(String, String), u64> =
            self.pending_jobs_by_user()?.into_iter().collect();
        let pending = (table.rows.iter())
            .map(|row| {
                let Some(user) = &row.user else {
                    return 0;
                };
                let key = (row.account.clone(), user.clone());
                by_user.get(&key).copied().unwrap_or(0)
            })
            .collect();
        Ok((table, pending))
    }

    /// The first `k` entries of the queue `selection` keeps (`top -A -u
    /// -p`): with partitions, the entries in those partitions.
    fn top_selected(&mut self, k: usize, selection: &Selection) -> Result<SharedJobs, EngineError> {
        if selection.is_empty() {
            return self.top(k);
        }
        let mut queue = self
            .resolve_selection(selection)
            .queue(self.top(usize::MAX)?.into_vec());
        queue.truncate(k);
        Ok(queue.into())
    }

    /// The scheduler's queue up to and including the first entry of the
    /// job `id`, in queue order (`None`: the job is not ranked now). This
    /// default cuts the whole
    /// sorted queue (the oracle's plain sort); the incremental engine reads
    /// its queue index only as far as the job.
    fn queue_through(&mut self, id: &str) -> Result<Option<Vec<JobPriority>>, EngineError> {
        let queue = self.top(usize::MAX)?;
        Ok(queue
            .iter()
            .position(|p| p.job == id)
            .map(|index| queue[..=index].to_vec()))
    }

    /// [`Engine::position`] of a job (named by its id) counted from the
    /// engine's queue index without building the jobs ahead; `None` when
    /// the engine does not count it (this default: never), and
    /// [`Engine::queue_through`]'s path answers.
    fn position_counted(
        &mut self,
        _id: &str,
        _shown: usize,
    ) -> Result<Option<Position>, EngineError> {
        Ok(None)
    }

    /// A job's place in line (the job named by its id or its SLUID:
    /// `Book::resolve_job`): its first entry's rank in the whole queue, its
    /// rank in each of its partitions, its other entries, the entries of
    /// each account ahead of it (every account), and the gap to the entry
    /// just ahead.
    fn position(&mut self, id: &str) -> Result<Position, EngineError> {
        self.position_showing(id, usize::MAX)
    }

    /// [`Engine::position`] listing only the `shown` accounts with the most
    /// entries ahead (`Position::keep_accounts`; the service's and the
    /// command's answer, `ACCOUNTS_SHOWN` unless asked otherwise).
    fn position_showing(&mut self, id: &str, shown: usize) -> Result<Position, EngineError> {
        let id = &self.book().resolve_job(id).to_string();
        if let Some(mut place) = self.position_counted(id, shown)? {
            place.sluid = self.book().sluid_of(id);
            return Ok(place);
        }
        let Some(through) = self.queue_through(id)? else {
            return Err(self.why_not_ranked(id)?);
        };
        // A job with several entries (several (partition, QOS) pairs) has
        // entries, and partition ranks, after its first: read the queue.
        let several = through.last().is_some_and(|job| !job.pairs.is_empty());
        let place = if several {
            position_in(&self.top(usize::MAX)?, id)
        } else {
            position_single(through)
        };
        let now = self.book().state().now;
        let mut place = place.ok_or_else(|| EngineError::UnknownJob {
            job: id.to_string(),
            now,
        })?;
        place.keep_accounts(shown);
        place.sluid = self.book().sluid_of(id);
        Ok(place)
    }

    /// Why a job has no place in the queue: not known, without a priority,
    /// or listed but held or running.
    fn why_not_ranked(&mut self, id: &str) -> Result<EngineError, EngineError> {
        let now = self.book().state().now;
        let job = id.to_string();
        Ok(match self.job(id)? {
            Some(listed) => EngineError::NotQueued {
                job,
                state: listed.state.name(),
                now,
            },
            None if self.book().state().jobs.contains_key(id) => {
                EngineError::NoPriority { job, now }
            }
            None => EngineError::UnknownJob { job, now },
        })
    }

    /// `selection` with each job its SLUID names named by its id
    /// (`Book::resolve_job`), as sprio's and top's `-j` read it.
    fn resolve_selection(&self, selection: &Selection) -> Selection {
        let book = self.book();
        let jobs = (selection.jobs.iter())
            .map(|key| book.resolve_job(key).to_string())
            .collect();
        Selection {
            jobs,
            ..selection.clone()
        }
    }

    /// A page of the queue `selection` keeps: `k` jobs from the one at
    /// `offset` (0: the first), as `top_selected` ranks them. A page of
    /// the whole queue past its first is counted when the engine counts it
    /// ([`Engine::top_page_counted`]).
    fn top_page(
        &mut self,
        offset: usize,
        k: usize,
        selection: &Selection,
    ) -> Result<SharedJobs, EngineError> {
        if offset > 0 && selection.is_empty() {
            if let Some(page) = self.top_page_counted(offset, k)? {
                return Ok(page);
            }
        }
        let page = self.top_selected(offset.saturating_add(k), selection)?;
        Ok(page.skip(offset))
    }

    /// The page of `k` entries of the whole queue from the one at `offset`
    /// found without reading the entries before it; `None` when the engine
    /// does not count it (this default: never), and [`Engine::top_page`]
    /// reads the first `offset + k`.
    fn top_page_counted(
        &mut self,
        _offset: usize,
        _k: usize,
    ) -> Result<Option<SharedJobs>, EngineError> {
        Ok(None)
    }

    /// A what-if of `proposal` cut to `k` rows of each list, answered from
    /// this engine's live state, which it leaves as it was (nothing logged,
    /// no later answer changed); `None` when the engine does not take the
    /// proposal (this default: never) and [`whatif::evaluate`]'s oracle
    /// answers it. The incremental engine takes share changes of existing
    /// associations at its time (`fairflow_dataflow::Engine::whatif_rows`).
    fn whatif_rows(
        &mut self,
        _proposal: &[LogLine],
        _k: usize,
    ) -> Result<Option<fairflow_model::report::whatif::WhatIfRows>, EngineError> {
        Ok(None)
    }

    /// What each timely worker's shard holds, by worker (the incremental
    /// engine; none for the batch oracle, which holds everything in this
    /// process).
    fn shard_holdings(&mut self) -> Result<Vec<ShardHoldings>, EngineError> {
        Ok(Vec::new())
    }

    /// Pending, non-held jobs (the queue's length).
    fn queue_len(&self) -> u64 {
        let jobs = &self.book().state().jobs;
        jobs.values().filter(|j| j.is_pending()).count() as u64
    }

    /// Accounts and user associations.
    fn associations(&self) -> u64 {
        let state = self.book().state();
        (state.accounts.len() + state.users.len()) as u64
    }
}

/// Which engine to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineChoice {
    /// The incremental engine on this many timely workers (in this process).
    Incremental {
        /// Timely workers.
        workers: usize,
    },
    /// The batch oracle.
    Batch,
}

/// Start the chosen engine under `config` (the configuration in force before
/// the first event).
pub fn start(choice: EngineChoice, config: Config) -> Result<Box<dyn Engine>, EngineError> {
    Ok(match choice {
        EngineChoice::Batch => Box::new(BatchEngine::new(config)),
        EngineChoice::Incremental { workers } => {
            Box::new(IncrementalEngine::start(workers, config)?)
        }
    })
}
