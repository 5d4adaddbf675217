//! `IncrementalEngine` against `BatchEngine` through the `Engine` trait on
//! the repository's example logs (`datasets/events/*.jsonl`): fed in
//! batches of 7 lines, after every batch and after moving time forward by an
//! hour, every answer must be equal (fair-share table, priorities, the
//! queue's top, `explain` of every listed job and of an unknown one, queue
//! length, associations, time, configuration, events applied, rejections),
//! with 1 and 3 workers.

use std::path::PathBuf;

use fairflow_engine::{BatchEngine, Engine, IncrementalEngine};
use fairflow_ingest::reader::read_events;
use fairflow_ingest::LogLine;
use fairflow_model::Config;

fn logs() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../datasets/events");
    let mut logs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("datasets/events")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    logs.sort();
    assert!(!logs.is_empty(), "no logs in {}", dir.display());
    logs
}

fn lines(text: &str) -> Vec<LogLine> {
    read_events(text.as_bytes()).map(Result::unwrap).collect()
}

fn compare(context: &str, batch: &mut BatchEngine, incremental: &mut IncrementalEngine) {
    assert_eq!(incremental.now(), batch.now(), "{context}: now");
    assert_eq!(incremental.config(), batch.config(), "{context}: config");
    assert_eq!(incremental.applied(), batch.applied(), "{context}: applied");
    assert_eq!(
        incremental.fairshare().unwrap(),
        batch.fairshare().unwrap(),
        "{context}: fairshare"
    );
    let priorities = batch.priorities().unwrap();
    assert_eq!(
        incremental.priorities().unwrap(),
        priorities,
        "{context}: priorities"
    );
    for k in [0, 1, 5, usize::MAX] {
        assert_eq!(
            incremental.top(k).unwrap(),
            batch.top(k).unwrap(),
            "{context}: top {k}"
        );
    }
    for p in &priorities {
        assert_eq!(
            incremental.explain(&p.job).map_err(|e| e.to_string()),
            batch.explain(&p.job).map_err(|e| e.to_string()),
            "{context}: explain {}",
            p.job
        );
    }
    for job in batch
        .replay
        .state()
        .jobs
        .keys()
        .cloned()
        .collect::<Vec<_>>()
    {
        assert_eq!(
            incremental.explain(&job).map_err(|e| e.to_string()),
            batch.explain(&job).map_err(|e| e.to_string()),
            "{context}: explain {job}"
        );
    }
    assert_eq!(
        incremental
            .explain("no-such-job")
            .map_err(|e| e.to_string()),
        batch.explain("no-such-job").map_err(|e| e.to_string()),
        "{context}: explain unknown"
    );
    assert_eq!(
        incremental.queue_len(),
        batch.queue_len(),
        "{context}: queue_len"
    );
    assert_eq!(
        incremental.associations(),
        batch.associations(),
        "{context}: associations"
    );
}

#[test]
fn incremental_answers_equal_batch_answers_on_the_example_logs() {
    for log in logs() {
        let text = std::fs::read_to_string(&log).expect("log");
        let all: Vec<&str> = text.lines().collect();
        for workers in [1, 3] {
            let mut batch = BatchEngine::new(Config::default());
            let mut incremental = IncrementalEngine::start(workers, Config::default()).unwrap();
            let name = log.display().to_string();
            for (i, chunk) in all.chunks(7).enumerate() {
                let chunk = chunk.join("\n") + "\n";
                let want = batch.apply(lines(&chunk)).unwrap();
                let got = incremental.apply(lines(&chunk)).unwrap();
                assert_eq!(got, want, "{name} chunk {i}: rejections");
                compare(
                    &format!("{name} chunk {i} ({workers} workers)"),
                    &mut batch,
                    &mut incremental,
                );
            }
            if let Some(now) = batch.now() {
                batch.advance_to(now + 3600).unwrap();
                incremental.advance_to(now + 3600).unwrap();
                compare(
                    &format!("{name} +1h ({workers} workers)"),
                    &mut batch,
                    &mut incremental,
                );
            }
        }
    }
}

#[test]
fn ticket_and_level_based_answers_equal_batch_answers() {
    let log = logs().into_iter().next().expect("a log");
    let text = std::fs::read_to_string(&log).expect("log");
    for flags in ["TICKET_BASED", "LEVEL_BASED"] {
        let mut config = Config::default();
        let mut set = std::collections::BTreeMap::new();
        set.insert("PriorityFlags".to_string(), serde_json::Value::from(flags));
        config = config.patched(&set).expect("valid flags");
        let mut batch = BatchEngine::new(config.clone());
        let mut incremental = IncrementalEngine::start(2, config).unwrap();
        let all: Vec<&str> = text.lines().collect();
        for (i, chunk) in all.chunks(7).enumerate() {
            let chunk = chunk.join("\n") + "\n";
            let want = batch.apply(lines(&chunk)).unwrap();
            assert_eq!(
                incremental.apply(lines(&chunk)).unwrap(),
                want,
                "{flags} chunk {i}"
            );
            compare(&format!("{flags} chunk {i}"), &mut batch, &mut incremental);
        }
    }
}

#[test]
fn snapshots_of_either_engine_restore_in_the_other() {
    let log = logs()
        .into_iter()
        .find(|p| p.ends_with("priority.jsonl"))
        .expect("priority.jsonl");
    let text = std::fs::read_to_string(log).expect("log");
    let mut batch = BatchEngine::new(Config::default());
    let mut incremental = IncrementalEngine::start(1, Config::default()).unwrap();
    batch.apply(lines(&text)).unwrap();
    incremental.apply(lines(&text)).unwrap();
    let mut restored = BatchEngine::new(Config::default());
    restored.restore(&incremental.snapshot().unwrap()).unwrap();
    assert_eq!(restored.fairshare().unwrap(), batch.fairshare().unwrap());
    assert_eq!(restored.priorities().unwrap(), batch.priorities().unwrap());
    // One format: the incremental engine restores the batch engine's too.
    let mut from_batch = IncrementalEngine::start(2, Config::default()).unwrap();
    from_batch.restore(&batch.snapshot().unwrap()).unwrap();
    compare(
        "restored from the batch engine",
        &mut batch,
        &mut from_batch,
    );
}

#[test]
fn incremental_snapshots_restore_in_the_incremental_engine() {
    let log = logs()
        .into_iter()
        .find(|p| p.ends_with("priority.jsonl"))
        .expect("priority.jsonl");
    let text = std::fs::read_to_string(log).expect("log");
    let all = lines(&text);
    let half = all.len() / 2;
    let mut batch = BatchEngine::new(Config::default());
    let mut incremental = IncrementalEngine::start(1, Config::default()).unwrap();
    batch.apply(all[..half].to_vec()).unwrap();
    incremental.apply(all[..half].to_vec()).unwrap();
    // Restored on another worker count, then both fed the rest of the log.
    let mut restored = IncrementalEngine::start(2, Config::default()).unwrap();
    restored.restore(&incremental.snapshot().unwrap()).unwrap();
    assert_eq!(restored.applied(), batch.applied());
    batch.apply(all[half..].to_vec()).unwrap();
    restored.apply(all[half..].to_vec()).unwrap();
    compare(
        "restored, then the rest of the log",
        &mut batch,
        &mut restored,
    );
    // A damaged snapshot is an error and changes nothing.
    let mut damaged = incremental.snapshot().unwrap();
    let last = damaged.len() - 1;
    damaged[last] ^= 0xFF;
    assert!(restored.restore(&damaged).is_err());
    compare("after a refused restore", &mut batch, &mut restored);
}
