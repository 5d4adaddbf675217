//! The service's backend over an engine (`Box<dyn fairflow_engine::Engine>`):
//! writes apply to the engine, reads render its answers with the same
//! renderers as the commands' `--json`, off the applier (`backend::Answer`).
//! An engine error is returned, never a panic: the applier rebuilds the
//! engine from the durable state. The last whole read of sprio's rows is
//! shared by every read until the state changes, held compactly
//! (`fairflow_serve::sprio::SprioRows`, built off the applier by the first
//! reader that renders it).

use fairflow_book::JobPhase;
use fairflow_engine::Engine;
use fairflow_ingest::slurm_live::jobs::{LiveJob, LiveState};
use fairflow_ingest::{LogLine, Rejection};
use fairflow_serve::plot::tree::{TreeColor, TreeOptions, TreePicture};
use fairflow_serve::slurm_json::{self, JobFacts};
use fairflow_serve::{audit, explain, overview, plot, position, sprio, sshare, top};

use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use fairflow_model::report::{
    CompactJobs, FairshareRow, FairshareTable, JobPriority, PairPriority, PriorityFactor,
    Selection, SharedJobs,
};
use fairflow_serve::sprio::SprioRows;

use crate::backend::{Answer, AppliedOwn, Backend, BackendError, Gauges, Query, QueryError};
use crate::held_tables::{HeldTables, SharedTable};

/// An engine serving the service.
pub struct EngineBackend {
    engine: Box<dyn Engine>,
    /// The last whole read of sprio's rows, and the state it was read at:
    /// reads of an unchanged state share it, so slow readers of the same
    /// table hold one compact copy.
    priorities: Option<(StateKey, Arc<LazyRows>)>,
    /// The last read of the fair-share table, and the state it was read
    /// at: `sshare`, `/metrics`' tables, the live page's overview and tree
    /// share one read of an unchanged state.
    table: Option<(StateKey, Arc<FairshareTable>)>,
    /// What answers being sent hold (shared with the HTTP side): a read of
    /// every job's sprio rows at a new state is refused before it is built
    /// when rows the size of the last ones would not fit beside them.
    held_tables: Option<HeldTables>,
    /// The size of the last whole sprio rows built, bytes.
    last_rows_bytes: usize,
    /// The fair-share history's steps, taken as writes cross them.
    history: Option<crate::history::HistoryRecorder>,
}

/// sprio's rows of one read of the engine: the jobs' priorities as read,
/// compactly (on the applier), until the first reader renders them; it
/// orders them into sprio's rows (off the applier), and every other reader
/// shares those.
struct LazyRows {
    jobs: Mutex<Option<CompactJobs>>,
    rows: OnceLock<Arc<SprioRows>>,
    /// What the rows take once ordered: the jobs' encoding and sprio's
    /// index over them, bytes.
    bytes: usize,
}

impl LazyRows {
    fn of(jobs: CompactJobs) -> Arc<Self> {
        let bytes = jobs.encoded_bytes() + jobs.len() * std::mem::size_of::<usize>();
        Arc::new(LazyRows {
            jobs: Mutex::new(Some(jobs)),
            rows: OnceLock::new(),
            bytes,
        })
    }

    /// The rows as a table answers hold while they are sent.
    fn held(self: &Arc<Self>) -> SharedTable {
        SharedTable::of(self, self.bytes)
    }

    /// The rows, built by the first caller (the others wait for it).
    fn rows(&self) -> Arc<SprioRows> {
        self.rows
            .get_or_init(|| {
                let jobs = self
                    .jobs
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take()
                    .unwrap_or_default();
                Arc::new(SprioRows::of(jobs))
            })
            .clone()
    }
}

/// A fair-share table as answers hold it while they are sent: its rows
/// and their names, bytes.
fn held_table(table: &Arc<FairshareTable>) -> SharedTable {
    let names: usize = (table.rows.iter())
        .map(|row| row.account.len() + row.user.as_ref().map_or(0, String::len))
        .sum();
    let bytes = table.rows.len() * std::mem::size_of::<FairshareRow>() + names;
    SharedTable::of(table, bytes)
}

/// A page of the queue as its answer holds it while it is sent: every job
/// its allocation keeps (those before the page included), bytes.
fn held_page(page: SharedJobs) -> (Arc<SharedJobs>, SharedTable) {
    let bytes: usize = (page.held().iter())
        .map(|job| {
            std::mem::size_of::<JobPriority>()
                + job.job.len()
                + job.user.len()
                + job.account.len()
                + job.partition.len()
                + job.qos.len()
                + job.factors.len() * std::mem::size_of::<PriorityFactor>()
                + job.pairs.len() * std::mem::size_of::<PairPriority>()
        })
        .sum();
    let page = Arc::new(page);
    let table = SharedTable::of(&page, bytes);
    (page, table)
}

