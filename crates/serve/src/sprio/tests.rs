//! Tests of the sprio, top and explain renderings, on hand-built priorities;
//! every expected line is written out by hand from the formats in the
//! module documentation.

use fairflow_model::report::{FairshareRow, JobPriority, JobState, PairPriority, PriorityFactor};
use fairflow_model::{Algorithm, PriorityModel, Shares};
use serde_json::Value;

use super::render;
use crate::{explain, top, OutputFormat};

pub(super) fn slurm_job(id: &str, priority: u64, state: JobState) -> JobPriority {
    let f = PriorityFactor::new;
    JobPriority {
        job: id.to_string(),
        user: "alice".into(),
        account: "b".into(),
        partition: "batch".into(),
        qos: "normal".into(),
        submit_at: 1000,
        priority,
        state,
        model: PriorityModel::Slurm,
        factors: vec![
            f("site", 7.0, 1.0),
            f("age", 0.5, 1000.0),
            f("assoc", 1.0, 2000.0),
            f("fairshare", 0.25, 10000.0),
            f("jobsize", 0.15, 4000.0),
            f("partition", 0.5, 5000.0),
            f("qos", 0.25, 3000.0),
            f("nice", 100.0, -1.0),
            f("tres/cpu", 0.1, 800.0),
            f("tres/mem", 0.1, 2048.0),
            f("tres/gres/gpu", 0.0, 500.0),
        ],
        pairs: Vec::new(),
        priority_tier: 0,
        expedited: false,
    }
}

const HEADER: &str =
    "JOBID|PARTITION|USER|ACCOUNT|PRIORITY|SITE|AGE|ASSOC|FAIRSHARE|JOBSIZE|PARTITION|QOS|NICE|TRES";

#[test]
fn slurm_parsable_weighted_and_normalized() {
    let jobs = vec![
        slurm_job("17", 9041, JobState::Pending),
        slurm_job("9", 9041, JobState::Pending),
        slurm_job("5", 0, JobState::Held),
    ];
    // Weighted: 0.5*1000 = 500, 1*2000, 0.25*10000, 0.15*4000 = 600, 0.5*5000,
    // 0.25*3000 = 750; site 7, nice 100; cpu 80, mem 204.8 -> 205, gpu 0 skipped.
    // Numeric ids in numeric order (9 before 17); the held job is not listed.
    let row = "batch|alice|b|9041|7|500|2000|2500|600|2500|750|100|cpu=80,mem=205";
    assert_eq!(
        render(&jobs, false, OutputFormat::Parsable),
        format!("{HEADER}\n9|{row}\n17|{row}\n")
    );
    let normalized = "batch|alice|b|9041|7|0.5000000|1.0000000|0.2500000|0.1500000|0.5000000|0.2500000|100|cpu=0.10,mem=0.10";
    assert_eq!(
        render(&jobs[..1], true, OutputFormat::Parsable),
        format!("{HEADER}\n17|{normalized}\n")
    );
}

#[test]
fn a_job_in_several_partitions_has_one_row_per_pair() {
    // Job 17 in batch (the job's own pair, as slurm_job) and debug, with QOS
    // normal; debug's PriorityJobFactor gives 1.0 of 5000 and its TRES
    // totals cpu 0.4 of 800 = 320: the pair's priority 9041 - 2500 + 5000
    // - 80 + 320 = 11781 (whatever its sum, the row prints the pair's). The
    // rows follow each other in the pairs' order, between jobs 9 and 25.
    let mut job = slurm_job("17", 9041, JobState::Pending);
    let debug_factors: Vec<PriorityFactor> = job
        .factors
        .iter()
        .map(|f| match f.name.as_ref() {
            "partition" => PriorityFactor::new("partition", 1.0, 5000.0),
            "tres/cpu" => PriorityFactor::new("tres/cpu", 0.4, 800.0),
            _ => f.clone(),
        })
        .collect();
    job.pairs = vec![
        PairPriority {
            partition: "batch".into(),
            qos: "normal".into(),
            priority: 9041,
            factors: job.factors.clone(),
            priority_tier: 0,
        },
        PairPriority {
            partition: "debug".into(),
            qos: "normal".into(),
            priority: 11781,
            factors: debug_factors,
            priority_tier: 0,
        },
    ];
    let jobs = vec![
        slurm_job("25", 9041, JobState::Pending),
        job,
        slurm_job("9", 9041, JobState::Pending),
    ];
    let row = "batch|alice|b|9041|7|500|2000|2500|600|2500|750|100|cpu=80,mem=205";
    let debug = "debug|alice|b|11781|7|500|2000|2500|600|5000|750|100|cpu=320,mem=205";
    assert_eq!(
        render(&jobs, false, OutputFormat::Parsable),
        format!("{HEADER}\n9|{row}\n17|{row}\n17|{debug}\n25|{row}\n")
    );
    // JSON: one object per row, each with its pair's partition and QOS.
    let value: Value = serde_json::from_str(&render(&jobs, false, OutputFormat::Json)).unwrap();
    assert_eq!(value.as_array().unwrap().len(), 4);
    assert_eq!(value[2]["partition"], "debug");
    assert_eq!(value[2]["qos"], "normal");
    assert_eq!(value[2]["priority"], 11781);
    assert!(value[2].get("pairs").is_none());
}

