//! A what-if answered from the live engine ([`Engine::whatif_rows`]):
//! share changes of existing associations at the engine's time are applied
//! to the book (`fairflow_book::Book::begin_share_trial`) and fed to the
//! dataflow at a new logical time, the changed factors and their users'
//! jobs read, then the book restored (`Book::end_share_trial`: the shares
//! overwritten put back, no copy of the book) and the dataflow fed the
//! differences back, so every answer after is the one before (nothing is
//! logged, the applied-event count does not move).
//!
//! The answer (`fairflow_model::report::whatif::WhatIfRows`) is the batch
//! oracle's (`fairflow_engine::whatif::evaluate`) cut to its first `k` rows
//! of each list, with how many rows each list has in all:
//! - the associations whose factor changed: read across the trial's
//!   absorb by worker 0 (`priority::reader::factors`: under Fair Tree only
//!   the users of the groups the trial reorders, else every factor);
//! - the *changed* jobs (whose priority moves: only the jobs of those
//!   associations can), read once after the trial is taken back, each
//!   evaluated with its user's factor before and after
//!   (`PriorityReader::trial_jobs`: a share changes no record, only
//!   factors; by id: submit time, state and both priorities); each is
//!   placed in the queue before and after from the tally of the other
//!   ranked jobs against the changed jobs' keys
//!   (`PriorityReader::tally_probes`), the keys sent by id within one
//!   process (`ProbeJob`);
//! - a job is named only where a tie of priority and submit time asks for
//!   its name (the probes' order, the tally's merge) and where its row may
//!   be shown (`Engine::shortlist`: the first `k` rows by rank and those
//!   tied with the `k`-th; `Engine::name_rows` names their owners): a big
//!   proposal changes tens of thousands of jobs, whose names were a fifth
//!   of its cost;
//! - the unchanged jobs move by their interval's shift: the tally counts
//!   them and keeps the `k` that move most, whose places a second tally
//!   counts.
//!
//! Proposals it does not take (`None`: the caller evaluates them with the
//! oracle): anything but `account` / `user` events that set only the shares
//! of an existing association, events after the engine's time, lines the
//! book rejects, a queue whose entries are not its jobs, Moab, and Slurm's
//! `INCR_ONLY`.

use fairflow_ingest::LogLine;
use fairflow_model::report::whatif::{AssocChange, Evaluator, JobChange, WhatIf, WhatIfRows};
use fairflow_model::report::{JobIdOrder, JobPriority, JobState};
use fairflow_model::{Event, PriorityModel, Time};
use rayon::prelude::*;
use std::cmp::Reverse;
use std::sync::Arc;

use super::{Engine, EngineError};
use crate::names::JobNames;
use crate::priority::reader::factors::TrialFactor;
use crate::priority::reader::whatif::{ProbeJob, ProbeKey, Tally, TallyRequest, TrialJob};
use crate::types::JobId;
use crate::worker::{Command, Reply};

/// A job row of the answer and, until it is named, its job's id.
struct Row {
    change: JobChange,
    unnamed: Option<JobId>,
}

/// A ranked side's probe (beside its key): whether it is an after key.
#[derive(Clone, Copy)]
struct Probe {
    after: bool,
    /// The changed job it belongs to (index into the changed list).
    of: usize,
}

