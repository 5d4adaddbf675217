//! Property tests: no input, however malformed, makes a parser, converter or
//! the validator panic; what parses round-trips through the writer.

use fairflow_book::Book;
use fairflow_ingest::jobcomp::{read_record, JobcompReader};
use fairflow_ingest::parse_event;
use fairflow_ingest::reader::read_events;
use fairflow_ingest::swf::convert_swf;
use fairflow_ingest::write::event_to_line;
use proptest::prelude::*;

/// Strings that look like events: JSON objects with known keys and random values.
fn event_like() -> impl Strategy<Value = String> {
    let op = prop::sample::select(vec![
        "account",
        "user",
        "remove_account",
        "remove_user",
        "usage",
        "reset_usage",
        "submit",
        "update",
        "hold",
        "release",
        "cancel",
        "start",
        "end",
        "requeue",
        "config",
        "qos",
        "partition",
        "cluster",
        "tick",
        "bogus",
    ]);
    let value = prop_oneof![
        Just("null".to_string()),
        any::<i64>().prop_map(|v| v.to_string()),
        any::<f64>().prop_map(|v| if v.is_finite() {
            v.to_string()
        } else {
            "1e999".into()
        }),
        "[a-c]{0,3}".prop_map(|s| format!("\"{s}\"")),
        Just("\"parent\"".to_string()),
        Just("{\"cpu\":4,\"mem\":-1}".to_string()),
        Just("{\"PriorityFlags\":\"NO_FAIR_TREE\",\"PriorityWeightAge\":\"x\"}".to_string()),
        Just("[1,\"a\"]".to_string()),
    ];
    let key = prop::sample::select(vec![
        "name",
        "parent",
        "shares",
        "user",
        "account",
        "amount",
        "job",
        "tres",
        "urgency",
        "set",
        "nodes",
        "time_limit",
        "nice",
        "begin",
        "priority",
        "usage_factor",
        "tres_billing_weights",
        "attributes",
    ]);
    (op, 0i64..50, prop::collection::vec((key, value), 0..6)).prop_map(|(op, t, fields)| {
        let mut text = format!("{{\"op\":\"{op}\",\"t\":{t}");
        for (k, v) in fields {
            text.push_str(&format!(",\"{k}\":{v}"));
        }
        text.push('}');
        text
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic_the_reader(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        for line in read_events(&bytes[..]) {
            let line = line.unwrap();
            if let Err(rejection) = &line.event {
                prop_assert!(rejection.line >= 1);
            }
        }
    }

    #[test]
    fn event_like_lines_parse_or_are_rejected_and_the_book_never_panics(lines in prop::collection::vec(event_like(), 1..40)) {
        let mut book = Book::default();
        for (i, text) in lines.iter().enumerate() {
            let line = i as u64 + 1;
            match parse_event(line, text) {
                Ok(event) => {
                    // What parses round-trips through the writer unchanged.
                    prop_assert_eq!(parse_event(line, &event_to_line(&event)).unwrap(), event.clone());
                    let _ = book.apply(line, &event);
                }
                Err(rejection) => prop_assert_eq!(rejection.line, line),
            }
        }
    }

    #[test]
    fn arbitrary_jobcomp_and_swf_lines_never_panic(text in "[ -~]{0,200}") {
        let _ = read_record(1, &text);
        let mut reader = JobcompReader::local();
        for (i, line) in text.split('|').enumerate() {
            let _ = reader.line(i as u64 + 1, line);
        }
        let _ = convert_swf(text.as_bytes()).unwrap();
    }
}
