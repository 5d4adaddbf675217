//! `fairflow bench`'s `restart` and `one_off_top` reads, each from files
//! the bench writes in a scratch directory of its own (removed at the end):
//! - **restart**: a service data directory as `fairflow serve` leaves it:
//!   a checkpoint of the engine's state (`fairflow_store::Checkpoints`, the
//!   engine's own snapshot) and [`TAIL_EVENTS`] usage events logged after
//!   it (`fairflow_store::EventLog`, one record per event as the applier
//!   writes them). Each sample copies it afresh and opens it with the
//!   service's own restart path (`fairflow_service::applier::start` over an
//!   `EngineBackend` of a new incremental engine: the checkpoint restored,
//!   the records replayed); the time is until the service is ready to
//!   answer. Its first answer (the top `k` as JSON) is compared with the
//!   oracle's at the same state.
//! - **one_off_top**: `fairflow top --events LOG -k K --json` on the
//!   generated log (every event the engine was given, written as it was
//!   given), through the command's own loading (`StateArgs::engine`, the
//!   batch engine that `--engine auto` takes for a one-off answer) and
//!   rendering; compared with the oracle's top at the end of the stream.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context};
use fairflow_engine::EngineChoice;
use fairflow_ingest::write::event_to_line;
use fairflow_model::report::Selection;
use fairflow_model::{Config, Event};
use fairflow_serve::OutputFormat;
use fairflow_service::applier::{self, ApplierConfig};
use fairflow_service::backend::{Backend, Query};
use fairflow_service::engine_backend::EngineBackend;
use fairflow_service::metrics::Metrics;
use fairflow_store::{Checkpoints, EventLog};
use fairflow_workload::Generator;

use crate::bench_service_reads::apply_untimed;
use crate::bench_setup::Recorder;
use crate::state_args::StateArgs;

/// Usage events logged after the checkpoint: the records a restart
/// replays.
pub(crate) const TAIL_EVENTS: usize = 100;

/// The bench's scratch directory, removed when dropped.
pub(crate) struct Scratch {
    dir: PathBuf,
}

impl Scratch {
    /// A new directory under the system's temporary directory.
    pub(crate) fn new() -> anyhow::Result<Self> {
        let dir = std::env::temp_dir().join(format!("fairflow-bench-{}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        Ok(Scratch { dir })
    }

    /// The generated log.
    pub(crate) fn log(&self) -> PathBuf {
        self.dir.join("events.jsonl")
    }

    /// The data directory as written (each restart opens a copy).
    pub(crate) fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }

    fn restart_dir(&self) -> PathBuf {
        self.dir.join("restart")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The top `k` as the service and `top --json` answer it.
pub(crate) fn top_query(k: usize) -> Query {
    Query::Top {
        k,
        offset: 0,
        format: OutputFormat::Json,
        selection: Selection::default(),
    }
}

/// Write the data directory `dir`: a checkpoint of `backend`'s state now,
/// then [`TAIL_EVENTS`] usage events applied to it (through `recorder`, so
/// the oracle and the log follow) and logged after the checkpoint.
pub(crate) fn write_data_dir(
    backend: &mut EngineBackend,
    generator: &mut Generator,
    recorder: &mut Recorder,
    dir: &Path,
) -> anyhow::Result<()> {
    fairflow_store::private_dir(dir)?;
    let checkpoints = Checkpoints::new(dir.join("checkpoints"));
    let (mut log, _) = EventLog::open(dir.join("log"))?;
    let snapshot = backend.snapshot().map_err(|e| anyhow!(e))?;
    checkpoints.write(log.next_sequence(), &snapshot)?;
    let tail: Vec<Event> = (0..TAIL_EVENTS).map(|_| generator.usage()).collect();
    let records: Vec<Vec<u8>> = tail
        .iter()
        .map(|event| event_to_line(event).into_bytes())
        .collect();
    log.append(&records)?;
    apply_untimed(backend, recorder, tail)
}

/// Copy the files of `from` (one level of directories below it) to `to`.
fn copy_dir(from: &Path, to: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)
                .with_context(|| format!("cannot copy {}", entry.path().display()))?;
        }
    }
    Ok(())
}

/// One restart: a fresh copy of the data directory opened by the
/// service's applier over a new incremental engine of `workers` workers;
/// the time until it is ready, and its top `k` answer.
pub(crate) fn restart(
    scratch: &Scratch,
    workers: usize,
    k: usize,
) -> anyhow::Result<(Duration, String)> {
    let dir = scratch.restart_dir();
    let _ = std::fs::remove_dir_all(&dir);
    copy_dir(&scratch.data_dir(), &dir)?;
    let config = ApplierConfig {
        data_dir: dir.clone(),
        checkpoint_every: u64::MAX,
        queue_capacity: 16,
        max_group: 16,
        recover: false,
    };
    let started = Instant::now();
    let engine = fairflow_engine::start(EngineChoice::Incremental { workers }, Config::default())?;
    let (handle, report, thread) =
        applier::start(EngineBackend::new(engine), config, Arc::new(Metrics::new()))
            .map_err(|e| anyhow!("the restart failed: {e}"))?;
    let elapsed = started.elapsed();
    anyhow::ensure!(
        report.replayed == TAIL_EVENTS as u64 && report.replay_rejected == 0,
        "the restart replayed {} records ({} rejected), not the {TAIL_EVENTS} logged",
        report.replayed,
        report.replay_rejected
    );
    let runtime = tokio::runtime::Builder::new_current_thread().build()?;
    let answer = runtime.block_on(handle.read(top_query(k)));
    drop(handle);
    let _ = thread.join();
    let _ = std::fs::remove_dir_all(&dir);
    Ok((elapsed, answer?))
}

/// `fairflow top --events LOG -k K --json`, as the command runs it: the
/// time from reading the log to the rendered answer, and the answer.
pub(crate) fn one_off_top(log: &Path, k: usize) -> anyhow::Result<(Duration, String)> {
    let state = StateArgs {
        events: vec![log.display().to_string()],
        workers: 1,
        processes: 1,
        ..StateArgs::default()
    };
    let started = Instant::now();
    let mut engine = state
        .engine()?
        .context("the one-off top has no engine in this process")?;
    let page = engine.top_page(0, k, &Selection::default())?;
    let text = fairflow_serve::top::render_page(&page, 0, k, OutputFormat::Json);
    Ok((started.elapsed(), text))
}
