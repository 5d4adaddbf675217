//! Every error answer is JSON, `{"error":"..."}` (docs/http.md), whoever
//! writes it: the handlers ([`error`]), and here the router's own
//! answers (an unknown route, a method a route does not take, a query string
//! that does not parse, a body over the limit) and the request deadline.
//! `/healthz` keeps its plain-text answers (its contract).

use std::time::Duration;

use axum::body::to_bytes;
use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

/// The longest request target read (path and query string), bytes; a longer
/// one is a 414. (hyper itself refuses one over 65,534 bytes before any
/// handler, with an empty 414.)
pub const MAX_URI_BYTES: usize = 16 << 10;

/// The most of a non-JSON error answer carried into its JSON message.
const MAX_MESSAGE_BYTES: usize = 4 << 10;

/// An error answer: `status` with `{"error": message}`.
pub(crate) fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, Json(json!({ "error": message.into() }))).into_response()
}

/// An unknown route: 404.
pub(crate) async fn unknown_route(request: Request) -> Response {
    error(
        StatusCode::NOT_FOUND,
        format!("no route {} {}", request.method(), request.uri().path()),
    )
}

/// Refuse a request target over [`MAX_URI_BYTES`]; give the rest the
/// request deadline (408 when it passes) and turn any error answer that is
/// not JSON into JSON, its text as the message.
pub(crate) async fn json_errors(
    State(request_timeout): State<Duration>,
    request: Request,
    next: Next,
) -> Response {
    let target = request
        .uri()
        .path_and_query()
        .map_or(0, |target| target.as_str().len());
    if target > MAX_URI_BYTES {
        return error(
            StatusCode::URI_TOO_LONG,
            format!("the request target is {target} bytes, more than {MAX_URI_BYTES}"),
        );
    }
    let health = request.uri().path() == "/healthz";
    let Ok(response) = tokio::time::timeout(request_timeout, next.run(request)).await else {
        return error(
            StatusCode::REQUEST_TIMEOUT,
            format!(
                "the request did not complete within {} s",
                request_timeout.as_secs()
            ),
        );
    };
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|kind| kind.as_bytes().starts_with(b"application/json"));
    if health || is_json || !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    let (parts, body) = response.into_parts();
    let text = to_bytes(body, MAX_MESSAGE_BYTES).await.unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    let message = match text.trim() {
        "" => status.canonical_reason().unwrap_or("error").to_string(),
        given => given.to_string(),
    };
    let mut answer = error(status, message);
    if let Some(allow) = parts.headers.get(header::ALLOW) {
        answer.headers_mut().insert(header::ALLOW, allow.clone());
    }
    answer
}
