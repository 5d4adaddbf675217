//! The bounds of `check_event`, and the property the service relies on: an
//! event passes the check exactly when the log's writer and reader give it
//! back unchanged.

use fairflow_model::event::{JobSpec, Op};
use fairflow_model::limits::{MAX_TIME, MAX_TRES_COUNT, MAX_USAGE_AMOUNT_TRES_SECS};
use fairflow_model::tres::{TresCounts, WeightList};
use fairflow_model::{Event, Shares};
use proptest::prelude::*;

use super::*;
use crate::parse_event;
use crate::write::event_to_line;

fn usage(amount: f64) -> Event {
    Event {
        t: 1_700_000_000,
        op: Op::Usage {
            account: "a".into(),
            user: Some("u".into()),
            amount,
            period: None,
        },
    }
}

fn start(tres: &[(&str, f64)]) -> Event {
    Event {
        t: 1,
        op: Op::Start {
            job: "1".into(),
            tres: Some(TresCounts::from_iter(
                tres.iter().map(|(n, c)| (n.to_string(), *c)),
            )),
        },
    }
}

fn field_of(event: &Event) -> Option<String> {
    check_event(9, event).err().map(|r| {
        assert_eq!(r.line, 9);
        r.field.unwrap_or_default()
    })
}

#[test]
fn usage_amounts_are_finite_and_at_most_2_to_the_50() {
    assert_eq!(field_of(&usage(MAX_USAGE_AMOUNT_TRES_SECS)), None);
    assert_eq!(field_of(&usage(0.0)), None);
    // The attack's `billing=1e12` for an hour, and `billing=1e300`.
    for amount in [3.6e15, 1e300, f64::INFINITY, f64::NAN, -1.0] {
        assert_eq!(
            field_of(&usage(amount)).as_deref(),
            Some("amount"),
            "{amount}"
        );
    }
    let r = check_event(3, &usage(3.6e15)).unwrap_err();
    assert_eq!(
        r.reason,
        "3.6e15 is out of range (at most 1.125899906842624e15)"
    );
}

#[test]
fn tres_counts_are_named_as_written_and_at_most_2_to_the_40() {
    assert_eq!(field_of(&start(&[("node", MAX_TRES_COUNT)])), None);
    // A Flux `R` of 2^40 + 1 ranks.
    assert_eq!(
        field_of(&start(&[("node", MAX_TRES_COUNT + 1.0)])).as_deref(),
        Some("tres.node")
    );
    assert_eq!(
        field_of(&start(&[("cpu", -1.0)])).as_deref(),
        Some("tres.cpu")
    );
    assert_eq!(
        field_of(&start(&[("GRES/gpu", 1.0)])).as_deref(),
        Some("tres.GRES/gpu")
    );
}

#[test]
fn times_names_and_small_ranges_are_bounded() {
    let mut late = usage(1.0);
    late.t = MAX_TIME + 1;
    assert_eq!(field_of(&late).as_deref(), Some("t"));
    late.t = -1;
    assert_eq!(field_of(&late).as_deref(), Some("t"));
    let named = |account: &str| Event {
        t: 1,
        op: Op::Usage {
            account: account.into(),
            user: None,
            amount: 1.0,
            period: Some(1023),
        },
    };
    assert_eq!(field_of(&named("a")), None);
    for bad in ["", "a b", "a|b", "x\ny", &"a".repeat(257)] {
        assert_eq!(field_of(&named(bad)).as_deref(), Some("account"), "{bad:?}");
    }
    let submit = |spec: JobSpec| Event {
        t: 1,
        op: Op::Submit {
            job: "1".into(),
            user: "u".into(),
            account: "a".into(),
            spec,
            submitted: None,
        },
    };
    for (spec, field) in [
        (
            JobSpec {
                urgency: Some(32),
                ..JobSpec::default()
            },
            "urgency",
        ),
        (
            JobSpec {
                time_limit_secs: Some(MAX_TIME as u64 + 1),
                ..JobSpec::default()
            },
            "time_limit",
        ),
        (
            JobSpec {
                partition: Some("p1,,p2".into()),
                ..JobSpec::default()
            },
            "partition",
        ),
        (
            JobSpec {
                begin: Some(MAX_TIME + 1),
                ..JobSpec::default()
            },
            "begin",
        ),
    ] {
        assert_eq!(field_of(&submit(spec)).as_deref(), Some(field));
    }
    let account = Event {
        t: 1,
        op: Op::Account {
            name: "a".into(),
            parent: None,
            shares: Some(Shares::Value(0x7FFF_FFFF)),
            priority: None,
        },
    };
    assert_eq!(field_of(&account).as_deref(), Some("shares"));
}

fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z][a-z0-9_]{0,6}",
        1 => "[ a-zA-Z|,=\n]{0,4}",
        1 => Just("x".repeat(257)),
    ]
}

fn number() -> impl Strategy<Value = f64> {
    prop_oneof![
        4 => 0.0..1e6f64,
        1 => any::<f64>(),
        1 => Just(MAX_USAGE_AMOUNT_TRES_SECS),
        1 => Just(MAX_TRES_COUNT + 1.0),
        1 => Just(-0.0),
    ]
}

fn tres() -> impl Strategy<Value = TresCounts> {
    proptest::collection::vec(
        (prop_oneof!["[a-z/]{1,6}", "[ A-Za-z]{0,3}"], number()),
        0..3,
    )
    .prop_map(TresCounts::from_iter)
}

fn time() -> impl Strategy<Value = i64> {
    prop_oneof![4 => 0..=MAX_TIME, 1 => any::<i64>()]
}

fn spec() -> impl Strategy<Value = JobSpec> {
    (
        proptest::option::of(prop_oneof![
            name(),
            Just("p1,p2".to_string()),
            Just("a,a".to_string())
        ]),
        proptest::option::of(tres()),
        proptest::option::of(prop_oneof![0..100_000u64, any::<u64>()]),
        proptest::option::of(any::<u8>()),
        proptest::option::of(time()),
        proptest::option::of(any::<i64>()),
    )
        .prop_map(
            |(partition, tres, time_limit_secs, urgency, begin, nice)| JobSpec {
                partition,
                tres,
                time_limit_secs,
                urgency,
                begin,
                nice,
                ..JobSpec::default()
            },
        )
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (
            name(),
            proptest::option::of(name()),
            number(),
            proptest::option::of(0..2000u32)
        )
            .prop_map(|(account, user, amount, period)| Op::Usage {
                account,
                user,
                amount,
                period
            }),
        (name(), proptest::option::of(tres())).prop_map(|(job, tres)| Op::Start { job, tres }),
        (name(), name(), spec(), proptest::option::of(time())).prop_map(
            |(job, account, spec, submitted)| Op::Submit {
                job,
                user: "u".into(),
                account,
                spec,
                submitted
            }
        ),
        (name(), any::<u32>()).prop_map(|(name, shares)| Op::Account {
            name,
            parent: None,
            shares: Some(Shares::Value(shares)),
            priority: None
        }),
        (name(), proptest::option::of(number())).prop_map(|(name, usage_factor)| Op::Qos {
            name,
            priority: None,
            usage_factor
        }),
        (
            name(),
            proptest::option::of(0..70_000u32),
            proptest::collection::vec((prop_oneof!["[a-z]{1,4}", "[A-Z=, ]{0,2}"], number()), 0..3),
            proptest::option::of(tres()),
        )
            .prop_map(|(name, priority_job_factor, weights, tres)| Op::Partition {
                name,
                priority_job_factor,
                tres_billing_weights: Some(WeightList { weights }),
                priority: None,
                tres,
                max_time_secs: None,
                priority_tier: None,
            }),
        (any::<u64>(), tres()).prop_map(|(nodes, tres)| Op::Cluster { nodes, tres }),
        Just(Op::Tick),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// What the applier relies on: an event passes the check exactly when the
    /// line it is logged as reads back as the same event, so whatever a
    /// converter builds is either refused now or recovered unchanged.
    #[test]
    fn an_event_passes_the_check_exactly_when_its_line_reads_back_the_same(
        t in time(),
        op in op(),
    ) {
        let event = Event { t, op };
        let line = event_to_line(&event);
        let back = parse_event(1, &line);
        let checked = check_event(1, &event);
        prop_assert_eq!(
            checked.is_ok(),
            back.as_ref() == Ok(&event),
            "{} -> {:?} / {:?}", line, back, checked
        );
    }
}
