//! What fairflow's test suites share, so each rule about running them is
//! written once:
//! - [`heavy`]: the one switch (`FAIRFLOW_HEAVY=1`) for the larger runs,
//!   and [`heavy_or_skip`] for a test that is nothing but a larger run (it
//!   says it was skipped without the switch);
//! - [`prerequisite_missing`]: a test whose prerequisite (a program, a
//!   dataset, root) is absent says it was skipped on a developer's machine,
//!   and fails under CI (`CI=true`), where `.ci/run` provides everything;
//! - [`dataset`]: the real traces the project reads from `../shared/datasets`
//!   (or `FAIRFLOW_DATASETS`), never copied into the repository;
//! - [`http_answer`]: a raw HTTP/1.1 answer read off loopback, as status and
//!   body (a chunked body decoded), for the tests that speak HTTP by hand;
//! - [`openmetrics`]: an OpenMetrics exposition parsed back strictly, as a
//!   scraper reads `/metrics`.
//!
//! No dependencies: every test crate of the workspace may use it.

use std::path::{Path, PathBuf};

pub mod openmetrics;

/// Whether the larger runs are asked for: `FAIRFLOW_HEAVY=1` (only `1`).
pub fn heavy() -> bool {
    std::env::var("FAIRFLOW_HEAVY").is_ok_and(|value| value == "1")
}

/// Whether the heavy-only test `test` runs: `FAIRFLOW_HEAVY=1`. Without
/// the switch it says it was skipped (the ordinary suite runs a smaller
/// version of the same check; `.ci/run`'s heavy stage runs this one).
pub fn heavy_or_skip(test: &str) -> bool {
    if heavy() {
        return true;
    }
    println!("skipped: {test} runs only with FAIRFLOW_HEAVY=1 (.ci/run's heavy stage)");
    eprintln!("skipped: {test} runs only with FAIRFLOW_HEAVY=1 (.ci/run's heavy stage)");
    false
}

/// Whether the tests run under CI (`CI=true`).
pub fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|value| value == "true")
}

/// A test cannot run because `what` is missing: under CI this fails the
/// test (CI provides every prerequisite, so a skip there is a failure);
/// elsewhere it prints why the test was skipped, and the caller returns.
#[track_caller]
pub fn prerequisite_missing(what: &str) {
    assert!(
        !under_ci(),
        "a prerequisite is missing under CI (.ci/run provides it): {what}"
    );
    println!("skipped: {what}");
    eprintln!("skipped: {what}");
}

/// Where the shared datasets are: `FAIRFLOW_DATASETS` if set, else
/// `../shared/datasets` beside the repository.
pub fn datasets_dir() -> PathBuf {
    match std::env::var_os("FAIRFLOW_DATASETS") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/datasets"),
    }
}

/// The shared dataset `name`, if it is there; when it is not,
/// [`prerequisite_missing`] has said so (and failed under CI).
#[track_caller]
pub fn dataset(name: &str) -> Option<PathBuf> {
    let path = datasets_dir().join(name);
    if path.is_file() {
        return Some(path);
    }
    prerequisite_missing(&format!(
        "the dataset {} (set FAIRFLOW_DATASETS to the directory holding it)",
        path.display()
    ));
    None
}

/// A raw HTTP/1.1 answer (as read to its end): its status (0 when it has
/// none) and its body, a `Transfer-Encoding: chunked` body decoded.
pub fn http_answer(raw: &[u8]) -> (u16, String) {
    let text = String::from_utf8_lossy(raw).to_string();
    let status = (text.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let chunked = (head.to_ascii_lowercase()).contains("transfer-encoding: chunked");
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_string()
    };
    (status, body)
}

/// The body of a `Transfer-Encoding: chunked` answer: each chunk's size in
/// hexadecimal on its own line, the chunk, a line break; a size 0 ends it.
fn dechunk(mut rest: &str) -> String {
    let mut body = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 || after.len() < size {
            break;
        }
        body.push_str(&after[..size]);
        rest = after[size..].strip_prefix("\r\n").unwrap_or(&after[size..]);
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunked_answer_is_decoded_and_a_plain_one_kept() {
        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
        assert_eq!(http_answer(chunked), (200, "abcde".to_string()));
        let plain = b"HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\nno";
        assert_eq!(http_answer(plain), (404, "no".to_string()));
        assert_eq!(http_answer(b""), (0, String::new()));
    }

    #[test]
    fn the_shared_datasets_are_found_beside_the_repository() {
        // Both traces the project replays (their README lists them).
        for name in ["LCG-2005-1.swf.gz", "NASA-iPSC-1993-3.1-cln.swf.gz"] {
            if let Some(path) = dataset(name) {
                assert!(path.metadata().unwrap().len() > 100_000, "{name}");
            }
        }
    }
}
