//! The journal's counts and times checked, never wrapped: idsets, ranks
//! times cores, jobspec counts and durations beyond the bounds every event
//! meets are rejected naming the journal's field, and change nothing.

use super::*;
use crate::import_flux::FluxUser;

fn journal() -> FluxJournal {
    FluxJournal::new(&FluxDb {
        events: Vec::new(),
        users: [(
            5011,
            FluxUser {
                username: "alice".into(),
                default_bank: "A".into(),
                banks: ["A".to_string()].into(),
            },
        )]
        .into(),
        queues: BTreeSet::new(),
        deny_unknown_queues: false,
        notes: Vec::new(),
    })
}

const SUBMIT: &str =
    r#"{"id":1,"events":[{"timestamp":10,"name":"submit","context":{"userid":5011}}]}"#;

fn alloc(ranks: &str, cores: &str) -> String {
    format!(
        r#"{{"id":1,"events":[{{"timestamp":20,"name":"alloc"}}],"R":{{"version":1,"execution":{{"R_lite":[{{"rank":"{ranks}","children":{{"core":"{cores}"}}}}]}}}}}}"#
    )
}

#[test]
fn idset_sizes_are_checked_not_wrapped() {
    let overflows = Err("holds more ids than a count can");
    assert_eq!(idset_size("0-3,5,7-8"), Ok(7));
    assert_eq!(idset_size("0-18446744073709551614"), Ok(u64::MAX));
    assert_eq!(idset_size("0-18446744073709551615"), overflows);
    assert_eq!(idset_size("0-18446744073709551614,3"), overflows);
    assert_eq!(idset_size("5-3"), Err("is not an idset"));
}

#[test]
fn an_allocation_beyond_2_to_the_40_is_rejected_and_changes_nothing() {
    let mut journal = journal();
    journal.line(1, SUBMIT).unwrap();
    // 2^40 + 1 ranks; 2^64 - 1 ranks (its cores would wrap); 2^40 ranks of
    // two cores each.
    for (ranks, cores, field) in [
        ("0-1099511627776", "0", "R.execution.R_lite[0].rank"),
        (
            "0-18446744073709551614",
            "0-3",
            "R.execution.R_lite[0].children.core",
        ),
        (
            "0-1099511627775",
            "0-1",
            "R.execution.R_lite[0].children.core",
        ),
    ] {
        let r = journal.line(2, &alloc(ranks, cores)).unwrap_err();
        assert_eq!(
            (r.line, r.field.as_deref()),
            (2, Some(field)),
            "{ranks}: {r}"
        );
    }
    // Nothing changed: the job is still pending, and an allocation at the
    // bound (2^40 ranks of one core) starts it.
    let events = journal.line(3, &alloc("0-1099511627775", "0")).unwrap();
    let Op::Start {
        tres: Some(tres), ..
    } = &events[0].op
    else {
        panic!("a start: {events:?}");
    };
    assert_eq!(tres.get("node"), Some(&((1u64 << 40) as f64)));
    assert_eq!(tres.get("cpu"), Some(&((1u64 << 40) as f64)));
}

#[test]
fn a_jobspec_beyond_the_bounds_is_rejected_naming_its_field() {
    for (jobspec, field) in [
        (
            r#"{"resources":[{"type":"node","count":2199023255552}],"attributes":{"system":{}}}"#,
            "jobspec.resources",
        ),
        (
            r#"{"resources":[],"attributes":{"system":{"duration":1e300}}}"#,
            "jobspec.attributes.system.duration",
        ),
    ] {
        let mut journal = journal();
        let line = format!(
            r#"{{"id":1,"events":[{{"timestamp":10,"name":"submit","context":{{"userid":5011}}}}],"jobspec":{jobspec}}}"#
        );
        let r = journal.line(4, &line).unwrap_err();
        assert_eq!(r.field.as_deref(), Some(field), "{r}");
        assert_eq!(journal.active_jobs(), 0);
    }
}
