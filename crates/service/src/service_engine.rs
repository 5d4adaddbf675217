//! The engine the live service runs on: the incremental engine (the
//! default) or the batch engine, moving to the batch engine without losing
//! anything when only it can read a checkpoint.
//!
//! - **At start**: `--engine incremental` (the default) starts the dataflow
//!   engine on `--workers` timely workers; `--engine batch` the oracle.
//! - **Checkpoints**: each engine writes its own snapshot format. A batch
//!   engine restores either format; the incremental engine restores only its
//!   own, so restoring a batch-engine checkpoint (a data directory written by
//!   the batch engine) moves to the batch engine, with
//!   a note.
//!
//! Notes go to the `notify` callback (the command line prints them on
//! standard error).

use fairflow_ingest::{LogLine, Rejection, Validator};
use fairflow_model::report::{FairshareTable, JobPriority};
use fairflow_model::{Config, Time};
use fairflow_serve::engine::{
    is_incremental_snapshot, BatchEngine, Engine, ExplainError, Explanation, IncrementalEngine,
};

/// Which engine the service is asked to run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineChoice {
    /// The incremental engine on this many timely workers (in this process).
    Incremental {
        /// Timely workers.
        workers: usize,
    },
    /// The batch oracle.
    Batch,
}

/// Where the service's notes about its engine go.
pub type Notify = Box<dyn Fn(&str) + Send>;

enum Inner {
    Incremental(Box<IncrementalEngine>),
    Batch(Box<BatchEngine>),
}

/// The service's engine; see the module documentation.
pub struct ServiceEngine {
    inner: Inner,
    notify: Notify,
}

impl std::fmt::Debug for ServiceEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceEngine")
            .field("engine", &self.name())
            .finish_non_exhaustive()
    }
}

impl ServiceEngine {
    /// Start the chosen engine under `config` (the configuration in force
    /// before the first event). Fails only when the timely workers cannot
    /// start.
    pub fn start(choice: EngineChoice, config: Config, notify: Notify) -> Result<Self, String> {
        let inner = match choice {
            EngineChoice::Batch => Inner::Batch(Box::new(BatchEngine::new(config))),
            EngineChoice::Incremental { workers } => Inner::Incremental(Box::new(
                IncrementalEngine::start(workers, config)
                    .map_err(|e| format!("cannot start the incremental engine: {e}"))?,
            )),
        };
        Ok(ServiceEngine { inner, notify })
    }

    fn engine(&self) -> &dyn Engine {
        match &self.inner {
            Inner::Incremental(engine) => engine.as_ref(),
            Inner::Batch(engine) => engine.as_ref(),
        }
    }

    fn engine_mut(&mut self) -> &mut dyn Engine {
        match &mut self.inner {
            Inner::Incremental(engine) => engine.as_mut(),
            Inner::Batch(engine) => engine.as_mut(),
        }
    }
}

