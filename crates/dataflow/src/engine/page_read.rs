//! `top --offset` from the incremental engine counted, not walked: worker
//! 0 searches the shards' counts for the window of priorities that holds
//! the page and reads the window (`worker::page`); the page's jobs are
//! named here. Where the queue's entries are not its jobs, or a shard does
//! not count (Moab, Flux, Slurm's `INCR_ONLY`, bounds that do not hold at
//! the time), the answer is left to the read of the first `offset + k`.

use fairflow_model::report::SharedJobs;

use super::{Engine, EngineError};
use crate::worker::{Command, Reply};

impl Engine {
    /// The `k` entries of the queue from the one at `offset` (0: the
    /// first), counted (see the module documentation); `None` when the
    /// page is not counted.
    pub fn top_page_counted(
        &self,
        offset: usize,
        k: usize,
    ) -> Result<Option<SharedJobs>, EngineError> {
        if !self.entries_are_jobs() {
            return Ok(None);
        }
        let command = Command::Page(offset as u64, k as u64, self.now());
        let Reply::Page(page) = self.priority_read(command)? else {
            return Err(EngineError::WorkersGone);
        };
        Ok(page.map(|jobs| self.identify_all(jobs)))
    }
}
