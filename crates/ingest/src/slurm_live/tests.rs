//! The live readers on outputs captured from Slurm 22.05.8 (Debian 12), and
//! the diffs on hand-built tables; every expected value worked out by hand.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use fairflow_model::event::{JobSpec, Op};
use fairflow_model::tres::TresCounts;
use fairflow_model::{Event, Shares};

use super::command::SlurmCommand;
use super::finished;
use rustc_hash::FxHashMap;

use super::diff::{queue_events, PollWindow};
use super::jobs::{parse_job, JobTable, JobsFormat, LiveJob, LiveState};
use super::policy::{read_partitions, Policy};
use super::usage::read_assoc_usage;
use super::*;
use crate::import_slurm::Source;
use crate::slurm_time::{format_site_time, parse_site_time};

/// `squeue -h -a -t ... -O JOBS_FORMAT` on Slurm 22.05.8: a running job,
/// a held job in two partitions, a pending job with a begin time and nice.
const SQUEUE: &str = "\
1|ffu1|phys|low|normal|2026-11-29T00:42:21|2|1|5:00|2026-11-29T00:42:21|RUNNING|None|0|2026-11-29T00:42:21
3|ffu2|theory|low,high|normal|2026-11-29T00:42:21|1|1|5:00|N/A|PENDING|JobHeldUser|0|N/A
4|ffu2|theory|low|hiprio|2026-11-29T00:43:12|1|1|5:00|2026-11-29T01:43:12|PENDING|BeginTime|100|2026-11-29T01:43:12
";

fn at(text: &str) -> i64 {
    parse_site_time(text).unwrap().unwrap()
}

fn tres(cpu: f64, node: f64) -> Option<TresCounts> {
    let mut counts = TresCounts::new();
    counts.insert("cpu".into(), cpu);
    counts.insert("node".into(), node);
    Some(counts)
}

fn table(text: &str) -> JobTable {
    JobTable::from_output("squeue", text, JobsFormat::Plain).unwrap()
}

#[test]
fn squeue_lines_become_jobs() {
    let jobs = table(SQUEUE);
    assert_eq!(jobs.len(), 3);
    let running = jobs.get("1").unwrap();
    assert_eq!(running.state, LiveState::Running);
    assert_eq!(
        (running.user.as_str(), running.account.as_str()),
        ("ffu1", "phys")
    );
    assert_eq!(running.spec.tres, tres(2.0, 1.0));
    assert_eq!(running.spec.time_limit_secs, Some(300));
    let held = jobs.get("3").unwrap();
    assert_eq!(held.state, LiveState::Held);
    assert_eq!(held.spec.partition.as_deref(), Some("low,high"));
    assert_eq!(held.spec.begin, None);
    let later = jobs.get("4").unwrap();
    assert_eq!(later.state, LiveState::Pending);
    assert_eq!(later.spec.nice, Some(100));
    assert_eq!(later.spec.qos.as_deref(), Some("hiprio"));
    assert_eq!(later.spec.begin, Some(at("2026-11-29T01:43:12")));
    assert_eq!(later.submitted, at("2026-11-29T00:43:12"));
}

#[test]
fn a_malformed_squeue_line_names_the_command_line_and_field() {
    let bad = "1|ffu1|phys|low|normal|2026-11-29T00:42:21|two|1|5:00|N/A|RUNNING|None|0|N/A\n";
    let error =
        JobTable::from_output("squeue -O x", &format!("\n{bad}"), JobsFormat::Plain).unwrap_err();
    assert_eq!(error.command, "squeue -O x");
    assert_eq!(error.line, Some(2));
    assert_eq!(
        error.reason,
        "field `NumCPUs`: `two` is not an integer >= 0"
    );
    let short = JobTable::from_output("squeue", "7|ffu1|phys\n", JobsFormat::Plain).unwrap_err();
    assert!(
        short.reason.starts_with("expected 14 `|`-separated fields"),
        "{short}"
    );
    let state = parse_job(
        &SQUEUE
            .lines()
            .next()
            .unwrap()
            .replace("RUNNING", "COMPLETED"),
        JobsFormat::Plain,
    );
    assert_eq!(
        state.unwrap_err().to_string(),
        "field `State`: `COMPLETED` is not a state squeue was asked for"
    );
    let twice = JobTable::from_output("squeue", &format!("{SQUEUE}{SQUEUE}"), JobsFormat::Plain);
    assert_eq!(twice.unwrap_err().reason, "job `1` is listed twice");
}

