//! End to end: `fairflow sprio`, `top` and `explain` on
//! `datasets/events/priority.jsonl`. Expected values are computed by hand in
//! the comments from the fixture (the fair-share factors are Fair Tree's
//! rank / N: bob, without usage, 2/2; alice 1/2).

#[path = "support/binary.rs"]
mod binary;
use binary::{dataset, fairflow};

fn stdout_of(args: &[&str]) -> String {
    let out = fairflow(args);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stderr, "");
    String::from_utf8(out.stdout).unwrap()
}

const HEADER: &str =
    "JOBID|PARTITION|USER|ACCOUNT|PRIORITY|SITE|AGE|ASSOC|FAIRSHARE|JOBSIZE|PARTITION|QOS|NICE|TRES";

#[test]
fn sprio_weighted_and_normalized() {
    let events = dataset("events/priority.jsonl");
    // Now 1700086400. Job 1: age 86400/86400 = 1 -> 1000; fair-share 0.5 ->
    // 5000; QOS high 10/10 -> 2000; cpu 16/64 -> 25: 8025. Job 2: age 0.5 ->
    // 500; fair-share 1 -> 10000; QOS 5/10 -> 1000; cpu 32/64 -> 50: 11550.
    // Job 3 is held and job 4 not yet eligible: not listed.
    assert_eq!(
        stdout_of(&["sprio", "-P", "--events", &events]),
        format!(
            "{HEADER}\n1||alice|lab|8025|0|1000|0|5000|0|0|2000|0|cpu=25\n\
             2||bob|lab|11550|0|500|0|10000|0|0|1000|0|cpu=50\n"
        )
    );
    assert_eq!(
        stdout_of(&["sprio", "-P", "-n", "--events", &events]),
        format!(
            "{HEADER}\n1||alice|lab|8025|0|1.0000000|0.0000000|0.5000000|0.0000000|0.0000000|1.0000000|0|cpu=0.25\n\
             2||bob|lab|11550|0|0.5000000|0.0000000|1.0000000|0.0000000|0.0000000|0.5000000|0|cpu=0.50\n"
        )
    );
    // Half a day later job 2's age is 1: 12050.
    let later = stdout_of(&["sprio", "-P", "--events", &events, "--at", "1700129600"]);
    assert!(later.contains("\n2||bob|lab|12050|"), "{later}");
    let json: serde_json::Value =
        serde_json::from_str(&stdout_of(&["sprio", "--json", "--events", &events])).unwrap();
    assert_eq!(json.as_array().unwrap().len(), 2);
    assert_eq!(json[1]["factors"][3]["name"], "fairshare");
    assert_eq!(json[1]["factors"][3]["normalized"], 1.0);
    assert_eq!(json[1]["factors"][3]["weighted"], 10000.0);
}

/// Job 1 (alice, 8025) is behind job 2 (bob, 11550): rank 2, one lab job
/// ahead, 11550 + 1 − 8025 = 3526 points short; its fair-share factor 0.5
/// alone would need 0.5 + 3526/10000 = 0.8526 (weight 10,000).
#[test]
fn position_of_a_job_and_a_page_of_the_queue() {
    let events = dataset("events/priority.jsonl");
    let json: serde_json::Value = serde_json::from_str(&stdout_of(&[
        "position", "1", "--json", "--events", &events,
    ]))
    .unwrap();
    assert_eq!(json["rank"], 2);
    assert_eq!(json["ahead_by_account"]["lab"], 1);
    assert_eq!(json["gap"]["job_id"], "2");
    assert_eq!(json["gap"]["points"], 3526);
    let fairshare = json["gap"]["factors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "fairshare")
        .unwrap()
        .clone();
    assert_eq!(fairshare["own"], 0.5);
    assert_eq!(fairshare["ahead"], 1.0);
    assert_eq!(fairshare["needed"], 0.5 + 3526.0 / 10000.0);
    let text = stdout_of(&["position", "1", "--events", &events]);
    assert!(
        text.starts_with("job 1 (user alice, account lab): priority 8025, rank 2 in the queue\n"),
        "{text}"
    );
    assert!(
        text.contains("to pass job 2 (user bob, account lab, priority 11550): 3526 points"),
        "{text}"
    );
    // No account listed: the text says what was left out.
    let text = stdout_of(&["position", "1", "--top-accounts", "0", "--events", &events]);
    assert!(
        text.contains("... and 1 more accounts with 1 entries ahead"),
        "{text}"
    );
    let out = fairflow(&[
        "position",
        "1",
        "--top-accounts",
        "few",
        "--events",
        &events,
    ]);
    assert!(!out.status.success());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("is not a number of accounts"), "{stderr}");
    // Job 3 is held: no place, a clear error.
    let out = fairflow(&["position", "3", "--events", &events]);
    assert!(!out.status.success());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("job 3 is held"), "{stderr}");
    // The second page of one job is rank 2.
    assert_eq!(
        stdout_of(&["top", "-P", "-k", "1", "--offset", "1", "--events", &events]),
        "RANK|JOBID|USER|ACCOUNT|PRIORITY|PARTITION|QOS\n2|1|alice|lab|8025||high\n"
    );
}