impl Engine {
    /// The what-if of `proposal` cut to `k` rows of each list, from the
    /// live engine (see the module documentation); `None` when the fast
    /// path does not take it.
    pub fn whatif_rows(
        &mut self,
        proposal: &[LogLine],
        k: usize,
    ) -> Result<Option<WhatIfRows>, EngineError> {
        let Some(events) = self.share_changes(proposal) else {
            return Ok(None);
        };
        let now = self.now();
        // Worker 0's reader watches the trial's batch: the factors it
        // changes are read across its absorb (`reader::factors`).
        self.priority_read(Command::WatchFactors)?;
        // The proposal applied to the live book (what it overwrites kept,
        // not a copy of the book: `Book::begin_share_trial`).
        let Some(trial) = self.book.begin_share_trial(&events) else {
            return Ok(None);
        };
        let changes = self.book.take_changes();
        // The proposal's side, then the live state back, whatever the read:
        // the trial yields the factors it changes; their users' jobs are
        // then read once, each keyed with both factors.
        let after =
            (self.flush_changes(changes.clone(), false)).and_then(|_| self.factor_changes());
        self.book.end_share_trial(trial);
        self.flush_changes(changes, true)?;
        let mut factor_changes = after?;
        factor_changes.sort_unstable_by_key(|change| change.0);
        let changed = self.trial_jobs(&factor_changes, now)?;
        let Some((rows, jobs_changed)) = self.place(&changed, k, now)? else {
            return Ok(None);
        };
        let associations = self.assoc_changes(&factor_changes);
        let mut answer = WhatIf {
            at: now,
            applied: events.len() as u64,
            associations,
            jobs: self.shortlist(rows, k),
        };
        answer.rank_first(k);
        self.name_rows(&mut answer.jobs, k);
        Ok(Some(WhatIfRows::cut(
            answer,
            k,
            jobs_changed,
            Evaluator::Engine,
        )))
    }

    /// The proposal's events when every one sets only the shares of an
    /// existing association at or before the engine's time (taken as the
    /// engine's time), under a model and queue the tally reads.
    fn share_changes(&self, proposal: &[LogLine]) -> Option<Vec<(u64, Event)>> {
        let state = self.book.state();
        let tallied = state.config.model != PriorityModel::Moab && !state.config.flags.incr_only;
        if !tallied || !self.entries_are_jobs() || self.applied == 0 {
            return None;
        }
        let now = self.now();
        let mut events = Vec::with_capacity(proposal.len());
        for line in proposal {
            let event = line.event.as_ref().ok()?;
            if !self.book.sets_only_existing_shares(&event.op) || event.t > now {
                return None;
            }
            let mut event = event.clone();
            event.t = now;
            events.push((line.line, event));
        }
        Some(events)
    }

    /// The factors the trial changed, by association.
    fn factor_changes(&self) -> Result<Vec<TrialFactor>, EngineError> {
        match self.priority_read(Command::ReadFactorChanges)? {
            Reply::FactorChanges(changes) => Ok(changes),
            _ => Err(EngineError::WorkersGone),
        }
    }

    /// The listed jobs of the associations of `factors` (sorted) whose
    /// priority moves with the factor at `now`, keyed on both sides, every
    /// shard's.
    fn trial_jobs(&self, factors: &[TrialFactor], now: Time) -> Result<Vec<TrialJob>, EngineError> {
        if factors.is_empty() {
            return Ok(Vec::new());
        }
        // Without `CALCULATE_RUNNING` only pending jobs' priorities move
        // with a factor (a held job's is 0): the ranked ones.
        let all_listed = self.config().flags.calculate_running;
        let command = Command::TrialJobs(factors.to_vec(), all_listed, now);
        match self.priority_read(command)? {
            Reply::TrialJobs(jobs) => Ok(jobs),
            _ => Err(EngineError::WorkersGone),
        }
    }

    /// The rows that can be among the first `k` of the ranked answer
    /// (`WhatIf::rank_first`), their jobs named: the first `k` by
    /// `JobChange::rank` and every other of the `k`-th's rank (the job id
    /// decides among those). The others are dropped unnamed: a big
    /// proposal changes tens of thousands of jobs and shows `k`.
    fn shortlist(&self, mut rows: Vec<Row>, k: usize) -> Vec<JobChange> {
        rows.retain(|row| row.change.changes());
        if k == 0 {
            rows.clear();
        } else if k < rows.len() {
            rows.select_nth_unstable_by_key(k - 1, |row| row.change.rank());
            let last = rows[k - 1].change.rank();
            let tied: Vec<Row> = (rows.drain(k..))
                .filter(|row| row.change.rank() == last)
                .collect();
            rows.extend(tied);
        }
        let names = self.job_feed.job_names();
        (rows.into_iter())
            .map(|mut row| {
                if let Some(name) = row.unnamed.and_then(|id| names.get(id)) {
                    row.change.job = name.to_string();
                }
                row.change
            })
            .collect()
    }

