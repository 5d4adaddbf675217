//! Records as Slurm writes them, and records whose user text (name, work dir,
//! wckey) holds Slurm's keys: the charge is always the true one (or, for a
//! genuinely ambiguous record, at least the true one, to the true account).

use chrono::{FixedOffset, Utc};

use super::*;

/// The record read with its times in UTC (the fixtures' zone).
fn utc(line: u64, text: &str) -> Result<Charge, Rejection> {
    read_record_in(line, text, &Utc)
}

/// The one charge of a record: (account, user, amount, t).
fn charge(text: &str) -> (String, String, f64, Time) {
    let charge = utc(1, text).unwrap();
    assert_eq!(charge.events.len(), 1, "{text}");
    let Event {
        t,
        op:
            Op::Usage {
                account,
                user,
                amount,
                ..
            },
    } = charge.events[0].clone()
    else {
        panic!("a usage event");
    };
    (account, user.unwrap(), amount, t)
}

/// alice's job: 16 processors for one hour (22:13:20 to 23:13:20 UTC on
/// 2023-11-14, 57,600 CPU-seconds), in physics, as Slurm 23.11 writes it.
const RECORD: &str =
    "JobId=4242 UserId=alice(1001) GroupId=users(100) Name=sim JobState=COMPLETED \
    Partition=batch TimeLimit=60 StartTime=2023-11-14T22:13:20 EndTime=2023-11-14T23:13:20 \
    NodeList=n[01-02] NodeCnt=2 ProcCnt=16 WorkDir=/home/alice ReservationName= \
    Tres=cpu=16,mem=64G,node=2 Account=physics QOS=normal WcKey= Cluster=c \
    SubmitTime=2023-11-14T22:00:00 EligibleTime=2023-11-14T22:00:00 DerivedExitCode=0:0 \
    ExitCode=0:0 ";

/// The end of [`RECORD`]: 2023-11-14T23:13:20Z.
const END: Time = 1_700_003_600;

/// The true charge of [`RECORD`].
fn truth() -> (String, String, f64, Time) {
    ("physics".into(), "alice".into(), 57_600.0, END)
}

#[test]
fn a_completed_job_charges_procs_times_run_time() {
    assert_eq!(charge(RECORD), truth());
    assert_eq!(utc(1, RECORD).unwrap().ambiguous, None);
}

#[test]
fn the_billing_tres_wins_over_procs() {
    let text = RECORD.replace("node=2 ", "node=2,billing=20 ");
    assert_eq!(charge(&text).2, 72_000.0);
}

#[test]
fn records_of_every_version_and_kind_are_read() {
    // 22.05 appends the select plugin's text; arrays and heterogeneous jobs
    // add their ids before DerivedExitCode; a record without Tres charges
    // ProcCnt.
    let with_select = format!("{RECORD}resv_id=7 ");
    let array = RECORD.replace(
        "EligibleTime=2023-11-14T22:00:00 ",
        "EligibleTime=2023-11-14T22:00:00 ArrayJobId=4240 ArrayTaskId=2 HetJobId=4239 \
         HetJobOffset=1 ",
    );
    let no_tres = RECORD.replace("Tres=cpu=16,mem=64G,node=2 ", "");
    for text in [with_select, array, no_tres] {
        assert_eq!(charge(&text), truth(), "{text}");
    }
}

#[test]
fn jobs_that_never_ran_charge_nothing_and_bad_records_name_their_field() {
    let never = RECORD.replace("StartTime=2023-11-14T22:13:20", "StartTime=Unknown");
    assert_eq!(utc(1, &never).unwrap().events, vec![]);
    for (from, to, field) in [
        ("ProcCnt=16", "ProcCnt=lots", "ProcCnt"),
        (
            "EndTime=2023-11-14T23:13:20",
            "EndTime=yesterday",
            "EndTime",
        ),
        (
            "EndTime=2023-11-14T23:13:20",
            "EndTime=2023-11-14T20:00:00",
            "EndTime",
        ),
        (" Account=physics", "", "Account"),
        ("Account=physics", "Account=", "Account"),
        ("Account=physics", "Account=a|b", "Account"),
        ("JobId=4242", "JobId=x", "JobId"),
        ("UserId=alice(1001)", "UserId=(1001)", "UserId"),
        (" ExitCode=0:0", "", "ExitCode"),
        (" Cluster=c", "", "ExitCode"),
    ] {
        let r = utc(5, &RECORD.replace(from, to)).unwrap_err();
        assert_eq!((r.line, r.field.as_deref()), (5, Some(field)), "{to}: {r}");
    }
    let r = utc(5, "garbage here").unwrap_err();
    assert_eq!(r.field.as_deref(), Some("JobId"));
}

#[test]
fn values_with_spaces_are_kept_whole() {
    let text = RECORD
        .replace("Name=sim", "Name=my job  x=1")
        .replace("WorkDir=/home/alice", "WorkDir=/home/alice/My Runs")
        .replace("WcKey=", "WcKey=a b");
    assert_eq!(charge(&text), truth());
}

