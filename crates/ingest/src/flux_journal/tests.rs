//! Tests of the events-journal tap on hand-written journal lines (RFC 21's
//! event names and contexts, RFC 20's `R`, RFC 25's jobspec).

use super::*;
use crate::write::event_to_line;

fn db(deny_unknown_queues: bool) -> FluxDb {
    let user = |name: &str, default: &str, banks: &[&str]| FluxUser {
        username: name.into(),
        default_bank: default.into(),
        banks: banks.iter().map(|b| b.to_string()).collect(),
    };
    FluxDb {
        events: Vec::new(),
        users: [
            (5011, user("alice", "A", &["A", "B"])),
            (5012, user("bob", "B", &["B"])),
        ]
        .into(),
        queues: ["batch".to_string()].into(),
        deny_unknown_queues,
        notes: Vec::new(),
    }
}

fn feed(journal: &mut FluxJournal, lines: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        match journal.line(i as u64 + 1, line) {
            Ok(events) => out.extend(events.iter().map(event_to_line)),
            Err(r) => out.push(format!("rejected: {r}")),
        }
    }
    out
}

const JOBSPEC: &str = r#"{"version":1,"resources":[{"type":"node","count":2,"with":[{"type":"slot","count":1,"label":"task","with":[{"type":"core","count":4},{"type":"gpu","count":1}]}]}],"tasks":[],"attributes":{"system":{"duration":3600.0,"bank":"B","queue":"batch"}}}"#;

#[test]
fn a_job_from_submit_to_clean() {
    let mut journal = FluxJournal::new(&db(false));
    let submit = format!(
        r#"{{"id":1001,"events":[{{"timestamp":100.7,"name":"submit","context":{{"userid":5011,"urgency":16,"flags":0,"version":1}}}},{{"timestamp":100.8,"name":"validate"}},{{"timestamp":100.9,"name":"depend"}},{{"timestamp":101.0,"name":"priority","context":{{"priority":50000}}}}],"jobspec":{JOBSPEC}}}"#
    );
    let got = feed(
        &mut journal,
        &[
            &submit,
            r#"{"id":1001,"events":[{"timestamp":110.0,"name":"urgency","context":{"userid":5011,"urgency":0}}]}"#,
            r#"{"id":-1,"events":[]}"#,
            r#"{"id":1001,"events":[{"timestamp":120.0,"name":"urgency","context":{"userid":5011,"urgency":31}}]}"#,
            r#"{"id":1001,"events":[{"timestamp":130.2,"name":"alloc","context":{"annotations":{}}},{"timestamp":130.3,"name":"start"}],"R":{"version":1,"execution":{"R_lite":[{"rank":"0-1","children":{"core":"0-3","gpu":"0"}}],"starttime":130,"expiration":3730}}}"#,
            r#"{"id":1001,"events":[{"timestamp":190.0,"name":"finish","context":{"status":0}},{"timestamp":190.5,"name":"release","context":{"ranks":"all","final":true}},{"timestamp":191.0,"name":"free"},{"timestamp":191.5,"name":"clean"}]}"#,
        ],
    );
    assert_eq!(
        got,
        [
            // Bank and queue from the jobspec; 2 nodes, 2 x 4 cores, 2 x 1 GPU.
            r#"{"account":"B","job":"1001","op":"submit","partition":"batch","t":100,"time_limit":3600,"tres":{"cpu":8,"gres/gpu":2,"node":2},"urgency":16,"user":"alice"}"#,
            r#"{"job":"1001","op":"update","t":110,"urgency":0}"#,
            r#"{"job":"1001","op":"hold","t":110}"#,
            r#"{"job":"1001","op":"update","t":120,"urgency":31}"#,
            r#"{"job":"1001","op":"release","t":120}"#,
            // R: ranks 0-1, cores 0-3 and GPU 0 on each.
            r#"{"job":"1001","op":"start","t":130,"tres":{"cpu":8,"gres/gpu":2,"node":2}}"#,
            r#"{"job":"1001","op":"end","t":191}"#,
        ]
    );
    assert_eq!(journal.active_jobs(), 0);
}

#[test]
fn default_bank_cancel_and_a_held_submission() {
    let mut journal = FluxJournal::new(&db(false));
    let got = feed(
        &mut journal,
        &[
            // No jobspec bank: bob's default bank; urgency 0 at submit is held.
            r#"{"id":7,"events":[{"timestamp":5,"name":"submit","context":{"userid":5012,"urgency":0}}],"jobspec":{"resources":[{"type":"slot","count":3,"with":[{"type":"core","count":2}]}],"attributes":{"system":{}}}}"#,
            r#"{"id":7,"events":[{"timestamp":6,"name":"jobspec-update","context":{"attributes.system.queue":"debug"}}]}"#,
            r#"{"id":7,"events":[{"timestamp":7,"name":"exception","context":{"type":"cancel","severity":0,"note":""}},{"timestamp":8,"name":"clean"}]}"#,
            // A severity 1 exception does not end a job.
            r#"{"id":8,"events":[{"timestamp":9,"name":"submit","context":{"userid":5011}},{"timestamp":9,"name":"exception","context":{"type":"test","severity":1}}]}"#,
        ],
    );
    assert_eq!(
        got,
        [
            // Only cores: one node (flux-accounting's rule).
            r#"{"account":"B","job":"7","op":"submit","t":5,"tres":{"cpu":6,"node":1},"urgency":0,"user":"bob"}"#,
            r#"{"job":"7","op":"hold","t":5}"#,
            r#"{"job":"7","op":"update","partition":"debug","t":6}"#,
            r#"{"job":"7","op":"cancel","t":7}"#,
            r#"{"account":"A","job":"8","op":"submit","t":9,"urgency":16,"user":"alice"}"#,
        ]
    );
}