fn job(state: LiveState, nice: i64) -> LiveJob {
    LiveJob {
        user: "ffu1".into(),
        account: "phys".into(),
        state,
        submitted: 1000,
        started: None,
        spec: JobSpec {
            partition: Some("low".into()),
            tres: tres(8.0, 1.0),
            nice: Some(nice),
            ..JobSpec::default()
        },
        sluid: None,
    }
}

fn line(id: &str, job: &LiveJob) -> String {
    let state = match job.state {
        LiveState::Pending => "PENDING|Priority",
        LiveState::Held => "PENDING|JobHeldUser",
        LiveState::Running => "RUNNING|None",
    };
    format!(
        "{id}|{}|{}|low|normal|{}|8|1|UNLIMITED|N/A|{state}|{}|N/A\n",
        job.user,
        job.account,
        format_site_time(job.submitted),
        job.spec.nice.unwrap()
    )
}

fn events(before: &[(&str, LiveJob)], after: &[(&str, LiveJob)]) -> Vec<Op> {
    let text =
        |jobs: &[(&str, LiveJob)]| jobs.iter().map(|(id, j)| line(id, j)).collect::<String>();
    let mut previous = table(&text(before));
    let changes = previous
        .read_changes("squeue", &text(after), JobsFormat::Plain)
        .unwrap();
    let events = queue_events(&previous, None, &changes, &FxHashMap::default(), &WINDOW);
    assert!(events.iter().all(|e| e.t == 5000), "{events:?}");
    events.into_iter().map(|e| e.op).collect()
}

/// A poll at 5000 with nothing applied since 5000.
const WINDOW: PollWindow = PollWindow {
    since: 5000,
    now: 5000,
    submitted_through: None,
};

#[test]
fn each_change_of_a_job_is_its_event() {
    use LiveState::*;
    let submit = Op::Submit {
        job: "7".into(),
        user: "ffu1".into(),
        account: "phys".into(),
        spec: JobSpec {
            partition: Some("low".into()),
            qos: Some("normal".into()),
            tres: tres(8.0, 1.0),
            nice: Some(0),
            ..JobSpec::default()
        },
        submitted: Some(1000),
    };
    assert_eq!(events(&[], &[("7", job(Pending, 0))]), vec![submit.clone()]);
    assert_eq!(
        events(&[], &[("7", job(Held, 0))]),
        vec![submit.clone(), Op::Hold { job: "7".into() }]
    );
    let start = Op::Start {
        job: "7".into(),
        tres: tres(8.0, 1.0),
    };
    assert_eq!(
        events(&[], &[("7", job(Running, 0))]),
        vec![submit, start.clone()]
    );
    let (id, pending, held, running) = ("7", job(Pending, 0), job(Held, 0), job(Running, 0));
    assert_eq!(
        events(&[(id, pending.clone())], &[(id, pending.clone())]),
        vec![]
    );
    assert_eq!(
        events(&[(id, pending.clone())], &[(id, held.clone())]),
        vec![Op::Hold { job: "7".into() }]
    );
    assert_eq!(
        events(&[(id, held.clone())], &[(id, pending.clone())]),
        vec![Op::Release { job: "7".into() }]
    );
    assert_eq!(
        events(&[(id, held)], &[(id, running.clone())]),
        vec![Op::Release { job: "7".into() }, start.clone()]
    );
    assert_eq!(
        events(&[(id, pending.clone())], &[(id, running.clone())]),
        vec![start]
    );
    assert_eq!(
        events(&[(id, running.clone())], &[(id, pending.clone())]),
        vec![Op::Requeue {
            job: "7".into(),
            expedite: false
        }]
    );
    assert_eq!(
        events(&[(id, running)], &[]),
        vec![Op::End { job: "7".into() }]
    );
    assert_eq!(
        events(&[(id, pending.clone())], &[]),
        vec![Op::Cancel { job: "7".into() }]
    );
    // Only what changed is updated.
    assert_eq!(
        events(&[(id, pending)], &[(id, job(Pending, 100))]),
        vec![Op::Update {
            job: "7".into(),
            account: None,
            spec: JobSpec {
                nice: Some(100),
                ..JobSpec::default()
            },
        }]
    );
}

