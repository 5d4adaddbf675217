//! The HTTP face of the service (interfaces.md): `POST /v1/events`,
//! `GET /v1/top`, `/v1/sshare`, `/v1/sprio`, `/v1/jobs/{id}/explain`,
//! `/v1/jobs/{id}/position`, `/v1/audit`, `/v1/history` (`history`),
//! `POST /v1/whatif`, the live page
//! `/` and its tree picture `/v1/plot/tree.svg` (`page`), slurmrestd's
//! `/slurm/v0.0.46/shares` (Slurm's own JSON),
//! `/metrics`, `/healthz`. Writing needs the bearer token (compared in
//! constant time); reading needs it only when configured. Bodies, lines,
//! headers and whole requests have limits, so a slow or stuck client cannot
//! hold the service: connections are capped, headers must arrive within
//! `header_timeout`, a request must complete within `request_timeout`.

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, Path, Query as UrlQuery, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{middleware, Json, Router};
use subtle::ConstantTimeEq;
use tokio::sync::Semaphore;

use crate::applier::{parse_body, ApplierHandle, WriteError};
use crate::backend::{Answer, Query};
use crate::budget::HeldBytes;
use crate::exactly_once::{valid_key, AbandonOnDrop, Ticket, MAX_KEY_BYTES};
pub(crate) use crate::http_errors::error;
use crate::http_errors::{json_errors, unknown_route};
use crate::metrics::{Metrics, MetricsNames, ScrapeSettings, ScrapedRows, UserSeries};
use crate::stream::{respond, respond_whole, ResponseBudget};
use fairflow_model::report::position::{parse_accounts_shown, ACCOUNTS_SHOWN};
use fairflow_model::report::Selection;
use fairflow_serve::sprio::slurm_format::{Format, SlurmView};
use fairflow_serve::OutputFormat;

mod history;
pub mod listener;
pub mod page;
pub mod whatif;

pub use listener::serve;

/// Limits and credentials of the HTTP layer.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// The token writers must present; `None` disables writing over HTTP.
    pub write_token: Option<String>,
    /// Do reads need the token too?
    pub reads_need_token: bool,
    /// Largest request body.
    pub max_body_bytes: usize,
    /// Largest line of a body.
    pub max_line_bytes: usize,
    /// Most concurrent connections.
    pub max_connections: usize,
    /// Time allowed to send the request headers.
    pub header_timeout: Duration,
    /// Time allowed for a whole request.
    pub request_timeout: Duration,
    /// Most bytes of write bodies held at once (read, parsed or waiting for
    /// the applier); further writes wait (backpressure in bytes).
    pub max_inflight_bytes: usize,
    /// Most concurrent connections from one client address; more are closed
    /// at once, so one client cannot take every connection.
    pub max_connections_per_client: usize,
    /// `/healthz` is unhealthy while the applier has been busy this long
    /// without completing a step (a hung engine call; `health`).
    pub stall_timeout: Duration,
    /// Per-association fair-share gauges in `/metrics` for this many
    /// associations (the most raw usage first); `None`: none.
    pub metrics_associations: Option<usize>,
    /// `--metrics-names`: with `slurm-exporter`, `/metrics` also has the
    /// exporters' fair-share families (`metrics::exporter`).
    pub metrics_names: MetricsNames,
    /// `--metrics-exporter-users`: the user associations of the exporters'
    /// user families.
    pub metrics_exporter_users: UserSeries,
    /// Most bytes of answers held for readers at once, every connection
    /// together (`stream`); a read that finds them spent gets 503.
    pub max_response_bytes: usize,
    /// The tables answers being sent read from (one state's sprio rows,
    /// fair-share table or queue page), counted once per table against
    /// their cap (`held_tables`); a read whose table does not fit gets 503.
    /// Clones share the count: the backend that builds the tables is given
    /// the same (`EngineBackend::with_held_tables`).
    pub held_tables: crate::held_tables::HeldTables,
    /// A connection whose writes make no progress this long (its client
    /// stopped reading) is closed (`stream`).
    pub write_timeout: Duration,
    /// Most what-ifs evaluated at once (`whatif`).
    pub max_whatifs: usize,
    /// Raised when the service stops: running what-ifs stop at once
    /// (`whatif`). `serve` raises it; clones share it.
    pub stopping: whatif::Stopping,
    /// The fair-share history `/v1/history` reads (`crate::history`);
    /// `None`: `serve --history off`.
    pub history: Option<crate::history::SharedHistory>,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            write_token: None,
            reads_need_token: false,
            max_body_bytes: 8 << 20,
            max_line_bytes: 64 << 10,
            max_connections: 512,
            header_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(30),
            max_inflight_bytes: crate::budget::DEFAULT_WRITE_BUDGET_BYTES,
            max_connections_per_client: 64,
            stall_timeout: Duration::from_secs(120),
            metrics_associations: None,
            metrics_names: MetricsNames::default(),
            metrics_exporter_users: UserSeries::default(),
            max_response_bytes: crate::stream::DEFAULT_RESPONSE_BUDGET_BYTES,
            held_tables: crate::held_tables::HeldTables::default(),
            write_timeout: Duration::from_secs(30),
            max_whatifs: whatif::DEFAULT_MAX_WHATIFS,
            stopping: whatif::Stopping::default(),
            history: None,
        }
    }
}

