//! `fairflow bench`'s `reads` object: every read the service answers besides
//! the top-k read, timed through the service's own code, each answer
//! compared with the batch oracle's on the same state.
//!
//! The engine is served as `fairflow serve` serves it: an
//! `fairflow_service::engine_backend::EngineBackend` over the incremental
//! engine, whose `answer` (the applier's read) and rendering (the HTTP
//! layer's, done here in full) are timed together. Every sample first moves
//! the state, untimed, as the top-k reads do (`bench_reads::next_state`:
//! alternately a one-second `tick` and one usage event), so no read finds
//! an answer computed before it:
//! - `position`: `Query::Position` of jobs at ranks spread over the queue
//!   (the first, the middle, the last, in turn);
//! - `top_offset`: `Query::Top` of `k` jobs from offsets spread over the
//!   queue (0, the middle, the last page);
//! - `whatif`: one share change proposed (`Query::WhatIf`: the incremental
//!   engine answers it from its live state, as the service's applier does;
//!   a proposal it does not take is the oracle's evaluation on a copy
//!   (`Query::WhatIfBase`), as the service runs it), the answer rendered as
//!   JSON for `k` rows;
//! - `explain`: `Query::Explain` of the jobs `position` reads;
//! - `audit`: `Query::Audit` of the tree (`fairflow audit`'s defaults);
//! - `sshare`: `Query::Sshare` of every association, long form (`sshare -a
//!   -l`), rendered whole;
//! - `metrics`: `/metrics` with `--metrics-associations all`: the
//!   `Query::FairshareTable` read, its rows chosen (`ScrapedRows::select`)
//!   and rendered by the service's `Metrics`; the per-association families
//!   (written again untimed) are compared;
//! - `history`: a fair-share history step's read as the service's applier
//!   takes it (`history::read_step` at the engine's time, the default rank
//!   depth); the step's record (`history::record::encode_step`, untimed)
//!   is compared.
//!
//! The first `--oracle-samples` states of each read are checked: the read
//! is recorded in the step stream (`bench_setup::Step::Check`) with the
//! digest of the engine's answer, and the oracle phase answers it with the
//! same function ([`answer`]) over the batch engine at the same place in the
//! stream, once per state. `restart` and `one_off_top` are in
//! `bench_restart`.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{anyhow, Context};
use fairflow_engine::whatif::{evaluate_base, Proposal};
use fairflow_engine::Engine;
use fairflow_ingest::LogLine;
use fairflow_model::report::position::ACCOUNTS_SHOWN;
use fairflow_model::report::Selection;
use fairflow_model::{Event, Time};
use fairflow_serve::OutputFormat;
use fairflow_service::backend::{Answer, Backend, Query};
use fairflow_service::engine_backend::EngineBackend;
use fairflow_service::history::record::encode_step;
use fairflow_service::history::{Dictionary, StepRead, DEFAULT_RANK_DEPTH};
use fairflow_service::metrics::{Metrics, ScrapeSettings, ScrapedRows};
use fairflow_workload::Generator;

use crate::bench_args::{Read, ReadCheck, ReadKind};
use crate::bench_reads::{next_state, ReadSettings};
use crate::bench_setup::{scaled, Recorder};
use crate::measure::Latency;

/// Where in the queue the reads of `position`, `explain` and `top_offset`
/// look, in turn: the first, the middle, the last.
const QUEUE_FRACTIONS: [f64; 3] = [0.0, 0.5, 1.0];

/// `fairflow audit`'s defaults (`--top 5 --min-factor 0.5`).
const AUDIT_TOP: usize = 5;
const AUDIT_MIN_FACTOR_MILLIONTHS: u64 = 500_000;

/// What the `reads` object holds for one read.
pub(crate) struct ReadMeasured {
    pub kind: ReadKind,
    pub latency: Latency,
}

/// A stable digest of an answer's text (equal texts, equal digests).
pub(crate) fn digest(text: &str) -> u64 {
    let mut hasher = DefaultHasher::new();
    text.hash(&mut hasher);
    hasher.finish()
}

/// `read` answered by `backend` as the service answers it, the text
/// compared with the oracle's: the answer rendered whole (for `/metrics`,
/// its per-association families). The same function answers for the engine
/// and the oracle.
pub(crate) fn answer(backend: &mut EngineBackend, read: &Read, k: usize) -> anyhow::Result<String> {
    match read {
        Read::Query(query) => Ok(backend.answer(query)?.into_text()?),
        Read::Metrics => Ok(association_text(&scraped_rows(backend)?)),
        Read::History => Ok(step_text(&backend.read_history_step(DEFAULT_RANK_DEPTH)?)),
        Read::WhatIf(events) => {
            let proposal: Vec<LogLine> = events
                .iter()
                .enumerate()
                .map(|(index, event)| LogLine {
                    line: index as u64 + 1,
                    event: Ok(event.clone()),
                })
                .collect();
            let query = Query::WhatIf {
                proposal: Proposal(proposal.clone()),
                k,
                format: OutputFormat::Json,
            };
            let base = match backend.answer(&query)? {
                Answer::WhatIfBase(base) => base,
                // Answered from the engine's live state.
                answered => return Ok(answered.into_text()?),
            };
            let evaluated = evaluate_base(*base, proposal, &|| false)
                .map_err(|e| anyhow!("the bench's what-if failed: {e}"))?;
            Ok(fairflow_serve::whatif::render(
                &evaluated,
                k,
                OutputFormat::Json,
            ))
        }
    }
}

