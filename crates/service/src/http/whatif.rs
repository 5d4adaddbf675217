//! `POST /v1/whatif?k=K&format=`: what-if on the service's state. The body
//! is the proposal (JSON Lines in the event format, as `POST /v1/events`
//! takes). It is a read: it needs the token only when reads do.
//!
//! The applier is asked first (`Query::WhatIf`): share changes of existing
//! associations at the engine's time are answered there from the
//! incremental engine's live state (`Engine::whatif_rows`: applied at a new
//! logical time, read, and taken back; nothing is logged and no later
//! answer changes), in milliseconds to a walk of the queue down to the
//! changed jobs. For any other proposal the applier only copies the book,
//! which shares the jobs copy-on-write (`fairflow_book::state::Jobs`), so
//! the copy costs the applier a few milliseconds whatever the number of
//! jobs; the proposal is evaluated on the copy with the batch oracle
//! (`fairflow_engine::whatif::evaluate_base`) on a thread of its own at a
//! lower scheduling priority (nice [`EVALUATION_NICE`] on Linux), so the
//! live state is never touched, nothing is logged, and reads and writes go
//! first while it runs. A what-if is bounded:
//! - in size: its body is counted in the write budget while it is held
//!   (`budget`), and a proposal over the engine's limits of events and
//!   distinct times is a 400 naming the line and the limit;
//! - in concurrency: at most `HttpConfig::max_whatifs` are evaluated at
//!   once; the others wait for a slot until their deadline, then get 503;
//! - in time: one that has not ended by the request deadline is stopped and
//!   answered 503;
//! - by its client and the service: it is stopped when its client goes away
//!   (the request's future is dropped, and [`StopOnDrop`] raises its flag)
//!   and when the service stops ([`Stopping`]); each stop is counted in
//!   `fairflow_whatifs_stopped_total`.
//!
//! The answer is `fairflow_serve::whatif`'s (JSON by default, `table` or
//! `parsable`), rendered off the applier; a proposal with a rejected line is
//! a 400 naming every line, field and reason.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Query as UrlQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use fairflow_engine::whatif::{check_bounds, evaluate_base, Proposal, WhatIfError};
use fairflow_ingest::LogLine;
use prometheus_client::metrics::counter::Counter;
use tokio::sync::{oneshot, Notify};

use crate::backend::{Answer, Query};
use crate::http::{error, read_body, refuse_read, AppState, ReadParams};
use crate::stream::{query_error, respond};

/// The most rows of each list a what-if answers.
const MAX_ROWS: usize = 1_000_000;

/// The default number of what-ifs evaluated at once.
pub const DEFAULT_MAX_WHATIFS: usize = 1;

/// The nice value of a what-if's evaluation thread (Linux): the applier,
/// at the process's own, goes first when the cores are busy.
pub const EVALUATION_NICE: i32 = 10;

/// Run `evaluate` on a thread of its own at nice [`EVALUATION_NICE`]; its
/// answer arrives on the receiver (closed if it panicked).
fn spawn_evaluation<T: Send + 'static>(
    evaluate: impl FnOnce() -> T + Send + 'static,
) -> std::io::Result<oneshot::Receiver<T>> {
    let (sender, receiver) = oneshot::channel();
    std::thread::Builder::new()
        .name("fairflow-whatif".to_string())
        .spawn(move || {
            lower_priority();
            // The request may have ended: nobody waits for the answer.
            let _ = sender.send(evaluate());
        })?;
    Ok(receiver)
}

/// Lower this thread's scheduling priority to nice [`EVALUATION_NICE`]
/// (Linux; elsewhere it keeps the process's).
fn lower_priority() {
    if let Err(e) = fairflow_engine::thread_priority::lower_this_thread(EVALUATION_NICE) {
        tracing::debug!("the what-if thread keeps its priority: {e}");
    }
}

/// Raised when the service stops: every what-if running stops with it, and
/// no new one starts. Clones share one flag.
#[derive(Debug, Clone, Default)]
pub struct Stopping {
    raised: Arc<AtomicBool>,
    notify: Arc<Notify>,
}

impl Stopping {
    /// Raise it (the service is stopping).
    pub fn raise(&self) {
        self.raised.store(true, Ordering::SeqCst);
        self.notify.notify_waiters();
    }

    /// Is it raised?
    pub fn is_raised(&self) -> bool {
        self.raised.load(Ordering::SeqCst)
    }

    /// Wait until it is raised.
    async fn raised(&self) {
        let notified = self.notify.notified();
        if !self.is_raised() {
            notified.await;
        }
    }
}

/// Raises its what-if's stop flag when dropped: the request ended, by its
/// answer, its deadline or its client leaving. Dropped while still armed
/// (the evaluation had not ended: the client left), it counts the stop.
struct StopOnDrop {
    stop: Arc<AtomicBool>,
    stopped: Counter,
    armed: bool,
}

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if self.armed {
            self.stopped.inc();
            tracing::info!("a what-if's client went away: the what-if was stopped");
        }
    }
}