#[test]
fn the_full_comparison_starts_from_the_engines_jobs() {
    let text = line("7", &job(LiveState::Running, 0)) + &line("8", &job(LiveState::Pending, 0));
    let listed = table(&text);
    // The engine holds 7 pending (its start was missed), 8 pending with
    // nice 5 (its change of nice was missed), and 9 running (its end was
    // missed).
    let as_listed = |id: &str, state: LiveState, nice: i64| {
        let mut job = listed.get(id).unwrap_or(listed.get("8").unwrap()).clone();
        job.state = state;
        job.spec.nice = Some(nice);
        (id.to_string(), job)
    };
    let engine = HashMap::from([
        as_listed("7", LiveState::Pending, 0),
        as_listed("8", LiveState::Pending, 5),
        as_listed("9", LiveState::Running, 0),
    ]);
    let mut empty = JobTable::default();
    let changes = empty
        .read_changes("squeue", &text, JobsFormat::Plain)
        .unwrap();
    let events = queue_events(
        &empty,
        Some(&engine),
        &changes,
        &FxHashMap::default(),
        &WINDOW,
    );
    let ops: Vec<Op> = events.into_iter().map(|e| e.op).collect();
    assert_eq!(
        ops,
        vec![
            Op::Start {
                job: "7".into(),
                tres: tres(8.0, 1.0)
            },
            Op::Update {
                job: "8".into(),
                account: None,
                spec: JobSpec {
                    nice: Some(0),
                    ..JobSpec::default()
                },
            },
            Op::End { job: "9".into() },
        ]
    );
}

/// `scontrol show assoc_mgr flags=assoc` of Slurm 22.05.8, cut to the
/// lines read.
const ASSOC_MGR: &str = "\
Current Association Manager state

Association Records

ClusterName=ffc Account=root UserName= Partition= Priority=0 ID=1
    SharesRaw/Norm/Level/Factor=1/0.00/1/0.00
    UsageRaw/Norm/Efctv=1500.50/1.00/1.00
ClusterName=ffc Account=phys UserName= Partition= Priority=0 ID=3
    SharesRaw/Norm/Level/Factor=40/0.40/100/0.00
    UsageRaw/Norm/Efctv=1000.25/0.67/0.67
ClusterName=ffc Account=phys UserName=ffu1(1001) Partition= Priority=0 ID=6
    UsageRaw/Norm/Efctv=600.00/0.40/0.40
ClusterName=ffc Account=theory UserName= Partition= Priority=0 ID=5
    UsageRaw/Norm/Efctv=400.25/0.27/0.27
ClusterName=ffc Account=theory UserName=ffu2(1002) Partition= Priority=0 ID=7
    UsageRaw/Norm/Efctv=400.25/0.27/0.27
ClusterName=ffc Account=chem UserName= Partition= Priority=0 ID=4
    UsageRaw/Norm/Efctv=500.25/0.33/0.33
ClusterName=ffc Account=chem UserName=ffu3(1003) Partition= Priority=0 ID=8
    UsageRaw/Norm/Efctv=500.00/0.33/0.33