#[derive(Clone)]
pub(crate) struct AppState {
    pub(crate) applier: ApplierHandle,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) config: Arc<HttpConfig>,
    /// Bytes and tables of answers held for readers (`stream`).
    pub(crate) response_budget: ResponseBudget,
    /// What-ifs evaluated at once (`whatif`).
    pub(crate) whatif_slots: Arc<Semaphore>,
    /// When `/metrics`' per-association tables were last read: every
    /// scrape within [`SCRAPED_TABLES_MAX_AGE`] of it shares that read, so
    /// open live pages (each scrapes every two seconds) cost one whole-table
    /// read together (`get_metrics`).
    tables_read_at: Arc<tokio::sync::Mutex<Option<tokio::time::Instant>>>,
    /// The live page's last overview read (`page::get_overview`).
    pub(crate) overview_read: Arc<tokio::sync::Mutex<Option<page::RecentOverview>>>,
}

/// How long a read of `/metrics`' per-association tables serves scrapes:
/// the live page's poll interval.
pub const SCRAPED_TABLES_MAX_AGE: Duration = Duration::from_secs(2);

/// Does `headers` carry `Authorization: Bearer <token>` with the right token?
/// The scheme is case-insensitive (RFC 7235: `bearer`, `BEARER`); the
/// comparison takes the same time wherever the tokens differ.
pub fn token_matches(headers: &HeaderMap, token: &str) -> bool {
    let Some(given) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(bearer_token)
    else {
        return false;
    };
    given.as_bytes().ct_eq(token.as_bytes()).into()
}

/// The token of an `Authorization` value with the `Bearer` scheme, in any case.
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim_start())
}

/// `None` when the read may go ahead, else the refusal.
pub(crate) fn refuse_read(state: &AppState, headers: &HeaderMap) -> Option<Response> {
    if !state.config.reads_need_token {
        return None;
    }
    match &state.config.write_token {
        Some(token) if token_matches(headers, token) => None,
        _ => Some(error(
            StatusCode::UNAUTHORIZED,
            "reading needs a valid bearer token",
        )),
    }
}

async fn post_events(State(state): State<AppState>, headers: HeaderMap, body: Body) -> Response {
    // This route is outside the timeout layer: it keeps its own deadline, so
    // that a 408 is answered only for a write that is never applied.
    let deadline = tokio::time::Instant::now() + state.config.request_timeout;
    match &state.config.write_token {
        None => {
            return error(
                StatusCode::UNAUTHORIZED,
                "writing is disabled: start the service with --token-file",
            )
        }
        Some(token) if !token_matches(&headers, token) => {
            return error(
                StatusCode::UNAUTHORIZED,
                "writing needs `Authorization: Bearer <token>` with the service's token",
            )
        }
        Some(_) => {}
    }
    let key = match idempotency_key(&headers) {
        Ok(key) => key,
        Err(refusal) => return *refusal,
    };
    let body = match read_body(&state, &headers, body, deadline).await {
        Ok(body) => body,
        Err(refusal) => return *refusal,
    };
    let lines = parse_body(&body.0, state.config.max_line_bytes);
    submit_before(&state, lines, key, deadline).await
}

