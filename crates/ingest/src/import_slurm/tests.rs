//! The Slurm importer on small hand-written outputs; the expected events are
//! written by hand from the module's rules.

use super::*;
use crate::parse_event;

const T: Time = 1_700_000_000;

/// The classic example's tree, in sacctmgr's hierarchical order, with root's
/// own user association and a `parent` user.
const ASSOC: &str = "\
demo|root||1|
demo|root|root|1|
demo|a||40|root
demo|b||30|a
demo|b|user1|1|
demo|c||10|a
demo|c|user2|1|
demo|c|user3|1|
demo|d||60|root
demo|e||25|d
demo|e|user4|1|
demo|f||35|d
demo|f|user5|parent|
";

/// `sshare -a -l -P` as Slurm writes it (account names indented; Fair Tree's
/// columns). Only Account, User and RawUsage matter to the import.
const SSHARE: &str = "\
Account|User|RawShares|NormShares|RawUsage|NormUsage|EffectvUsage|FairShare|LevelFS|GrpTRESMins|TRESRunMins
root|||0.000000|1000000||1.000000||||cpu=0
 root|root|1|0.009901|0|0.000000|0.000000|0.500000|inf||cpu=0
 a||40|0.396040|450000|0.450000|0.450000||0.880088||cpu=0
  b||30|0.750000|200000|0.200000|0.444444||1.687500||cpu=0
   b|user1|1|1.000000|200000|0.200000|1.000000|0.416667|1.000000||cpu=0
  c||10|0.250000|250000|0.250000|0.555556||0.450000||cpu=0
   c|user2|1|0.500000|250000|0.250000|1.000000|0.333333|0.500000||cpu=0
   c|user3|1|0.500000|0|0.000000|0.000000|0.583333|inf||cpu=0
 d||60|0.594059|260000|0.260000|0.260000||2.284844||cpu=0
  e||25|0.416667|250000|0.250000|0.961538||0.433333||cpu=0
   e|user4|1|1.000000|250000|0.250000|1.000000|0.250000|1.000000||cpu=0
  f||35|0.583333|0|0.000000|0.000000||inf||cpu=0
   f|user5|parent|0.583333|0|0.000000|0.000000|1.000000|inf||cpu=0
";

const SLURM_CONF: &str = "\
ClusterName=demo
PriorityType=priority/multifactor
PriorityDecayHalfLife=7-0  # a week
PriorityWeightFairshare=10000 PriorityWeightAge=1000
PrioritySiteFactorPlugin=site_factor/none
SchedulerType=sched/backfill
";

/// Submitted days before `T` (2023-11-14T22:13:20Z) in any time zone.
const SQUEUE: &str = "\
101|user2|c|batch|normal|2023-11-12T08:00:00|4|1|1:00:00
102|user5|f|batch,debug|(null)|2023-11-12T07:30:00|16|2|2-00:00:00
103|user1|b|debug||2023-11-13T09:15:00|1|1|UNLIMITED
";

/// A local time as Unix seconds, by chrono alone (squeue prints local
/// times; the test runs in whatever zone `TZ` says).
fn site(text: &str) -> Time {
    use chrono::TimeZone;
    let naive = chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S").unwrap();
    chrono::Local
        .from_local_datetime(&naive)
        .earliest()
        .unwrap()
        .timestamp()
}

fn source<'a>(name: &'a str, text: &'a str) -> Source<'a> {
    Source { name, text }
}

fn import(
    assoc: &str,
    sshare: Option<&str>,
    conf: Option<&str>,
    squeue: Option<&str>,
) -> Result<Vec<Event>, ImportError> {
    import_slurm(&SlurmImport {
        assoc: source("assoc.txt", assoc),
        sshare: sshare.map(|s| source("sshare.txt", s)),
        slurm_conf: conf.map(|s| source("slurm.conf", s)),
        squeue: squeue.map(|s| source("squeue.txt", s)),
        qos: None,
        nodes: None,
        sacct: None,
        cluster: None,
        t: T,
    })
}