/// What identifies a state: the events applied and the engine's time.
type StateKey = (u64, Option<fairflow_model::Time>);

impl EngineBackend {
    /// Serve `engine`.
    pub fn new(engine: Box<dyn Engine>) -> Self {
        EngineBackend {
            engine,
            priorities: None,
            table: None,
            held_tables: None,
            last_rows_bytes: 0,
            history: None,
        }
    }

    /// Take the fair-share history's steps as writes cross them (`history`).
    pub fn with_history(mut self, recorder: crate::history::HistoryRecorder) -> Self {
        self.history = Some(recorder);
        self
    }

    /// Refuse to build a whole sprio read that `tables` would refuse to
    /// hold (the same count the HTTP side holds answers' tables in).
    pub fn with_held_tables(mut self, tables: HeldTables) -> Self {
        self.held_tables = Some(tables);
        self
    }

    /// A fair-share history step's read at the engine's time, as the
    /// applier takes it (`history::read_step`): what `fairflow bench
    /// --reads history` times.
    pub fn read_history_step(
        &mut self,
        rank_depth: u32,
    ) -> Result<crate::history::StepRead, fairflow_engine::EngineError> {
        let at = self.engine.now().unwrap_or(0);
        crate::history::read_step(self.engine.as_mut(), at, rank_depth)
    }

    /// The engine served, handed back (the shared reads are dropped).
    pub fn into_engine(self) -> Box<dyn Engine> {
        self.engine
    }

    /// What identifies the engine's state now.
    fn state_key(&self) -> StateKey {
        (self.engine.applied(), self.engine.now())
    }

    /// The fair-share table, shared with the reads since the last change.
    fn table(&mut self) -> Result<Arc<FairshareTable>, QueryError> {
        let key = self.state_key();
        let engine = &mut self.engine;
        shared(&mut self.table, key, || {
            Ok(Arc::new(engine.fairshare().map_err(QueryError::from)?))
        })
    }

    /// sprio's rows of the `selection`: of every job, shared with the reads
    /// since the last change; of some, read for this answer alone.
    fn sprio_rows(&mut self, selection: &Selection) -> Result<Arc<LazyRows>, QueryError> {
        if !selection.is_empty() {
            let mut jobs = self.engine.priorities().map_err(QueryError::from)?;
            self.engine.resolve_selection(selection).jobs(&mut jobs);
            return Ok(LazyRows::of(jobs.iter().collect()));
        }
        let key = self.state_key();
        let fresh = self.priorities.as_ref().is_some_and(|(at, _)| *at == key);
        if let (false, Some(tables)) = (fresh, &self.held_tables) {
            if !tables.admits(self.last_rows_bytes) {
                return Err(tables.refusal().into());
            }
        }
        let engine = &mut self.engine;
        let rows = shared(&mut self.priorities, key, || {
            Ok(LazyRows::of(
                engine.priorities_compact().map_err(QueryError::from)?,
            ))
        })?;
        self.last_rows_bytes = rows.bytes;
        Ok(rows)
    }
}

/// What `cache` holds if it was read at `key`, else what `read` reads, kept
/// in `cache` for the next reads.
fn shared<T>(
    cache: &mut Option<(StateKey, Arc<T>)>,
    key: StateKey,
    read: impl FnOnce() -> Result<Arc<T>, QueryError>,
) -> Result<Arc<T>, QueryError> {
    if let Some((cached, value)) = cache {
        if *cached == key {
            return Ok(value.clone());
        }
    }
    *cache = None;
    let value = read()?;
    *cache = Some((key, value.clone()));
    Ok(value)
}

/// slurmrestd's facts of a listed job (`priority`) from the book's `job`.
fn job_facts(job: &fairflow_book::Job, priority: JobPriority) -> JobFacts {
    let count = |name: &str| {
        let tres = job.spec.tres.as_ref()?;
        tres.get(name).map(|n| *n as u64)
    };
    JobFacts {
        partitions: job.spec.partition.clone().unwrap_or_default(),
        qos: job.spec.qos.clone().unwrap_or_default(),
        eligible_at: job.spec.begin.unwrap_or(job.submit_at),
        time_limit_mins: job.spec.time_limit_secs.map(|s| s.div_ceil(60)),
        cpus: count("cpu"),
        nodes: count("node"),
        priority,
    }
}

