//! Slurm's queue order end to end (`top`, `position`, `GET /v1/top`, `GET
//! /v1/jobs/{id}/position`): one entry per (partition, QOS) pair, expedited
//! jobs first, then partition `PriorityTier`, priority, submit time and job
//! id, as `sort_job_queue2` (`src/slurmctld/job_scheduler.c`) orders them.
//! Expected orders are worked out by hand in the comments, for both engines.
//!
//! The cluster: partition `high` (PriorityTier 2, PriorityJobFactor 1) and
//! `low` (tier 1, factor 4); only the partition factor weighs (1000), so a
//! pair's priority is `1000 * factor / 4`: 250 in `high`, 1000 in `low`.
//! Job 4 (low) submitted at 90, started at 95 and requeued with `expedite`
//! at 130; job 1 (low) at 100; job 2 (`high,low`) at 110; job 3 (high) at
//! 120.

#[path = "support/binary.rs"]
mod binary;
#[path = "support/service.rs"]
mod service;

use binary::fairflow;
use service::{token_file, Service};

const EVENTS: &str = r#"{"op":"config","t":0,"set":{"PriorityWeightPartition":1000,"PriorityWeightAge":0,"PriorityWeightFairshare":0,"PriorityWeightJobSize":0,"PriorityWeightQOS":0,"PriorityWeightAssoc":0}}
{"op":"account","t":0,"name":"a"}
{"op":"user","t":0,"user":"alice","account":"a"}
{"op":"user","t":0,"user":"bob","account":"a"}
{"op":"partition","t":0,"name":"high","priority_job_factor":1,"priority_tier":2}
{"op":"partition","t":0,"name":"low","priority_job_factor":4,"priority_tier":1}
{"op":"submit","t":90,"job":"4","user":"bob","account":"a","partition":"low"}
{"op":"start","t":95,"job":"4"}
{"op":"submit","t":100,"job":"1","user":"alice","account":"a","partition":"low"}
{"op":"submit","t":110,"job":"2","user":"bob","account":"a","partition":"high,low"}
{"op":"submit","t":120,"job":"3","user":"alice","account":"a","partition":"high"}
{"op":"requeue","t":130,"job":"4","expedite":true}
"#;

/// Expedited job 4 first; then tier 2: job 2 (250, submitted at 110) before
/// job 3 (250, at 120); then tier 1: job 1 (1000, at 100), job 2's entry in
/// `low` (1000, at 110). Job 2, lower than job 1, is ahead of it by its tier.
const TOP: &str = "RANK|JOBID|USER|ACCOUNT|PRIORITY|PARTITION|QOS\n\
                   1|4|bob|a|1000|low|\n\
                   2|2|bob|a|250|high|\n\
                   3|3|alice|a|250|high|\n\
                   4|1|alice|a|1000|low|\n\
                   5|2|bob|a|1000|low|\n";

const ENGINES: [&[&str]; 2] = [
    &["--engine", "batch"],
    &["--engine", "incremental", "--workers", "2"],
];

fn stdout_of(args: &[&str]) -> String {
    let out = fairflow(args);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "{args:?}: {stderr}");
    String::from_utf8(out.stdout).unwrap()
}

