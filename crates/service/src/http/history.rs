//! `GET /v1/history?account=A&user=U&from=T&to=T`: one association's
//! fair-share history (`crate::history`), read from the store off the
//! runtime: an account's series, or with `user` that user association's.
//! `from` and `to` (inclusive; absent: the whole retention) are times as
//! the commands take them (`fairflow_ingest::slurm_time::parse_time_arg`:
//! Unix seconds, `YYYY-MM-DD[THH:MM[:SS]]` in the site's zone, `now-1day`).
//! A missing or malformed parameter, or `from` after `to`, is a 400 naming
//! it; an association the history never saw a 404 naming `account` or
//! `user`; a service without history (`serve --history off`) a 404.

use axum::extract::{Query as UrlQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use fairflow_model::Time;

use super::{error, refuse_read, AppState};
use crate::history::store::check_range;
use crate::history::{HistoryError, HistorySeries};
use crate::stream::respond_whole;

/// The parameters of `/v1/history`.
#[derive(serde::Deserialize, Default)]
pub(crate) struct HistoryParams {
    account: Option<String>,
    user: Option<String>,
    from: Option<String>,
    to: Option<String>,
}

/// A time parameter, or the 400 naming it.
fn time_param(name: &str, text: &Option<String>) -> Result<Option<Time>, Box<Response>> {
    let Some(text) = text else {
        return Ok(None);
    };
    fairflow_ingest::slurm_time::parse_time_arg(text)
        .map(Some)
        .map_err(|reason| Box::new(error(StatusCode::BAD_REQUEST, format!("{name}: {reason}"))))
}

/// The status a history error answers with.
fn status_of(e: &HistoryError) -> StatusCode {
    match e {
        HistoryError::Unknown { .. } => StatusCode::NOT_FOUND,
        HistoryError::BadRange { .. } => StatusCode::BAD_REQUEST,
        HistoryError::Io { .. } => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

pub(crate) async fn get_history(
    State(state): State<AppState>,
    headers: HeaderMap,
    UrlQuery(params): UrlQuery<HistoryParams>,
) -> Response {
    let asked = (|| {
        let account = params
            .account
            .clone()
            .filter(|a| !a.is_empty())
            .ok_or_else(|| {
                Box::new(error(
                    StatusCode::BAD_REQUEST,
                    "account: required (the account whose history to read)",
                ))
            })?;
        let from = time_param("from", &params.from)?;
        let to = time_param("to", &params.to)?;
        check_range(from, to)
            .map_err(|e| Box::new(error(StatusCode::BAD_REQUEST, e.to_string())))?;
        Ok::<_, Box<Response>>((account, from, to))
    })();
    let (account, from, to) = match asked {
        Ok(asked) => asked,
        Err(bad) => return *bad,
    };
    if let Some(denied) = refuse_read(&state, &headers) {
        return denied;
    }
    let Some(store) = state.config.history.clone() else {
        return error(
            StatusCode::NOT_FOUND,
            "the service keeps no history (started with --history off)",
        );
    };
    let user = params.user.clone().filter(|u| !u.is_empty());
    let read = tokio::task::spawn_blocking(move || {
        let store = store
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let steps = store.series(&account, user.as_deref(), from, to)?;
        let answer = HistorySeries {
            account,
            user,
            steps,
        };
        serde_json::to_string(&answer).map_err(|e| HistoryError::Io {
            path: "(answer)".to_string(),
            reason: e.to_string(),
        })
    })
    .await;
    match read {
        Ok(Ok(text)) => respond_whole(&state.response_budget, text, "application/json"),
        Ok(Err(e)) => error(status_of(&e), e.to_string()),
        Err(e) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("reading the history failed: {e}"),
        ),
    }
}
