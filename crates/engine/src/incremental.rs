//! The incremental engine (`fairflow_dataflow::Engine`: timely workers
//! maintaining the tree, the fair-share factors and job priorities) as an
//! [`Engine`].

use std::collections::BTreeMap;

use fairflow_book::Book;
use fairflow_ingest::{LogLine, Rejection};
use fairflow_model::report::position::Position;
use fairflow_model::report::{
    CompactJobs, FairshareRow, FairshareTable, JobPriority, PendingJobsByUser, SharedJobs,
    UsageRow, WaitingUser,
};
use fairflow_model::{Algorithm, Config, Time};

use crate::{Engine, EngineError, WorkerLayout};

/// The incremental engine; see the module documentation.
#[derive(Debug)]
pub struct IncrementalEngine {
    /// The dataflow engine.
    pub engine: fairflow_dataflow::Engine,
}

impl IncrementalEngine {
    /// Start `workers` timely workers in this process under `config`.
    pub fn start(workers: usize, config: Config) -> Result<IncrementalEngine, EngineError> {
        Ok(IncrementalEngine {
            engine: fairflow_dataflow::Engine::start(workers, config)?,
        })
    }

    /// Start under a command-line layout (`--workers`, `--processes`,
    /// `--process`, `--hostfile`): the process hosting worker 0 gets the
    /// engine; any other process runs its workers until the computation
    /// ends and gets `None`.
    pub fn start_layout(
        layout: &WorkerLayout,
        config: Config,
    ) -> Result<Option<IncrementalEngine>, EngineError> {
        Ok(fairflow_dataflow::Engine::start_layout(layout, config)?
            .map(|engine| IncrementalEngine { engine }))
    }
}

impl Engine for IncrementalEngine {
    fn name(&self) -> &'static str {
        "incremental"
    }

    fn book(&self) -> &Book {
        self.engine.book()
    }

    fn applied(&self) -> u64 {
        self.engine.applied()
    }

    fn apply(&mut self, lines: Vec<LogLine>) -> Result<Vec<Rejection>, EngineError> {
        Ok(self.engine.apply_batch(lines)?.rejected)
    }

    fn advance_to(&mut self, t: Time) -> Result<(), EngineError> {
        Ok(self.engine.advance_to(t)?)
    }

    fn shard_holdings(&mut self) -> Result<Vec<crate::ShardHoldings>, EngineError> {
        Ok(self.engine.holdings()?)
    }

    fn fairshare(&mut self) -> Result<FairshareTable, EngineError> {
        Ok(self.engine.fairshare_table()?)
    }

    fn fairshare_with_pending(&mut self) -> Result<(FairshareTable, Vec<u64>), EngineError> {
        Ok(self.engine.fairshare_table_with_pending()?)
    }

    fn usage_rows(&mut self) -> Result<Vec<UsageRow>, EngineError> {
        Ok(self.engine.usage_rows()?)
    }

    fn user_factors(&mut self) -> Result<BTreeMap<(String, String), f64>, EngineError> {
        Ok(self.engine.user_factors()?)
    }

    fn waiting_users(
        &mut self,
        min_factor: f64,
        limit: usize,
    ) -> Result<Vec<WaitingUser>, EngineError> {
        let now = self.now().unwrap_or(0);
        Ok(self.engine.waiting_users(min_factor, limit, now)?)
    }

    fn pending_jobs_by_user(&mut self) -> Result<PendingJobsByUser, EngineError> {
        Ok(self.engine.pending_jobs_by_user()?)
    }

    fn fairshare_path(
        &mut self,
        account: &str,
        user: &str,
    ) -> Result<(Algorithm, Vec<FairshareRow>), EngineError> {
        let algorithm = self.engine.config().algorithm();
        Ok((algorithm, self.engine.fairshare_path(account, user)?))
    }

    fn priorities(&mut self) -> Result<Vec<JobPriority>, EngineError> {
        Ok(self.engine.priorities()?)
    }

    fn priorities_compact(&mut self) -> Result<CompactJobs, EngineError> {
        Ok(self.engine.priorities_compact()?)
    }

    fn top(&mut self, k: usize) -> Result<SharedJobs, EngineError> {
        Ok(self.engine.top(k)?)
    }

    fn queue_through(&mut self, id: &str) -> Result<Option<Vec<JobPriority>>, EngineError> {
        Ok(self.engine.queue_through(id)?)
    }

    fn position_counted(
        &mut self,
        id: &str,
        shown: usize,
    ) -> Result<Option<Position>, EngineError> {
        Ok(self.engine.position_counted(id, shown)?)
    }

    fn top_page_counted(
        &mut self,
        offset: usize,
        k: usize,
    ) -> Result<Option<SharedJobs>, EngineError> {
        Ok(self.engine.top_page_counted(offset, k)?)
    }

    fn whatif_rows(
        &mut self,
        proposal: &[LogLine],
        k: usize,
    ) -> Result<Option<fairflow_model::report::whatif::WhatIfRows>, EngineError> {
        Ok(self.engine.whatif_rows(proposal, k)?)
    }

    fn job(&mut self, id: &str) -> Result<Option<JobPriority>, EngineError> {
        Ok(self.engine.job(id)?)
    }

    fn snapshot(&self) -> Result<Vec<u8>, EngineError> {
        Ok(self.engine.snapshot()?)
    }

    fn restore(&mut self, snapshot: &[u8]) -> Result<(), EngineError> {
        Ok(self.engine.restore(snapshot)?)
    }
}
