//! Exit codes a script can trust: an input every line of which is rejected
//! fails the command, `--strict` fails on the first rejected line, and
//! `loadtest` refuses a service that already holds data unless `--i-know`.

#[path = "support/binary.rs"]
mod binary;
#[path = "support/service.rs"]
mod service;

use binary::{dataset, run};
use service::Service;

#[test]
fn an_input_wholly_in_the_wrong_format_fails_every_loading_command() {
    // An SWF trace given as an event log: no line is JSON.
    let swf = dataset("swf/tiny.swf");
    for command in [
        &["sshare", "--events"][..],
        &["sprio", "--events"],
        &["top", "--events"],
        &["sshare", "--engine", "batch", "--events"],
    ] {
        let (ok, _, stderr) = run(&[command, &[swf.as_str()]].concat());
        assert!(!ok, "{command:?} succeeded: {stderr}");
        assert!(
            stderr.contains("every one of its") && stderr.contains("tiny.swf"),
            "{command:?}: {stderr}"
        );
    }
    // `replay` reads .swf as a trace; a log of garbage fails it the same way.
    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("garbage.jsonl");
    std::fs::write(&garbage, "not json\nnor this\n").unwrap();
    let (ok, _, stderr) = run(&["replay", garbage.to_str().unwrap()]);
    assert!(!ok, "{stderr}");
    assert!(stderr.contains("every one of its 2 lines"), "{stderr}");
}

#[test]
fn some_rejected_lines_pass_and_strict_fails_on_the_first() {
    let log = dataset("events/bad-lines.jsonl");
    // bad-lines.jsonl: line 4 (a negative amount) is its first bad line.
    let (ok, _, stderr) = run(&["sshare", "--events", &log]);
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains("bad-lines.jsonl: line 4: field `amount`"),
        "{stderr}"
    );
    let (ok, _, stderr) = run(&["sshare", "--strict", "--events", &log]);
    assert!(!ok, "{stderr}");
    let error = stderr
        .lines()
        .find(|l| l.starts_with("fairflow: error:"))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(
        error.contains("bad-lines.jsonl: line 4: field `amount`"),
        "{error}"
    );
    assert!(error.contains("--strict"), "{error}");
    let (ok, _, stderr) = run(&["replay", "--strict", &log]);
    assert!(!ok, "{stderr}");
    assert!(stderr.contains("--strict"), "{stderr}");
}

#[test]
fn loadtest_refuses_a_service_that_holds_data_unless_told_i_know() {
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, "loadtest-token").unwrap();
    // The service refuses a token file other users can read.
    std::fs::set_permissions(
        &token_file,
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
    let service = Service::start(
        &dir.path().join("data"),
        &token_file,
        &["--engine", "batch"],
    );
    let (status, body) = service.request(
        "POST",
        "/v1/events",
        Some("loadtest-token"),
        "{\"op\":\"account\",\"t\":1700000000,\"name\":\"real\"}\n",
    );
    assert_eq!(status, 200, "{body}");
    let server = format!("http://{}", service.address);
    let (ok, _, stderr) = run(&[
        "loadtest",
        "--server",
        &server,
        "--token-file",
        token_file.to_str().unwrap(),
        "--duration-secs",
        "1",
        "--associations",
        "20",
        "--jobs",
        "20",
    ]);
    assert!(!ok, "{stderr}");
    assert!(
        stderr.contains("1 associations") || stderr.contains("events applied"),
        "{stderr}"
    );
    assert!(stderr.contains("--i-know"), "{stderr}");
    // Nothing was written: the service still holds its one account.
    let (_, metrics) = service.request("GET", "/metrics", None, "");
    assert!(
        metrics.contains("fairflow_events_applied_total 1\n"),
        "{metrics}"
    );
    service.kill();
}