/// One rendered text as pieces.
fn text(render: impl FnOnce() -> String + Send + 'static) -> Answer {
    Answer::later(move || Ok(std::iter::once(render())))
}

impl Backend for EngineBackend {
    fn apply(&mut self, lines: Vec<LogLine>) -> Result<Vec<Rejection>, BackendError> {
        // A replay: the ticks a step applies are in the log already (or,
        // in a log written without them, cannot be logged now).
        Ok(self.apply_logging_own(lines)?.0)
    }

    fn apply_logging_own(&mut self, lines: Vec<LogLine>) -> Result<AppliedOwn, BackendError> {
        self.priorities = None;
        self.table = None;
        let applied = match &mut self.history {
            Some(history) => history
                .apply(self.engine.as_mut(), lines)
                .map(|applied| (applied.rejected, applied.ticks)),
            None => self
                .engine
                .apply(lines)
                .map(|rejected| (rejected, Vec::new())),
        };
        Ok(applied?)
    }

    fn query(&mut self, query: &Query) -> Result<String, QueryError> {
        self.answer(query)?.into_text()
    }

    // size: one arm per query kind
    /// The engine is read here (on the applier); every text is rendered
    /// where the answer's pieces are taken.
    fn answer(&mut self, query: &Query) -> Result<Answer, QueryError> {
        let query = query.clone();
        let engine = &mut self.engine;
        Ok(match query {
            Query::Top {
                k,
                offset,
                format,
                selection,
            } => {
                let page = engine
                    .top_page(offset, k, &selection)
                    .map_err(QueryError::from)?;
                let (page, held) = held_page(page);
                Answer::later(move || {
                    let page = Arc::unwrap_or_clone(page);
                    Ok(top::render_page_pieces(page, offset, k, format))
                })
                .holding(held)
            }
            Query::Audit {
                top,
                min_factor_millionths,
                format,
            } => {
                let found = run_audit(engine.as_mut(), min_factor_millionths as f64 / 1e6, top)
                    .map_err(QueryError::from)?;
                text(move || audit::render(&found, top, format))
            }
            Query::Position {
                job,
                json,
                top_accounts,
            } => {
                let place =
                    (engine.position_showing(&job, top_accounts)).map_err(QueryError::from)?;
                text(move || {
                    if json {
                        position::render_json(&place)
                    } else {
                        position::render_text(&place)
                    }
                })
            }
            Query::Sshare { format, selection } => {
                let mut table = self.table()?;
                if !selection.is_empty() {
                    let mut some = table.as_ref().clone();
                    selection.fairshare(&mut some);
                    table = Arc::new(some);
                }
                let held = held_table(&table);
                Answer::later(move || Ok(sshare::render_pieces(table, format))).holding(held)
            }
            Query::Sprio {
                normalized,
                format,
                selection,
                slurm,
            } => {
                let config = engine.config().clone();
                let users = !selection.users.is_empty();
                let sluids = match &slurm {
                    Some(view) if view.prints_sluids() => engine.book().sluids_by_job(),
                    _ => Default::default(),
                };
                let rows = self.sprio_rows(&selection)?;
                let held = rows.held();
                Answer::later(move || match slurm {
                    Some(view) => sprio::slurm_format::answer_pieces(
                        rows.rows(),
                        &config,
                        normalized,
                        &view,
                        users,
                        Arc::new(sluids),
                    )
                    .map_err(QueryError::from),
                    None => Ok(sprio::render_pieces(rows.rows(), normalized, format)),
                })
                .holding(held)
            }
            Query::JobPhases => {
                let mut lines = String::new();
                for (id, job) in &engine.book().state().jobs {
                    let state = match job.phase {
                        JobPhase::Pending => LiveState::Pending,
                        JobPhase::Held => LiveState::Held,
                        JobPhase::Running { .. } => LiveState::Running,
                    };
                    let live = LiveJob {
                        user: job.user.clone(),
                        account: job.account.clone(),
                        state,
                        submitted: job.submit_at,
                        started: job.started_at,
                        spec: job.spec.clone(),
                        sluid: job.spec.sluid,
                    };
                    let json = serde_json::to_string(&live).map_err(QueryError::from)?;
                    lines.push_str(id);
                    lines.push('\t');
                    lines.push_str(&json);
                    lines.push('\n');
                }
                Answer::Text(lines)
            }
            Query::SlurmJobs => {
                let now = self.engine.now().unwrap_or(0);
                let listed = Arc::new(self.engine.priorities_compact().map_err(QueryError::from)?);
                let held = SharedTable::of(&listed, listed.encoded_bytes());
                // A copy of the jobs is a pointer: they are shared
                // copy-on-write, so the facts are read off the applier.
                let jobs = self.engine.book().state().jobs.clone();
                Answer::later(move || {
                    let present: Vec<usize> = (0..listed.len())
                        .filter(|&i| listed.job_id(i).is_some_and(|id| jobs.contains_key(id)))
                        .collect();
                    let count = present.len();
                    let facts = move |row: usize| {
                        let priority = listed.get(present[row]).expect("a listed row");
                        let job = jobs.get(priority.job.as_str()).expect("a present job");
                        job_facts(job, priority)
                    };
                    Ok(slurm_json::render_jobs_rows(count, facts, now))
                })
                .holding(held)
            }
            Query::QueueHead => {
                let top = engine.top(1).map_err(QueryError::from)?;
                Answer::Text(
                    top.first()
                        .map(|job| job.priority.to_string())
                        .unwrap_or_default(),
                )
            }
            Query::FairshareTable => Answer::FairshareTable {
                table: self.table()?,
                now: self.engine.now().unwrap_or(0),
            },
            Query::PlotTree {
                color,
                min_width_px,
                width_px,
            } => {
                let table = self.table()?;
                Answer::later(move || {
                    tree_svg(&table, color, min_width_px, width_px).map(std::iter::once)
                })
            }
            Query::Overview {
                accounts,
                color,
                min_width_px,
                width_px,
            } => {
                let table = self.table()?;
                Answer::later(move || {
                    let svg = tree_svg(&table, color, min_width_px, width_px)?;
                    Ok(std::iter::once(overview::render(&table, accounts, &svg)))
                })
            }
            Query::WhatIfBase => Answer::WhatIfBase(Box::new(fairflow_engine::whatif::Base {
                book: engine.book().clone(),
                applied: engine.applied(),
            })),
            Query::WhatIf {
                proposal,
                k,
                format,
            } => match engine.whatif_rows(&proposal.0, k)? {
                Some(rows) => text(move || fairflow_serve::whatif::render_rows(&rows, format)),
                None => Answer::WhatIfBase(Box::new(fairflow_engine::whatif::Base {
                    book: engine.book().clone(),
                    applied: engine.applied(),
                })),
            },
            Query::Explain { job, json } => {
                let why = engine.explain(&job).map_err(QueryError::from)?;
                text(move || {
                    if json {
                        explain::render_json(&why.job, why.algorithm, &why.path, why.sluid)
                    } else {
                        explain::render_text(&why.job, why.algorithm, &why.path)
                    }
                })
            }
        })
    }

