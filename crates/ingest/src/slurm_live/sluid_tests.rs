//! The live readers on Slurm 26.05's outputs, hand-written in its formats:
//! squeue's lines end with `Sluid`, sacct's with `OriginalSLUID`; a job
//! first listed with one is submitted with it, a job fairflow holds gets it
//! by an update (an upgrade, or a requeue's new SLUID), and a malformed one
//! is an error naming the command, the line and the field. Every expected
//! value worked out by hand.

use rustc_hash::FxHashMap;

use fairflow_model::event::{JobSpec, Op};
use fairflow_model::Sluid;

use super::diff::{queue_events, PollWindow};
use super::finished::read_finished;
use super::jobs::{JobTable, JobsFormat};
use super::version::SlurmVersion;
use super::{job_commands, SlurmCommands};

/// squeue's answer on 26.05 (`JOBS_FORMAT` then `Sluid`): a pending job
/// with a SLUID, a running job submitted before the upgrade
/// (`s0000000000000`: none).
const SQUEUE_26_05: &str = "\
11|ffu1|phys|low|normal|2026-11-29T00:42:21|2|1|5:00|2026-11-29T00:42:21|PENDING|Priority|0|N/A|s00dkdvdna0005
12|ffu2|theory|low|normal|2026-11-29T00:42:21|1|1|5:00|2026-11-29T00:42:21|RUNNING|None|0|2026-11-29T00:42:21|s0000000000000
";

/// The same jobs as 25.11 printed them, before the upgrade.
const SQUEUE_25_11: &str = "\
11|ffu1|phys|low|normal|2026-11-29T00:42:21|2|1|5:00|2026-11-29T00:42:21|PENDING|Priority|0|N/A
12|ffu2|theory|low|normal|2026-11-29T00:42:21|1|1|5:00|2026-11-29T00:42:21|RUNNING|None|0|2026-11-29T00:42:21
";

const WINDOW: PollWindow = PollWindow {
    since: 5000,
    now: 5000,
    submitted_through: None,
};

fn sluid(text: &str) -> Option<Sluid> {
    Some(Sluid::parse(text).unwrap())
}

#[test]
fn only_26_05_and_later_are_asked_for_sluids() {
    let commands = SlurmCommands::default();
    for (version, asked) in [("22.05.8", false), ("25.11.1", false), ("26.05.0", true)] {
        let config = format!("SLURM_VERSION = {version}\n");
        let (format, squeue, sacct) = job_commands(&commands, SlurmVersion::of_config(&config));
        let lines = [squeue.line(), sacct.line()];
        assert_eq!(format == JobsFormat::WithSluid, asked, "{version}");
        assert_eq!(lines[0].ends_with("StartTime:|,Sluid'"), asked, "{lines:?}");
        assert_eq!(
            lines[1].contains("Timelimit,OriginalSLUID"),
            asked,
            "{lines:?}"
        );
        if !asked {
            assert!(lines.iter().all(|l| !l.to_lowercase().contains("sluid")));
        }
    }
    // No version printed: read as before 26.05.
    assert_eq!(job_commands(&commands, None).0, JobsFormat::Plain);
}

#[test]
fn a_26_05_queue_submits_with_the_sluid_and_an_upgrade_updates_it() {
    let mut empty = JobTable::default();
    let changes = (empty.read_changes("squeue", SQUEUE_26_05, JobsFormat::WithSluid)).unwrap();
    let events = queue_events(&empty, None, &changes, &FxHashMap::default(), &WINDOW);
    let submitted: Vec<(String, Option<Sluid>)> = (events.iter())
        .filter_map(|e| match &e.op {
            Op::Submit { job, spec, .. } => Some((job.clone(), spec.sluid)),
            _ => None,
        })
        .collect();
    assert_eq!(
        submitted,
        [("11".into(), sluid("s00DKDVDNA0005")), ("12".into(), None)]
    );

    // The table of 25.11's lines read against 26.05's: the same two jobs
    // (no submit, no cancel); only job 11, pending, gets its SLUID.
    let mut before = JobTable::from_output("squeue", SQUEUE_25_11, JobsFormat::Plain).unwrap();
    let changes = (before.read_changes("squeue", SQUEUE_26_05, JobsFormat::WithSluid)).unwrap();
    assert_eq!((changes.listed.len(), changes.gone.len()), (2, 0));
    let events = queue_events(&before, None, &changes, &FxHashMap::default(), &WINDOW);
    let ops: Vec<Op> = events.into_iter().map(|e| e.op).collect();
    assert_eq!(
        ops,
        [Op::Update {
            job: "11".into(),
            account: None,
            spec: JobSpec {
                sluid: sluid("s00DKDVDNA0005"),
                ..JobSpec::default()
            },
        }]
    );
    before.apply(changes);
    assert_eq!(before.get("11").unwrap().sluid, sluid("s00DKDVDNA0005"));
    assert_eq!(before.len(), 2);
}

#[test]
fn a_malformed_sluid_names_the_command_the_line_and_the_field() {
    let bad = SQUEUE_26_05.replace("s00dkdvdna0005", "s00dkdvdnu0005");
    let mut table = JobTable::default();
    let error = (table.read_changes("squeue -O x", &format!("\n{bad}"), JobsFormat::WithSluid))
        .unwrap_err();
    assert_eq!(
        (error.command.as_str(), error.line),
        ("squeue -O x", Some(2))
    );
    assert_eq!(
        error.reason,
        "field `Sluid`: `s00dkdvdnu0005`: character 10 of a SLUID, `u`, is not one of \
         Crockford's base 32 (0-9 and A-Z without U; O, I and L read as 0, 1, 1)"
    );
    assert!(table.is_empty());
    // A 26.05 line read as 25.11's (or the reverse) is one field off.
    let error = JobTable::from_output("squeue", SQUEUE_26_05, JobsFormat::Plain).unwrap_err();
    assert!(
        error.reason.starts_with("expected 14 `|`-separated fields"),
        "{error}"
    );
    let error = JobTable::from_output("squeue", SQUEUE_25_11, JobsFormat::WithSluid).unwrap_err();
    assert!(
        error.reason.starts_with("expected 15 `|`-separated fields"),
        "{error}"
    );
}

#[test]
fn sacct_gives_the_original_sluid_of_a_job_never_listed() {
    // Job 9 was submitted, ran and ended between two polls.
    let sacct = "9|ffu1|phys|low|normal|2026-11-29T00:48:00|2026-11-29T00:48:20|\
                 2026-11-29T00:50:00|COMPLETED|2|1|00:05:00|s00DKDVDNA0009\n";
    let finished = read_finished("sacct", sacct, JobsFormat::WithSluid).unwrap();
    assert_eq!(finished["9"].spec.sluid, sluid("s00DKDVDNA0009"));
    let window = PollWindow {
        since: finished["9"].ended - 600,
        now: finished["9"].ended + 60,
        submitted_through: Some(finished["9"].submitted - 1),
    };
    let events = queue_events(
        &JobTable::default(),
        None,
        &Default::default(),
        &finished,
        &window,
    );
    assert!(matches!(
        &events[0].op,
        Op::Submit { job, spec, .. } if job == "9" && spec.sluid == sluid("s00DKDVDNA0009")
    ));
    let bad = read_finished(
        "sacct",
        &sacct.replace("s00DKDVDNA0009", "x"),
        JobsFormat::WithSluid,
    );
    let bad = bad.unwrap_err();
    assert_eq!(bad.line, Some(1));
    assert!(
        bad.reason
            .starts_with("field `OriginalSLUID`: `x`: a SLUID is"),
        "{bad}"
    );
}
