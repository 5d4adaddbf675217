//! The engine's snapshot ([`Engine::snapshot`]) and its restore
//! ([`Engine::restore`]): the book with the `INCR_ONLY` memory the
//! dataflow keeps written into it; a restore rebuilds the dataflow's inputs
//! from the book as one batch.

use std::collections::BTreeMap;

use super::{tree_sends, Engine, EngineError};
use crate::worker::{Command, Reply};

impl Engine {
    /// The engine's state as a snapshot (format in `fairflow_book::snapshot`,
    /// which the batch engine reads too): the book, with the `INCR_ONLY`
    /// memory the dataflow keeps written into it, not the dataflow.
    pub fn snapshot(&self) -> Result<Vec<u8>, EngineError> {
        self.send(Command::ReadFloors)?;
        let floors = match self.reply() {
            Ok(Reply::Floors(floors)) => floors,
            _ => return Err(EngineError::WorkersGone),
        };
        // The floors of the jobs' current stays in the queue, as the oracle keeps them.
        let jobs = &self.book.state().jobs;
        let floors = floors
            .into_iter()
            .filter(|(job, (stay, _))| {
                jobs.get(job)
                    .is_some_and(|j| (j.submit_at, j.start_count) == *stay)
            })
            .map(|(job, (_, floor))| (job, floor))
            .collect::<BTreeMap<String, u64>>();
        if floors == self.book.state().priority_floor {
            // Without `INCR_ONLY` (no floors): no copy of the book.
            return Ok(fairflow_book::snapshot::encode(&self.book, self.applied));
        }
        let mut book = self.book.clone();
        *book.priority_floor_mut() = floors;
        Ok(fairflow_book::snapshot::encode(&book, self.applied))
    }

    /// Replace the engine's state by a snapshot (of either engine, with any
    /// number of workers): the dataflow's inputs are rebuilt from the book as
    /// one batch. A foreign or damaged snapshot is an error and changes
    /// nothing.
    pub fn restore(&mut self, snapshot: &[u8]) -> Result<(), EngineError> {
        let (mut book, applied) = fairflow_book::snapshot::decode(snapshot)?;
        let jobs = &book.state().jobs;
        let floors = book
            .state()
            .priority_floor
            .iter()
            .filter_map(|(id, floor)| {
                let job = jobs.get(id)?;
                Some((id.clone(), ((job.submit_at, job.start_count), *floor)))
            })
            .collect();
        book.track_changes(true);
        let changes = book.take_changes();
        self.book = book;
        self.applied = applied;
        self.send(Command::SetFloors(floors))?;
        match self.reply() {
            Ok(Reply::Done) => {}
            _ => return Err(EngineError::WorkersGone),
        }
        let (retracted, inserted) = self.tree_feed.replace_with(&self.book, &mut self.names);
        self.job_feed.replace_all();
        let old = self.family;
        let family = self.configured_family();
        let trees = tree_sends(old, family, retracted, inserted);
        self.send_changes(old, family, trees, &changes, true)?;
        Ok(())
    }
}
