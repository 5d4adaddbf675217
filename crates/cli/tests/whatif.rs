//! `fairflow whatif` and `POST /v1/whatif`: the answer equals recomputing
//! the changed state with the batch oracle directly (the same proposal
//! appended to the log, then `top`, `sprio` and `sshare` on it), from a log
//! and from a running service (whose state a what-if never changes); a bad
//! proposal is refused with its line, field and reason.

#[path = "support/binary.rs"]
mod binary;
#[path = "support/service.rs"]
mod service;

use std::collections::BTreeMap;

use binary::{dataset, fairflow, text};
use serde_json::Value;

/// Bob's shares from 1 to 4, ten hours of his usage (over his 4 shares more
/// than alice's hour over her 1: the two swap in Fair Tree), a new job of his, and a
/// heavier age weight (the state: `datasets/events/priority.jsonl`, at
/// 1700086400).
const PROPOSAL: &str = r#"{"op":"user","t":1700086400,"user":"bob","account":"lab","shares":4}
{"op":"usage","t":1700086400,"account":"lab","user":"bob","amount":36000}
{"op":"submit","t":1700086400,"job":"5","user":"bob","account":"lab","qos":"high","tres":{"cpu":4,"node":1}}
{"op":"config","t":1700086400,"set":{"PriorityWeightAge":5000}}
"#;

fn json_of(args: &[&str]) -> Value {
    let out = fairflow(args);
    assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
    serde_json::from_str(&text(&out.stdout)).unwrap()
}

/// What the oracle says of `log`: user factors (sshare's FairShare under
/// Fair Tree), listed jobs' priorities, ranked positions.
struct Direct {
    factors: BTreeMap<(String, String), f64>,
    priorities: BTreeMap<String, u64>,
    positions: BTreeMap<String, u64>,
}

fn direct(log: &str) -> Direct {
    let engine = ["--events", log, "--engine", "batch"];
    let sshare = json_of(&[&["sshare", "--json"][..], &engine].concat());
    let factors = sshare
        .as_array()
        .unwrap()
        .iter()
        .filter(|row| row["user"].is_string())
        .map(|row| {
            (
                (
                    row["account"].as_str().unwrap().to_string(),
                    row["user"].as_str().unwrap().to_string(),
                ),
                row["fairshare"].as_f64().unwrap(),
            )
        })
        .collect();
    let sprio = json_of(&[&["sprio", "--json"][..], &engine].concat());
    let priorities = sprio
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            (
                j["job_id"].as_str().unwrap().to_string(),
                j["priority"].as_u64().unwrap(),
            )
        })
        .collect();
    let top = json_of(&[&["top", "-k", "1000", "--json"][..], &engine].concat());
    let positions = top
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(i, j)| (j["job_id"].as_str().unwrap().to_string(), i as u64 + 1))
        .collect();
    Direct {
        factors,
        priorities,
        positions,
    }
}

/// `answer` (what-if's JSON) against the oracle on the log before and after.
fn check_against_oracle(answer: &Value, before: &Direct, after: &Direct) {
    let assocs = answer["associations"].as_array().unwrap();
    let mut listed = std::collections::BTreeSet::new();
    for a in assocs {
        let key = (
            a["account"].as_str().unwrap().to_string(),
            a["user"].as_str().unwrap().to_string(),
        );
        assert_eq!(
            a["before"].as_f64(),
            before.factors.get(&key).copied(),
            "{key:?}"
        );
        assert_eq!(
            a["after"].as_f64(),
            after.factors.get(&key).copied(),
            "{key:?}"
        );
        listed.insert(key);
    }
    for (key, factor) in &after.factors {
        if before.factors.get(key) != Some(factor) {
            assert!(listed.contains(key), "{key:?} changed but is not listed");
        }
    }
    let jobs = answer["jobs"].as_array().unwrap();
    let mut listed = std::collections::BTreeSet::new();
    for j in jobs {
        let id = j["job"].as_str().unwrap().to_string();
        assert_eq!(
            j["priority_before"].as_u64(),
            before.priorities.get(&id).copied(),
            "{id}"
        );
        assert_eq!(
            j["priority_after"].as_u64(),
            after.priorities.get(&id).copied(),
            "{id}"
        );
        assert_eq!(
            j["position_before"].as_u64(),
            before.positions.get(&id).copied(),
            "{id}"
        );
        assert_eq!(
            j["position_after"].as_u64(),
            after.positions.get(&id).copied(),
            "{id}"
        );
        listed.insert(id);
    }
    let ids: std::collections::BTreeSet<&String> = after
        .priorities
        .keys()
        .chain(before.priorities.keys())
        .collect();
    for id in ids {
        let same = before.priorities.get(id) == after.priorities.get(id)
            && before.positions.get(id) == after.positions.get(id);
        assert!(
            same || listed.contains(id),
            "job {id} changed but is not listed"
        );
    }
    // The new job 5 is listed; something really changed.
    assert!(listed.contains("5"));
    assert!(!assocs.is_empty());
}