#[test]
fn bad_lines_are_rejected_with_line_field_and_reason_and_change_nothing() {
    let mut journal = FluxJournal::new(&db(true));
    let got = feed(
        &mut journal,
        &[
            "{not json",
            r#"{"id":1,"events":[{"timestamp":1,"name":"submit","context":{"userid":999}}]}"#,
            r#"{"id":1,"events":[{"timestamp":1,"name":"submit","context":{"userid":5012}}],"jobspec":{"attributes":{"system":{"bank":"A"}}}}"#,
            r#"{"id":1,"events":[{"timestamp":1,"name":"submit","context":{"userid":5012}}],"jobspec":{"attributes":{"system":{"queue":"nowhere"}}}}"#,
            r#"{"id":1,"events":[{"timestamp":1,"name":"submit","context":{"userid":5012,"urgency":40}}]}"#,
            r#"{"id":2,"events":[{"timestamp":1,"name":"alloc"}]}"#,
            // The submit is good, the second event not: the whole line is
            // rejected, so job 3 was never submitted.
            r#"{"id":3,"events":[{"timestamp":2,"name":"submit","context":{"userid":5012}},{"name":"urgency"}]}"#,
            r#"{"id":3,"events":[{"timestamp":3,"name":"clean"}]}"#,
            r#"{"id":"f3","events":[]}"#,
            r#"{"id":4,"events":[{"timestamp":4,"name":"submit","context":{"userid":5012}}]}"#,
            r#"{"id":4,"events":[{"timestamp":5,"name":"alloc"}],"R":{"execution":{"R_lite":[{"rank":"3-1"}]}}}"#,
        ],
    );
    assert_eq!(
        got,
        [
            "rejected: line 1: not valid JSON: key must be a string at line 1 column 2",
            "rejected: line 2: field `events[0].context.userid`: user id 999 has no association in the flux-accounting database",
            "rejected: line 3: field `jobspec.attributes.system.bank`: user `bob` has no association in bank `A`",
            "rejected: line 4: field `jobspec.attributes.system.queue`: queue `nowhere` is not in the flux-accounting database (deny_unknown_queues)",
            "rejected: line 5: field `events[0].context.urgency`: not an urgency 0..31",
            "rejected: line 7: field `events[1].timestamp`: missing or not a time",
            "rejected: line 9: field `id`: missing or not a job id",
            r#"{"account":"B","job":"4","op":"submit","t":4,"urgency":16,"user":"bob"}"#,
            "rejected: line 11: field `R.execution.R_lite[0].rank`: `3-1` is not an idset",
        ]
    );
    // Lines 6 and 8 (jobs 2 and 3, never submitted) wait for their submit.
    assert_eq!(journal.held_lines(), 2);
    assert!(journal.take_dropped().is_empty());
}

#[test]
fn an_alloc_before_its_submit_is_held_and_charged_after_it() {
    let mut journal = FluxJournal::new(&db(false));
    let got = feed(
        &mut journal,
        &[
            r#"{"id":9,"events":[{"timestamp":130,"name":"alloc"}],"R":{"execution":{"R_lite":[{"rank":"0","children":{"core":"0-3"}}]}}}"#,
            r#"{"id":9,"events":[{"timestamp":100,"name":"submit","context":{"userid":5012}}]}"#,
            r#"{"id":9,"events":[{"timestamp":190,"name":"clean"}]}"#,
        ],
    );
    assert_eq!(
        got,
        [
            r#"{"account":"B","job":"9","op":"submit","t":100,"urgency":16,"user":"bob"}"#,
            // The held alloc, right after the submit, at its own time.
            r#"{"job":"9","op":"start","t":130,"tres":{"cpu":4,"node":1}}"#,
            r#"{"job":"9","op":"end","t":190}"#,
        ]
    );
    assert_eq!((journal.held_lines(), journal.active_jobs()), (0, 0));
}

#[test]
fn held_lines_are_bounded_in_count_and_journal_time() {
    let mut journal = FluxJournal::new(&db(false));
    let alloc = |id: u64| format!(r#"{{"id":{id},"events":[{{"timestamp":10,"name":"alloc"}}]}}"#);
    for id in 0..=MAX_HELD_LINES as u64 {
        assert_eq!(journal.line(id + 1, &alloc(id)), Ok(Vec::new()));
    }
    // One line over the bound: the oldest (line 1, job 0) is dropped, saying why.
    let dropped = journal.take_dropped();
    assert_eq!(dropped.len(), 1);
    assert_eq!(dropped[0].line, 1);
    assert!(
        dropped[0].reason.starts_with("job 0: no `submit` seen"),
        "{}",
        dropped[0]
    );
    assert_eq!(journal.held_lines(), MAX_HELD_LINES);
    // Journal time moves past the hold limit: every held line is dropped.
    let late = format!(
        r#"{{"id":99999,"events":[{{"timestamp":{},"name":"submit","context":{{"userid":5012}}}}]}}"#,
        MAX_HELD_SECS + 1
    );
    assert_eq!(journal.line(20_000, &late).map(|e| e.len()), Ok(1));
    let dropped = journal.take_dropped();
    assert_eq!(dropped.len(), MAX_HELD_LINES);
    assert!(
        dropped[0].reason.contains("waited more than 3600 s"),
        "{}",
        dropped[0]
    );
    assert_eq!(journal.held_lines(), 0);
}

#[test]
fn idsets_count_their_members() {
    assert_eq!(idset_count("0"), Some(1));
    assert_eq!(idset_count("0-3,5,7-8"), Some(7));
    assert_eq!(idset_count(""), Some(0));
    assert_eq!(idset_count("a"), None);
    assert_eq!(idset_count("4-2"), None);
}
