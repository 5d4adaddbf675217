//! The service's backend over an engine (`Box<dyn fairflow_engine::Engine>`):
//! writes apply to the engine, reads render its answers with the same
//! renderers as the commands' `--json`. An engine error is returned, never
//! a panic: the applier rebuilds the engine from the durable state.

use fairflow_book::JobPhase;
use fairflow_engine::Engine;
use fairflow_ingest::{LogLine, Rejection};
use fairflow_serve::plot::tree::{TreeColor, TreeOptions, TreePicture};
use fairflow_serve::slurm_json::{self, JobFacts};
use fairflow_serve::{audit, explain, overview, plot, position, sprio, sshare, top};

use crate::backend::{Backend, Gauges, Query, QueryError};
use crate::metrics::association_gauges;

/// An engine serving the service.
pub struct EngineBackend {
    engine: Box<dyn Engine>,
}

impl EngineBackend {
    /// Serve `engine`.
    pub fn new(engine: Box<dyn Engine>) -> Self {
        EngineBackend { engine }
    }
}

impl Backend for EngineBackend {
    fn apply(&mut self, lines: Vec<LogLine>) -> Result<Vec<Rejection>, String> {
        self.engine.apply(lines).map_err(|e| e.to_string())
    }

    fn query(&mut self, query: &Query) -> Result<String, QueryError> {
        let internal = |e: fairflow_engine::EngineError| {
            if e.is_not_found() {
                QueryError::NotFound(e.to_string())
            } else {
                QueryError::Internal(e.to_string())
            }
        };
        let engine = &mut self.engine;
        Ok(match query {
            Query::Top {
                k,
                offset,
                format,
                selection,
            } => top::render_page(
                &engine.top_page(*offset, *k, selection).map_err(internal)?,
                *offset,
                *k,
                *format,
            ),
            Query::Audit {
                top,
                min_factor_millionths,
                format,
            } => {
                let found = run_audit(engine.as_mut(), *min_factor_millionths as f64 / 1e6)
                    .map_err(internal)?;
                audit::render(&found, *top, *format)
            }
            Query::FairnessErrors { limit } => {
                let found = run_audit(engine.as_mut(), 1.0).map_err(internal)?;
                serde_json::to_string(&audit::account_errors(&found, *limit))
                    .expect("plain values always serialize")
            }
            Query::Position { job, json } => {
                let place = engine.position(job).map_err(internal)?;
                if *json {
                    position::render_json(&place)
                } else {
                    position::render_text(&place)
                }
            }
            Query::Sshare { format, selection } => {
                let mut table = engine.fairshare().map_err(internal)?;
                selection.fairshare(&mut table);
                sshare::render(&table, *format)
            }
            Query::Sprio {
                normalized,
                format,
                selection,
                slurm,
            } => {
                let mut jobs = engine.priorities().map_err(internal)?;
                selection.jobs(&mut jobs);
                match slurm {
                    Some(view) => sprio::slurm_format::answer(
                        &jobs,
                        engine.config(),
                        *normalized,
                        view,
                        !selection.users.is_empty(),
                    )
                    .map_err(|e| QueryError::BadRequest(e.to_string()))?,
                    None => sprio::render(&jobs, *normalized, *format),
                }
            }
            Query::JobPhases => {
                let mut lines = String::new();
                for (id, job) in &engine.book().state().jobs {
                    let phase = match job.phase {
                        JobPhase::Pending => "pending",
                        JobPhase::Held => "held",
                        JobPhase::Running { .. } => "running",
                    };
                    lines.push_str(id);
                    lines.push('\t');
                    lines.push_str(phase);
                    lines.push('\n');
                }
                lines
            }
            Query::SlurmJobs => {
                let listed = engine.priorities().map_err(internal)?;
                let state = engine.book().state();
                let facts: Vec<JobFacts> = listed
                    .into_iter()
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
                            priority,
                        })
                    })
                    .collect();
                slurm_json::render_jobs(&facts, engine.now().unwrap_or(0))
            }
            Query::Associations { limit } => {
                let table = engine.fairshare().map_err(internal)?;
                serde_json::to_string(&association_gauges(&table, *limit))
                    .expect("plain values always serialize")
            }
            Query::PlotTree {
                color,
                min_width_px,
                width_px,
            } => {
                let table = engine.fairshare().map_err(internal)?;
                tree_svg(&table, *color, *min_width_px, *width_px)?
            }
            Query::Overview {
                accounts,
                color,
                min_width_px,
                width_px,
            } => {
                let table = engine.fairshare().map_err(internal)?;
                let svg = tree_svg(&table, *color, *min_width_px, *width_px)?;
                overview::render(&table, *accounts, &svg)
            }
            Query::WhatIf {
                proposal,
                k,
                format,
            } => {
                let lines = fairflow_ingest::reader::read_events(proposal.as_bytes())
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| QueryError::BadRequest(format!("reading the proposal: {e}")))?;
                let answer =
                    fairflow_engine::whatif::evaluate(engine.book(), engine.applied(), lines)
                        .map_err(|e| QueryError::BadRequest(e.to_string()))?;
                fairflow_serve::whatif::render(&answer, *k, *format)
            }
            Query::Explain { job, json } => {
                let why = engine.explain(job).map_err(internal)?;
                if *json {
                    explain::render_json(&why.job, why.algorithm, &why.path)
                } else {
                    explain::render_text(&why.job, why.algorithm, &why.path)
                }
            }
        })
    }

    fn snapshot(&mut self) -> Result<Vec<u8>, String> {
        self.engine.snapshot().map_err(|e| e.to_string())
    }

    fn restore(&mut self, snapshot: &[u8]) -> Result<(), String> {
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