";

fn key(account: &str, user: Option<&str>) -> (String, Option<String>) {
    (account.to_string(), user.map(str::to_string))
}

#[test]
fn slurms_raw_usage_is_read_per_association_without_root() {
    let usage = read_assoc_usage("scontrol show assoc_mgr", ASSOC_MGR).unwrap();
    assert_eq!(
        usage,
        vec![
            (key("phys", None), 1000.25),
            (key("phys", Some("ffu1")), 600.0),
            (key("theory", None), 400.25),
            (key("theory", Some("ffu2")), 400.25),
            (key("chem", None), 500.25),
            (key("chem", Some("ffu3")), 500.0),
        ]
    );
    let bad = ASSOC_MGR.replace("UsageRaw/Norm/Efctv=600.00", "UsageRaw/Norm/Efctv=-6");
    let error = read_assoc_usage("scontrol show assoc_mgr", &bad).unwrap_err();
    assert_eq!(error.line, Some(12));
    assert_eq!(error.reason, "field `UsageRaw`: `-6` is not a number >= 0");
    let cut = "ClusterName=ffc Account=chem UserName= Partition=\n";
    let error = read_assoc_usage("scontrol", cut).unwrap_err();
    assert_eq!(
        (error.line, error.reason.as_str()),
        (
            Some(1),
            "an association without a `UsageRaw/Norm/Efctv=` line"
        )
    );
}

#[test]
fn usage_is_reconciled_only_when_it_drifted_and_then_set_to_slurms() {
    let slurm = read_assoc_usage("scontrol", ASSOC_MGR).unwrap();
    let parents = BTreeMap::from([
        ("phys".to_string(), "root".to_string()),
        ("theory".to_string(), "phys".to_string()),
        ("chem".to_string(), "root".to_string()),
    ]);
    // fairflow within one TRES-second of every truncated value: nothing.
    let close: BTreeMap<_, _> = slurm
        .iter()
        .map(|(k, u)| (k.clone(), *u as u64 + 1))
        .collect();
    assert_eq!(reconcile_usage(&slurm, &close, &parents, 50), None);
    // One association two TRES-seconds off: a reset, then each own usage:
    // ffu1 600, ffu2 400.25, ffu3 500; phys 1000.25 - 600 - 400.25 = 0
    // (left out), theory 400.25 - 400.25 = 0, chem 500.25 - 500 = 0.25.
    let mut far = close;
    far.insert(key("chem", Some("ffu3")), 502);
    let events = reconcile_usage(&slurm, &far, &parents, 50).unwrap();
    let usage = |account: &str, user: Option<&str>, amount: f64| Event {
        t: 50,
        op: Op::Usage {
            account: account.into(),
            user: user.map(str::to_string),
            amount,
            period: None,
        },
    };
    assert_eq!(
        events,
        vec![
            Event {
                t: 50,
                op: Op::ResetUsage
            },
            usage("phys", Some("ffu1"), 600.0),
            usage("theory", Some("ffu2"), 400.25),
            usage("chem", None, 0.25),
            usage("chem", Some("ffu3"), 500.0),
        ]
    );
}

/// `scontrol show partition -o` of Slurm 22.05.8 (cut).
const PARTITIONS: &str = "\
PartitionName=low AllowGroups=ALL Default=YES MaxTime=01:00:00 Nodes=localhost PriorityJobFactor=1 PriorityTier=1 State=UP TotalCPUs=16 TRES=cpu=16,mem=16G,node=1,billing=16
PartitionName=high AllowGroups=ALL MaxTime=UNLIMITED PriorityJobFactor=4 PriorityTier=2 TRESBillingWeights=CPU=2.0 State=UP
";

