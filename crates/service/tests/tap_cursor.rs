//! A file tap's position in the durable log (`taps::cursor`): logged with
//! its batch even when every line is rejected or there is none, recovered at
//! start as the tap's last, and still recovered after checkpoints let the
//! segments that held it go.

use std::sync::Arc;

use fairflow_engine::BatchEngine;
use fairflow_ingest::follow::FilePosition;
use fairflow_ingest::reader::read_events;
use fairflow_ingest::LogLine;
use fairflow_model::Config;
use fairflow_service::applier::{self, ApplierConfig, ApplierHandle, RecoveryReport};
use fairflow_service::engine_backend::EngineBackend;
use fairflow_service::metrics::Metrics;
use fairflow_service::taps::cursor::{TapCursor, TapPosition};

fn position(offset: u64) -> FilePosition {
    FilePosition {
        dev: 1,
        inode: 2,
        offset,
        line: offset / 10,
        head_bytes: 10,
        head_crc32: 3,
    }
}

/// The file position `report` recovered for `tap`.
fn file_position<'a>(report: &'a RecoveryReport, tap: &str) -> Option<&'a FilePosition> {
    report.tap_cursors.get(tap).and_then(TapPosition::file)
}

fn lines(text: &str) -> Vec<LogLine> {
    read_events(text.as_bytes()).map(Result::unwrap).collect()
}

/// Start an applier on `dir`, checkpointing every `every` records; run `body`
/// with it, then stop it; the recovery report of the start.
fn with_applier(
    dir: &std::path::Path,
    every: u64,
    body: impl FnOnce(ApplierHandle, tokio::runtime::Runtime),
) -> RecoveryReport {
    let config = ApplierConfig {
        data_dir: dir.to_path_buf(),
        checkpoint_every: every,
        queue_capacity: 8,
        max_group: 1,
        recover: false,
    };
    let backend = EngineBackend::new(Box::new(BatchEngine::new(Config::default())));
    let (handle, report, thread) =
        applier::start(backend, config, Arc::new(Metrics::new())).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    body(handle, runtime);
    thread.join().unwrap();
    report
}

#[test]
fn a_taps_last_position_is_recovered_even_after_rejected_batches_and_checkpoints() {
    let dir = tempfile::tempdir().unwrap();
    with_applier(dir.path(), 1_000, |applier, runtime| {
        runtime.block_on(async {
            let tree = "{\"op\":\"account\",\"t\":100,\"name\":\"a\",\"shares\":1}";
            let first = applier
                .write_from_tap(lines(tree), TapCursor::new("jobcomp", position(100)))
                .await
                .unwrap();
            assert_eq!(first.accepted, 1);
            // Every line rejected (an unknown account): the position is still logged.
            let bad =
                "{\"op\":\"usage\",\"t\":200,\"account\":\"ghost\",\"user\":\"x\",\"amount\":1}";
            let rejected = applier
                .write_from_tap(lines(bad), TapCursor::new("jobcomp", position(200)))
                .await
                .unwrap();
            assert_eq!((rejected.accepted, rejected.rejected.len()), (0, 1));
            // No line at all (records that charge nothing): logged too.
            applier
                .write_from_tap(Vec::new(), TapCursor::new("replay", position(50)))
                .await
                .unwrap();
        });
    });
    let report = with_applier(dir.path(), 2, |applier, runtime| {
        // Many writes and checkpoints every two records: the segments that
        // held the positions are let go.
        runtime.block_on(async {
            for i in 0..20 {
                let tick = format!("{{\"op\":\"tick\",\"t\":{}}}", 300 + i);
                applier.write(lines(&tick)).await.unwrap();
            }
        });
    });
    assert_eq!(file_position(&report, "jobcomp"), Some(&position(200)));
    assert_eq!(file_position(&report, "replay"), Some(&position(50)));
    let report = with_applier(dir.path(), 2, |_, _| {});
    assert_eq!(file_position(&report, "jobcomp"), Some(&position(200)));
    assert_eq!(file_position(&report, "replay"), Some(&position(50)));
    let segments = std::fs::read_dir(dir.path().join("log")).unwrap().count();
    assert!(
        segments < 10,
        "{segments} segments: checkpoints let them go"
    );
}
