//! Answers sent while they are rendered, and what slow readers may hold.
//!
//! A read's answer (`backend::Answer`) arrives from the applier as what the
//! engine computed; its pieces are rendered here, on the blocking pool, one
//! at a time as the connection takes them (`PieceBody`), so an answer is
//! never held whole: a reader that stops reading holds one piece and what
//! the connection buffered. Every answer sent in pieces first takes a window
//! of [`WINDOW_BYTES`] from the **response budget** shared by every
//! connection, and gives it back when its body is dropped; a read that finds
//! the budget spent is answered 503 at once. A connection whose writes make
//! no progress for the write timeout is closed (`WriteDeadline`), which
//! drops its body and frees its window. An answer rendered whole
//! (`/metrics`) holds its own size of the same budget while it is sent
//! ([`respond_whole`]). An answer whose pieces read a table of one state
//! (`Answer::Holding`) also holds that table, counted once however many
//! answers share it (`held_tables`); a read whose table does not fit is
//! answered 503 at once, as one that finds the windows spent.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use hyper::body::Frame;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::task::JoinHandle;

use crate::backend::{Answer, Pieces, QueryError, QueryErrorKind};
use crate::budget::{HeldBytes, WriteBudget};
use crate::held_tables::{HeldTables, TableHold};
use crate::http_errors::error;

/// What an answer sent in pieces holds of the response budget: a piece
/// (a few hundred rows) and what the connection buffers of the one before.
pub const WINDOW_BYTES: usize = 2 << 20;

/// The default response budget, bytes: 16 answers in pieces at once.
pub const DEFAULT_RESPONSE_BUDGET_BYTES: usize = 16 * WINDOW_BYTES;

/// What answers being sent may hold, every connection together: the
/// windows of their pieces (bytes) and the tables they read.
#[derive(Debug, Clone)]
pub struct ResponseBudget {
    /// Windows and answers rendered whole, bytes.
    pub(crate) bytes: WriteBudget,
    /// The distinct tables answers read while sent.
    pub(crate) tables: HeldTables,
}

impl ResponseBudget {
    /// At most `cap_bytes` of windows, and the tables `tables` counts.
    pub fn new(cap_bytes: usize, tables: HeldTables) -> Self {
        ResponseBudget {
            bytes: WriteBudget::new(cap_bytes),
            tables,
        }
    }
}

/// A read's error as its HTTP answer.
pub(crate) fn query_error(e: QueryError) -> Response {
    let status = match e.kind() {
        QueryErrorKind::NotFound => StatusCode::NOT_FOUND,
        QueryErrorKind::BadRequest => StatusCode::BAD_REQUEST,
        QueryErrorKind::Busy => StatusCode::SERVICE_UNAVAILABLE,
        QueryErrorKind::Internal => StatusCode::INTERNAL_SERVER_ERROR,
    };
    error(status, e.to_string())
}

/// The content type of a text answer: JSON when it opens like JSON.
fn sniffed(first: &str) -> &'static str {
    if first.starts_with('[') || first.starts_with('{') {
        "application/json"
    } else {
        "text/plain; charset=utf-8"
    }
}

/// The pieces left and the piece taken (`None`: there were no more).
type Taken = (Pieces, Option<Result<String, QueryError>>);

/// Take the next piece on the blocking pool (rendering is CPU work).
fn render_next(mut pieces: Pieces) -> JoinHandle<Taken> {
    tokio::task::spawn_blocking(move || {
        let next = pieces.next();
        (pieces, next)
    })
}

/// Answer a read with `answer`: its first piece rendered before anything is
/// sent (so an answer that cannot be rendered is its error), the rest while
/// it is sent. `content_type`: the answer's, else sniffed from its start.
pub(crate) async fn respond(
    budget: &ResponseBudget,
    answer: Result<Answer, QueryError>,
    content_type: Option<&'static str>,
) -> Response {
    let (pieces, table) = match answer {
        Err(e) => return query_error(e),
        Ok(Answer::Text(text)) => {
            let kind = content_type.unwrap_or_else(|| sniffed(&text));
            return ([(header::CONTENT_TYPE, kind)], text).into_response();
        }
        Ok(Answer::WhatIfBase(_) | Answer::FairshareTable { .. }) => {
            return error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "a what-if base or a table is no answer",
            )
        }
        Ok(Answer::Pieces(pieces)) => (pieces, None),
        Ok(Answer::Holding(pieces, table)) => match budget.tables.hold(table) {
            Some(hold) => (pieces, Some(hold)),
            None => return tables_spent(&budget.tables),
        },
    };
    let Some(window) = budget.bytes.try_take(WINDOW_BYTES) else {
        return budget_spent(&budget.bytes);
    };
    let (pieces, first) = match render_next(pieces).await {
        Ok(taken) => taken,
        Err(e) => {
            return error(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("rendering failed: {e}"),
            )
        }
    };
    let first = match first {
        None => String::new(),
        Some(Err(e)) => return query_error(e),
        Some(Ok(text)) => text,
    };
    let kind = content_type.unwrap_or_else(|| sniffed(&first));
    let body = PieceBody {
        first: Some(Bytes::from(first)),
        pieces: Some(pieces),
        rendering: None,
        _window: window,
        _table: table,
    };
    ([(header::CONTENT_TYPE, kind)], Body::new(body)).into_response()
}