#[test]
fn times_are_read_in_the_sites_zone() {
    // The same record written by a slurmctld at UTC+02:00 ended two hours
    // earlier than at UTC.
    let east = FixedOffset::east_opt(7_200).unwrap();
    let charge = read_record_in(1, RECORD, &east).unwrap();
    assert_eq!(charge.events[0].t, END - 7_200);
}

/// Every key `jobcomp/filetxt` writes (22.05 to 25.11).
const KEYS: [&str; 27] = [
    "JobId",
    "UserId",
    "GroupId",
    "Name",
    "JobState",
    "Partition",
    "TimeLimit",
    "StartTime",
    "EndTime",
    "NodeList",
    "NodeCnt",
    "ProcCnt",
    "WorkDir",
    "ReservationName",
    "Tres",
    "Account",
    "QOS",
    "WcKey",
    "Cluster",
    "SubmitTime",
    "EligibleTime",
    "ArrayJobId",
    "ArrayTaskId",
    "HetJobId",
    "HetJobOffset",
    "DerivedExitCode",
    "ExitCode",
];

#[test]
fn a_name_work_dir_or_wckey_holding_any_key_changes_nothing() {
    let values = [
        "0",
        "garbage",
        "2023-11-14T23:13:19",
        "cpu=1,billing=0",
        "eve(1)",
        "",
    ];
    for key in KEYS {
        for value in values {
            let text = format!("{key}={value}");
            for (field, real) in [
                ("Name=", "Name=sim"),
                ("WorkDir=", "WorkDir=/home/alice"),
                ("WcKey=", "WcKey="),
            ] {
                for place in [format!("{real} {text}"), format!("{field}{text}")] {
                    let record = RECORD.replacen(real, &place, 1);
                    assert_eq!(charge(&record), truth(), "{record}");
                }
            }
        }
    }
}

#[test]
fn the_attacks_of_issue_40_are_only_names() {
    for name in [
        "x Tres=cpu=1,billing=0",
        "x Account=b",
        "x StartTime=2023-11-14T23:13:19 EndTime=2023-11-14T23:13:20",
        "x EndTime=garbage",
        "x UserId=bob(1002) Account=b Tres=billing=0 ProcCnt=0",
    ] {
        let record = RECORD.replace("Name=sim", &format!("Name={name}"));
        assert_eq!(charge(&record), truth(), "{name}");
        assert_eq!(utc(1, &record).unwrap().ambiguous, None);
    }
}

/// The fields of a forged record, as a user would put them in a name.
const FORGED: &str = "JobId=9 UserId=eve(1002) GroupId=users(100) Name=y JobState=COMPLETED \
    Partition=batch TimeLimit=1 StartTime=2023-11-14T23:13:19 EndTime=2023-11-14T23:13:20 \
    NodeList=n1 NodeCnt=1 ProcCnt=1 WorkDir=/w ReservationName= Tres=cpu=1,billing=0 \
    Account=physics QOS=normal WcKey= Cluster=c SubmitTime=2023-11-14T22:00:00 \
    EligibleTime=2023-11-14T22:00:00 DerivedExitCode=0:0 ExitCode=0:0";

#[test]
fn a_whole_forged_record_in_the_name_work_dir_or_wckey_never_lowers_the_charge() {
    for (real, forged) in [
        ("Name=sim", format!("Name=x {FORGED}")),
        ("WorkDir=/home/alice", format!("WorkDir=/x {FORGED}")),
        ("WcKey=", format!("WcKey=x {FORGED}")),
    ] {
        let record = RECORD.replacen(real, &forged, 1);
        // Still alice's, in physics, at least the true 57,600 (a reading
        // pairing a copy's run with the true billing can only be larger).
        let (account, user, amount, t) = charge(&record);
        assert_eq!((account.as_str(), user.as_str()), ("physics", "alice"));
        assert!(amount >= 57_600.0, "{record}: {amount}");
        assert!(t <= END, "{record}");
        assert!(utc(1, &record).unwrap().ambiguous.is_some(), "{record}");
    }
}

#[test]
fn an_ambiguous_record_charges_every_account_it_names_never_less() {
    // A work dir holding the run and account fields of another account, with
    // a longer run: physics is still charged its true amount, and the copy's
    // account too.
    let copy = "/x JobState=COMPLETED Partition=batch TimeLimit=60 \
        StartTime=2023-11-14T22:00:00 EndTime=2023-11-15T00:00:00 NodeList=n1 NodeCnt=1 \
        ProcCnt=1 WorkDir=/y ReservationName= Tres=cpu=1,billing=3 Account=chem QOS=normal \
        WcKey=";
    let record = RECORD.replacen("WorkDir=/home/alice", &format!("WorkDir={copy}"), 1);
    let charge = utc(1, &record).unwrap();
    let amounts: Vec<(String, f64)> = charge
        .events
        .iter()
        .map(|e| match &e.op {
            Op::Usage {
                account, amount, ..
            } => (account.clone(), *amount),
            _ => panic!("usage"),
        })
        .collect();
    // chem: 3 billable over the copy's 7,200 s, 21,600; physics: the copy's
    // run with the true TRES (no billing: the copy's ProcCnt, 1, over 7,200 s)
    // or the true run (57,600): the larger.
    assert_eq!(
        amounts,
        vec![
            ("chem".to_string(), 21_600.0),
            ("physics".to_string(), 57_600.0)
        ]
    );
    assert!(charge.ambiguous.unwrap().contains("job 4242"));
}

