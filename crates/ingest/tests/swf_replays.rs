//! `import swf` never writes a log that replay rejects (issue 16, item 6):
//! rows out of submit order, duplicate job numbers and times beyond the
//! calendar are handled in the converter (sorted, or rejected naming the line
//! and field), and a property test feeds random traces through the converter,
//! the writer, the parser and the validator: zero rejections after conversion.

use fairflow_ingest::swf::convert_swf;
use fairflow_ingest::write::event_to_line;
use fairflow_ingest::{parse_event, Validator};
use proptest::prelude::*;

/// Convert, write every event as a log line, parse it back and validate it:
/// returns (converter rejections as (line, field), replay rejections).
fn convert_and_replay(trace: &str) -> (Vec<(u64, Option<String>)>, Vec<String>) {
    let lines = convert_swf(trace.as_bytes()).expect("reads");
    let mut converter = Vec::new();
    let mut replay = Vec::new();
    let mut validator = Validator::default();
    for (index, line) in lines.into_iter().enumerate() {
        match line.event {
            Err(r) => converter.push((r.line, r.field)),
            Ok(event) => {
                let text = event_to_line(&event);
                let number = index as u64 + 1;
                match parse_event(number, &text) {
                    Err(r) => replay.push(format!("{text}: {r}")),
                    Ok(parsed) => {
                        if let Err(r) = validator.check(number, &parsed) {
                            replay.push(format!("{text}: {r}"));
                        }
                    }
                }
            }
        }
    }
    converter.sort();
    (converter, replay)
}

fn row(job: i64, submit: i64, wait: i64, run: i64, user: i64, group: i64) -> String {
    format!("{job} {submit} {wait} {run} 2 -1 -1 2 -1 -1 1 {user} {group} -1 -1 -1 -1 -1\n")
}

#[test]
fn rows_out_of_submit_order_create_the_account_first() {
    // Job 1 of group 7 is on the first line but submitted after job 2 of the
    // same group: before, `g7` was created at 500, after job 2's submit at 100.
    let trace = format!(
        "; UnixStartTime: 1000\n{}{}",
        row(1, 500, 0, 10, 3, 7),
        row(2, 100, 0, 10, 3, 7)
    );
    let (converter, replay) = convert_and_replay(&trace);
    assert!(converter.is_empty(), "{converter:?}");
    assert!(replay.is_empty(), "{replay:?}");
}

#[test]
fn duplicate_job_numbers_are_rejected_naming_the_line() {
    let trace = format!("{}{}", row(5, 10, 0, 10, 1, 1), row(5, 20, 0, 10, 1, 1));
    let (converter, replay) = convert_and_replay(&trace);
    assert_eq!(converter, vec![(2, Some("job number".to_string()))]);
    assert!(replay.is_empty(), "{replay:?}");
}

#[test]
fn times_beyond_the_calendar_are_rejected_not_wrapped() {
    let trace = format!(
        "; UnixStartTime: 1000\n{}{}{}",
        row(1, 9_223_372_036_854_775_000, 0, 10, 1, 1),
        row(2, 10, 0, 253_402_300_000, 1, 1),
        row(3, 10, 0, 10, 1, 1),
    );
    let (converter, replay) = convert_and_replay(&trace);
    assert_eq!(
        converter,
        vec![
            (2, Some("submit time".to_string())),
            (3, Some("submit time".to_string()))
        ]
    );
    assert!(replay.is_empty(), "{replay:?}");
}

fn swf_row() -> impl Strategy<Value = String> {
    let small = -2i64..40;
    (
        0i64..12,
        prop_oneof![-5i64..1_000, Just(i64::MAX / 2), Just(253_402_300_000i64)],
        small.clone(),
        prop_oneof![-2i64..100, Just(i64::MAX / 4)],
        small.clone(),
        small.clone(),
        0i64..4,
        0i64..3,
    )
        .prop_map(|(job, submit, wait, run, alloc, req, user, group)| {
            format!(
                "{job} {submit} {wait} {run} {alloc} -1 -1 {req} -1 -1 1 {user} {group} -1 -1 -1 -1 -1\n"
            )
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn whatever_the_converter_writes_replays_with_zero_rejections(
        start in prop_oneof![Just(0i64), 0i64..2_000_000_000, Just(i64::MAX)],
        rows in prop::collection::vec(swf_row(), 0..25),
    ) {
        let trace = format!("; UnixStartTime: {start}\n; MaxProcs: 64\n{}", rows.concat());
        let (_, replay) = convert_and_replay(&trace);
        prop_assert!(replay.is_empty(), "{:?}\n{}", replay, trace);
    }
}
