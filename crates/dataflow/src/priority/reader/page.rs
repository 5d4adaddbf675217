//! A page of the queue at any depth counted, not walked (`top --offset`):
//! what one shard tells of a window of integer priorities, from the
//! bounds of `Queue::count_window` (Slurm's model only).
//!
//! [`PriorityReader::count_above`] counts the shard's ranked jobs whose
//! priority is above a threshold: the jobs surely above it counted whole
//! per sorted vector, only the band evaluated. [`PriorityReader::window`]
//! counts those above a window and evaluates the ones inside it (ranked by
//! the queue's order: priority descending, submit time, job id). The
//! driver's search (`worker::page`) asks every shard for counts at a few
//! thresholds until the window holding the page is narrow, then for the
//! window: the page is its entries after the jobs above, whatever the
//! depth. Cost per count: as `position`'s count (the groups whose best job
//! can reach the threshold, the band), not the jobs ahead.
//!
//! Slurm's priority is at least 1 (the model's floor): a window that
//! reaches the floor takes every job whose sum may be below it too.

use std::cmp::Ordering;

use fairflow_model::priority_formula::PRIORITY_MAX_U32;
use fairflow_model::report::{JobIdKey, JobState};
use fairflow_model::{PriorityModel, Time};

use super::{queue_floor, PriorityReader};
use crate::priority::queue::Counted;
use crate::types::{JobId, JobIdSet};

/// A ranked job of a window: what orders it in the queue, and its id in
/// the shard that holds it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct WindowJob {
    /// Its integer priority (the queue order's first key, descending).
    pub priority: u64,
    /// Its submit time (the second).
    pub submit_at: Time,
    /// Its name (the third, as [`JobIdKey`] orders ids).
    pub name: String,
    /// Its id in the shard.
    pub job: JobId,
}

impl WindowJob {
    /// The queue's order (`Less`: `self` first).
    pub fn queue_order(&self, other: &WindowJob) -> Ordering {
        other
            .priority
            .cmp(&self.priority)
            .then(self.submit_at.cmp(&other.submit_at))
            .then_with(|| JobIdKey::compare(&self.name, &other.name))
    }
}

/// What one shard found of a window of priorities.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct WindowCount {
    /// Its ranked jobs above the window.
    pub above: u64,
    /// Its ranked jobs inside the window, in queue order.
    pub jobs: Vec<WindowJob>,
}

impl PriorityReader {
    /// How many of this shard's ranked jobs have a priority above
    /// `threshold` at `now`; `None` where the bounds do not count them
    /// (another model, `INCR_ONLY`, a threshold at the cap, bounds that do
    /// not hold at `now`).
    pub fn count_above(&mut self, threshold: u64, now: Time) -> Option<u64> {
        Some(self.window((threshold, threshold), now)?.above)
    }

    /// This shard's ranked jobs above the window `[low, high]` of
    /// priorities at `now` (counted) and inside it (evaluated and ordered);
    /// `None` as for [`PriorityReader::count_above`].
    pub fn window(&mut self, (low, high): (u64, u64), now: Time) -> Option<WindowCount> {
        self.absorb();
        if self.queue.any_record().is_none() {
            return Some(WindowCount::default());
        }
        let counted = self.counted((low, high), now, None)?;
        let mut window = WindowCount {
            above: counted.whole
                + counted
                    .sure
                    .iter()
                    .map(|p| p.jobs.len() as u64)
                    .sum::<u64>(),
            jobs: Vec::new(),
        };
        for &(record, fairshare) in &counted.band {
            let Some((JobState::Pending, priority)) = record.priority_at(fairshare, now, None)
            else {
                continue;
            };
            if priority > high {
                window.above += 1;
            } else if priority >= low {
                window.jobs.push(WindowJob {
                    priority,
                    submit_at: record.row.submit_at,
                    name: self.name_of(record).to_string(),
                    job: record.job(),
                });
            }
        }
        window.jobs.sort_by(WindowJob::queue_order);
        Some(window)
    }

    /// The queue's count of the window `[low, high]` (see the module
    /// documentation), the jobs of `left_out` left out of its band; `None`
    /// where it is not counted.
    pub(super) fn counted<'q>(
        &'q self,
        (low, high): (u64, u64),
        now: Time,
        left_out: Option<&'q JobIdSet>,
    ) -> Option<Counted<'q>> {
        let first = self.queue.any_record()?;
        let model = first.model();
        if model != PriorityModel::Slurm || first.incr_only() || high >= PRIORITY_MAX_U32 {
            return None;
        }
        // At or below the floor a sum below it still ranks at the floor.
        let reach = if low <= queue_floor(model) { 0 } else { low };
        self.queue
            .count_window(now, (reach, high.max(low)), true, left_out)
    }
}