fn events(lines: &[&str]) -> Vec<Event> {
    lines.iter().map(|l| parse_event(1, l).unwrap()).collect()
}

#[test]
fn the_whole_import_in_valid_order() {
    let got = import(ASSOC, Some(SSHARE), Some(SLURM_CONF), Some(SQUEUE)).unwrap();
    let expected = events(&[
        r#"{"op":"account","t":1700000000,"name":"a","parent":"root","shares":40}"#,
        r#"{"op":"account","t":1700000000,"name":"b","parent":"a","shares":30}"#,
        r#"{"op":"account","t":1700000000,"name":"c","parent":"a","shares":10}"#,
        r#"{"op":"account","t":1700000000,"name":"d","parent":"root","shares":60}"#,
        r#"{"op":"account","t":1700000000,"name":"e","parent":"d","shares":25}"#,
        r#"{"op":"account","t":1700000000,"name":"f","parent":"d","shares":35}"#,
        r#"{"op":"user","t":1700000000,"user":"root","account":"root","shares":1}"#,
        r#"{"op":"user","t":1700000000,"user":"user1","account":"b","shares":1}"#,
        r#"{"op":"user","t":1700000000,"user":"user2","account":"c","shares":1}"#,
        r#"{"op":"user","t":1700000000,"user":"user3","account":"c","shares":1}"#,
        r#"{"op":"user","t":1700000000,"user":"user4","account":"e","shares":1}"#,
        r#"{"op":"user","t":1700000000,"user":"user5","account":"f","shares":"parent"}"#,
        // root: 1000000 - (root/root 0 + a 450000 + d 260000) = 290000.
        r#"{"op":"usage","t":1700000000,"account":"root","amount":290000}"#,
        // a: 450000 - (b 200000 + c 250000) = 0; b: 200000 - 200000 = 0.
        r#"{"op":"usage","t":1700000000,"account":"b","user":"user1","amount":200000}"#,
        // c: 250000 - (250000 + 0) = 0.
        r#"{"op":"usage","t":1700000000,"account":"c","user":"user2","amount":250000}"#,
        // d: 260000 - (e 250000 + f 0) = 10000.
        r#"{"op":"usage","t":1700000000,"account":"d","amount":10000}"#,
        r#"{"op":"usage","t":1700000000,"account":"e","user":"user4","amount":250000}"#,
        r#"{"op":"config","t":1700000000,"set":{"PriorityDecayHalfLife":"7-0","PriorityWeightFairshare":"10000","PriorityWeightAge":"1000"}}"#,
        // 102 was submitted to two partitions: each is defined (no
        // attributes) before the submits, and the list passes through.
        r#"{"op":"partition","t":1700000000,"name":"batch"}"#,
        r#"{"op":"partition","t":1700000000,"name":"debug"}"#,
        // Submit-time order: 102 (12th 07:30), 101 (12th 08:00), 103 (13th),
        // each keeping its submit time.
        &format!(
            r#"{{"op":"submit","t":1700000000,"job":"102","user":"user5","account":"f","partition":"batch,debug","tres":{{"cpu":16,"node":2}},"time_limit":172800,"submitted":{}}}"#,
            site("2023-11-12T07:30:00")
        ),
        &format!(
            r#"{{"op":"submit","t":1700000000,"job":"101","user":"user2","account":"c","partition":"batch","qos":"normal","tres":{{"cpu":4,"node":1}},"time_limit":3600,"submitted":{}}}"#,
            site("2023-11-12T08:00:00")
        ),
        &format!(
            r#"{{"op":"submit","t":1700000000,"job":"103","user":"user1","account":"b","partition":"debug","tres":{{"cpu":1,"node":1}},"submitted":{}}}"#,
            site("2023-11-13T09:15:00")
        ),
    ]);
    assert_eq!(got.len(), expected.len());
    for (g, e) in got.iter().zip(&expected) {
        assert_eq!(g, e);
    }
}