/// A history step's record (every association's 44-byte row), as hex.
fn step_text(step: &StepRead) -> String {
    let (rows, _) = encode_step(step, &mut Dictionary::default());
    rows.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// The rows a scrape of `/metrics` with `--metrics-associations all` reads.
fn scraped_rows(backend: &mut EngineBackend) -> anyhow::Result<ScrapedRows> {
    let Answer::FairshareTable { table, now } = backend.answer(&Query::FairshareTable)? else {
        return Err(anyhow!("the service answered no fair-share table"));
    };
    let settings = ScrapeSettings {
        associations: Some(usize::MAX),
        ..ScrapeSettings::default()
    };
    Ok(ScrapedRows::select(table, now, &settings))
}

/// The per-association families of `rows`, as a scrape writes them.
fn association_text(rows: &ScrapedRows) -> String {
    let mut text = String::new();
    rows.write_associations(&mut text);
    text
}

/// A scrape of `/metrics` as the service answers it (the table read, its
/// rows chosen, the whole exposition rendered); its rows.
fn scrape(backend: &mut EngineBackend, metrics: &Metrics) -> anyhow::Result<Arc<ScrapedRows>> {
    let rows = Arc::new(scraped_rows(backend)?);
    metrics.set_scraped(Some(rows.clone()));
    std::hint::black_box(metrics.render(Some(backend.gauges()), 0));
    Ok(rows)
}

/// The oracle's answer to `read` over `oracle` (served as the engine is),
/// and the oracle handed back.
pub(crate) fn oracle_digest(
    oracle: Box<dyn Engine>,
    read: &Read,
    k: usize,
) -> (Box<dyn Engine>, anyhow::Result<u64>) {
    let mut backend = EngineBackend::new(oracle);
    let found = answer(&mut backend, read, k).map(|text| digest(&text));
    (backend.into_engine(), found)
}

/// Apply `events` to `backend` untimed, through `recorder` (so the oracle
/// and the log follow); a rejected event is a generator bug.
pub(crate) fn apply_untimed(
    backend: &mut EngineBackend,
    recorder: &mut Recorder,
    events: Vec<Event>,
) -> anyhow::Result<()> {
    let rejected = backend
        .apply(recorder.apply(events)?)
        .map_err(|e| anyhow!(e))?;
    match rejected.first() {
        Some(rejection) => Err(anyhow!(
            "a generated event was rejected (a generator bug): {rejection}"
        )),
        None => Ok(()),
    }
}

/// The jobs and page offsets the reads look at, from the queue once.
struct Places {
    jobs: Vec<String>,
    offsets: Vec<usize>,
}

impl Places {
    /// The places of a queue of `length` entries read `k` at a time, each
    /// job the entry at its place (`job_at`, by index).
    fn of(
        length: usize,
        k: usize,
        mut job_at: impl FnMut(usize) -> anyhow::Result<Option<String>>,
    ) -> anyhow::Result<Option<Places>> {
        let mut jobs = Vec::with_capacity(QUEUE_FRACTIONS.len());
        for &fraction in &QUEUE_FRACTIONS {
            match job_at(place(fraction, length - 1))? {
                Some(job) => jobs.push(job),
                None => return Ok(None),
            }
        }
        let offsets = (QUEUE_FRACTIONS.iter())
            .map(|&fraction| place(fraction, length.saturating_sub(k)))
            .collect();
        Ok(Some(Places { jobs, offsets }))
    }
}

/// The place `fraction` of the way to `last`.
fn place(fraction: f64, last: usize) -> usize {
    (fraction * last as f64).round() as usize
}

/// The places, each job read as a one-job page of the queue (a counted
/// page where the engine counts it). Not the whole queue: the setup's own
/// million-job read would be freed while the first timed reads run, a
/// cost no read of the service's pays unless a user reads the whole queue.
/// The whole queue is read only where the book's count of pending jobs is
/// not the queue's length (several pairs a job): a page at the last place
/// comes back empty, or one past it does not.
fn places(engine: &mut dyn Engine, k: usize) -> anyhow::Result<Places> {
    let length = engine.queue_len() as usize;
    anyhow::ensure!(length > 0, "the queue is empty: no read to time");
    let all = Selection::default();
    if engine.top_page(length, 1, &all)?.is_empty() {
        let paged = Places::of(length, k, |index| {
            Ok(engine
                .top_page(index, 1, &all)?
                .first()
                .map(|job| job.job.clone()))
        })?;
        if let Some(places) = paged {
            return Ok(places);
        }
    }
    let queue = engine.top(usize::MAX)?;
    anyhow::ensure!(!queue.is_empty(), "the queue is empty: no read to time");
    let whole = Places::of(queue.len(), k, |index| Ok(Some(queue[index].job.clone())))?;
    whole.ok_or_else(|| anyhow!("the queue has no job at a place"))
}

/// The read of `kind`'s `sample`-th sample.
fn read_of(
    kind: ReadKind,
    sample: usize,
    places: &Places,
    k: usize,
    generator: &mut Generator,
) -> Read {
    let turn = sample % QUEUE_FRACTIONS.len();
    let json = true;
    match kind {
        ReadKind::Position => Read::Query(Query::Position {
            job: places.jobs[turn].clone(),
            json,
            top_accounts: ACCOUNTS_SHOWN,
        }),
        ReadKind::Explain => Read::Query(Query::Explain {
            job: places.jobs[turn].clone(),
            json,
        }),
        ReadKind::TopOffset => Read::Query(Query::Top {
            k,
            offset: places.offsets[turn],
            format: OutputFormat::Json,
            selection: Selection::default(),
        }),
        ReadKind::WhatIf => Read::WhatIf(vec![generator.share_change()]),
        ReadKind::Audit => Read::Query(Query::Audit {
            top: AUDIT_TOP,
            min_factor_millionths: AUDIT_MIN_FACTOR_MILLIONTHS,
            format: OutputFormat::Json,
        }),
        ReadKind::Sshare => Read::Query(Query::Sshare {
            format: OutputFormat::Table,
            selection: Selection::default(),
        }),
        ReadKind::Metrics => Read::Metrics,
        ReadKind::History => Read::History,
        ReadKind::Restart | ReadKind::OneOffTop => unreachable!("not a served read"),
    }
}

/// What the served reads need to know of the bench.
pub(crate) struct ServedSettings<'a> {
    pub reads: &'a ReadSettings,
    pub kinds: &'a [ReadKind],
    pub samples_scale: f64,
    /// States of each read whose answer the oracle checks.
    pub oracle_states: usize,
}

