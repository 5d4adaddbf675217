//! What-if (`fairflow whatif`, `POST /v1/whatif`): the current state against
//! the same state with proposed changes applied, per user association the
//! change in fair-share factor and per job the change in priority and in
//! queue position, each list ranked by impact. The engine crate computes it
//! (`fairflow_engine::whatif`) with the batch oracle on a copy of the book;
//! everything here is the answer and its ordering.

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
        self.associations.retain(|a| a.before != a.after);
        self.associations.sort_by(|a, b| {
            b.change()
                .abs()
                .total_cmp(&a.change().abs())
                .then_with(|| (&a.account, &a.user).cmp(&(&b.account, &b.user)))
        });
        self.jobs.retain(|j| {
            j.priority_before != j.priority_after || j.position_before != j.position_after
        });
        // A job that enters or leaves the queue moves the most: past every other.
        let moved = |j: &JobChange| match j.places_gained() {
            Some(places) => places.unsigned_abs(),
            None => u64::MAX,
        };
        self.jobs.sort_by_key(|j| {
            (
                Reverse(moved(j)),
                Reverse(j.priority_change().unsigned_abs()),
                j.job.clone(),
            )
        });
    }
}