#[test]
fn whatif_equals_the_oracle_on_the_changed_log_from_a_log_and_from_the_service() {
    let dir = tempfile::tempdir().unwrap();
    let state = dataset("events/priority.jsonl");
    let proposal = dir.path().join("proposal.jsonl");
    std::fs::write(&proposal, PROPOSAL).unwrap();
    let changed = dir.path().join("changed.jsonl");
    std::fs::write(
        &changed,
        format!("{}{PROPOSAL}", std::fs::read_to_string(&state).unwrap()),
    )
    .unwrap();
    let before = direct(&state);
    let after = direct(changed.to_str().unwrap());

    let args = [
        "whatif",
        "--events",
        &state,
        "--propose",
        proposal.to_str().unwrap(),
        "-k",
        "1000",
        "--json",
    ];
    let mut answers = Vec::new();
    for engine in [&["--engine", "batch"][..], &["--engine", "incremental"]] {
        let answer = json_of(&[&args[..], engine].concat());
        check_against_oracle(&answer, &before, &after);
        answers.push(answer);
    }
    assert_eq!(answers[0], answers[1]);
    // The table names the changes.
    let out = fairflow(&args[..args.len() - 1]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("4 proposed events applied"),
        "{}",
        text(&out.stdout)
    );

    // The same from a running service: its answer is the log's, and its
    // state is the same after.
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, "a-long-enough-token").unwrap();
    std::fs::set_permissions(
        &token_file,
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
    let service = service::Service::start(&dir.path().join("data"), &token_file, &[]);
    let log = std::fs::read_to_string(&state).unwrap();
    let (status, body) = service.request("POST", "/v1/events", Some("a-long-enough-token"), &log);
    assert_eq!(status, 200, "{body}");
    let (_, top_before) = service.request("GET", "/v1/top?k=100", None, "");
    let (_, sshare_before) = service.request("GET", "/v1/sshare", None, "");
    let (status, body) = service.request("POST", "/v1/whatif?k=1000", None, PROPOSAL);
    assert_eq!(status, 200, "{body}");
    let served: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(served, answers[0]);
    assert_eq!(
        service.request("GET", "/v1/top?k=100", None, "").1,
        top_before
    );
    assert_eq!(
        service.request("GET", "/v1/sshare", None, "").1,
        sshare_before
    );
    // The command with --server prints the service's answer.
    let server = format!("http://{}", service.address);
    let remote = json_of(&[
        "whatif",
        "--server",
        &server,
        "--propose",
        proposal.to_str().unwrap(),
        "-k",
        "1000",
        "--json",
    ]);
    assert_eq!(remote, answers[0]);

    // A bad proposal: an unknown account (line 2) and an urgency out of
    // range (line 3), each named; nothing is evaluated.
    let bad = r#"{"op":"user","t":1700086400,"user":"bob","account":"lab","shares":4}
{"op":"user","t":1700086400,"user":"zed","account":"nowhere"}
{"op":"submit","t":1700086400,"job":"6","user":"bob","account":"lab","urgency":99}
"#;
    let (status, body) = service.request("POST", "/v1/whatif", None, bad);
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("line 2: field `account`"), "{body}");
    assert!(body.contains("line 3: field `urgency`"), "{body}");
    assert_eq!(
        service.request("GET", "/v1/top?k=100", None, "").1,
        top_before
    );
    let bad_file = dir.path().join("bad.jsonl");
    std::fs::write(&bad_file, bad).unwrap();
    let out = fairflow(&[
        "whatif",
        "--events",
        &state,
        "--propose",
        bad_file.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("line 2: field `account`"),
        "{}",
        text(&out.stderr)
    );
    service.kill();
}

/// `-o FILE.svg|png` draws the answer: every changed association and job of
/// the JSON answer is labelled in the picture (its geometry is tested with
/// hand values in `fairflow_serve::plot::whatif`); a PNG is a PNG; another
/// extension is refused.
#[test]
fn whatif_draws_its_answer_into_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let state = dataset("events/priority.jsonl");
    let proposal = dir.path().join("proposal.jsonl");
    std::fs::write(&proposal, PROPOSAL).unwrap();
    let args = [
        "whatif",
        "--events",
        &state,
        "--propose",
        proposal.to_str().unwrap(),
    ];
    let answer = json_of(&[&args[..], &["--json"]].concat());
    let svg = dir.path().join("whatif.svg");
    let out = fairflow(&[&args[..], &["-o", svg.to_str().unwrap()]].concat());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let picture = std::fs::read_to_string(&svg).unwrap();
    assert!(picture.starts_with("<svg"), "{picture}");
    let associations = answer["associations"].as_array().unwrap();
    let jobs = answer["jobs"].as_array().unwrap();
    assert!(!associations.is_empty() && !jobs.is_empty());
    for a in associations {
        let label = format!(
            "{}/{}",
            a["account"].as_str().unwrap(),
            a["user"].as_str().unwrap()
        );
        assert!(picture.contains(&label), "{label} missing");
    }
    for j in jobs {
        let label = format!(
            "job {} ({})",
            j["job"].as_str().unwrap(),
            j["user"].as_str().unwrap()
        );
        assert!(picture.contains(&label), "{label} missing");
    }
    let png = dir.path().join("whatif.png");
    let out = fairflow(&[&args[..], &["-o", png.to_str().unwrap()]].concat());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(std::fs::read(&png)
        .unwrap()
        .starts_with(b"\x89PNG\r\n\x1a\n"));
    let out = fairflow(&[&args[..], &["-o", "whatif.gif"]].concat());
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("must end in .svg or .png"),
        "{}",
        text(&out.stderr)
    );
}
