//! What-if (`fairflow whatif`, `POST /v1/whatif`): the current state against
//! the same state with proposed changes applied, per user association the
//! change in fair-share factor and per job the change in priority and in
//! queue position, each list ranked by impact. The engine crate computes it
//! (`fairflow_engine::whatif`): share changes from the incremental engine's
//! live state, every other proposal with the batch oracle on a copy of the
//! book; everything here is the answer, its ordering and its cut to `k`
//! rows ([`WhatIfRows`]).

use std::cmp::Reverse;

/// One user association's fair-share factor before and after.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AssocChange {
    /// The account.
    pub account: String,
    /// The user.
    pub user: String,
    /// The factor now (`None`: the association does not exist now).
    pub before: Option<f64>,
    /// The factor with the proposal (`None`: it does not exist then).
    pub after: Option<f64>,
}

impl AssocChange {
    /// `after - before`, a missing side counting as 0.
    pub fn change(&self) -> f64 {
        self.after.unwrap_or(0.0) - self.before.unwrap_or(0.0)
    }
}

/// One job's priority and place in the ranked queue before and after.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct JobChange {
    /// The job id.
    pub job: String,
    /// Its user.
    pub user: String,
    /// Its account.
    pub account: String,
    /// Its priority now (`None`: not listed now).
    pub priority_before: Option<u64>,
    /// Its priority with the proposal (`None`: not listed then).
    pub priority_after: Option<u64>,
    /// Its place in the ranked queue now, from 1 (`None`: not ranked).
    pub position_before: Option<u64>,
    /// Its place with the proposal (`None`: not ranked then).
    pub position_after: Option<u64>,
}

impl JobChange {
    /// `after - before` of the priority (a missing side counting as 0).
    pub fn priority_change(&self) -> i128 {
        i128::from(self.priority_after.unwrap_or(0)) - i128::from(self.priority_before.unwrap_or(0))
    }

    /// Places moved up the queue (positive: closer to the head); `None`
    /// unless ranked both before and after.
    pub fn places_gained(&self) -> Option<i64> {
        Some(self.position_before? as i64 - self.position_after? as i64)
    }

    /// Whether the row shows a change: its priority or its place moves.
    pub fn changes(&self) -> bool {
        self.priority_before != self.priority_after || self.position_before != self.position_after
    }

    /// The row's rank before its id decides (smaller first): the most
    /// places moved first (a job that enters or leaves the queue moves past
    /// every other), then the largest priority change.
    pub fn rank(&self) -> (Reverse<u64>, Reverse<u128>) {
        let moved = match self.places_gained() {
            Some(places) => places.unsigned_abs(),
            None => u64::MAX,
        };
        (
            Reverse(moved),
            Reverse(self.priority_change().unsigned_abs()),
        )
    }
}

/// The whole answer.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct WhatIf {
    /// The time both sides are evaluated at (the state's, or the proposal's
    /// last event's when later).
    pub at: crate::Time,
    /// Events of the proposal applied.
    pub applied: u64,
    /// User associations whose factor changed (or that appear or go),
    /// largest change first (ties by account, user).
    pub associations: Vec<AssocChange>,
    /// Jobs whose priority or position changed (or that appear or go), most
    /// places moved first, then the largest priority change, then by id.
    pub jobs: Vec<JobChange>,
}

impl WhatIf {
    /// Keep the changes only and rank them by impact (see the fields).
    pub fn rank(&mut self) {
        self.rank_first(usize::MAX);
    }

    /// [`WhatIf::rank`], the job rows ordered only as far as the first
    /// `k` (the rest follow them in no particular order): a selection of
    /// the first `k`, then a sort of those, for an answer cut to `k` rows.
    pub fn rank_first(&mut self, k: usize) {
        self.associations.retain(|a| a.before != a.after);
        self.associations.sort_by(|a, b| {
            b.change()
                .abs()
                .total_cmp(&a.change().abs())
                .then_with(|| (&a.account, &a.user).cmp(&(&b.account, &b.user)))
        });
        self.jobs.retain(JobChange::changes);
        if k < self.jobs.len() {
            self.jobs.select_nth_unstable_by(k, job_order);
            self.jobs[..k].sort_by(job_order);
        } else {
            self.jobs.sort_by(job_order);
        }
    }
}

/// The order of ranked job rows: by [`JobChange::rank`], then the job id.
/// Compared in place (a key of the id's copy cost one allocation per
/// comparison: thousands of rows sorted on every what-if).
fn job_order(a: &JobChange, b: &JobChange) -> std::cmp::Ordering {
    (a.rank().cmp(&b.rank())).then_with(|| a.job.cmp(&b.job))
}

/// Which engine evaluated a what-if.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Evaluator {
    /// The incremental engine's live state (share changes at its time).
    Engine,
    /// The batch oracle on copies of the book (every other proposal).
    Oracle,
}

impl Evaluator {
    /// `engine` or `oracle`.
    pub fn name(self) -> &'static str {
        match self {
            Evaluator::Engine => "engine",
            Evaluator::Oracle => "oracle",
        }
    }
}

/// A what-if's answer cut to its first `k` rows of each list
/// ([`WhatIf::rank`]'s order), with how many rows each whole list has.
#[derive(Debug, Clone, PartialEq)]
pub struct WhatIfRows {
    /// The answer, each list cut to `k`.
    pub answer: WhatIf,
    /// Rows of the whole association list.
    pub associations_changed: u64,
    /// Rows of the whole job list.
    pub jobs_changed: u64,
    /// Who evaluated it.
    pub evaluator: Evaluator,
}

impl WhatIfRows {
    /// `answer` (ranked; its job list holds at least its first `k` rows)
    /// cut to `k` rows of each list; the whole job list has `jobs_changed`
    /// rows, the association list is whole.
    pub fn cut(mut answer: WhatIf, k: usize, jobs_changed: u64, evaluator: Evaluator) -> Self {
        let associations_changed = answer.associations.len() as u64;
        answer.associations.truncate(k);
        answer.jobs.truncate(k);
        WhatIfRows {
            answer,
            associations_changed,
            jobs_changed,
            evaluator,
        }
    }

    /// A whole ranked answer cut to `k` rows.
    pub fn of_whole(answer: WhatIf, k: usize, evaluator: Evaluator) -> Self {
        let jobs = answer.jobs.len() as u64;
        WhatIfRows::cut(answer, k, jobs, evaluator)
    }
}
