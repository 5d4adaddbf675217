//! Crash safety: a writer sends events while `fairflow serve` is killed with
//! SIGKILL at random moments and restarted. Every acknowledged event must be
//! applied exactly once, and the final state must equal the oracle's on
//! exactly the events the service applied.
//!
//! Each event charges a distinct power of two of usage to its round's own
//! account (no decay), so an account's RawUsage says exactly which events were
//! applied: an acknowledged one missing, or any one applied twice, breaks the
//! binary decomposition. `FAIRFLOW_HEAVY=1` runs many more rounds.
//!
//! The service runs on the incremental engine, alternating between one and
//! two timely workers across restarts, so checkpoints taken by one worker
//! count are restored by the other.

#[path = "support/service.rs"]
mod service;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fairflow_engine::{BatchEngine, Engine};
use fairflow_ingest::reader::read_events;
use fairflow_model::Config;
use fairflow_serve::sshare;
use service::Service;

const TOKEN: &str = "crash-test-token";
const EVENTS_PER_ROUND: u32 = 40;

fn usage_event(round: u32, i: u32) -> String {
    format!(
        "{{\"op\":\"usage\",\"t\":{},\"account\":\"r{round}\",\"amount\":{}}}",
        1_700_000_000 + u64::from(round) * 100 + u64::from(i),
        1u64 << i
    )
}

fn setup_events(rounds: u32) -> String {
    let mut log = String::from(
        "{\"op\":\"config\",\"t\":1700000000,\"set\":{\"PriorityDecayHalfLife\":0}}\n",
    );
    for round in 0..rounds {
        log.push_str(&format!(
            "{{\"op\":\"account\",\"t\":1700000000,\"name\":\"r{round}\"}}\n"
        ));
    }
    log
}

/// A pseudo-random number in 0..n from a seed, advanced.
fn next(seed: &mut u64, n: u64) -> u64 {
    *seed = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (*seed >> 33) % n
}

#[test]
fn sigkill_at_random_moments_loses_no_acknowledged_event() {
    let rounds: u32 = if fairflow_testkit::heavy() { 40 } else { 6 };
    let dir = tempfile::tempdir().unwrap();
    let token_file = service::token_file(dir.path(), TOKEN);
    let data = dir.path().join("data");
    let flags = |round: u32| {
        let workers = if round.is_multiple_of(2) { "1" } else { "2" };
        ["--checkpoint-every", "7", "--workers", workers]
    };
    let service = Service::start(&data, &token_file, &flags(0));
    assert!(
        service.banner.contains("engine incremental, 1 worker"),
        "{}",
        service.banner
    );
    let (status, body) = service.request("POST", "/v1/events", Some(TOKEN), &setup_events(rounds));
    assert_eq!(status, 200, "{body}");
    let mut service = Some(service);
    let mut seed = 42u64;
    let mut acknowledged: Vec<Vec<u32>> = Vec::new();
    for round in 0..rounds {
        let running = service.take().unwrap();
        let address = running.address;
        let acked = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let writer = {
            let (acked, stop) = (acked.clone(), stop.clone());
            std::thread::spawn(move || {
                let client = Service {
                    child: std::process::Command::new("true").spawn().unwrap(),
                    address,
                    banner: String::new(),
                };
                for i in 0..EVENTS_PER_ROUND {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let (status, _) =
                        client.request("POST", "/v1/events", Some(TOKEN), &usage_event(round, i));
                    if status == 200 {
                        acked.lock().unwrap().push(i);
                    } else {
                        break;
                    }
                }
                client.kill();
            })
        };
        std::thread::sleep(Duration::from_millis(5 + next(&mut seed, 80)));
        running.kill();
        stop.store(true, Ordering::SeqCst);
        writer.join().unwrap();
        acknowledged.push(acked.lock().unwrap().clone());
        let restarted = Service::start(&data, &token_file, &flags(round + 1));
        assert!(
            restarted.banner.contains("engine incremental"),
            "{}",
            restarted.banner
        );
        service = Some(restarted);
    }
    let service = service.unwrap();
    let (_, table) = service.request("GET", "/v1/sshare", None, "");
    let rows: Vec<serde_json::Value> = serde_json::from_str(&table).unwrap();
    // Rebuild exactly what was applied, round by round, and check every ack.
    let mut applied_log = setup_events(rounds);
    for (round, acked) in acknowledged.iter().enumerate() {
        let row = rows
            .iter()
            .find(|r| r["account"] == format!("r{round}") && r["user"].is_null())
            .unwrap();
        let raw = row["raw_usage"].as_u64().unwrap();
        assert!(
            raw < 1u64 << EVENTS_PER_ROUND,
            "round {round}: an event was applied twice ({raw:#x})"
        );
        for &i in acked {
            assert!(
                raw & (1 << i) != 0,
                "round {round}: acknowledged event {i} was lost ({raw:#x})"
            );
        }
        for i in 0..EVENTS_PER_ROUND {
            if raw & (1 << i) != 0 {
                applied_log.push_str(&usage_event(round as u32, i));
                applied_log.push('\n');
            }
        }
    }
    let total_acked: usize = acknowledged.iter().map(Vec::len).sum();
    eprintln!(
        "acknowledged per round: {:?}",
        acknowledged.iter().map(Vec::len).collect::<Vec<_>>()
    );
    assert!(
        total_acked > 0,
        "the writer never got an acknowledgement: the test proves nothing"
    );
    let mut oracle = BatchEngine::new(Config::default());
    let rejected = oracle
        .apply(
            read_events(applied_log.as_bytes())
                .map(Result::unwrap)
                .collect(),
        )
        .unwrap();
    assert!(rejected.is_empty(), "{rejected:?}");
    assert_eq!(table, sshare::render_json(&oracle.fairshare().unwrap()));
    service.kill();
}