#[test]
fn the_import_replays_with_no_rejection() {
    let got = import(ASSOC, Some(SSHARE), Some(SLURM_CONF), Some(SQUEUE)).unwrap();
    let mut book = fairflow_book::Book::default();
    for (i, event) in got.iter().enumerate() {
        book.apply(i as u64 + 1, event).unwrap();
    }
}

#[test]
fn a_parent_listed_after_its_child_is_moved_first() {
    let got = import("c|b||1|a\nc|a||2|root\nc|b|u|3|\n", None, None, None).unwrap();
    let names: Vec<String> = got
        .iter()
        .map(|e| match &e.op {
            Op::Account { name, .. } => name.clone(),
            Op::User { user, .. } => user.clone(),
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(names, ["a", "b", "u"]);
}

#[test]
fn roots_own_row_is_not_checked() {
    // Whatever root's Share and ParentName show, its row creates nothing.
    let got = import("c|root|||\nc|root||x|y\nc|a||5|root\n", None, None, None).unwrap();
    assert_eq!(got.len(), 1);
}

#[test]
fn the_p_form_trailing_bar_is_accepted() {
    let got = import("c|root||1||\nc|a||5|root|\n", None, None, None).unwrap();
    assert_eq!(got.len(), 1);
}

fn error(
    assoc: &str,
    sshare: Option<&str>,
    conf: Option<&str>,
    squeue: Option<&str>,
) -> (String, u64, Option<String>) {
    let e = import(assoc, sshare, conf, squeue).unwrap_err();
    (e.file, e.line, e.field)
}

#[test]
fn malformed_association_lines_name_file_line_and_field() {
    let at = |file: &str, line: u64, field: Option<&str>| {
        (file.to_string(), line, field.map(str::to_string))
    };
    assert_eq!(
        error("c|root||1|\nc|a||many|root\n", None, None, None),
        at("assoc.txt", 2, Some("Share"))
    );
    assert_eq!(
        error("c|a||1\n", None, None, None),
        at("assoc.txt", 1, None)
    );
    assert_eq!(
        error("c|a||1|nowhere\n", None, None, None),
        at("assoc.txt", 1, Some("ParentName"))
    );
    assert_eq!(
        error("c|a||1|\n", None, None, None),
        at("assoc.txt", 1, Some("ParentName"))
    );
    assert_eq!(
        error("c|a||1|b\nc|b||1|a\n", None, None, None),
        at("assoc.txt", 1, Some("ParentName"))
    );
    assert_eq!(
        error("c|a||1|root\nc|a||2|root\n", None, None, None),
        at("assoc.txt", 2, Some("Account"))
    );
    assert_eq!(
        error("c|a||1|root\nc|a|u|1|\nc|a|u|1|\n", None, None, None),
        at("assoc.txt", 3, Some("User"))
    );
    assert_eq!(
        error("c|x|u|1|\n", None, None, None),
        at("assoc.txt", 1, Some("Account"))
    );
    assert_eq!(
        error("c|a||1|root\nother|b||1|root\n", None, None, None),
        at("assoc.txt", 2, Some("Cluster"))
    );
    assert_eq!(
        error("c|a b||1|root\n", None, None, None),
        at("assoc.txt", 1, Some("Account"))
    );
    let message = import("c|root||1|\nc|a||-1|root\n", None, None, None)
        .unwrap_err()
        .to_string();
    assert!(message.starts_with("assoc.txt: line 2: field `Share`: `-1` is not an integer"));
}

#[test]
fn one_cluster_is_chosen_with_cluster() {
    let assoc = "c|a||1|root\nother|b||1|root\n";
    let got = import_slurm(&SlurmImport {
        assoc: source("assoc.txt", assoc),
        sshare: None,
        slurm_conf: None,
        squeue: None,
        qos: None,
        nodes: None,
        sacct: None,
        cluster: Some("other"),
        t: T,
    })
    .unwrap();
    assert_eq!(got.len(), 1);
    assert!(matches!(&got[0].op, Op::Account { name, .. } if name == "b"));
}

#[test]
fn malformed_sshare_lines_name_file_line_and_field() {
    let assoc = "c|a||1|root\nc|a|u|1|\n";
    let at = |line: u64, field: Option<&str>| {
        ("sshare.txt".to_string(), line, field.map(str::to_string))
    };
    assert_eq!(
        error(assoc, Some("Account|User|NormShares\n"), None, None),
        at(1, Some("RawUsage"))
    );
    assert_eq!(
        error(assoc, Some("Account|User|RawUsage\na||lots\n"), None, None),
        at(2, Some("RawUsage"))
    );
    assert_eq!(
        error(assoc, Some("Account|User|RawUsage\na|v|5\n"), None, None),
        at(2, Some("User"))
    );
    assert_eq!(
        error(assoc, Some("Account|User|RawUsage\nzz||5\n"), None, None),
        at(2, Some("Account"))
    );
    assert_eq!(
        error(assoc, Some("Account|User|RawUsage\na|u\n"), None, None),
        at(2, None)
    );
    assert_eq!(
        error(
            assoc,
            Some("Account|User|RawUsage\na|u|1\n a|u|2\n"),
            None,
            None
        ),
        at(3, None)
    );
}

#[test]
fn an_account_below_its_childrens_usage_is_clamped_at_zero() {
    // a's RawUsage 10 is less than u's 12 (truncation, or usage removed): own 0.
    let got = import(
        "c|a||1|root\nc|a|u|1|\n",
        Some("Account|User|RawUsage\nroot||12\n a||10\n  a|u|12\n"),
        None,
        None,
    )
    .unwrap();
    let usage: Vec<&Op> = got
        .iter()
        .map(|e| &e.op)
        .filter(|op| matches!(op, Op::Usage { .. }))
        .collect();
    // root: 12 - 10 = 2; a: max(0, 10 - 12) = 0; u: 12.
    assert_eq!(
        usage,
        [
            &Op::Usage {
                account: "root".into(),
                user: None,
                amount: 2.0,
                period: None,
            },
            &Op::Usage {
                account: "a".into(),
                user: Some("u".into()),
                amount: 12.0,
                period: None,
            },
        ]
    );
}

#[test]
fn a_bad_slurm_conf_value_names_its_line_and_key() {
    let e = import(
        "c|a||1|root\n",
        None,
        Some("ClusterName=x\n\nPriorityDecayHalfLife=soon\n"),
        None,
    )
    .unwrap_err();
    assert_eq!(
        (e.file.as_str(), e.line, e.field.as_deref()),
        ("slurm.conf", 3, Some("PriorityDecayHalfLife"))
    );
}

#[test]
fn malformed_squeue_lines_name_file_line_and_field() {
    let assoc = "c|a||1|root\nc|a|u|1|\n";
    let at = |line: u64, field: Option<&str>| {
        ("squeue.txt".to_string(), line, field.map(str::to_string))
    };
    let ok = "1|u|a|p|q|2023-01-01T00:00:00|1|1|30:00\n";
    assert!(import(assoc, None, None, Some(ok)).is_ok());
    assert_eq!(
        error(
            assoc,
            None,
            None,
            Some(&format!("{ok}2|u|a|p|q|yesterday|1|1|30:00\n"))
        ),
        at(2, Some("SubmitTime"))
    );
    assert_eq!(
        error(
            assoc,
            None,
            None,
            Some("2|v|a|p|q|2023-01-01T00:00:00|1|1|30:00\n")
        ),
        at(1, Some("User"))
    );
    assert_eq!(
        error(
            assoc,
            None,
            None,
            Some("2|u|a|p|q|2023-01-01T00:00:00|x|1|30:00\n")
        ),
        at(1, Some("CPUs"))
    );
    assert_eq!(
        error(
            assoc,
            None,
            None,
            Some("2|u|a|p|q|2023-01-01T00:00:00|1|-1|30:00\n")
        ),
        at(1, Some("Nodes"))
    );
    assert_eq!(
        error(
            assoc,
            None,
            None,
            Some("2|u|a|p|q|2023-01-01T00:00:00|1|1|forever\n")
        ),
        at(1, Some("TimeLimit"))
    );
    assert_eq!(
        error(assoc, None, None, Some(&format!("{ok}{ok}"))),
        at(2, Some("JobID"))
    );
    assert_eq!(error(assoc, None, None, Some("2|u|a|p|q\n")), at(1, None));
}

#[test]
fn a_job_keeps_its_submit_and_eligible_times() {
    let assoc = "c|a||1|root\nc|a|u|1|\n";
    // Job 1: no eligible column. Job 2: eligible an hour after its submit.
    // Job 3: not yet eligible (`Unknown`, a dependency): Slurm's age is 0,
    // so it is eligible from T. Job 4: a `--begin` after T stays a begin.
    let squeue = "\
1|u|a|p|q|2023-11-10T08:00:00|1|1|30:00
2|u|a|p|q|2023-11-10T09:00:00|1|1|30:00|2023-11-10T10:00:00
3|u|a|p|q|2023-11-10T10:00:00|1|1|30:00|Unknown
4|u|a|p|q|2023-11-10T11:00:00|1|1|30:00|2023-11-20T00:00:00
";
    let got = import(assoc, None, None, Some(squeue)).unwrap();
    let submits: Vec<(Option<Time>, Option<Time>)> = got
        .iter()
        .filter_map(|e| match &e.op {
            Op::Submit {
                spec, submitted, ..
            } => Some((*submitted, spec.begin)),
            _ => None,
        })
        .collect();
    assert_eq!(
        submits,
        vec![
            (Some(site("2023-11-10T08:00:00")), None),
            (
                Some(site("2023-11-10T09:00:00")),
                Some(site("2023-11-10T10:00:00"))
            ),
            (Some(site("2023-11-10T10:00:00")), Some(T)),
            (
                Some(site("2023-11-10T11:00:00")),
                Some(site("2023-11-20T00:00:00"))
            ),
        ]
    );
    // Job 2 waited one hour more than it was eligible.
    assert_eq!(submits[1].1.unwrap() - submits[1].0.unwrap(), 3600);
}

#[test]
fn a_submit_after_the_import_time_or_a_bad_eligible_time_is_an_error() {
    let assoc = "c|a||1|root\nc|a|u|1|\n";
    let at = |line: u64, field: &str| ("squeue.txt".to_string(), line, Some(field.to_string()));
    // 2023-11-20 is after T (2023-11-14T22:13:20Z) in every time zone.
    assert_eq!(
        error(
            assoc,
            None,
            None,
            Some("1|u|a|p|q|2023-11-20T00:00:00|1|1|30:00\n")
        ),
        at(1, "SubmitTime")
    );
    assert_eq!(
        error(assoc, None, None, Some("1|u|a|p|q|Unknown|1|1|30:00\n")),
        at(1, "SubmitTime")
    );
    assert_eq!(
        error(
            assoc,
            None,
            None,
            Some("1|u|a|p|q|2023-11-10T08:00:00|1|1|30:00|soon\n")
        ),
        at(1, "EligibleTime")
    );
    assert_eq!(
        error(
            assoc,
            None,
            None,
            Some("1|u|a|p|q|2023-11-10T08:00:00|1|1|30:00|2023-11-10T08:00:00|s00DKDVDNA0005|x\n")
        ),
        ("squeue.txt".to_string(), 1, None)
    );
}

/// `sacctmgr show assoc tree -P` as Slurm prints it by default (its default
/// columns, `src/sacctmgr/association_functions.c`; `tree` indents an
/// account one space per level below root and a user's account one more).
const ASSOC_TREE: &str = "\
Cluster|Account|User|Partition|Share|Priority|GrpJobs|GrpTRES|GrpSubmit|GrpWall|GrpTRESMins|MaxJobs|MaxTRES|MaxTRESPerNode|MaxSubmit|MaxWall|MaxTRESMins|QOS|Def QOS|GrpTRESRunMins|
demo|root|||1||||||||||||||normal||
demo| root|root||1||||||||||||||normal||
demo| a|||40||||||||||||||normal||
demo|  b|||30||||||||||||||normal||
demo|   b|user1||1||||||||||||||normal||
demo|  c|||10||||||||||||||normal||
demo|   c|user2||1||||||||||||||normal||
demo|   c|user3||1||||||||||||||normal||
demo| d|||60||||||||||||||normal||
demo|  e|||25||||||||||||||normal||
demo|   e|user4||1||||||||||||||normal||
demo|  f|||35||||||||||||||normal||
demo|   f|user5||parent||||||||||||||normal||
";

#[test]
fn sacctmgrs_header_form_gives_the_same_tree() {
    let headerless = import(ASSOC, None, None, None).unwrap();
    assert_eq!(import(ASSOC_TREE, None, None, None).unwrap(), headerless);
    // With a ParentName column (format=Account,User,Share,ParentName): no
    // indentation needed, columns in any order, no Cluster column.
    let with_parent = "\
Account|User|ParentName|Share
root|||1
root|root|root|1
a||root|40
b||a|30
b|user1|b|1
c||a|10
c|user2|c|1
c|user3|c|1
d||root|60
e||d|25
e|user4|e|1
f||d|35
f|user5|f|parent
";
    assert_eq!(import(with_parent, None, None, None).unwrap(), headerless);
}

#[test]
fn a_header_without_what_the_import_needs_names_the_column() {
    let at = |line: u64, field: &str| ("assoc.txt".to_string(), line, Some(field.to_string()));
    // No Share column.
    assert_eq!(
        error("Cluster|Account|User\nc|root|\n", None, None, None),
        at(1, "Share")
    );
    // The default columns without `tree`: an account's parent is unknown.
    assert_eq!(
        error(
            "Cluster|Account|User|Partition|Share\nc|root|||1\nc|a|||1\n",
            None,
            None,
            None
        ),
        at(1, "ParentName")
    );
    // A per-partition association.
    assert_eq!(
        error(
            "Cluster|Account|User|Partition|Share\nc|root|||1\nc| a|||1\nc|  a|u|gpu|1\n",
            None,
            None,
            None
        ),
        at(4, "Partition")
    );
    // A row with too few cells.
    assert_eq!(
        error(
            "Cluster|Account|User|Partition|Share\nc|root|||1\nc| a|1\n",
            None,
            None,
            None
        ),
        ("assoc.txt".to_string(), 3, None)
    );
    // Indented two levels below its parent.
    assert_eq!(
        error(
            "Cluster|Account|User|Partition|Share\nc|root|||1\nc|   a|||1\n",
            None,
            None,
            None
        ),
        at(3, "Account")
    );
}

/// `sacctmgr show qos -P` as Slurm prints it by default (its default columns,
/// `src/sacctmgr/qos_functions.c`, abridged at the end).
const QOS: &str = "\
Name|Priority|GraceTime|Preempt|PreemptExitTime|PreemptMode|Flags|UsageThres|UsageFactor|GrpTRES|GrpTRESMins
normal|0|00:00:00|||cluster|||1.000000||
high|100|00:00:00|||cluster|||2.000000||
scavenger|0|00:00:00|||cluster|||0.000000||
";

fn import_qos(qos: &str) -> Result<Vec<Event>, ImportError> {
    import_slurm(&SlurmImport {
        assoc: source("assoc.txt", "c|a||1|root\nc|a|u|1|\n"),
        sshare: None,
        slurm_conf: None,
        squeue: Some(source(
            "squeue.txt",
            "1|u|a|p|high,normal|2023-11-10T08:00:00|1|1|30:00\n",
        )),
        qos: Some(source("qos.txt", qos)),
        nodes: None,
        sacct: None,
        cluster: None,
        t: T,
    })
}

#[test]
fn sacctmgr_qos_gives_each_qos_its_priority_and_usage_factor() {
    let got = import_qos(QOS).unwrap();
    let qos: Vec<&Event> = got.iter().filter(|e| e.op.name() == "qos").collect();
    // Each QOS once, with its values; the job's list `high,normal` needs no
    // second (attribute-less) definition.
    assert_eq!(
        qos.into_iter().cloned().collect::<Vec<_>>(),
        events(&[
            r#"{"op":"qos","t":1700000000,"name":"normal","priority":0,"usage_factor":1}"#,
            r#"{"op":"qos","t":1700000000,"name":"high","priority":100,"usage_factor":2}"#,
            r#"{"op":"qos","t":1700000000,"name":"scavenger","priority":0,"usage_factor":0}"#,
        ])
    );
    let mut book = fairflow_book::Book::default();
    for (i, event) in got.iter().enumerate() {
        book.apply(i as u64 + 1, event).unwrap();
    }
}

#[test]
fn malformed_qos_lines_name_file_line_and_field() {
    let at =
        |line: u64, field: Option<&str>| ("qos.txt".to_string(), line, field.map(str::to_string));
    let err = |text: &str| {
        let e = import_qos(text).unwrap_err();
        (e.file, e.line, e.field)
    };
    assert_eq!(err("normal|0|1.0\n"), at(1, Some("Name")));
    assert_eq!(err(""), at(1, None));
    assert_eq!(
        err("Name|Priority|UsageFactor\nhigh|-3|1.0\n"),
        at(2, Some("Priority"))
    );
    assert_eq!(
        err("Name|Priority|UsageFactor\nhigh|3|cheap\n"),
        at(2, Some("UsageFactor"))
    );
    assert_eq!(err("Name|Priority|UsageFactor\nhigh|3\n"), at(2, None));
    assert_eq!(
        err("Name|Priority|UsageFactor\nhigh|3|1\nhigh|4|1\n"),
        at(3, Some("Name"))
    );
}

#[test]
fn sacctmgr_dump_gives_the_same_tree() {
    // datasets/slurm/dump.cfg is the classic example's tree (ASSOC) as
    // `sacctmgr dump demo file=dump.cfg` writes it: Slurm's own comment
    // header, `Parent - ` scopes, descriptions with a quoted `:`, and
    // user5's `parent` shares as 2147483647.
    let dump = include_str!("../../../../datasets/slurm/dump.cfg");
    let from_dump = import(dump, None, None, None).unwrap();
    let mut from_assoc = import(ASSOC, None, None, None).unwrap();
    // The same events; only the order of accounts differs (the dump lists a
    // parent's children together: a, d, then b, c, then e, f).
    let key = |e: &Event| crate::write::event_to_line(e);
    let mut sorted_dump = from_dump.clone();
    sorted_dump.sort_by_key(key);
    from_assoc.sort_by_key(key);
    assert_eq!(sorted_dump, from_assoc);
}

#[test]
fn malformed_dump_lines_name_file_line_and_field() {
    let at =
        |line: u64, field: Option<&str>| ("assoc.txt".to_string(), line, field.map(str::to_string));
    let head = "Cluster - 'c'\nParent - 'root'\n";
    assert_eq!(
        error(
            &format!("{head}Account - 'a':Fairshare=lots\n"),
            None,
            None,
            None
        ),
        at(3, Some("Fairshare"))
    );
    assert_eq!(
        error(
            &format!("{head}Account - 'a':Description='open\n"),
            None,
            None,
            None
        ),
        at(3, Some("Account"))
    );
    assert_eq!(
        error(&format!("{head}Accounts: a\n"), None, None, None),
        at(3, None)
    );
    assert_eq!(
        error("Cluster - 'c'\nAccount - 'a'\n", None, None, None),
        at(2, Some("Account"))
    );
    // A user under root is root's user association.
    let got = import(&format!("{head}User - 'u':Fairshare=3\n"), None, None, None).unwrap();
    assert_eq!(
        got,
        events(&[r#"{"op":"user","t":1700000000,"user":"u","account":"root","shares":3}"#])
    );
}

fn import_sacct(assoc: &str, sacct: &str) -> Result<Vec<Event>, ImportError> {
    import_slurm(&SlurmImport {
        assoc: source("assoc.txt", assoc),
        sshare: None,
        slurm_conf: None,
        squeue: None,
        qos: None,
        nodes: None,
        sacct: Some(source("sacct.txt", sacct)),
        cluster: None,
        t: T,
    })
}

#[test]
fn sacct_jobs_become_submit_start_and_end_before_the_import() {
    let assoc = "c|a||1|root\nc|a|u|1|\n";
    let sacct = "\
JobID|User|Account|Partition|QOS|Start|End|AllocTRES|State
7|u|a|p|normal|2023-11-10T08:00:00|2023-11-10T09:00:00|cpu=2,node=1|COMPLETED
8|u|a|p|normal|2023-11-10T08:30:00|Unknown|cpu=1,node=1|RUNNING
9|u|a|p|normal|Unknown|Unknown||PENDING
";
    let got = import_sacct(assoc, sacct).unwrap();
    let start = site("2023-11-10T08:00:00");
    let lines: Vec<String> = got.iter().map(crate::write::event_to_line).collect();
    let expected: Vec<String> = events(&[
        &format!(r#"{{"op":"account","t":{start},"name":"a","parent":"root","shares":1}}"#),
        &format!(r#"{{"op":"user","t":{start},"user":"u","account":"a","shares":1}}"#),
        &format!(r#"{{"op":"submit","t":{start},"job":"7","user":"u","account":"a","partition":"p","qos":"normal","tres":{{"cpu":2,"node":1}}}}"#),
        &format!(r#"{{"op":"start","t":{start},"job":"7","tres":{{"cpu":2,"node":1}}}}"#),
        &format!(r#"{{"op":"submit","t":{},"job":"8","user":"u","account":"a","partition":"p","qos":"normal","tres":{{"cpu":1,"node":1}}}}"#, start + 1800),
        &format!(r#"{{"op":"start","t":{},"job":"8","tres":{{"cpu":1,"node":1}}}}"#, start + 1800),
        &format!(r#"{{"op":"end","t":{},"job":"7"}}"#, start + 3600),
        // The log ends at the import's time.
        r#"{"op":"tick","t":1700000000}"#,
    ])
    .iter()
    .map(crate::write::event_to_line)
    .collect();
    assert_eq!(lines, expected);
    let mut book = fairflow_book::Book::default();
    for (i, event) in got.iter().enumerate() {
        book.apply(i as u64 + 1, event).unwrap();
    }
}

#[test]
fn malformed_sacct_lines_name_file_line_and_field() {
    let assoc = "c|a||1|root\nc|a|u|1|\n";
    let header = "JobID|User|Account|Partition|QOS|Start|End|AllocTRES|State\n";
    let err = |sacct: &str| {
        let e = import_sacct(assoc, sacct).unwrap_err();
        (e.file, e.line, e.field)
    };
    let at =
        |line: u64, field: Option<&str>| ("sacct.txt".to_string(), line, field.map(str::to_string));
    assert_eq!(err("JobID|User|Account\n"), at(1, Some("Partition")));
    let row = |r: &str| format!("{header}{r}\n");
    assert_eq!(
        err(&row("1|u|a|p|q|yesterday|Unknown|cpu=1|RUNNING")),
        at(2, Some("Start"))
    );
    assert_eq!(
        err(&row(
            "1|u|a|p|q|2023-11-10T08:00:00|2023-11-10T07:00:00|cpu=1|COMPLETED"
        )),
        at(2, Some("End"))
    );
    assert_eq!(
        err(&row("1|v|a|p|q|2023-11-10T08:00:00|Unknown|cpu=1|RUNNING")),
        at(2, Some("User"))
    );
    assert_eq!(
        err(&row(
            "1|u|a|p|q|2023-11-10T08:00:00|Unknown|cpu=lots|RUNNING"
        )),
        at(2, Some("AllocTRES"))
    );
    assert_eq!(err(&row("1|u|a|p|q")), at(2, None));
}
