//! The HTTP face of the service (interfaces.md): `POST /v1/events`,
//! `GET /v1/top`, `/v1/sshare`, `/v1/sprio`, `/v1/jobs/{id}/explain`, slurmrestd's
//! `/slurm/v0.0.46/shares` (Slurm's own JSON),
//! `/metrics`, `/healthz`. Writing needs the bearer token (compared in
//! constant time); reading needs it only when configured. Bodies, lines,
//! headers and whole requests have limits, so a slow or stuck client cannot
//! hold the service: connections are capped, headers must arrive within
//! `header_timeout`, a request must complete within `request_timeout`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, Query as UrlQuery, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::json;
use subtle::ConstantTimeEq;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tower::ServiceExt;
use tower_http::timeout::TimeoutLayer;

use crate::applier::{parse_body, ApplierHandle};
use crate::backend::{Query, QueryError};
use crate::metrics::Metrics;
use fairflow_serve::OutputFormat;

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
        }
    }
}

#[derive(Clone)]
struct AppState {
    applier: ApplierHandle,
    metrics: Arc<Metrics>,
    config: Arc<HttpConfig>,
}

/// Does `headers` carry `Authorization: Bearer <token>` with the right token?
/// The comparison takes the same time wherever the tokens differ.
pub fn token_matches(headers: &HeaderMap, token: &str) -> bool {
    let Some(given) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
    else {
        return false;
    };
    given.as_bytes().ct_eq(token.as_bytes()).into()
}

fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, Json(json!({ "error": message.into() }))).into_response()
}

/// `None` when the read may go ahead, else the refusal.
fn refuse_read(state: &AppState, headers: &HeaderMap) -> Option<Response> {
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

async fn post_events(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
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
    let lines = parse_body(&body, state.config.max_line_bytes);
    match state.applier.write(lines).await {
        Ok(outcome) => (StatusCode::OK, Json(outcome)).into_response(),
        Err(reason) => error(StatusCode::SERVICE_UNAVAILABLE, reason),
    }
}

async fn read(state: AppState, headers: HeaderMap, query: Query) -> Response {
    if let Some(denied) = refuse_read(&state, &headers) {
        return denied;
    }
    match state.applier.read(query).await {
        Ok(body) => {
            let content_type = if body.starts_with('[') || body.starts_with('{') {
                "application/json"
            } else {
                "text/plain; charset=utf-8"
            };
            ([(header::CONTENT_TYPE, content_type)], body).into_response()
        }
        Err(QueryError::NotFound(message)) => error(StatusCode::NOT_FOUND, message),
        Err(QueryError::Internal(message)) => error(StatusCode::INTERNAL_SERVER_ERROR, message),
    }
}

/// The query parameters reads take: `k` (top), `format` (`json`, the
/// default, `parsable` or `table`; explain: `json` or `text`), `norm` (sprio).
#[derive(serde::Deserialize, Default)]
struct ReadParams {
    k: Option<usize>,
    format: Option<String>,
    norm: Option<bool>,
}

impl ReadParams {
    fn format(&self) -> Result<OutputFormat, Box<Response>> {
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
    match params.format() {
        Ok(format) => read(state, headers, Query::Top { k, format }).await,
        Err(bad) => *bad,
    }
}

async fn get_sshare(
    State(state): State<AppState>,
    headers: HeaderMap,
    UrlQuery(params): UrlQuery<ReadParams>,
) -> Response {
    match params.format() {
        Ok(format) => read(state, headers, Query::Sshare { format }).await,
        Err(bad) => *bad,
    }
}

/// slurmrestd's `GET /slurm/v0.0.46/shares`: the table in Slurm's own JSON.
async fn get_slurm_shares(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let format = OutputFormat::SlurmJson;
    read(state, headers, Query::Sshare { format }).await
}

async fn get_sprio(
    State(state): State<AppState>,
    headers: HeaderMap,
    UrlQuery(params): UrlQuery<ReadParams>,
) -> Response {
    let normalized = params.norm.unwrap_or(false);
    match params.format() {
        Ok(format) => read(state, headers, Query::Sprio { normalized, format }).await,
        Err(bad) => *bad,
    }
}

async fn get_explain(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(job): Path<String>,
    UrlQuery(params): UrlQuery<ReadParams>,
) -> Response {
    let json = match params.format.as_deref() {
        None | Some("json") => true,
        Some("text") => false,
        Some(other) => {
            return error(
                StatusCode::BAD_REQUEST,
                format!("unknown format `{other}`: json or text"),
            )
        }
    };
    read(state, headers, Query::Explain { job, json }).await
}

async fn get_metrics(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if let Some(denied) = refuse_read(&state, &headers) {
        return denied;
    }
    let gauges = state.applier.gauges().await;
    let text = state.metrics.render(gauges, state.applier.queued());
    ([(header::CONTENT_TYPE, crate::metrics::CONTENT_TYPE)], text).into_response()
}

async fn get_healthz(State(state): State<AppState>) -> Response {
    match state.applier.gauges().await {
        Some(_) => (StatusCode::OK, "ok\n").into_response(),
        None => (StatusCode::SERVICE_UNAVAILABLE, "applier stopped\n").into_response(),
    }
}

/// The router with every route and limit.
pub fn router(applier: ApplierHandle, metrics: Arc<Metrics>, config: HttpConfig) -> Router {
    let state = AppState {
        applier,
        metrics,
        config: Arc::new(config.clone()),
    };
    Router::new()
        .route("/v1/events", post(post_events))
        .route("/v1/top", get(get_top))
        .route("/v1/sshare", get(get_sshare))
        .route(
            fairflow_serve::slurm_json::SHARES_PATH,
            get(get_slurm_shares),
        )
        .route("/v1/sprio", get(get_sprio))
        .route("/v1/jobs/{id}/explain", get(get_explain))
        .route("/metrics", get(get_metrics))
        .route("/healthz", get(get_healthz))
        .layer(DefaultBodyLimit::max(config.max_body_bytes))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            config.request_timeout,
        ))
        .with_state(state)
}

/// Serve `router` on `listener` until `shutdown` resolves, then finish the
/// requests in flight (for at most `grace`).
pub async fn serve(
    listener: TcpListener,
    router: Router,
    config: &HttpConfig,
    shutdown: impl std::future::Future<Output = ()>,
    grace: Duration,
) {
    let permits = Arc::new(Semaphore::new(config.max_connections.max(1)));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(config.header_timeout);
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            _ = &mut shutdown => break,
            permit = permits.clone().acquire_owned() => permit.expect("the semaphore is never closed"),
        };
        let (stream, _peer): (_, SocketAddr) = tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(e) => {
                    tracing::warn!("accept failed: {e}");
                    continue;
                }
            },
        };
        let service = hyper::service::service_fn({
            let router = router.clone();
            move |request: hyper::Request<hyper::body::Incoming>| {
                router.clone().oneshot(request.map(axum::body::Body::new))
            }
        });
        let connection = builder.serve_connection(TokioIo::new(stream), service);
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            let _ = connection.await;
            drop(permit);
        });
    }
    drop(listener);
    tokio::select! {
        _ = graceful.shutdown() => {}
        _ = tokio::time::sleep(grace) => tracing::warn!("connections still open after the grace period"),
    }
}