/// The proposal a what-if's body holds, read within `deadline` and
/// bounded; else the refusal to answer.
async fn read_proposal(
    state: &AppState,
    headers: &HeaderMap,
    body: Body,
    deadline: tokio::time::Instant,
) -> Result<Vec<LogLine>, Box<Response>> {
    let body = read_body(state, headers, body, deadline).await?;
    let lines =
        match fairflow_ingest::reader::read_events(&body.0[..]).collect::<Result<Vec<_>, _>>() {
            Ok(lines) => lines,
            Err(e) => {
                return Err(Box::new(error(
                    StatusCode::BAD_REQUEST,
                    format!("reading the proposal: {e}"),
                )))
            }
        };
    drop(body);
    if let Err(too_large) = check_bounds(&lines) {
        return Err(Box::new(error(
            StatusCode::BAD_REQUEST,
            too_large.to_string(),
        )));
    }
    Ok(lines)
}

/// The applier's answer to `Query::WhatIf`: the response when the engine
/// answered from its live state (or failed), else the base to evaluate on.
async fn live_or_base(
    state: &AppState,
    lines: &[LogLine],
    k: usize,
    format: fairflow_serve::OutputFormat,
) -> Result<Box<fairflow_engine::whatif::Base>, Box<Response>> {
    let query = Query::WhatIf {
        proposal: Proposal(lines.to_vec()),
        k,
        format,
    };
    match state.applier.read_answer(query).await {
        Ok(Answer::WhatIfBase(base)) => Ok(base),
        Ok(answered) => Err(Box::new(
            respond(&state.response_budget, Ok(answered), None).await,
        )),
        Err(e) => Err(Box::new(query_error(e))),
    }
}

/// The handler of `POST /v1/whatif`.
pub(crate) async fn post_whatif(
    State(state): State<AppState>,
    headers: HeaderMap,
    UrlQuery(params): UrlQuery<ReadParams>,
    body: Body,
) -> Response {
    // Outside the timeout layer: it keeps its own deadline (the request
    // timeout), so it can stop its evaluation and say so.
    let deadline = tokio::time::Instant::now() + state.config.request_timeout;
    if let Some(denied) = refuse_read(&state, &headers) {
        return denied;
    }
    let format = match params.format() {
        Ok(format) => format,
        Err(bad) => return *bad,
    };
    let k = params.k.unwrap_or(20).min(MAX_ROWS);
    let lines = match read_proposal(&state, &headers, body, deadline).await {
        Ok(lines) => lines,
        Err(refusal) => return *refusal,
    };
    let slots = state.whatif_slots.clone();
    let busy = || {
        error(
            StatusCode::SERVICE_UNAVAILABLE,
            "every what-if slot stayed busy until the request's deadline: retry later",
        )
    };
    let Ok(Ok(_slot)) = tokio::time::timeout_at(deadline, slots.acquire_owned()).await else {
        return busy();
    };
    let base = match live_or_base(&state, &lines, k, format).await {
        Ok(base) => base,
        Err(answered) => return *answered,
    };
    let stop = Arc::new(AtomicBool::new(false));
    let mut stop_on_drop = StopOnDrop {
        stop: stop.clone(),
        stopped: state.metrics.whatifs_stopped.clone(),
        armed: true,
    };
    let stopping = state.config.stopping.clone();
    let evaluation = spawn_evaluation({
        let (stop, stopping) = (stop.clone(), stopping.clone());
        move || {
            evaluate_base(*base, lines, &|| {
                stop.load(Ordering::SeqCst) || stopping.is_raised()
            })
        }
    });
    let evaluation = match evaluation {
        Ok(evaluation) => evaluation,
        Err(e) => {
            return error(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("no thread for the what-if: {e}"),
            )
        }
    };
    let outcome = tokio::select! {
        done = tokio::time::timeout_at(deadline, evaluation) => done,
        _ = stopping.raised() => {
            return error(StatusCode::SERVICE_UNAVAILABLE, "the service is stopping: the what-if was stopped");
        }
    };
    let counted = matches!(outcome, Err(_) | Ok(Ok(Err(WhatIfError::Stopped))));
    stop_on_drop.armed = counted;
    match outcome {
        Err(_) => {
            tracing::info!("a what-if ran past its deadline and was stopped");
            error(
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "the what-if did not end within {} s and was stopped: propose fewer events or \
                     times",
                    state.config.request_timeout.as_secs()
                ),
            )
        }
        Ok(Err(e)) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the what-if failed: {e}"),
        ),
        Ok(Ok(Err(WhatIfError::Stopped))) => {
            error(StatusCode::SERVICE_UNAVAILABLE, "the what-if was stopped")
        }
        Ok(Ok(Err(refused))) => error(StatusCode::BAD_REQUEST, refused.to_string()),
        Ok(Ok(Ok(answer))) => {
            let rendered = Answer::later(move || {
                Ok(std::iter::once(fairflow_serve::whatif::render(
                    &answer, k, format,
                )))
            });
            respond(&state.response_budget, Ok(rendered), None).await
        }
    }
}
