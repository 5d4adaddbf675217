//! The live page at `/` and the tree picture it shows.
//!
//! - `GET /`: one static HTML page (`page.html`, inline CSS and a small
//!   vanilla script, no build step) for a help desk's wall screen. Every two
//!   seconds it reads the top of the queue (`/v1/top`), the share tree
//!   (`/v1/plot/tree.svg`), the accounts' fair-share and usage (`/v1/sshare`)
//!   and `/metrics` (events per second and mean update latency over the last
//!   interval, pending jobs, ingest lag), and redraws in place. The page
//!   itself holds no data, so it is served without the token; its reads
//!   follow the service's rule (with `--reads-need-token` it shows that they
//!   are refused).
//! - `GET /v1/plot/tree.svg?color=usage|factor&min_width_px=N&width_px=N`:
//!   the fair-share tree as an SVG icicle (`fairflow_serve::plot::tree`).

use axum::extract::{Query as UrlQuery, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::backend::{Query, QueryError};
use crate::http::{error, refuse_read, AppState};
use fairflow_serve::plot::tree::TreeColor;

/// The page's HTML.
pub const PAGE_HTML: &str = include_str!("page.html");

/// The widest tree picture served, in pixels.
const MAX_WIDTH_PX: u32 = 8_000;

/// `GET /`: the live page.
pub(crate) async fn get_page() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        PAGE_HTML,
    )
        .into_response()
}

/// The tree picture's query parameters.
#[derive(serde::Deserialize, Default)]
pub(crate) struct TreeParams {
    color: Option<String>,
    min_width_px: Option<u32>,
    width_px: Option<u32>,
}

/// `GET /v1/plot/tree.svg`: the share tree as SVG.
pub(crate) async fn get_tree_svg(
    State(state): State<AppState>,
    headers: HeaderMap,
    UrlQuery(params): UrlQuery<TreeParams>,
) -> Response {
    if let Some(denied) = refuse_read(&state, &headers) {
        return denied;
    }
    let name = params.color.as_deref().unwrap_or("usage");
    let Some(color) = TreeColor::parse(name) else {
        return error(
            StatusCode::BAD_REQUEST,
            format!("unknown color `{name}`: usage or factor"),
        );
    };
    let width_px = params.width_px.unwrap_or(1200);
    if !(100..=MAX_WIDTH_PX).contains(&width_px) {
        return error(
            StatusCode::BAD_REQUEST,
            format!("width_px {width_px}: 100 to {MAX_WIDTH_PX}"),
        );
    }
    let query = Query::PlotTree {
        color,
        min_width_px: params.min_width_px.unwrap_or(4),
        width_px,
    };
    match state.applier.read(query).await {
        Ok(svg) => (
            [
                (header::CONTENT_TYPE, "image/svg+xml"),
                (header::CACHE_CONTROL, "no-cache"),
            ],
            svg,
        )
            .into_response(),
        Err(QueryError::NotFound(message)) => error(StatusCode::NOT_FOUND, message),
        Err(QueryError::BadRequest(message)) => error(StatusCode::BAD_REQUEST, message),
        Err(QueryError::Internal(message)) => error(StatusCode::INTERNAL_SERVER_ERROR, message),
    }
}