/// The `Idempotency-Key` header, if given and well formed.
fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>, Box<Response>> {
    let Some(value) = headers.get("idempotency-key") else {
        return Ok(None);
    };
    match value.to_str() {
        Ok(key) if valid_key(key) => Ok(Some(key.to_string())),
        _ => Err(Box::new(error(
            StatusCode::BAD_REQUEST,
            format!("Idempotency-Key must be 1 to {MAX_KEY_BYTES} visible ASCII characters"),
        ))),
    }
}

/// A write body and the bytes of the write budget it holds while in flight.
pub(crate) struct HeldBody(pub(crate) Bytes, #[allow(dead_code)] HeldBytes);

/// Read a write's body before `deadline`, first taking from the write budget
/// as many bytes as it can be long (backpressure in bytes, shared with the
/// taps: `budget`).
pub(crate) async fn read_body(
    state: &AppState,
    headers: &HeaderMap,
    body: Body,
    deadline: tokio::time::Instant,
) -> Result<HeldBody, Box<Response>> {
    let limit = state.config.max_body_bytes;
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    let too_large = || {
        Box::new(error(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the body is larger than {limit} bytes"),
        ))
    };
    if declared.is_some_and(|len| len > limit) {
        return Err(too_large());
    }
    let timed_out = || {
        Box::new(error(
            StatusCode::REQUEST_TIMEOUT,
            "the request did not complete in time; nothing of it was applied",
        ))
    };
    let wanted = declared.unwrap_or(limit);
    let budget = state.applier.write_budget();
    let permit = tokio::time::timeout_at(deadline, budget.take(wanted))
        .await
        .map_err(|_| timed_out())?;
    match tokio::time::timeout_at(deadline, axum::body::to_bytes(body, limit)).await {
        Err(_) => Err(timed_out()),
        Ok(Err(_)) => Err(too_large()),
        Ok(Ok(bytes)) => Ok(HeldBody(bytes, permit)),
    }
}

/// Hand `lines` to the applier and answer: the outcome, or 408 if the
/// deadline passed before the applier took the write (then it never will:
/// nothing of it is applied, and retrying is safe).
async fn submit_before(
    state: &AppState,
    lines: Vec<fairflow_ingest::LogLine>,
    key: Option<String>,
    deadline: tokio::time::Instant,
) -> Response {
    let ticket = Ticket::default();
    // A request cancelled by its connection abandons the write too.
    let _abandon = AbandonOnDrop(ticket.clone());
    let write = state.applier.write_with(lines, key, Some(ticket.clone()));
    tokio::pin!(write);
    let answer = match tokio::time::timeout_at(deadline, &mut write).await {
        Ok(answer) => answer,
        Err(_) if ticket.abandon() => {
            return error(
                StatusCode::REQUEST_TIMEOUT,
                "the write timed out before it was applied: nothing of it was applied",
            )
        }
        // Taken: it is being committed, and its answer is on its way.
        Err(_) => write.await,
    };
    match answer {
        Ok(outcome) => (StatusCode::OK, Json(outcome)).into_response(),
        Err(WriteError::Unavailable(reason)) => error(StatusCode::SERVICE_UNAVAILABLE, reason),
        Err(stopped @ WriteError::Stopped) => {
            error(StatusCode::SERVICE_UNAVAILABLE, stopped.to_string())
        }
        Err(WriteError::Engine(reason)) => error(StatusCode::INTERNAL_SERVER_ERROR, reason),
    }
}

async fn read(state: AppState, headers: HeaderMap, query: Query) -> Response {
    if let Some(denied) = refuse_read(&state, &headers) {
        return denied;
    }
    let answer = state.applier.read_answer(query).await;
    respond(&state.response_budget, answer, None).await
}

/// Answer a read whose parameters made `asked`: the 400 they earned (before
/// the token is checked), else the query's answer ([`read`]).
async fn read_asked(
    state: AppState,
    headers: HeaderMap,
    asked: Result<Query, Box<Response>>,
) -> Response {
    match asked {
        Ok(query) => read(state, headers, query).await,
        Err(bad) => *bad,
    }
}

/// The query parameters reads take: `k` and `offset` (top), `format` (`json`, the
/// default, `parsable` or `table`; explain: `json` or `text`), `norm` (sprio);
/// Slurm's selections as comma-separated lists, `accounts` and `users`
/// (sshare, sprio, top), `jobs` (sprio), `partitions` (sprio, top); and
/// sprio's Slurm forms: `o` (a `%` format), `long`, `weights`, `noheader`.
#[derive(serde::Deserialize, Default)]
pub(crate) struct ReadParams {
    pub(crate) k: Option<usize>,
    top: Option<usize>,
    min_factor: Option<f64>,
    offset: Option<usize>,
    format: Option<String>,
    norm: Option<bool>,
    accounts: Option<String>,
    top_accounts: Option<String>,
    users: Option<String>,
    jobs: Option<String>,
    partitions: Option<String>,
    o: Option<String>,
    long: Option<bool>,
    weights: Option<bool>,
    noheader: Option<bool>,
}

/// A comma-separated list parameter (absent or empty: nothing selected).
fn list(param: &Option<String>) -> Vec<String> {
    param
        .as_deref()
        .unwrap_or("")
        .split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

impl ReadParams {
    fn selection(&self) -> Selection {
        Selection {
            jobs: list(&self.jobs),
            users: list(&self.users),
            accounts: list(&self.accounts),
            partitions: list(&self.partitions),
        }
    }

    /// sprio's Slurm form, when `o`, `weights` or `long` (with the table
    /// format) asks for it; a `%` format that does not parse is a 400.
    fn slurm_view(&self, format: OutputFormat) -> Result<Option<SlurmView>, Box<Response>> {
        let weights = self.weights.unwrap_or(false);
        let long = self.long.unwrap_or(false);
        if self.o.is_none() && !weights && !(long && format == OutputFormat::Table) {
            return Ok(None);
        }
        if let Some(text) = &self.o {
            if let Err(bad) = Format::parse(text) {
                return Err(Box::new(error(
                    StatusCode::BAD_REQUEST,
                    format!("parameter `o`: {bad}"),
                )));
            }
        }
        Ok(Some(SlurmView {
            format: self.o.clone(),
            long,
            weights,
            noheader: self.noheader.unwrap_or(false),
        }))
    }

    pub(crate) fn format(&self) -> Result<OutputFormat, Box<Response>> {
        match self.format.as_deref() {
            None | Some("json") => Ok(OutputFormat::Json),
            Some("parsable") => Ok(OutputFormat::Parsable),
            Some("table") => Ok(OutputFormat::Table),
            Some(other) => Err(Box::new(error(
                StatusCode::BAD_REQUEST,
                format!("unknown format `{other}`: json, parsable or table"),
            ))),
        }
    }
}

async fn get_top(
    State(state): State<AppState>,
    headers: HeaderMap,
    UrlQuery(params): UrlQuery<ReadParams>,
) -> Response {
    let k = params.k.unwrap_or(10).min(1_000_000);
    let asked = params.format().map(|format| Query::Top {
        k,
        offset: params.offset.unwrap_or(0),
        format,
        selection: params.selection(),
    });
    read_asked(state, headers, asked).await
}

/// `GET /v1/audit?top=N&min_factor=F&format=`: who is over- and
/// under-served, and the high fair-share users waiting longest.
async fn get_audit(
    State(state): State<AppState>,
    headers: HeaderMap,
    UrlQuery(params): UrlQuery<ReadParams>,
) -> Response {
    let top = params.top.unwrap_or(5).min(100_000);
    let min_factor = params.min_factor.unwrap_or(0.5);
    if !(0.0..=1.0).contains(&min_factor) {
        return error(
            StatusCode::BAD_REQUEST,
            format!("min_factor {min_factor}: a fair-share factor is within 0..1"),
        );
    }
    let asked = params.format().map(|format| Query::Audit {
        top,
        min_factor_millionths: (min_factor * 1e6).round() as u64,
        format,
    });
    read_asked(state, headers, asked).await
}

async fn get_sshare(
    State(state): State<AppState>,
    headers: HeaderMap,
    UrlQuery(params): UrlQuery<ReadParams>,
) -> Response {
    let asked = params.format().map(|format| Query::Sshare {
        format,
        selection: params.selection(),
    });
    read_asked(state, headers, asked).await
}

/// slurmrestd's `GET /slurm/v0.0.46/shares`: the table in Slurm's own JSON
/// (`accounts` and `users` select rows, as slurmrestd's parameters of
/// those names).
async fn get_slurm_shares(
    State(state): State<AppState>,
    headers: HeaderMap,
    UrlQuery(params): UrlQuery<ReadParams>,
) -> Response {
    let format = OutputFormat::SlurmJson;
    let selection = params.selection();
    read(state, headers, Query::Sshare { format, selection }).await
}

/// slurmrestd's `GET /slurm/v0.0.46/jobs`: every listed job (pending, held,
/// and running ones the model lists) with `priority_by_partition`, in
/// data_parser v0.0.46's shape.
async fn get_slurm_jobs(State(state): State<AppState>, headers: HeaderMap) -> Response {
    read(state, headers, Query::SlurmJobs).await
}

async fn get_sprio(
    State(state): State<AppState>,
    headers: HeaderMap,
    UrlQuery(params): UrlQuery<ReadParams>,
) -> Response {
    let normalized = params.norm.unwrap_or(false);
    let asked = params.format().and_then(|format| {
        Ok(Query::Sprio {
            normalized,
            format,
            selection: params.selection(),
            slurm: params.slurm_view(format)?,
        })
    });
    read_asked(state, headers, asked).await
}

/// `format`: `json` (the default) or `text`, as a read about one job takes.
fn json_or_text(params: &ReadParams) -> Result<bool, Box<Response>> {
    match params.format.as_deref() {
        None | Some("json") => Ok(true),
        Some("text") => Ok(false),
        Some(other) => Err(Box::new(error(
            StatusCode::BAD_REQUEST,
            format!("unknown format `{other}`: json or text"),
        ))),
    }
}

async fn get_explain(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(job): Path<String>,
    UrlQuery(params): UrlQuery<ReadParams>,
) -> Response {
    let asked = json_or_text(&params).map(|json| Query::Explain { job, json });
    read_asked(state, headers, asked).await
}

/// `GET /v1/jobs/{id}/position`: the job's place in line (404 when it is
/// not in the ranked queue); `top_accounts` (a number or `all`,
/// `ACCOUNTS_SHOWN` by default) accounts ahead listed.
async fn get_position(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(job): Path<String>,
    UrlQuery(params): UrlQuery<ReadParams>,
) -> Response {
    let top_accounts = match params.top_accounts.as_deref().map(parse_accounts_shown) {
        None => Ok(ACCOUNTS_SHOWN),
        Some(Ok(shown)) => Ok(shown),
        Some(Err(why)) => Err(Box::new(error(
            StatusCode::BAD_REQUEST,
            format!("top_accounts: {why}"),
        ))),
    };
    let asked = top_accounts.and_then(|top_accounts| {
        json_or_text(&params).map(|json| Query::Position {
            job,
            json,
            top_accounts,
        })
    });
    read_asked(state, headers, asked).await
}

impl HttpConfig {
    /// The per-association families `/metrics` writes.
    pub fn scrape_settings(&self) -> ScrapeSettings {
        ScrapeSettings {
            associations: self.metrics_associations,
            names: self.metrics_names,
            exporter_users: self.metrics_exporter_users,
        }
    }
}

/// The rows of one read of the fair-share table that `settings` asks,
/// chosen off the runtime; `None` when the read fails.
async fn read_scraped_rows(
    applier: &ApplierHandle,
    settings: ScrapeSettings,
) -> Option<Arc<ScrapedRows>> {
    let Ok(Answer::FairshareTable { table, now }) =
        applier.read_answer(Query::FairshareTable).await
    else {
        return None;
    };
    let select = move || Arc::new(ScrapedRows::select(table, now, &settings));
    tokio::task::spawn_blocking(select).await.ok()
}

async fn get_metrics(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if let Some(denied) = refuse_read(&state, &headers) {
        return denied;
    }
    let settings = state.config.scrape_settings();
    if settings.reads_table() {
        // One scrape reads, the others wait for it and share what it read.
        let mut read_at = state.tables_read_at.lock().await;
        let fresh = read_at.is_some_and(|at| at.elapsed() < SCRAPED_TABLES_MAX_AGE);
        if !fresh {
            // One read of the table (shared with the other readers of an
            // unchanged state) gives every per-association family.
            let rows = read_scraped_rows(&state.applier, settings).await;
            state.metrics.set_scraped(rows);
            *read_at = Some(tokio::time::Instant::now());
        }
    }
    let head = state.applier.read(Query::QueueHead).await;
    (state.metrics).set_queue_head(head.ok().and_then(|text| text.parse().ok()));
    let gauges = state.applier.gauges().await;
    let queued = state.applier.queued();
    let budget = &state.response_budget;
    (state.metrics).set_held(budget.bytes.held_bytes(), budget.tables.held_bytes());
    // Rendering every association's gauges is CPU work: off the runtime.
    let metrics = state.metrics.clone();
    let text = match tokio::task::spawn_blocking(move || metrics.render(gauges, queued)).await {
        Ok(text) => text,
        Err(e) => {
            return error(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("rendering the metrics failed: {e}"),
            )
        }
    };
    respond_whole(&state.response_budget, text, crate::metrics::CONTENT_TYPE)
}

/// Healthy unless the service failed, writes are refused (`health`), the
/// applier stopped, or it has been stuck on one step past the stall deadline.
/// It does not wait behind the queue of writes, so it answers at once under a
/// write overload too (a slow service is not an unhealthy one; a stuck one is).
async fn get_healthz(State(state): State<AppState>) -> Response {
    if let Some(problem) = state.applier.health().problem() {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("unhealthy: {problem}\n"),
        )
            .into_response();
    }
    if let Some(silent) = state.applier.health().stalled(state.config.stall_timeout) {
        let message = format!(
            "unhealthy: the applier has made no progress for {} s (stall deadline {} s): \
             an engine call does not return\n",
            silent.as_secs(),
            state.config.stall_timeout.as_secs()
        );
        return (StatusCode::SERVICE_UNAVAILABLE, message).into_response();
    }
    if state.applier.stopped() {
        return (StatusCode::SERVICE_UNAVAILABLE, "applier stopped\n").into_response();
    }
    (StatusCode::OK, "ok\n").into_response()
}

/// The router with every route and limit. Write bodies take from the
/// handle's write budget when it is `config.max_inflight_bytes` large (so
/// the taps given clones of that handle share it), else from a budget of
/// that size of their own.
pub fn router(applier: ApplierHandle, metrics: Arc<Metrics>, config: HttpConfig) -> Router {
    let state = AppState {
        applier: applier.with_write_budget(config.max_inflight_bytes),
        metrics,
        response_budget: ResponseBudget::new(config.max_response_bytes, config.held_tables.clone()),
        whatif_slots: Arc::new(Semaphore::new(config.max_whatifs.max(1))),
        tables_read_at: Arc::default(),
        overview_read: Arc::default(),
        config: Arc::new(config.clone()),
    };
    // Writes and what-ifs keep their own deadlines (`post_events`,
    // `whatif`); the other routes have the request deadline.
    let own_deadlines = Router::new()
        .route("/v1/events", post(post_events))
        .route("/v1/whatif", post(whatif::post_whatif));
    let reads = Router::new()
        .route("/v1/top", get(get_top))
        .route("/v1/sshare", get(get_sshare))
        .route("/v1/audit", get(get_audit))
        .route(
            fairflow_serve::slurm_json::SHARES_PATH,
            get(get_slurm_shares),
        )
        .route("/v1/sprio", get(get_sprio))
        .route(fairflow_serve::slurm_json::JOBS_PATH, get(get_slurm_jobs))
        .route("/v1/jobs/{id}/explain", get(get_explain))
        .route("/v1/jobs/{id}/position", get(get_position))
        .route("/v1/history", get(history::get_history))
        .route("/", get(page::get_page))
        .route("/v1/plot/tree.svg", get(page::get_tree_svg))
        .route("/v1/overview", get(page::get_overview))
        .route("/metrics", get(get_metrics))
        .route("/healthz", get(get_healthz))
        .layer(DefaultBodyLimit::max(config.max_body_bytes))
        .layer(middleware::from_fn_with_state(
            config.request_timeout,
            json_errors,
        ));
    // Far past any request: the deadline of the routes with their own.
    let never = Duration::from_secs(u32::MAX as u64);
    reads
        .merge(own_deadlines)
        .fallback(unknown_route)
        .layer(middleware::from_fn_with_state(never, json_errors))
        .with_state(state)
}
