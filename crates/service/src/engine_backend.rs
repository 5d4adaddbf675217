//! The service's backend over any [`Engine`]: writes apply to the engine,
//! reads render its answers with the same renderers as the commands' `--json`.

use fairflow_ingest::{LogLine, Rejection, Validator};
use fairflow_serve::engine::{Engine, ExplainError};
use fairflow_serve::{explain, sprio, sshare, top};

use crate::backend::{Backend, Gauges, Query, QueryError};

/// An engine serving the service.
pub struct EngineBackend<E> {
    engine: E,
}

impl<E: Engine> EngineBackend<E> {
    /// Serve `engine`.
    pub fn new(engine: E) -> Self {
        EngineBackend { engine }
    }
}

impl<E: Engine + Send + 'static> Backend for EngineBackend<E> {
    fn apply(&mut self, lines: Vec<LogLine>) -> Vec<Rejection> {
        self.engine.apply(lines)
    }

    fn query(&mut self, query: &Query) -> Result<String, QueryError> {
        Ok(match query {
            Query::Top { k, format } => top::render(&self.engine.top(*k), *k, *format),
            Query::Sshare { format } => sshare::render(&self.engine.fairshare(), *format),
            Query::Sprio { normalized, format } => {
                sprio::render(&self.engine.priorities(), *normalized, *format)
            }
            Query::Explain { job, json } => match self.engine.explain(job) {
                Ok(why) if *json => explain::render_json(&why.job, why.algorithm, &why.path),
                Ok(why) => explain::render_text(&why.job, why.algorithm, &why.path),
                Err(e @ ExplainError::Unknown { .. })
                | Err(e @ ExplainError::NoPriority { .. }) => {
                    return Err(QueryError::NotFound(e.to_string()))
                }
            },
        })
    }

    fn snapshot(&mut self) -> Vec<u8> {
        self.engine.snapshot()
    }

    fn restore(&mut self, snapshot: &[u8]) -> Result<(), String> {
        self.engine.restore(snapshot)
    }

    fn engine_name(&self) -> &'static str {
        self.engine.name()
    }

    fn validator(&self) -> Option<Validator> {
        Some(self.engine.validator().clone())
    }

    fn gauges(&mut self) -> Gauges {
        Gauges {
            pending_jobs: self.engine.queue_len(),
            associations: self.engine.associations(),
            now: self.engine.now().unwrap_or(0),
        }
    }
}
