//! `--server URL`: query commands ask a running `fairflow serve` instead of
//! replaying a log; the service renders the same answer in the asked form,
//! which is printed as it comes.

use std::path::Path;

use anyhow::{bail, Context};
use fairflow_serve::OutputFormat;

/// The `format` query parameter for an output form.
pub fn format_param(format: OutputFormat) -> &'static str {
    match format {
        OutputFormat::Json | OutputFormat::SlurmJson => "json",
        OutputFormat::Parsable => "parsable",
        OutputFormat::Table => "table",
    }
}

/// The path of a per-job read (`/v1/jobs/{id}/{what}?format=...`), the id
/// percent-encoded, so an id holding `%`, `/`, `?` or `#` names that job.
pub fn job_path(job: &str, what: &str, format: &str) -> String {
    let job = form_urlencoded::byte_serialize(job.as_bytes()).collect::<String>();
    format!("/v1/jobs/{job}/{what}?format={format}")
}

/// `GET {server}{path}`, with the bearer token of `token_file` if given;
/// the body on success, the service's error message otherwise.
pub fn get(server: &str, path: &str, token_file: Option<&Path>) -> anyhow::Result<String> {
    exchange(server, path, None, token_file)
}

/// `POST {server}{path}` with `body`; as [`get`].
pub fn post(
    server: &str,
    path: &str,
    body: &str,
    token_file: Option<&Path>,
) -> anyhow::Result<String> {
    exchange(server, path, Some(body), token_file)
}

/// One exchange: a `GET`, or a `POST` of `body`.
fn exchange(
    server: &str,
    path: &str,
    body: Option<&str>,
    token_file: Option<&Path>,
) -> anyhow::Result<String> {
    let url = format!("{}{path}", server.trim_end_matches('/'));
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(std::time::Duration::from_secs(60)))
        .build()
        .into();
    let token = token_file
        .map(crate::token_file::read_token_file)
        .transpose()?;
    let bearer = token.map(|t| format!("Bearer {t}"));
    let sent = match body {
        None => {
            let mut request = agent.get(&url);
            if let Some(bearer) = &bearer {
                request = request.header("Authorization", bearer);
            }
            request.call()
        }
        Some(body) => {
            let mut request = agent.post(&url);
            if let Some(bearer) = &bearer {
                request = request.header("Authorization", bearer);
            }
            request.send(body)
        }
    };
    let mut response = sent.with_context(|| format!("cannot reach {url}"))?;
    let status = response.status();
    let body = response
        .body_mut()
        .read_to_string()
        .with_context(|| format!("reading the answer of {url}"))?;
    if !status.is_success() {
        let message = serde_json::from_str::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| v.get("error").and_then(|e| e.as_str()).map(str::to_string))
            .unwrap_or(body);
        bail!("{url}: {status}: {message}");
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_id_is_encoded_in_its_path() {
        assert_eq!(
            job_path("12", "explain", "json"),
            "/v1/jobs/12/explain?format=json"
        );
        assert_eq!(
            job_path("1%32", "explain", "text"),
            "/v1/jobs/1%2532/explain?format=text"
        );
        assert_eq!(
            job_path("a/b", "position", "text"),
            "/v1/jobs/a%2Fb/position?format=text"
        );
        assert_eq!(
            job_path("x?y#z", "explain", "json"),
            "/v1/jobs/x%3Fy%23z/explain?format=json"
        );
    }
}