impl Engine for ServiceEngine {
    fn name(&self) -> &'static str {
        self.engine().name()
    }

    fn validator(&self) -> &Validator {
        self.engine().validator()
    }

    fn apply(&mut self, lines: Vec<LogLine>) -> Vec<Rejection> {
        self.engine_mut().apply(lines)
    }

    fn advance_to(&mut self, t: Time) {
        self.engine_mut().advance_to(t)
    }

    fn now(&self) -> Option<Time> {
        self.engine().now()
    }

    fn config(&self) -> &Config {
        self.engine().config()
    }

    fn applied(&self) -> u64 {
        self.engine().applied()
    }

    fn fairshare(&mut self) -> FairshareTable {
        self.engine_mut().fairshare()
    }

    fn priorities(&mut self) -> Vec<JobPriority> {
        self.engine_mut().priorities()
    }

    fn top(&mut self, k: usize) -> Vec<JobPriority> {
        self.engine_mut().top(k)
    }

    fn explain(&mut self, job: &str) -> Result<Explanation, ExplainError> {
        self.engine_mut().explain(job)
    }

    fn queue_len(&mut self) -> u64 {
        self.engine_mut().queue_len()
    }

    fn associations(&self) -> u64 {
        self.engine().associations()
    }

    fn snapshot(&self) -> Vec<u8> {
        self.engine().snapshot()
    }

    /// The incremental engine restores its own snapshots; any other (a
    /// batch-engine checkpoint) moves the service to the batch engine,
    /// which restores it or reports why not.
    fn restore(&mut self, snapshot: &[u8]) -> Result<(), String> {
        if let Inner::Incremental(incremental) = &mut self.inner {
            if is_incremental_snapshot(snapshot) {
                return incremental.restore(snapshot);
            }
            let mut batch = BatchEngine::new(Config::default());
            batch.restore(snapshot)?;
            self.inner = Inner::Batch(Box::new(batch));
            (self.notify)(
                "the checkpoint was written by the batch engine, which the incremental engine cannot restore; the batch engine serves",
            );
            return Ok(());
        }
        self.engine_mut().restore(snapshot)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use fairflow_ingest::reader::read_events;

    use super::*;

    const LOG: &str = r#"{"op":"account","t":100,"name":"a","shares":3}
{"op":"account","t":100,"name":"b","shares":1}
{"op":"user","t":100,"user":"u1","account":"a","shares":1}
{"op":"user","t":100,"user":"u2","account":"b","shares":1}
{"op":"usage","t":110,"account":"a","user":"u1","amount":500}
{"op":"submit","t":120,"job":"1","user":"u1","account":"a"}
{"op":"submit","t":121,"job":"2","user":"u2","account":"b"}
"#;

    const TO_TICKETS: &str = r#"{"op":"config","t":130,"set":{"PriorityFlags":"TICKET_BASED"}}
{"op":"usage","t":140,"account":"b","user":"u2","amount":100}
"#;

    fn lines(text: &str) -> Vec<LogLine> {
        read_events(text.as_bytes()).map(Result::unwrap).collect()
    }

    fn notes() -> (Arc<Mutex<Vec<String>>>, Notify) {
        let notes = Arc::new(Mutex::new(Vec::new()));
        let sink = notes.clone();
        let notify: Notify = Box::new(move |note| sink.lock().unwrap().push(note.to_string()));
        (notes, notify)
    }

    fn same_answers(engine: &mut ServiceEngine, oracle: &mut BatchEngine) {
        assert_eq!(engine.fairshare(), oracle.fairshare());
        assert_eq!(engine.priorities(), oracle.priorities());
        assert_eq!(engine.top(5), oracle.top(5));
        assert_eq!(engine.applied(), oracle.applied());
    }

    #[test]
    fn a_config_event_to_ticket_based_stays_on_the_incremental_engine() {
        let (notes, notify) = notes();
        let mut engine = ServiceEngine::start(
            EngineChoice::Incremental { workers: 2 },
            Config::default(),
            notify,
        )
        .unwrap();
        let mut oracle = BatchEngine::new(Config::default());
        assert!(engine.apply(lines(LOG)).is_empty());
        oracle.apply(lines(LOG));
        same_answers(&mut engine, &mut oracle);
        assert!(engine.apply(lines(TO_TICKETS)).is_empty());
        oracle.apply(lines(TO_TICKETS));
        assert_eq!(engine.name(), "incremental");
        assert!(notes.lock().unwrap().is_empty());
        same_answers(&mut engine, &mut oracle);
    }

    #[test]
    fn restoring_a_batch_checkpoint_moves_to_the_batch_engine() {
        let mut oracle = BatchEngine::new(Config::default());
        oracle.apply(lines(LOG));
        let choice = EngineChoice::Incremental { workers: 1 };
        // An incremental checkpoint stays on the incremental engine.
        let mut source = ServiceEngine::start(choice, Config::default(), notes().1).unwrap();
        source.apply(lines(LOG));
        let (notes_kept, notify) = notes();
        let mut kept = ServiceEngine::start(choice, Config::default(), notify).unwrap();
        kept.restore(&source.snapshot()).unwrap();
        assert_eq!(kept.name(), "incremental");
        assert!(notes_kept.lock().unwrap().is_empty());
        same_answers(&mut kept, &mut oracle);
        // A batch checkpoint goes to the batch engine, with a note.
        let (notes_moved, notify) = notes();
        let mut moved = ServiceEngine::start(choice, Config::default(), notify).unwrap();
        moved.restore(&oracle.snapshot()).unwrap();
        assert_eq!(moved.name(), "batch");
        assert_eq!(notes_moved.lock().unwrap().len(), 1);
        same_answers(&mut moved, &mut oracle);
        // Bytes that are no snapshot at all are an error.
        let mut refused = ServiceEngine::start(choice, Config::default(), notes().1).unwrap();
        assert!(refused.restore(b"not a snapshot").is_err());
    }
}