/// Time the served reads of `settings.kinds` on `engine`, served as the
/// service serves it; every batch applied and every read to check goes to
/// `recorder`, each engine answer's digest to `digests` (by check id).
/// Returns the measurements and the backend, at the state the reads left.
pub(crate) fn measure(
    engine: Box<dyn Engine>,
    generator: &mut Generator,
    settings: &ServedSettings,
    recorder: &mut Recorder,
    digests: &mut Vec<Option<u64>>,
    progress: &dyn Fn(&str),
) -> anyhow::Result<(Vec<ReadMeasured>, EngineBackend)> {
    let k = settings.reads.k;
    let served: Vec<ReadKind> = settings
        .kinds
        .iter()
        .copied()
        .filter(|kind| !matches!(kind, ReadKind::Restart | ReadKind::OneOffTop))
        .collect();
    let mut engine = engine;
    let mut now = engine.now().unwrap_or(0);
    // Read once, untimed, before the engine is served.
    let places = if served.is_empty() {
        None
    } else {
        Some(places(engine.as_mut(), k).context("cannot read the queue's places")?)
    };
    let mut backend = EngineBackend::new(engine);
    let metrics = Metrics::new();
    let mut measured = Vec::new();
    for (kind, places) in served.into_iter().zip(places.iter().cycle()) {
        let samples = scaled(kind.default_samples(), settings.samples_scale);
        progress(&format!("reads.{}: {samples} samples", kind.key()));
        let mut latency = Latency::new()?;
        for sample in 0..samples {
            for batch in next_state(generator, settings.reads, now, sample % 2 == 0) {
                now = batch.iter().map(|e| e.t).fold(now, Time::max);
                apply_untimed(&mut backend, recorder, batch)?;
            }
            let read = read_of(kind, sample, places, k, generator);
            let started = Instant::now();
            let failed = || format!("the {} read failed", kind.key());
            let text = if let Read::Metrics = read {
                let rows = scrape(&mut backend, &metrics).with_context(failed)?;
                latency.record(started.elapsed())?;
                association_text(&rows)
            } else if let Read::History = read {
                let step = (backend.read_history_step(DEFAULT_RANK_DEPTH))
                    .map_err(|e| anyhow!(e))
                    .with_context(failed)?;
                latency.record(started.elapsed())?;
                step_text(&step)
            } else {
                let text = answer(&mut backend, &read, k).with_context(failed)?;
                latency.record(started.elapsed())?;
                text
            };
            if sample < settings.oracle_states {
                let id = digests.len();
                digests.push(Some(digest(&text)));
                recorder.check(ReadCheck { id, kind, read });
            }
        }
        measured.push(ReadMeasured { kind, latency });
    }
    Ok((measured, backend))
}