    fn snapshot(&mut self) -> Result<Vec<u8>, BackendError> {
        Ok(self.engine.snapshot()?)
    }

    fn restore(&mut self, snapshot: &[u8]) -> Result<(), BackendError> {
        self.priorities = None;
        self.table = None;
        Ok(self.engine.restore(snapshot)?)
    }

    fn engine_name(&self) -> &'static str {
        self.engine.name()
    }

    fn gauges(&mut self) -> Gauges {
        Gauges {
            pending_jobs: self.engine.queue_len(),
            associations: self.engine.associations(),
            now: self.engine.now().unwrap_or(0),
            calc_period_secs: self.engine.config().calc_period_secs,
        }
    }
}

/// The share tree of `table` as SVG (`fairflow_serve::plot::tree`).
fn tree_svg(
    table: &fairflow_model::report::FairshareTable,
    color: TreeColor,
    min_width_px: u32,
    width_px: u32,
) -> Result<String, QueryError> {
    let options = TreeOptions {
        color,
        min_width_px: min_width_px as f64,
        width_px,
    };
    Ok(plot::svg(&TreePicture::new(table, &options))?)
}

/// The audit of the engine's state (`fairflow_serve::audit::audit`): its
/// associations' usage rows (`Engine::usage_rows`) and the `top` users with a factor of at least `min_factor` whose
/// jobs wait longest, as of its time.
pub fn run_audit(
    engine: &mut dyn Engine,
    min_factor: f64,
    top: usize,
) -> Result<audit::Audit, fairflow_engine::EngineError> {
    let rows = engine.usage_rows()?;
    let waiting = engine.waiting_users(min_factor, top)?;
    let now = engine.now().unwrap_or(0);
    Ok(audit::audit(rows, waiting, now))
}
