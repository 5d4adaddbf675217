//! `POST /v1/whatif?k=K&format=`: what-if on the service's state. The body
//! is the proposal (JSON Lines in the event format, as `POST /v1/events`
//! takes); the engine's book is copied and the proposal evaluated on the
//! copy with the batch oracle (`fairflow_engine::whatif`), so the live state
//! is never touched and nothing is logged. The answer is
//! `fairflow_serve::whatif`'s (JSON by default, `table` or `parsable`); a
//! proposal with a rejected line is a 400 naming every line, field and
//! reason. It is a read: it needs the token only when reads do. Declared as
//! a child of `http` (whose state and read path it uses).

use axum::body::Bytes;
use axum::extract::{Query as UrlQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

use super::{error, read, AppState, ReadParams};
use crate::backend::Query;

/// The most rows of each list a what-if answers.
const MAX_ROWS: usize = 1_000_000;

/// The handler of `POST /v1/whatif`.
pub(super) async fn post_whatif(
    State(state): State<AppState>,
    headers: HeaderMap,
    UrlQuery(params): UrlQuery<ReadParams>,
    body: Bytes,
) -> Response {
    let Ok(proposal) = String::from_utf8(body.to_vec()) else {
        return error(StatusCode::BAD_REQUEST, "the proposal is not UTF-8 text");
    };
    match params.format() {
        Ok(format) => {
            let query = Query::WhatIf {
                proposal,
                k: params.k.unwrap_or(20).min(MAX_ROWS),
                format,
            };
            read(state, headers, query).await
        }
        Err(bad) => *bad,
    }
}