#[test]
fn json_has_every_factor_weighted_and_normalized() {
    let jobs = vec![slurm_job("17", 9041, JobState::Pending)];
    let value: Value = serde_json::from_str(&render(&jobs, false, OutputFormat::Json)).unwrap();
    let job = &value[0];
    assert_eq!(job["job_id"], "17");
    assert_eq!(job["priority"], 9041);
    assert_eq!(job["state"], "pending");
    let age = &job["factors"][1];
    assert_eq!(age["name"], "age");
    assert_eq!(age["normalized"], 0.5);
    assert_eq!(age["weight"], 1000.0);
    assert_eq!(age["weighted"], 500.0);
    assert_eq!(job["factors"].as_array().unwrap().len(), 11);
}

#[test]
fn flux_fills_the_slurm_columns_and_appends_its_own() {
    let f = PriorityFactor::new;
    let job = JobPriority {
        job: "1".into(),
        user: "u".into(),
        account: "A".into(),
        partition: "bronze".into(),
        qos: String::new(),
        submit_at: 0,
        priority: 160_000,
        state: JobState::Pending,
        model: PriorityModel::Flux,
        factors: vec![
            f("fairshare", 0.5, 100000.0),
            f("queue", 1.0, 10000.0),
            f("bank", 100.0, 1000.0),
            f("urgency", 0.0, 1000.0),
            f("wait_time", 0.0, 0.0),
            f("qos", 0.0, 0.0),
            f("jobsize", 0.0, 0.0),
            f("user", 0.0, 0.0),
        ],
        pairs: Vec::new(),
        priority_tier: 0,
        expedited: false,
    };
    // SITE, NICE and TRES are empty; AGE is the wait time (0), ASSOC the bank
    // (100 * 1000), PARTITION the queue (1 * 10000); URGENCY and USERFACTOR 0.
    assert_eq!(
        render(&[job], false, OutputFormat::Parsable),
        format!(
            "{HEADER}|URGENCY|USERFACTOR\n1|bronze|u|A|160000||0|100000|50000|0|10000|0|||0|0\n"
        )
    );
}

#[test]
fn moab_shows_components_as_extra_columns() {
    let component = |name: &'static str, value: f64, weight: f64| PriorityFactor {
        cap: Some(500.0),
        ..PriorityFactor::new(name, value, weight)
    };
    let sub = |name: &'static str, parent: &str, value: f64, weight: f64| PriorityFactor {
        component: Some(parent.to_string()),
        ..PriorityFactor::new(name, value, weight)
    };
    let job = JobPriority {
        job: "3".into(),
        user: "u".into(),
        account: "a".into(),
        partition: String::new(),
        qos: String::new(),
        submit_at: 0,
        priority: 90,
        state: JobState::Pending,
        model: PriorityModel::Moab,
        factors: vec![
            component("SERV", 90.0, 1.0),
            sub("QUEUETIME", "SERV", 90.0, 1.0),
        ],
        pairs: Vec::new(),
        priority_tier: 0,
        expedited: false,
    };
    // AGE is QUEUETIME's weighted 90; the other mapped factors are absent
    // (empty); SERV's contribution 90 in its own column.
    assert_eq!(
        render(&[job], false, OutputFormat::Parsable),
        format!("{HEADER}|CRED|FS|RES|SERV|TARGET|USAGE|ATTR\n3||u|a|90||90|||||||||||90|||\n")
    );
}