    /// Name the owners (user, account) of the first `k` job rows: the
    /// changed jobs' rows come from their keys alone (`change_row`), the
    /// moved jobs' rows are named already.
    fn name_rows(&self, rows: &mut [JobChange], k: usize) {
        let state = self.book.state();
        for row in rows.iter_mut().take(k) {
            if !row.user.is_empty() || !row.account.is_empty() {
                continue;
            }
            if let Some(job) = state.jobs.get(&row.job) {
                row.user.clone_from(&job.user);
                row.account.clone_from(&job.account);
            }
        }
    }

    /// Every changed job's row, placed (unnamed), and the rows of the
    /// unchanged jobs that move most (at most `k`), with how many job rows
    /// the whole answer has; `None` when the model is not tallied.
    fn place(
        &self,
        changed: &[TrialJob],
        k: usize,
        now: Time,
    ) -> Result<Option<(Vec<Row>, u64)>, EngineError> {
        let names = self.job_feed.job_names();
        let (keys, probes) = self.probes(changed, names);
        // Interval `i` holds the jobs with `i` probes ahead.
        let mut shifts = vec![0i64; probes.len() + 1];
        for (i, probe) in probes.iter().enumerate() {
            shifts[i + 1] = shifts[i] + if probe.after { 1 } else { -1 };
        }
        let mut excluded: Vec<JobId> = changed.iter().map(|c| c.id).collect();
        excluded.sort_unstable();
        let request = TallyRequest {
            probes: keys,
            shifts: shifts.clone(),
            excluded: excluded.clone(),
            excluded_are_probes: true,
            keep: k,
            now,
        };
        let Some(tally) = self.tally(request)? else {
            return Ok(None);
        };
        let mut rows: Vec<Row> = (changed.iter())
            .map(|job| Row {
                change: change_row(job),
                unnamed: Some(job.id),
            })
            .collect();
        // Places: the unchanged jobs ahead of a probe, and the changed
        // jobs' own keys ahead of it on the same side.
        let mut unchanged_ahead = 0u64;
        let (mut before_ahead, mut after_ahead) = (0u64, 0u64);
        for (i, probe) in probes.iter().enumerate() {
            unchanged_ahead += tally.counts[i];
            let row = &mut rows[probe.of].change;
            if probe.after {
                row.position_after = Some(1 + unchanged_ahead + after_ahead);
                after_ahead += 1;
            } else {
                row.position_before = Some(1 + unchanged_ahead + before_ahead);
                before_ahead += 1;
            }
        }
        let moved_total: u64 = (tally.counts.iter().zip(&shifts))
            .filter(|(_, shift)| **shift != 0)
            .map(|(count, _)| count)
            .sum();
        let jobs_changed = rows.len() as u64 + moved_total;
        let moved = self.moved_rows(&tally, &shifts, &excluded, now)?;
        rows.extend(moved.into_iter().map(|change| Row {
            change,
            unnamed: None,
        }));
        Ok(Some((rows, jobs_changed)))
    }

    /// The ranked changed jobs' keys before and after in queue order (the
    /// probes), each with its side and job: a plain id by its number, any
    /// other by id within one process (a tie names it from `names`), by
    /// name between processes.
    fn probes(&self, changed: &[TrialJob], names: &JobNames) -> (Vec<ProbeKey>, Vec<Probe>) {
        let between_processes = self.workers > self.workers_per_process;
        let mut probes: Vec<(ProbeKey, Probe)> = Vec::with_capacity(2 * changed.len());
        for (of, job) in changed.iter().enumerate() {
            if job.state != JobState::Pending {
                continue;
            }
            let probe_job = match job.id_number {
                0 if between_processes => {
                    (names.get(job.id)).map_or(ProbeJob::Id(job.id), ProbeJob::Name)
                }
                0 => ProbeJob::Id(job.id),
                number => ProbeJob::Number(number),
            };
            for (priority, after) in [(job.priority_before, false), (job.priority_after, true)] {
                let key = ProbeKey {
                    priority,
                    submit_at: job.submit_at,
                    job: probe_job.clone(),
                };
                probes.push((key, Probe { after, of }));
            }
        }
        // By priority, submit time and a plain id's number; then each run
        // of equal priority and submit time with an id that is not plain
        // by id order (`JobIdOrder`): such an id read once, and only on a
        // tie.
        probes.par_sort_unstable_by_key(|(key, _)| {
            let number = match key.job {
                ProbeJob::Number(number) => number,
                _ => 0,
            };
            (Reverse(key.priority), key.submit_at, number)
        });
        for run in probes.chunk_by_mut(|a, b| same_key(&a.0, &b.0)) {
            let plain = |(key, _): &(ProbeKey, Probe)| matches!(key.job, ProbeJob::Number(_));
            if run.len() > 1 && !run.iter().all(plain) {
                run.sort_by_cached_key(|(key, _)| key.order(names));
            }
        }
        probes.into_iter().unzip()
    }

