//! The service's backend over an engine (`Box<dyn fairflow_engine::Engine>`):
//! writes apply to the engine, reads render its answers with the same
//! renderers as the commands' `--json`, off the applier (`backend::Answer`).
//! An engine error is returned, never a panic: the applier rebuilds the
//! engine from the durable state. The last whole read of the jobs'
//! priorities is shared by every read until the state changes.

use fairflow_book::JobPhase;
use fairflow_engine::Engine;
use fairflow_ingest::slurm_live::jobs::{LiveJob, LiveState};
use fairflow_ingest::{LogLine, Rejection};
use fairflow_serve::plot::tree::{TreeColor, TreeOptions, TreePicture};
use fairflow_serve::slurm_json::{self, JobFacts};
use fairflow_serve::{audit, explain, overview, plot, position, sprio, sshare, top};

use std::sync::Arc;

use fairflow_model::report::{JobPriority, Selection};

use crate::backend::{Answer, Backend, Gauges, Query, QueryError};
use crate::metrics::association_gauges;

/// An engine serving the service.
pub struct EngineBackend {
    engine: Box<dyn Engine>,
    /// The last whole read of every job's priority, and the state it was
    /// read at: reads of an unchanged state share it, so slow readers of
    /// the same table hold one copy.
    priorities: Option<(StateKey, Arc<Vec<JobPriority>>)>,
}

/// What identifies a state: the events applied and the engine's time.
type StateKey = (u64, Option<fairflow_model::Time>);

impl EngineBackend {
    /// Serve `engine`.
    pub fn new(engine: Box<dyn Engine>) -> Self {
        EngineBackend {
            engine,
            priorities: None,
        }
    }

    /// Every job's priority, shared with the reads since the last change.
    fn priorities(&mut self) -> Result<Arc<Vec<JobPriority>>, QueryError> {
        let key = (self.engine.applied(), self.engine.now());
        if let Some((cached, jobs)) = &self.priorities {
            if *cached == key {
                return Ok(jobs.clone());
            }
        }
        self.priorities = None;
        let jobs = Arc::new(self.engine.priorities().map_err(internal)?);
        self.priorities = Some((key, jobs.clone()));
        Ok(jobs)
    }

    /// The selected jobs: the shared read itself when all are selected.
    fn selected(&mut self, selection: &Selection) -> Result<Arc<Vec<JobPriority>>, QueryError> {
        let all = self.priorities()?;
        if selection.is_empty() {
            return Ok(all);
        }
        let mut jobs = all.as_ref().clone();
        selection.jobs(&mut jobs);
        Ok(Arc::new(jobs))
    }

    /// slurmrestd's facts of every listed job.
    fn job_facts(&mut self) -> Result<Vec<JobFacts>, QueryError> {
        let listed = self.priorities()?;
        let state = self.engine.book().state();
        Ok(listed
            .iter()
            .filter_map(|priority| {
                let job = state.jobs.get(&priority.job)?;
                let count = |name: &str| {
                    let tres = job.spec.tres.as_ref()?;
                    tres.get(name).map(|n| *n as u64)
                };
                Some(JobFacts {
                    partitions: job.spec.partition.clone().unwrap_or_default(),
                    qos: job.spec.qos.clone().unwrap_or_default(),
                    eligible_at: job.spec.begin.unwrap_or(job.submit_at),
                    time_limit_mins: job.spec.time_limit_secs.map(|s| s.div_ceil(60)),
                    cpus: count("cpu"),
                    nodes: count("node"),
                    priority: priority.clone(),
                })
            })
            .collect())
    }
}

/// An engine error as a read's: not found, else the engine failed.
fn internal(e: fairflow_engine::EngineError) -> QueryError {
    if e.is_not_found() {
        QueryError::NotFound(e.to_string())
    } else {
        QueryError::Internal(e.to_string())
    }
}

/// One rendered text as pieces.
fn text(render: impl FnOnce() -> String + Send + 'static) -> Answer {
    Answer::later(move || Ok(std::iter::once(render())))
}

impl Backend for EngineBackend {
    fn apply(&mut self, lines: Vec<LogLine>) -> Result<Vec<Rejection>, String> {
        self.priorities = None;
        self.engine.apply(lines).map_err(|e| e.to_string())
    }