#[test]
fn top_ranks_the_given_queue() {
    let queue = vec![
        slurm_job("17", 9041, JobState::Pending),
        slurm_job("9", 12, JobState::Pending),
    ];
    assert_eq!(
        top::render(&queue, 1, OutputFormat::Parsable),
        "RANK|JOBID|USER|ACCOUNT|PRIORITY|PARTITION|QOS\n1|17|alice|b|9041|batch|normal\n"
    );
    // Right-justified at widths 6, 15, 8, 8, 10, 9, 8.
    assert_eq!(
        top::render(&queue, 10, OutputFormat::Table),
        "  RANK           JOBID     USER  ACCOUNT   PRIORITY PARTITION      QOS\n\
         ------ --------------- -------- -------- ---------- --------- --------\n     \
         1              17    alice        b       9041     batch   normal\n     \
         2               9    alice        b         12     batch   normal\n"
    );
    let value: Value = serde_json::from_str(&top::render(&queue, 10, OutputFormat::Json)).unwrap();
    assert_eq!(value[1]["rank"], 2);
    assert_eq!(value[1]["job_id"], "9");
    assert_eq!(value[1]["partition"], "batch");
    assert_eq!(value[1]["qos"], "normal");
}

fn path() -> Vec<FairshareRow> {
    let mut root = FairshareRow::new("root", None, 0);
    root.effective_usage = Some(1.0);
    let mut account = FairshareRow::new("b", None, 1);
    account.raw_shares = Some(Shares::Value(30));
    account.norm_shares = Some(0.75);
    account.raw_usage = 3600;
    let mut user = FairshareRow::new("b", Some("alice"), 2);
    user.raw_shares = Some(Shares::Value(1));
    user.norm_shares = Some(1.0);
    user.fairshare = Some(0.25);
    vec![root, account, user]
}

#[test]
fn explain_text_and_json() {
    let job = slurm_job("17", 9041, JobState::Pending);
    let text = explain::render_text(&job, Algorithm::FairTree, &path());
    assert!(text.starts_with(
        "Job 17 (user alice, account b, partition batch, QOS normal): pending, submitted at 1000\n\
         Model: slurm    Fair-share algorithm: fair_tree\nPriority: 9041\n"
    ));
    // The fair-share row: value 0.25, weight 10000, contribution 2500.
    assert!(text.contains(
        "  fairshare                       0.2500000          10000          2500.0000\n"
    ));
    // Sum: 7 + 500 + 2000 + 2500 + 600 + 2500 + 750 - 100 + 80 + 204.8 = 9041.8.
    assert!(text.contains("9041.8000"));
    // The path, as sshare's columns, accounts indented one space per depth.
    let path_table = [
        "Fair-share path from root:",
        "Account                    User  RawShares  NormShares    RawUsage   NormUsage  EffectvUsage  FairShare    LevelFS",
        "-------------------- ---------- ---------- ----------- ----------- ----------- ------------- ---------- ----------",
        "root                                                             0                  1.000000",
        " b                                      30    0.750000        3600",
        "  b                       alice          1    1.000000           0                             0.250000",
    ];
    assert!(text.ends_with(&format!("{}\n", path_table.join("\n"))));
    let value: Value = serde_json::from_str(&explain::render_json(
        &job,
        Algorithm::FairTree,
        &path(),
        None,
    ))
    .unwrap();
    assert_eq!(value["algorithm"], "fair_tree");
    assert_eq!(value["model"], "slurm");
    assert_eq!(value["fairshare_path"].as_array().unwrap().len(), 3);
    assert_eq!(value["fairshare_path"][2]["fairshare"], 0.25);
    assert_eq!(value["fairshare_path"][1]["raw_shares"], "30");
    assert!((value["sum"].as_f64().unwrap() - 9041.8).abs() < 1e-9);
}