    /// The merged tally `request` asks every shard for.
    fn tally(&self, request: TallyRequest) -> Result<Option<Tally>, EngineError> {
        match self.priority_read(Command::Tally(request))? {
            Reply::Tally(tally) => Ok(tally),
            _ => Err(EngineError::WorkersGone),
        }
    }

    /// The rows of the unchanged jobs `tally` kept: each one's place is
    /// counted by a second tally (the unchanged jobs ahead of it, itself
    /// included; each shard answers it from the keys its first tally
    /// counted), plus the changed jobs' keys ahead of it.
    fn moved_rows(
        &self,
        tally: &Tally,
        shifts: &[i64],
        excluded: &[JobId],
        now: Time,
    ) -> Result<Vec<JobChange>, EngineError> {
        if tally.moved.is_empty() {
            return Ok(Vec::new());
        }
        let mut moved: Vec<(u64, JobPriority)> = tally.moved.clone();
        moved.sort_by_key(|(_, a)| a.queue_key());
        let request = TallyRequest {
            probes: moved.iter().map(|(_, p)| probe_key(p)).collect(),
            shifts: vec![0; moved.len() + 1],
            excluded: excluded.to_vec(),
            excluded_are_probes: false,
            keep: 0,
            now,
        };
        let Some(places) = self.tally(request)? else {
            return Ok(Vec::new());
        };
        // The before probes ahead of interval `i`: (i - shift) / 2.
        let mut ahead = 0u64;
        let mut rows = Vec::with_capacity(moved.len());
        for (i, (at, job)) in moved.into_iter().enumerate() {
            ahead += places.counts[i];
            let changed_before = (at as i64 - shifts[at as usize]) / 2;
            let position_before = ahead + changed_before as u64;
            let position_after = position_before as i64 + shifts[at as usize];
            let job = self.identify(job);
            rows.push(JobChange {
                job: job.job.clone(),
                user: job.user.clone(),
                account: job.account.clone(),
                priority_before: Some(job.priority),
                priority_after: Some(job.priority),
                position_before: Some(position_before),
                position_after: Some(position_after as u64),
            });
        }
        Ok(rows)
    }

    /// The associations whose factor changed, named.
    fn assoc_changes(&self, changes: &[TrialFactor]) -> Vec<AssocChange> {
        (changes.iter())
            .filter_map(|&(assoc, before, after)| {
                let (account, user) = self.names.assocs.name(assoc)?.clone();
                Some(AssocChange {
                    account,
                    user,
                    before,
                    after,
                })
            })
            .collect()
    }
}

/// A job's key in queue order.
fn probe_key(p: &JobPriority) -> ProbeKey {
    let job = match JobIdOrder::plain_number(&p.job) {
        Some(number) => ProbeJob::Number(number),
        None => ProbeJob::Name(Arc::from(p.job.as_str())),
    };
    ProbeKey {
        priority: p.priority,
        submit_at: p.submit_at,
        job,
    }
}

/// Whether two keys tie on priority and submit time (their names decide).
fn same_key(a: &ProbeKey, b: &ProbeKey) -> bool {
    (a.priority, a.submit_at) == (b.priority, b.submit_at)
}

/// A changed job's row, unplaced and not yet named (`Engine::shortlist`,
/// `Engine::name_rows`).
fn change_row(changed: &TrialJob) -> JobChange {
    JobChange {
        job: String::new(),
        user: String::new(),
        account: String::new(),
        priority_before: Some(changed.priority_before),
        priority_after: Some(changed.priority_after),
        position_before: None,
        position_after: None,
    }
}
