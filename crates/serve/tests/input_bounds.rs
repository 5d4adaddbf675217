//! The inputs that crashed or silently corrupted the engines (issue 16, item 1),
//! through both engines behind the `Engine` trait: a usage amount of 1e35
//! (panicked the incremental engine, wrapped in the batch engine), 1e303
//! (accepted and charged 0), `DAILY`/`WEEKLY` resets with an event near the end
//! of the calendar (panicked `model::reset` after walking day by day), and
//! times and durations out of range. Each is rejected with its line, field and
//! reason, identically by both engines, and the rest of the log still applies.

use fairflow_ingest::reader::read_events;
use fairflow_ingest::{LogLine, Rejection};
use fairflow_model::limits::MAX_TIME;
use fairflow_model::Config;
use fairflow_serve::engine::{BatchEngine, Engine, IncrementalEngine};

fn lines(text: &str) -> Vec<LogLine> {
    read_events(text.as_bytes()).map(Result::unwrap).collect()
}

/// Feed `log` to both engines; they must reject the same lines and agree.
fn both(log: &str) -> (Vec<Rejection>, BatchEngine) {
    let mut batch = BatchEngine::new(Config::default());
    let mut incremental = IncrementalEngine::start(2, Config::default()).unwrap();
    let want = batch.apply(lines(log));
    let got = incremental.apply(lines(log));
    assert_eq!(got, want, "rejections");
    assert_eq!(incremental.fairshare(), batch.fairshare(), "fairshare");
    assert_eq!(incremental.priorities(), batch.priorities(), "priorities");
    assert_eq!(incremental.applied(), batch.applied(), "applied");
    (want, batch)
}

const TREE: &str = r#"{"op":"account","t":1700000000,"name":"a","shares":1}
{"op":"user","t":1700000000,"user":"u","account":"a","shares":1}
{"op":"account","t":1700000000,"name":"b","shares":1}
{"op":"user","t":1700000000,"user":"v","account":"b","shares":1}
"#;

fn root_raw_usage(engine: &mut BatchEngine) -> u64 {
    let table = engine.fairshare();
    let root = table.rows.iter().find(|r| r.account == "root");
    root.expect("a root row").raw_usage
}

fn field_of(rejections: &[Rejection], line: u64) -> Option<&str> {
    rejections
        .iter()
        .find(|r| r.line == line)
        .and_then(|r| r.field.as_deref())
}

#[test]
fn huge_usage_amounts_are_rejected_by_both_engines() {
    let log = format!(
        "{TREE}{}\n{}\n{}\n",
        r#"{"op":"usage","t":1700000000,"account":"a","user":"u","amount":1e35}"#,
        r#"{"op":"usage","t":1700000000,"account":"b","user":"v","amount":1e303}"#,
        r#"{"op":"usage","t":1700000000,"account":"a","user":"u","amount":3600}"#,
    );
    let (rejections, mut batch) = both(&log);
    assert_eq!(rejections.len(), 2, "{rejections:?}");
    assert_eq!(field_of(&rejections, 5), Some("amount"));
    assert_eq!(field_of(&rejections, 6), Some("amount"));
    assert!(
        rejections[0].reason.contains("out of range"),
        "{}",
        rejections[0]
    );
    // Only the 3600 TRES-seconds were charged: root's raw usage is 3600
    // (charged at the frame's epoch and read at that time: no decay).
    assert_eq!(root_raw_usage(&mut batch), 3600);
}

#[test]
fn daily_and_weekly_resets_near_the_end_of_the_calendar_do_not_panic() {
    for period in ["DAILY", "WEEKLY", "MONTHLY", "QUARTERLY", "YEARLY"] {
        let log = format!(
            "{TREE}{}\n{}\n{}\n{}\n",
            format_args!(
                r#"{{"op":"config","t":1700000000,"set":{{"PriorityUsageResetPeriod":"{period}","PriorityDecayHalfLife":"0"}}}}"#
            ),
            r#"{"op":"usage","t":1700000100,"account":"a","user":"u","amount":3600}"#,
            format_args!(r#"{{"op":"usage","t":{MAX_TIME},"account":"b","user":"v","amount":60}}"#),
            format_args!(r#"{{"op":"tick","t":{}}}"#, MAX_TIME + 1),
        );
        let (rejections, mut batch) = both(&log);
        // The last line is past 9999-12-31T23:59:59Z.
        assert_eq!(rejections.len(), 1, "{period}: {rejections:?}");
        assert_eq!(field_of(&rejections, 8), Some("t"), "{period}");
        // Without decay, a reset between the two charges leaves only v's 60
        // (3600 + 60 without it).
        assert_eq!(root_raw_usage(&mut batch), 60, "{period}");
    }
}

#[test]
fn times_and_durations_out_of_range_name_their_field() {
    let cases = [
        (r#"{"op":"tick","t":9223372036854775807}"#, "t"),
        (r#"{"op":"tick","t":253402300800}"#, "t"),
        (
            r#"{"op":"submit","t":1700000200,"job":"1","user":"u","account":"a","begin":-9223372036854775808}"#,
            "begin",
        ),
        (
            r#"{"op":"submit","t":1700000200,"job":"2","user":"u","account":"a","deadline":9223372036854775807}"#,
            "deadline",
        ),
        (
            r#"{"op":"submit","t":1700000200,"job":"3","user":"u","account":"a","time_limit":18446744073709551615}"#,
            "time_limit",
        ),
        (
            r#"{"op":"submit","t":1700000200,"job":"4","user":"u","account":"a","tres":{"cpu":1e300}}"#,
            "tres.cpu",
        ),
        (
            r#"{"op":"qos","t":1700000200,"name":"q","usage_factor":1e300}"#,
            "usage_factor",
        ),
        (
            r#"{"op":"partition","t":1700000200,"name":"p","max_time":18446744073709551615}"#,
            "max_time",
        ),
    ];
    let body: String = cases.iter().map(|(line, _)| format!("{line}\n")).collect();
    let log = format!("{TREE}{body}");
    let (rejections, _) = both(&log);
    assert_eq!(rejections.len(), cases.len(), "{rejections:?}");
    for (i, (_, field)) in cases.iter().enumerate() {
        assert_eq!(
            field_of(&rejections, 5 + i as u64),
            Some(*field),
            "case {i}"
        );
    }
}