#[test]
fn a_copy_the_log_could_not_hold_cannot_spoil_the_record() {
    // Copies with an account that is no name, or times beyond the year 9999,
    // are no readings: the record is charged as if they were text.
    for copy in [
        "x ReservationName= Tres=billing=1 Account=a|b QOS=q WcKey=",
        "x JobState=COMPLETED Partition=batch TimeLimit=60 StartTime=2023-11-14T22:13:20 \
         EndTime=99999-01-01T00:00:00 NodeList=n1 NodeCnt=1 ProcCnt=1 WorkDir=/y",
    ] {
        let record = RECORD.replacen("WcKey=", &format!("WcKey={copy}"), 1);
        assert_eq!(charge(&record), truth(), "{copy}");
        let record = RECORD.replacen("Name=sim", &format!("Name={copy}"), 1);
        assert_eq!(charge(&record), truth(), "{copy}");
    }
}

#[test]
fn a_copy_starting_before_the_submit_time_is_set_aside() {
    // The copy's run starts at 21:00, before the true SubmitTime (22:00):
    // only the true run remains.
    let copy = "x JobState=COMPLETED Partition=batch TimeLimit=60 \
        StartTime=2023-11-14T21:00:00 EndTime=2023-11-15T23:00:00 NodeList=n1 NodeCnt=1 \
        ProcCnt=1 WorkDir=/y";
    let record = RECORD.replacen("Name=sim", &format!("Name={copy}"), 1);
    assert_eq!(charge(&record), truth());
}

#[test]
fn usage_at_the_bound_is_charged_and_beyond_it_rejected() {
    // 2^40 billable TRES for 1,024 s is 2^50 TRES-seconds, the bound.
    let at = RECORD
        .replace("node=2 ", "node=2,billing=1099511627776 ")
        .replace("EndTime=2023-11-14T23:13:20", "EndTime=2023-11-14T22:30:24");
    assert_eq!(charge(&at).2, (1u64 << 50) as f64);
    let over = at.replace("EndTime=2023-11-14T22:30:24", "EndTime=2023-11-14T22:30:25");
    let r = utc(2, &over).unwrap_err();
    assert_eq!(r.field.as_deref(), Some("Tres"));
    assert!(r.reason.contains("out of range"), "{}", r.reason);
    // The attack's billing=1e12 for an hour (3.6e15 TRES-seconds), and
    // billing=1e300 (which, let in, overflowed the engine's usage sums and
    // panicked a later read in `dataflow::engine`).
    for billing in ["1e12", "1e300", "inf", "-1", "NaN"] {
        let text = RECORD.replace("node=2 ", &format!("node=2,billing={billing} "));
        let r = utc(3, &text).unwrap_err();
        assert_eq!((r.line, r.field.as_deref()), (3, Some("Tres")), "{billing}");
    }
}

#[test]
fn a_record_cut_by_a_newline_is_joined_with_the_next_lines() {
    // `sbatch -J $'x\nJobId=2 UserId=bob(1002) ...'`: the second line looks
    // like bob's record but is the rest of alice's name.
    let mut reader = JobcompReader::new(Utc);
    let first = "JobId=4242 UserId=alice(1001) GroupId=users(100) Name=x";
    let rest = RECORD.replace(
        "JobId=4242 UserId=alice(1001) GroupId=users(100) Name=sim",
        "JobId=2 UserId=bob(1002) GroupId=users(100) Name=y",
    );
    assert_eq!(reader.line(7, first).lines, vec![]);
    let read = reader.line(8, &rest);
    assert_eq!(read.lines.len(), 1);
    assert_eq!(read.lines[0].line, 7);
    let event = read.lines[0].event.as_ref().unwrap();
    assert!(
        matches!(&event.op, Op::Usage { user: Some(u), account, amount, .. }
        if u == "alice" && account == "physics" && *amount == 57_600.0)
    );
    // Whole records pass straight through; a line that starts nothing is
    // rejected as it is.
    let read = reader.line(9, RECORD);
    assert_eq!(read.lines[0].line, 9);
    assert!(read.lines[0].event.is_ok());
    let read = reader.line(10, "Cluster=c ExitCode=0:0");
    assert_eq!(read.lines[0].event.as_ref().unwrap_err().line, 10);
    // A record that never ends is rejected after MAX_RECORD_LINES lines.
    for n in 0..MAX_RECORD_LINES as u64 - 1 {
        assert_eq!(
            reader
                .line(20 + n, if n == 0 { first } else { "more" })
                .lines,
            vec![]
        );
    }
    let read = reader.line(99, "more");
    let r = read.lines[0].event.as_ref().unwrap_err();
    assert_eq!((r.line, r.field.as_deref()), (20, Some("ExitCode")));
    assert_eq!(reader.ambiguous_records(), 0);
}