fn events_file(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("fairflow-queue-order-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// Job 2's place: its first entry (high) is 2nd; its other entry (low) 5th
/// at 1000; in `high` it is 1st, in `low` 3rd (after jobs 4 and 1).
fn assert_job_2_place(json: &serde_json::Value) {
    assert_eq!(json["rank"], 2, "{json}");
    assert_eq!(json["job"]["partition"], "high", "{json}");
    assert_eq!(
        json["entries"],
        serde_json::json!([{"partition": "low", "qos": "", "rank": 5, "priority": 1000}])
    );
    assert_eq!(
        json["partitions"],
        serde_json::json!([
            {"partition": "high", "rank": 1, "priority": 250},
            {"partition": "low", "rank": 3, "priority": 1000}
        ])
    );
    assert_eq!(json["gap"]["job_id"], "4", "{json}");
}

#[test]
fn tiers_pairs_and_expedited_requeue_order_the_queue_in_both_engines() {
    let events = events_file("tiers.jsonl", EVENTS);
    let events = events.to_str().unwrap();
    for engine in ENGINES {
        let args = |extra: &[&'static str]| -> Vec<&str> {
            let mut all: Vec<&str> = extra.to_vec();
            all.extend_from_slice(&["--events", events]);
            all.extend_from_slice(engine);
            all
        };
        assert_eq!(stdout_of(&args(&["top", "-P"])), TOP, "{engine:?}");
        // `low`'s queue: its entries in the same order.
        assert_eq!(
            stdout_of(&args(&["top", "-P", "-p", "low"])),
            "RANK|JOBID|USER|ACCOUNT|PRIORITY|PARTITION|QOS\n\
             1|4|bob|a|1000|low|\n2|1|alice|a|1000|low|\n3|2|bob|a|1000|low|\n",
            "{engine:?}"
        );
        let json: serde_json::Value =
            serde_json::from_str(&stdout_of(&args(&["top", "--json", "-k", "2"]))).unwrap();
        assert_eq!(json[0]["expedited"], true, "{json}");
        assert_eq!(json[0]["priority_tier"], 1, "{json}");
        assert_eq!(json[1]["partition"], "high", "{json}");
        assert_eq!(json[1]["priority_tier"], 2, "{json}");
        assert!(json[1].get("expedited").is_none(), "{json}");
        let place: serde_json::Value =
            serde_json::from_str(&stdout_of(&args(&["position", "2", "--json"]))).unwrap();
        assert_job_2_place(&place);
        let text = stdout_of(&args(&["position", "2"]));
        assert!(
            text.contains("  entry: partition low, QOS : rank 5 (priority 1000)\n"),
            "{text}"
        );
    }
    // Job 4 starts: the mark is gone, and with it its entry.
    let started = format!("{EVENTS}{{\"op\":\"start\",\"t\":140,\"job\":\"4\"}}\n");
    let started = events_file("started.jsonl", &started);
    for engine in ENGINES {
        let mut args = vec!["top", "-P", "--events", started.to_str().unwrap()];
        args.extend_from_slice(engine);
        assert_eq!(
            stdout_of(&args),
            "RANK|JOBID|USER|ACCOUNT|PRIORITY|PARTITION|QOS\n\
             1|2|bob|a|250|high|\n2|3|alice|a|250|high|\n\
             3|1|alice|a|1000|low|\n4|2|bob|a|1000|low|\n",
            "{engine:?}"
        );
    }
}

#[test]
fn a_malformed_expedite_is_rejected_naming_the_line_and_field() {
    let bad =
        format!("{EVENTS}{{\"op\":\"requeue\",\"t\":140,\"job\":\"1\",\"expedite\":\"yes\"}}\n");
    let bad = events_file("bad.jsonl", &bad);
    let out = fairflow(&["top", "-P", "--events", bad.to_str().unwrap()]);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("line 13") && stderr.contains("expedite"),
        "{stderr}"
    );
    // The rejected line changes nothing.
    assert_eq!(String::from_utf8(out.stdout).unwrap(), TOP);
}

#[test]
fn the_service_answers_the_same_order() {
    let dir =
        std::env::temp_dir().join(format!("fairflow-queue-order-serve-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let token = token_file(&dir, "queue-order-token");
    let service = Service::start(&dir.join("data"), &token, &[]);
    let (status, body) = service.request("POST", "/v1/events", Some("queue-order-token"), EVENTS);
    assert_eq!(status, 200, "{body}");
    let (_, top) = service.request("GET", "/v1/top?k=10&format=parsable", None, "");
    assert_eq!(top, TOP);
    let (_, place) = service.request("GET", "/v1/jobs/2/position", None, "");
    assert_job_2_place(&serde_json::from_str(&place).unwrap());
    service.kill();
}
