//! The live page at `/` and the tree picture it shows.
//!
//! - `GET /`: one static HTML page (`page.html`, inline CSS and a small
//!   vanilla script, no build step) for a help desk's wall screen. Every two
//!   seconds it reads the top of the queue (`/v1/top`) and `/metrics`
//!   (events per second and mean update latency over the last interval,
//!   pending jobs, ingest lag), and the accounts' fair-share and usage with
//!   the share tree (`/v1/overview`) every two seconds or four times as long
//!   as that read last took, whichever is longer (so a large table does not
//!   keep the applier busy); it redraws in place. The page
//!   itself holds no data, so it is served without the token; its reads
//!   follow the service's rule (with `--reads-need-token` it shows that they
//!   are refused).
//! - `GET /v1/plot/tree.svg?color=usage|factor&min_width_px=N&width_px=N`:
//!   the fair-share tree as an SVG icicle (`fairflow_serve::plot::tree`).
//! - `GET /v1/overview?accounts=N&...`: the page's accounts and tree from
//!   one read of the table (`fairflow_serve::overview`): at 100,000
//!   associations the whole table is tens of megabytes of JSON and each
//!   read of it costs the applier a fraction of a second. One read serves
//!   every open page: the answer is kept for the poll interval and shared
//!   (as `/metrics` shares its per-association tables), so N pages cost one
//!   read of the table per interval, not N.

use axum::extract::{Query as UrlQuery, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::backend::Query;
use crate::http::SCRAPED_TABLES_MAX_AGE;
use crate::http::{error, refuse_read, AppState};
use crate::stream::{query_error, respond};
use fairflow_serve::plot::tree::TreeColor;
use std::sync::Arc;

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

/// The tree picture's query parameters (and the overview's `accounts`).
#[derive(serde::Deserialize, Default)]
pub(crate) struct TreeParams {
    color: Option<String>,
    min_width_px: Option<u32>,
    width_px: Option<u32>,
    accounts: Option<usize>,
}

impl TreeParams {
    /// A page read's `(color, min_width_px, width_px)`, once its token is
    /// checked ([`refuse_read`]): else the refusal, or the 400 of a bad one.
    fn checked_tree(
        &self,
        state: &AppState,
        headers: &HeaderMap,
    ) -> Result<(TreeColor, u32, u32), Box<Response>> {
        if let Some(denied) = refuse_read(state, headers) {
            return Err(Box::new(denied));
        }
        self.tree()
    }

    /// `(color, min_width_px, width_px)`, or the refusal of a bad one.
    fn tree(&self) -> Result<(TreeColor, u32, u32), Box<Response>> {
        let name = self.color.as_deref().unwrap_or("usage");
        let Some(color) = TreeColor::parse(name) else {
            return Err(Box::new(error(
                StatusCode::BAD_REQUEST,
                format!("unknown color `{name}`: usage or factor"),
            )));
        };
        let width_px = self.width_px.unwrap_or(1200);
        if !(100..=MAX_WIDTH_PX).contains(&width_px) {
            return Err(Box::new(error(
                StatusCode::BAD_REQUEST,
                format!("width_px {width_px}: 100 to {MAX_WIDTH_PX}"),
            )));
        }
        Ok((color, self.min_width_px.unwrap_or(4), width_px))
    }
}

/// Answer `query` with `content_type`, or the error's status and message.
async fn answer(state: &AppState, query: Query, content_type: &'static str) -> Response {
    let answer = state.applier.read_answer(query).await;
    let mut response = respond(&state.response_budget, answer, Some(content_type)).await;
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// `GET /v1/plot/tree.svg`: the share tree as SVG.
pub(crate) async fn get_tree_svg(
    State(state): State<AppState>,
    headers: HeaderMap,
    UrlQuery(params): UrlQuery<TreeParams>,
) -> Response {
    let (color, min_width_px, width_px) = match params.checked_tree(&state, &headers) {
        Ok(tree) => tree,
        Err(refused) => return *refused,
    };
    let query = Query::PlotTree {
        color,
        min_width_px,
        width_px,
    };
    answer(&state, query, "image/svg+xml").await
}

/// `GET /v1/overview?accounts=N&color=C&min_width_px=N&width_px=W`: the
/// page's accounts (default 15, at most 1,000) and tree from one read of the
/// table (`fairflow_serve::overview`).
pub(crate) async fn get_overview(
    State(state): State<AppState>,
    headers: HeaderMap,
    UrlQuery(params): UrlQuery<TreeParams>,
) -> Response {
    let (color, min_width_px, width_px) = match params.checked_tree(&state, &headers) {
        Ok(tree) => tree,
        Err(refused) => return *refused,
    };
    let query = Query::Overview {
        accounts: params.accounts.unwrap_or(15).min(1_000),
        color,
        min_width_px,
        width_px,
    };
    // One read at a time; the others wait for it and share what it read.
    let mut recent = state.overview_read.lock().await;
    let shared = recent
        .as_ref()
        .filter(|read| read.query == query && read.read_at.elapsed() < SCRAPED_TABLES_MAX_AGE);
    let text = match shared {
        Some(read) => read.text.clone(),
        None => match state.applier.read(query.clone()).await {
            Ok(text) => {
                let text: Arc<str> = text.into();
                *recent = Some(RecentOverview {
                    query,
                    read_at: tokio::time::Instant::now(),
                    text: text.clone(),
                });
                text
            }
            Err(e) => return query_error(e),
        },
    };
    drop(recent);
    (
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        text.to_string(),
    )
        .into_response()
}

/// The overview last read, shared by the pages asking the same within the
/// poll interval.
pub(crate) struct RecentOverview {
    query: Query,
    read_at: tokio::time::Instant,
    text: Arc<str>,
}