/// The answer to a read that finds the response budget spent.
fn budget_spent(budget: &WriteBudget) -> Response {
    error(
        StatusCode::SERVICE_UNAVAILABLE,
        format!(
            "too many answers are being sent to slow readers (the service holds at most {} \
             bytes for them): retry later",
            budget.cap_bytes()
        ),
    )
}

/// The answer to a read whose table does not fit beside those held.
fn tables_spent(tables: &HeldTables) -> Response {
    error(
        StatusCode::SERVICE_UNAVAILABLE,
        tables.refusal().to_string(),
    )
}

/// Answer with `text` rendered whole (`/metrics`): it is held until the
/// connection has taken it, so it holds its own size of the response budget
/// until then (all of it, when larger), as an answer in pieces holds its
/// window; a read that finds the budget spent is answered 503 at once.
pub(crate) fn respond_whole(
    budget: &ResponseBudget,
    text: String,
    content_type: &'static str,
) -> Response {
    let Some(held) = budget.bytes.try_take(text.len()) else {
        return budget_spent(&budget.bytes);
    };
    let body = PieceBody {
        first: Some(Bytes::from(text)),
        pieces: None,
        rendering: None,
        _window: held,
        _table: None,
    };
    ([(header::CONTENT_TYPE, content_type)], Body::new(body)).into_response()
}

/// A body whose pieces are rendered one at a time as the connection takes
/// them, holding a window of the response budget (and the table its pieces
/// read, if any) until it is dropped.
struct PieceBody {
    first: Option<Bytes>,
    pieces: Option<Pieces>,
    rendering: Option<JoinHandle<Taken>>,
    _window: HeldBytes,
    _table: Option<Arc<TableHold>>,
}

impl hyper::body::Body for PieceBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        let this = &mut *self;
        if let Some(first) = this.first.take() {
            return Poll::Ready(Some(Ok(Frame::data(first))));
        }
        if this.rendering.is_none() {
            let Some(pieces) = this.pieces.take() else {
                return Poll::Ready(None);
            };
            this.rendering = Some(render_next(pieces));
        }
        let rendering = this.rendering.as_mut().expect("rendering was just started");
        let taken = std::task::ready!(Pin::new(rendering).poll(cx));
        this.rendering = None;
        match taken {
            Err(e) => Poll::Ready(Some(Err(io::Error::other(format!(
                "rendering failed: {e}"
            ))))),
            Ok((_, None)) => Poll::Ready(None),
            Ok((_, Some(Err(e)))) => Poll::Ready(Some(Err(io::Error::other(e.to_string())))),
            Ok((pieces, Some(Ok(text)))) => {
                this.pieces = Some(pieces);
                Poll::Ready(Some(Ok(Frame::data(Bytes::from(text)))))
            }
        }
    }
}

/// A connection's stream whose writes fail when they make no progress for
/// `timeout`: a client that stops reading is dropped, with what it held.
pub(crate) struct WriteDeadline<IO> {
    io: IO,
    timeout: Duration,
    stuck: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<IO> WriteDeadline<IO> {
    pub(crate) fn new(io: IO, timeout: Duration) -> Self {
        WriteDeadline {
            io,
            timeout,
            stuck: None,
        }
    }

    /// Track a write's outcome: progress disarms the deadline, a write that
    /// waits arms it, and one that waited past it fails.
    fn watch<T>(
        &mut self,
        cx: &mut Context<'_>,
        outcome: Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        if outcome.is_ready() {
            self.stuck = None;
            return outcome;
        }
        let timeout = self.timeout;
        let stuck = self
            .stuck
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        if stuck.as_mut().poll(cx).is_ready() {
            tracing::info!(
                "a client read nothing for {} s: its connection is closed",
                timeout.as_secs()
            );
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the client stopped reading",
            )));
        }
        Poll::Pending
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for WriteDeadline<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for WriteDeadline<IO> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let outcome = Pin::new(&mut self.io).poll_write(cx, buf);
        self.watch(cx, outcome)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let outcome = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.watch(cx, outcome)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let outcome = Pin::new(&mut self.io).poll_flush(cx);
        self.watch(cx, outcome)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}