#[test]
fn top_orders_the_queue() {
    let events = dataset("events/priority.jsonl");
    assert_eq!(
        stdout_of(&["top", "-P", "--events", &events]),
        "RANK|JOBID|USER|ACCOUNT|PRIORITY|PARTITION|QOS\n1|2|bob|lab|11550||normal\n2|1|alice|lab|8025||high\n"
    );
    assert_eq!(
        stdout_of(&["top", "-P", "-k", "1", "--events", &events]),
        "RANK|JOBID|USER|ACCOUNT|PRIORITY|PARTITION|QOS\n1|2|bob|lab|11550||normal\n"
    );
}

#[test]
fn explain_a_job_and_refuse_one_without_priority() {
    let events = dataset("events/priority.jsonl");
    let json: serde_json::Value =
        serde_json::from_str(&stdout_of(&["explain", "1", "--json", "--events", &events])).unwrap();
    assert_eq!(json["priority"], 8025);
    assert_eq!(json["algorithm"], "fair_tree");
    let path = json["fairshare_path"].as_array().unwrap();
    let names: Vec<(&str, &str)> = path
        .iter()
        .map(|r| {
            (
                r["account"].as_str().unwrap(),
                r["user"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(names, [("root", ""), ("lab", ""), ("lab", "alice")]);
    assert_eq!(path[2]["fairshare"], 0.5);
    let text = stdout_of(&["explain", "3", "--events", &events]);
    assert!(text.contains("): held,"), "{text}");
    assert!(text.contains("Priority: 0\n"), "{text}");
    let out = fairflow(&["explain", "4", "--events", &events]);
    assert!(!out.status.success());
    assert!(String::from_utf8(out.stderr).unwrap().contains("job 4"));
}

#[test]
fn moab_through_slurm_conf_and_moab_cfg() {
    let dir = std::env::temp_dir().join(format!("fairflow-priority-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let slurm_conf = dir.join("slurm.conf");
    std::fs::write(&slurm_conf, "PriorityModel=moab\n").unwrap();
    let moab_cfg = dir.join("moab.cfg");
    std::fs::write(
        &moab_cfg,
        "# Moab\nRMCFG[base] TYPE=PBS\nQUEUETIMEWEIGHT 2\nUSERCFG[bob] MAXJOB=4\n",
    )
    .unwrap();
    let events = dataset("events/priority.jsonl");
    // QUEUETIME in minutes times 2: job 1 queued 1440 min -> 2880; job 2 720 -> 1440.
    assert_eq!(
        stdout_of(&[
            "top",
            "-P",
            "--events",
            &events,
            "--slurm-conf",
            slurm_conf.to_str().unwrap(),
            "--moab-cfg",
            moab_cfg.to_str().unwrap(),
        ]),
        "RANK|JOBID|USER|ACCOUNT|PRIORITY|PARTITION|QOS\n1|1|alice|lab|2880||high\n2|2|bob|lab|1440||normal\n"
    );
}

#[test]
fn moab_targets_accrual_policy_and_multi_partition_rejection_end_to_end() {
    let dir = std::env::temp_dir().join(format!("fairflow-moab-e2e-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let events = dir.join("events.jsonl");
    let cfg = dir.join("moab.cfg");
    std::fs::write(
        &events,
        "{\"op\":\"config\",\"t\":0,\"set\":{\"PriorityModel\":\"moab\",\"PriorityDecayHalfLife\":0}}\n\
         {\"op\":\"account\",\"t\":0,\"name\":\"a\"}\n\
         {\"op\":\"user\",\"t\":0,\"user\":\"alice\",\"account\":\"a\"}\n\
         {\"op\":\"submit\",\"t\":0,\"job\":\"1\",\"user\":\"alice\",\"account\":\"a\",\"tres\":{\"cpu\":64}}\n\
         {\"op\":\"submit\",\"t\":0,\"job\":\"2\",\"user\":\"alice\",\"account\":\"a\",\"tres\":{\"cpu\":96}}\n\
         {\"op\":\"hold\",\"t\":0,\"job\":\"2\"}\n\
         {\"op\":\"release\",\"t\":3000,\"job\":\"2\"}\n\
         {\"op\":\"submit\",\"t\":3000,\"job\":\"3\",\"user\":\"alice\",\"account\":\"a\",\"partition\":\"p1,p2\"}\n\
         {\"op\":\"tick\",\"t\":6000}\n",
    )
    .unwrap();
    std::fs::write(
        &cfg,
        "PROCWEIGHT 1\nPRIORITYTARGETPROCCOUNT 64\nJOBPRIOACCRUALPOLICY QUEUEPOLICY\n",
    )
    .unwrap();
    let (events, cfg) = (events.to_str().unwrap(), cfg.to_str().unwrap());
    let out = fairflow(&["top", "-P", "--events", events, "--moab-cfg", cfg]);
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    // Rejected lines do not change the exit status.
    assert!(out.status.success(), "{stderr}");
    // Job 1: 100 queue minutes + PROC 64 (the ideal) = 164. Job 2: held
    // 0..3000, so 3000 s = 50 min, + PROC 64 - |96 - 64| = 32: 82.
    assert_eq!(
        stdout,
        "RANK|JOBID|USER|ACCOUNT|PRIORITY|PARTITION|QOS\n1|1|alice|a|164||\n2|2|alice|a|82||\n"
    );
    // Job 3 lists two partitions no event defined: rejected, naming the line,
    // the field and the first unknown one.
    assert!(
        stderr.contains("line 8: field `partition`: unknown partition `p1` in the list `p1,p2`"),
        "{stderr}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