    fn query(&mut self, query: &Query) -> Result<String, QueryError> {
        self.answer(query)?.into_text()
    }

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
                let page = engine.top_page(offset, k, &selection).map_err(internal)?;
                text(move || top::render_page(&page, offset, k, format))
            }
            Query::Audit {
                top,
                min_factor_millionths,
                format,
            } => {
                let found = run_audit(engine.as_mut(), min_factor_millionths as f64 / 1e6)
                    .map_err(internal)?;
                text(move || audit::render(&found, top, format))
            }
            Query::FairnessErrors { limit } => {
                let found = run_audit(engine.as_mut(), 1.0).map_err(internal)?;
                text(move || {
                    serde_json::to_string(&audit::account_errors(&found, limit))
                        .expect("plain values always serialize")
                })
            }
            Query::Position { job, json } => {
                let place = engine.position(&job).map_err(internal)?;
                text(move || {
                    if json {
                        position::render_json(&place)
                    } else {
                        position::render_text(&place)
                    }
                })
            }
            Query::Sshare { format, selection } => {
                let mut table = engine.fairshare().map_err(internal)?;
                selection.fairshare(&mut table);
                text(move || sshare::render(&table, format))
            }
            Query::Sprio {
                normalized,
                format,
                selection,
                slurm,
            } => {
                let config = engine.config().clone();
                let users = !selection.users.is_empty();
                let jobs = self.selected(&selection)?;
                Answer::later(move || match slurm {
                    Some(view) => {
                        sprio::slurm_format::answer_pieces(jobs, &config, normalized, &view, users)
                            .map_err(|e| QueryError::BadRequest(e.to_string()))
                    }
                    None => Ok(sprio::render_pieces(jobs, normalized, format)),
                })
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
                    };
                    let json = serde_json::to_string(&live)
                        .map_err(|e| QueryError::Internal(e.to_string()))?;
                    lines.push_str(id);
                    lines.push('\t');
                    lines.push_str(&json);
                    lines.push('\n');
                }
                Answer::Text(lines)
            }
            Query::SlurmJobs => {
                let now = engine.now().unwrap_or(0);
                let facts = Arc::new(self.job_facts()?);
                Answer::later(move || Ok(slurm_json::render_jobs_pieces(facts, now)))
            }
            Query::Associations { limit } => {
                let table = engine.fairshare().map_err(internal)?;
                text(move || {
                    serde_json::to_string(&association_gauges(&table, limit))
                        .expect("plain values always serialize")
                })
            }
            Query::PlotTree {
                color,
                min_width_px,
                width_px,
            } => {
                let table = engine.fairshare().map_err(internal)?;
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
                let table = engine.fairshare().map_err(internal)?;
                Answer::later(move || {
                    let svg = tree_svg(&table, color, min_width_px, width_px)?;
                    Ok(std::iter::once(overview::render(&table, accounts, &svg)))
                })
            }
            Query::WhatIfBase => Answer::WhatIfBase(Box::new(fairflow_engine::whatif::Base {
                book: engine.book().clone(),
                applied: engine.applied(),
            })),
            Query::Explain { job, json } => {
                let why = engine.explain(&job).map_err(internal)?;
                text(move || {
                    if json {
                        explain::render_json(&why.job, why.algorithm, &why.path)
                    } else {
                        explain::render_text(&why.job, why.algorithm, &why.path)
                    }
                })
            }
        })
    }

    fn snapshot(&mut self) -> Result<Vec<u8>, String> {
        self.engine.snapshot().map_err(|e| e.to_string())
    }

    fn restore(&mut self, snapshot: &[u8]) -> Result<(), String> {
        self.priorities = None;
        self.engine.restore(snapshot).map_err(|e| e.to_string())
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
    plot::svg(&TreePicture::new(table, &options)).map_err(|e| QueryError::BadRequest(e.to_string()))
}

/// The audit of the engine's state (`fairflow_serve::audit::audit`): its
/// table, its users' factors and its listed jobs, as of its time.
pub fn run_audit(
    engine: &mut dyn Engine,
    min_factor: f64,
) -> Result<audit::Audit, fairflow_engine::EngineError> {
    let table = engine.fairshare()?;
    let factors = engine.user_factors()?;
    let listed = engine.priorities()?;
    let now = engine.now().unwrap_or(0);
    Ok(audit::audit(&table, &factors, &listed, now, min_factor))
}