#[test]
fn partitions_give_their_factor_tier_time_and_billing() {
    let ops = read_partitions(Source {
        name: "scontrol show partition -o",
        text: PARTITIONS,
    })
    .unwrap();
    assert_eq!(ops.len(), 2);
    let Op::Partition {
        name,
        priority_job_factor,
        priority_tier,
        max_time_secs,
        tres_billing_weights,
        ..
    } = &ops[1]
    else {
        panic!("{ops:?}")
    };
    assert_eq!(name, "high");
    assert_eq!(
        (*priority_job_factor, *priority_tier, *max_time_secs),
        (Some(4), Some(2), None)
    );
    assert_eq!(tres_billing_weights.as_ref().unwrap().get("cpu"), Some(2.0));
    assert!(matches!(
        ops[0],
        Op::Partition {
            max_time_secs: Some(3600),
            priority_tier: Some(1),
            ..
        }
    ));
    let error = read_partitions(Source {
        name: "scontrol show partition -o",
        text: "PartitionName=x PriorityTier=high\n",
    })
    .unwrap_err();
    assert_eq!(
        (error.line, error.reason.as_str()),
        (
            Some(1),
            "field `PriorityTier`: `high` is not an integer from 0 to 65533"
        )
    );
}

fn policy(assoc: &str, config: &str) -> Policy {
    let source = |name, text| Source { name, text };
    Policy::read(
        &policy::PolicyOutputs {
            assoc: source("sacctmgr assoc", assoc),
            qos: source(
                "sacctmgr qos",
                "Name|Priority|UsageFactor\nnormal|0|1.000000\n",
            ),
            config: source("scontrol show config", config),
            nodes: source(
                "scontrol show node",
                "NodeName=n1 CPUTot=64 RealMemory=1000\n",
            ),
            partitions: source("scontrol show partition -o", ""),
        },
        None,
    )
    .unwrap()
}

#[test]
fn the_policy_changes_are_only_what_changed() {
    let assoc = "ffc|root||1|\nffc|phys||40|root\nffc|phys|ffu1|10|\nffc|phys|ffu2|5|\n";
    let config = "PriorityWeightFairShare = 100000\nPriorityFlags = \n";
    let before = policy(assoc, config);
    // ffu1's share changes, ffu2 goes, the weight changes.
    let after = policy(
        "ffc|root||1|\nffc|phys||40|root\nffc|phys|ffu1|20|\n",
        "PriorityWeightFairShare = 5000\nPriorityFlags = \n",
    );
    let (changes, removals) = before.changes(&after, 9).unwrap();
    assert_eq!(
        changes,
        vec![
            Event {
                t: 9,
                op: Op::User {
                    user: "ffu1".into(),
                    account: "phys".into(),
                    shares: Some(Shares::Value(20)),
                    priority: None,
                }
            },
            Event {
                t: 9,
                op: Op::Config {
                    set: BTreeMap::from([(
                        "PriorityWeightFairShare".to_string(),
                        serde_json::json!("5000")
                    )])
                }
            },
        ]
    );
    assert_eq!(
        removals,
        vec![Event {
            t: 9,
            op: Op::RemoveUser {
                user: "ffu2".into(),
                account: "phys".into()
            }
        }]
    );
    let (none, gone) = after.changes(&after, 10).unwrap();
    assert!(none.is_empty() && gone.is_empty());
}

#[test]
fn a_command_that_hangs_fails_or_prints_garbage_is_an_error() {
    let hang = SlurmCommand::new("sleep", &["5"]);
    let started = std::time::Instant::now();
    let error = hang.run(Duration::from_millis(300)).unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(4));
    assert_eq!(error.command, "sleep 5");
    assert_eq!(error.reason, "no answer within 0.3 s: killed");
    let fails = SlurmCommand::new(
        "sh",
        &["-c", "echo 'squeue: error: slurm_load_jobs' >&2; exit 1"],
    );
    let error = fails.run(Duration::from_secs(5)).unwrap_err();
    assert_eq!(
        error.reason,
        "exited with exit status: 1: squeue: error: slurm_load_jobs"
    );
    let garbage = SlurmCommand::new("printf", &["ok\\nbad \\377\\n"]);
    let error = garbage.run(Duration::from_secs(5)).unwrap_err();
    assert_eq!(
        (error.line, error.reason.as_str()),
        (Some(2), "the output is not UTF-8")
    );
    let missing = SlurmCommand::new("no-such-slurm-command", &[]);
    assert!(missing
        .run(Duration::from_secs(5))
        .unwrap_err()
        .reason
        .starts_with("cannot start"));
    assert_eq!(
        SlurmCommand::new("echo", &["a b"])
            .run(Duration::from_secs(5))
            .unwrap(),
        "a b\n"
    );
}

/// `sacct -a -X -n -P -s ... -o FINISHED_FORMAT` as Slurm 22.05.8 prints it:
/// a completed job, a job cancelled while pending (no start).
const SACCT: &str = "\
1|ffu1|phys|low|normal|2026-11-29T00:42:21|2026-11-29T00:42:21|2026-11-29T00:47:21|COMPLETED|2|1|00:05:00
3|ffu2|theory|low|normal|2026-11-29T00:42:21|None|2026-11-29T00:50:00|CANCELLED by 1002|1|1|Partition_Limit
";

#[test]
fn finished_jobs_are_read_and_charged_at_sacct_times() {
    let finished = finished::read_finished("sacct", SACCT, JobsFormat::Plain).unwrap();
    let done = &finished["1"];
    assert_eq!(
        (done.started, done.ended),
        (Some(at("2026-11-29T00:42:21")), at("2026-11-29T00:47:21"))
    );
    assert_eq!(finished["3"].state, "CANCELLED");
    assert_eq!(finished["3"].spec.time_limit_secs, None);
    let bad = finished::read_finished(
        "sacct -o x",
        "\n1|u|a|p|q|x|None|None|CD|1|1|1:00\n",
        JobsFormat::Plain,
    );
    let bad = bad.unwrap_err();
    assert_eq!(
        (bad.line, bad.reason.as_str()),
        (
            Some(2),
            "field `Submit`: `x` is not a time YYYY-MM-DDTHH:MM:SS"
        )
    );
    // Job 1 was running in fairflow and left squeue: its end at sacct's end
    // time. Job 3 was pending: its cancel at the window's start. Job 9,
    // never listed, submitted after every job read, ran 100 s: submitted,
    // started and ended at its own times.
    let mut table = table(
        &SQUEUE
            .lines()
            .take(2)
            .map(|l| format!("{l}\n"))
            .collect::<String>(),
    );
    let changes = table.read_changes("squeue", "", JobsFormat::Plain).unwrap();
    let mut finished = finished;
    let unseen = "9|ffu1|phys|low|normal|2026-11-29T00:48:00|2026-11-29T00:48:20|2026-11-29T00:50:00|COMPLETED|2|1|00:05:00";
    let (id, job) = finished::parse_finished(unseen, JobsFormat::Plain).unwrap();
    finished.insert(id, job);
    let window = PollWindow {
        since: at("2026-11-29T00:45:00"),
        now: at("2026-11-29T00:51:00"),
        submitted_through: Some(at("2026-11-29T00:42:21")),
    };
    let events = queue_events(&table, None, &changes, &finished, &window);
    let timed: Vec<(i64, &str, String)> = events
        .iter()
        .map(|e| {
            let job = match &e.op {
                Op::End { job } | Op::Cancel { job } | Op::Start { job, .. } => job.clone(),
                Op::Submit { job, .. } => job.clone(),
                other => panic!("{other:?}"),
            };
            (e.t - window.since, e.op.name(), job)
        })
        .collect();
    assert_eq!(
        timed,
        vec![
            (0, "cancel", "3".to_string()),
            (0, "submit", "9".to_string()),
            (2 * 60 + 21, "end", "1".to_string()),
            (3 * 60 + 20, "start", "9".to_string()),
            (5 * 60, "end", "9".to_string()),
        ]
    );
}
