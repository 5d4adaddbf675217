//! `fairflow serve --follow-slurm` against a real Slurm 22.05 (Debian 12's
//! `slurm-wlm`, started by `support/slurm_cluster.rs` as root): an account
//! tree with shares, `FairShare=parent`, a QOS and two partitions of
//! different tiers; short jobs as three Linux users, a share changed, a job
//! held and released, a job in two partitions, a nice changed, fairflow
//! restarted while a job is submitted. Then fairflow's `sshare -a -l -P`
//! must equal Slurm's on every row to Slurm's printed precision (ratios of
//! usage to the precision of 22.05's two-decimal `UsageRaw`, which the
//! follower reconciles with; the test prints which cells needed it), under Fair
//! Tree and (slurmctld restarted with `PriorityFlags=NO_FAIR_TREE`) under
//! the classic algorithm; its `sprio -l` Slurm's within Slurm's rounding;
//! and its queue order Slurm's: within each partition (squeue's priority
//! order), and as the scheduler visits the whole queue (`sort_job_queue2`:
//! one entry per (job, partition) with sprio's priority of that partition,
//! the partition's `PriorityTier` first, then priority, then job id; the
//! tiers are this test's own `slurm.conf`, the priorities Slurm's sprio).
//!
//! Without the packages (or not as root) the test says it was skipped;
//! under `CI=true` it fails instead.

#[path = "support/service.rs"]
mod service;
#[path = "support/slurm_cluster.rs"]
mod slurm_cluster;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use service::{token_file, Service};
use slurm_cluster::{missing_prerequisite, wait_for, SlurmCluster};

const TOKEN: &str = "real-slurm-token";

/// The service's log lines.
type Log = Arc<Mutex<Vec<String>>>;

/// The site part of slurm.conf: priorities, the node, two partitions.
const SITE_CONF: &str = "PriorityCalcPeriod=1\nPriorityDecayHalfLife=0-00:10:00\n\
PriorityWeightFairshare=100000\nPriorityWeightPartition=1000\nPriorityWeightQOS=2000\n\
PriorityWeightJobSize=500\nPriorityWeightAge=0\n\
NodeName=localhost NodeAddr=127.0.0.1 CPUs=256 RealMemory=262144 State=UNKNOWN\n\
PartitionName=low Nodes=localhost Default=YES MaxTime=60 PriorityJobFactor=1 PriorityTier=1 State=UP\n\
PartitionName=high Nodes=localhost MaxTime=60 PriorityJobFactor=4 PriorityTier=2 State=UP\n";

const USERS: [&str; 3] = ["ffu1", "ffu2", "ffu3"];

/// A cell equal to Slurm's: the same text, or numbers apart by at most one
/// unit of the last place Slurm printed (`unit`, e.g. 1e-6 for `%f`).
fn cells_agree(slurm: &str, ours: &str) -> bool {
    if slurm == ours {
        return true;
    }
    let (Ok(a), Ok(b)) = (slurm.parse::<f64>(), ours.parse::<f64>()) else {
        return false;
    };
    let unit = match slurm.split_once('.') {
        Some((_, decimals)) => 10f64.powi(-(decimals.len() as i32)),
        None => 1.0,
    };
    (a - b).abs() <= unit * 1.000_001
}

/// Rows of a `|`-separated table with a header, by a key of some columns.
fn keyed_rows(text: &str, key: &[&str]) -> (Vec<String>, BTreeMap<String, Vec<String>>) {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let header: Vec<String> = lines
        .next()
        .unwrap_or_default()
        .split('|')
        .map(|c| c.trim().to_string())
        .collect();
    let at: Vec<usize> = key
        .iter()
        .map(|k| header.iter().position(|h| h == k).unwrap())
        .collect();
    let rows = lines
        .map(|line| {
            let cells: Vec<String> = line.split('|').map(|c| c.trim().to_string()).collect();
            let key = at
                .iter()
                .map(|&i| cells[i].clone())
                .collect::<Vec<_>>()
                .join("|");
            (key, cells)
        })
        .collect();
    (header, rows)
}

/// Compare two tables on the columns both have; the differing cells.
fn compare_tables(slurm: &str, ours: &str, key: &[&str], what: &str) -> Vec<String> {
    let (slurm_header, slurm_rows) = keyed_rows(slurm, key);
    let (our_header, our_rows) = keyed_rows(ours, key);
    let raw_usage_at = slurm_header.iter().position(|h| h == "RawUsage");
    let mut differences = Vec::new();
    let (mut cells, mut within_usage_precision) = (0, Vec::new());
    for (row, slurm_cells) in &slurm_rows {
        let Some(our_cells) = our_rows.get(row) else {
            differences.push(format!("{what} row `{row}`: not in fairflow's"));
            continue;
        };
        // Slurm 22.05 prints UsageRaw (what the follower reconciles with)
        // to two decimals: a ratio of usages is known to about 0.01 over the
        // row's raw usage, relatively.
        let raw_usage = raw_usage_at.and_then(|i| slurm_cells[i].parse::<f64>().ok());
        for (i, name) in slurm_header.iter().enumerate() {
            let Some(j) = our_header.iter().position(|h| h == name) else {
                continue;
            };
            cells += 1;
            let (a, b) = (&slurm_cells[i], &our_cells[j]);
            if cells_agree(a, b) {
                continue;
            }
            let ratio =
                ["NormUsage", "EffectvUsage", "LevelFS", "FairShare"].contains(&name.as_str());
            let close = match (a.parse::<f64>(), b.parse::<f64>(), raw_usage) {
                (Ok(x), Ok(y), Some(raw)) if ratio && raw >= 1.0 => {
                    (x - y).abs() <= 1e-6 + x.abs() * 0.01 / raw
                }
                _ => false,
            };
            let line = format!("{what} row `{row}` {name}: Slurm {a}, fairflow {b}");
            if close {
                within_usage_precision.push(line);
            } else {
                differences.push(line);
            }
        }
    }
    for row in our_rows.keys().filter(|r| !slurm_rows.contains_key(*r)) {
        differences.push(format!("{what} row `{row}`: not in Slurm's"));
    }
    println!(
        "{what}: {} rows, {cells} cells compared: {} equal to the printed precision, {} only within \
         UsageRaw's two decimals, {} differ",
        slurm_rows.len(),
        cells - within_usage_precision.len() - differences.len(),
        within_usage_precision.len(),
        differences.len()
    );
    for line in &within_usage_precision {
        println!("  within UsageRaw's precision: {line}");
    }
    differences
}

/// sprio -l's table as `|`-separated columns (its fixed-width cells hold no
/// spaces; the last, TRES, is left out: it may be empty). The second
/// PARTITION column (the factor) is renamed PARTITION_FACTOR. Slurm 22.05's
/// `-l` has no ACCOUNT and QOSNAME columns (23.02 added them): only the
/// columns both tables have are compared.
fn sprio_table(text: &str) -> String {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let mut header: Vec<&str> = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    header.retain(|h| *h != "TRES");
    if let Some(second) = header
        .iter()
        .rposition(|h| *h == "PARTITION")
        .filter(|&i| i > 1)
    {
        header[second] = "PARTITION_FACTOR";
    }
    let mut out = header.join("|") + "\n";
    for line in lines {
        let cells: Vec<&str> = line.split_whitespace().take(header.len()).collect();
        out.push_str(&cells.join("|"));
        out.push('\n');
    }
    out
}

/// The pending jobs of `partition` in Slurm's priority order (priority
/// highest first, then job id: `squeue --sort=-p,i`), one-partition jobs only.
fn slurm_order(cluster: &SlurmCluster, partition: &str) -> Vec<String> {
    cluster
        .run(
            "squeue",
            &["-h", "-t", "PD", "--sort=-p,i", "-o", "%i|%P|%r"],
        )
        .lines()
        .map(|l| l.split('|').collect::<Vec<_>>())
        .filter(|c| c[1] == partition && !c[2].starts_with("JobHeld"))
        .map(|c| c[0].to_string())
        .collect()
}

/// fairflow's queue order of `partition`'s one-partition jobs.
fn fairflow_order(service: &Service, partition: &str, multi: &[String]) -> Vec<String> {
    let (status, body) = service.request(
        "GET",
        &format!("/v1/top?k=1000&format=parsable&partitions={partition}"),
        None,
        "",
    );
    assert_eq!(status, 200, "{body}");
    body.lines()
        .skip(1)
        .filter_map(|l| l.split('|').nth(1))
        .filter(|id| !multi.iter().any(|m| m == id))
        .map(str::to_string)
        .collect()
}

/// The partitions' `PriorityTier` in [`SITE_CONF`].
const TIERS: [(&str, u16); 2] = [("low", 1), ("high", 2)];

/// The scheduler's whole queue as `(job, partition)` entries in the order
/// `sort_job_queue2` visits them: each pending, not held job once per
/// partition, at the priority Slurm's `sprio` prints for that partition;
/// higher tier first, then higher priority, then the lower job id (the
/// test's jobs are submitted in id order, so 24.11's submit-time tie gives
/// the same order).
fn slurm_entries(cluster: &SlurmCluster) -> Vec<(String, String)> {
    let held: Vec<String> = cluster
        .run("squeue", &["-h", "-t", "PD", "-o", "%i|%r"])
        .lines()
        .filter_map(|l| l.split_once('|'))
        .filter(|(_, reason)| reason.starts_with("JobHeld"))
        .map(|(id, _)| id.to_string())
        .collect();
    let mut entries: Vec<(u16, u64, u64, String)> = cluster
        .run("sprio", &["-h", "-o", "%i|%r|%Y"])
        .lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            let partition = *cells.get(1)?;
            let tier = TIERS.iter().find(|(p, _)| *p == partition)?.1;
            Some((
                tier,
                cells.get(2)?.parse::<u64>().ok()?,
                cells.first()?.parse::<u64>().ok()?,
                partition.to_string(),
            ))
        })
        .filter(|(_, _, job, _)| !held.contains(&job.to_string()))
        .collect();
    entries.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)).then(a.2.cmp(&b.2)));
    entries
        .into_iter()
        .map(|(_, _, job, partition)| (job.to_string(), partition))
        .collect()
}

/// fairflow's whole queue (`top`) as `(job, partition)` entries.
fn fairflow_entries(service: &Service) -> Vec<(String, String)> {
    let (status, body) = service.request("GET", "/v1/top?k=1000&format=parsable", None, "");
    assert_eq!(status, 200, "{body}");
    body.lines()
        .skip(1)
        .filter_map(|l| {
            let cells: Vec<&str> = l.split('|').collect();
            Some((cells.get(1)?.to_string(), cells.get(5)?.to_string()))
        })
        .collect()
}

/// Wait for the decay thread to run, then for two good polls of fairflow
/// after it (the second sees Slurm's usage of that pass and reconciles).
fn settle(cluster: &SlurmCluster, service: &Service) {
    cluster.wait_for_decay_pass();
    let polls = service.metric("fairflow_slurm_polls_total");
    wait_for("two polls", Duration::from_secs(60), || {
        service.metric("fairflow_slurm_polls_total") >= polls + 2.0
    });
}

/// Compare sshare, sprio and the queue order; every difference found.
fn compare_all(
    cluster: &SlurmCluster,
    service: &Service,
    multi: &[String],
    what: &str,
) -> Vec<String> {
    let slurm_sshare = cluster.run("sshare", &["-a", "-l", "-P"]);
    let slurm_sprio = cluster.run("sprio", &["-l"]);
    let (status, our_sshare) = service.request("GET", "/v1/sshare?format=parsable", None, "");
    assert_eq!(status, 200, "{our_sshare}");
    let (status, our_sprio) = service.request("GET", "/v1/sprio?long=true&format=table", None, "");
    assert_eq!(status, 200, "{our_sprio}");
    println!("== {what}: Slurm's sshare\n{slurm_sshare}== fairflow's\n{our_sshare}");
    println!("== {what}: Slurm's sprio -l\n{slurm_sprio}== fairflow's\n{our_sprio}");
    let mut differences = compare_tables(
        &slurm_sshare,
        &our_sshare,
        &["Account", "User"],
        &format!("{what} sshare"),
    );
    differences.extend(compare_tables(
        &sprio_table(&slurm_sprio),
        &sprio_table(&our_sprio),
        &["JOBID", "PARTITION"],
        &format!("{what} sprio"),
    ));
    for partition in ["low", "high"] {
        let (slurm, ours) = (
            slurm_order(cluster, partition),
            fairflow_order(service, partition, multi),
        );
        println!("{what} queue {partition}: Slurm {slurm:?}, fairflow {ours:?}");
        if slurm != ours {
            differences.push(format!(
                "{what} queue order in {partition}: Slurm {slurm:?}, fairflow {ours:?}"
            ));
        }
    }
    let (slurm, ours) = (slurm_entries(cluster), fairflow_entries(service));
    println!("{what} scheduler queue: Slurm {slurm:?}, fairflow {ours:?}");
    if slurm != ours {
        differences.push(format!(
            "{what} scheduler queue (tier, priority, job id): Slurm {slurm:?}, fairflow {ours:?}"
        ));
    }
    differences
}

fn build_tree(cluster: &SlurmCluster) {
    for user in USERS {
        let _ = std::process::Command::new("useradd")
            .args(["-M", user])
            .output();
    }
    let sacctmgr = |args: &[&str]| {
        let mut all = vec!["-i"];
        all.extend_from_slice(args);
        cluster.run("sacctmgr", &all);
    };
    sacctmgr(&["add", "cluster", "ffc"]);
    sacctmgr(&["add", "qos", "hiprio", "priority=100", "usagefactor=2"]);
    sacctmgr(&["add", "account", "phys", "parent=root", "fairshare=40"]);
    sacctmgr(&["add", "account", "chem", "parent=root", "fairshare=60"]);
    sacctmgr(&[
        "add",
        "account",
        "theory",
        "parent=phys",
        "fairshare=parent",
    ]);
    for (user, account, share) in [
        ("ffu1", "phys", "10"),
        ("ffu2", "theory", "5"),
        ("ffu3", "chem", "1"),
        ("ffu1", "chem", "3"),
    ] {
        sacctmgr(&[
            "add",
            "user",
            user,
            &format!("account={account}"),
            &format!("fairshare={share}"),
            "qos=normal,hiprio",
        ]);
    }
    sacctmgr(&["delete", "user", "root", "account=root"]);
}

fn start_fairflow(
    cluster: &SlurmCluster,
    data: &std::path::Path,
    token: &std::path::Path,
    log: &Log,
) -> Service {
    // The follower finds Slurm's commands on PATH and their configuration
    // in SLURM_CONF, as a site's service would.
    Service::start_with_env(
        data,
        token,
        &[
            "--follow-slurm",
            "--slurm-poll-secs",
            "1",
            "--slurm-command-timeout-secs",
            "20",
        ],
        Some(log.clone()),
        &[("SLURM_CONF", cluster.conf.display().to_string())],
    )
}

#[test]
fn fairflow_follows_a_real_slurm_and_agrees_with_its_sshare_sprio_and_queue() {
    if let Some(reason) = missing_prerequisite() {
        fairflow_testkit::prerequisite_missing(&format!("a real Slurm: {reason}"));
        return;
    }
    let cluster = SlurmCluster::start(SITE_CONF);
    build_tree(&cluster);
    cluster.start_controller();
    let scratch = tempfile::tempdir().unwrap();
    let token = token_file(scratch.path(), TOKEN);
    let data = scratch.path().join("data");
    let log: Log = Arc::default();
    let service = start_fairflow(&cluster, &data, &token, &log);
    cluster.wait_for_first_decay_pass();

    // Usage: four jobs at once, and a job in two partitions submitted held.
    let run = |user: &str, options: &[&str]| cluster.submit(user, options, 15);
    let running = [
        run("ffu1", &["-A", "phys", "-p", "low", "-n", "64", "-t", "5"]),
        run(
            "ffu3",
            &[
                "-A", "chem", "-p", "high", "-q", "hiprio", "-n", "32", "-t", "5",
            ],
        ),
        run(
            "ffu2",
            &["-A", "theory", "-p", "low", "-n", "16", "-t", "5"],
        ),
        run("ffu1", &["-A", "chem", "-p", "low", "-n", "8", "-t", "5"]),
    ];
    let held = run(
        "ffu2",
        &[
            "-A", "theory", "-p", "low,high", "-n", "4", "-t", "5", "--hold",
        ],
    );
    cluster.run(
        "sacctmgr",
        &[
            "-i",
            "modify",
            "user",
            "where",
            "name=ffu3",
            "account=chem",
            "set",
            "fairshare=2",
        ],
    );
    // Started (none pending), then ended (none running or completing).
    wait_for("the usage jobs to start", Duration::from_secs(60), || {
        let listed = cluster.run("squeue", &["-h", "-t", "PD", "-o", "%i"]);
        running
            .iter()
            .all(|id| !listed.lines().any(|l| l.trim() == id))
    });
    wait_for("the usage jobs to end", Duration::from_secs(90), || {
        let listed = cluster.run("squeue", &["-h", "-t", "R,CG", "-o", "%i"]);
        running
            .iter()
            .all(|id| !listed.lines().any(|l| l.trim() == id))
    });

    // The queue: the node drained, so jobs stay pending.
    cluster.run(
        "scontrol",
        &[
            "update",
            "nodename=localhost",
            "state=drain",
            "reason=fairflow-test",
        ],
    );
    let pend = |user: &str, options: &[&str]| cluster.submit(user, options, 5);
    let nice = pend("ffu1", &["-A", "phys", "-p", "low", "-n", "8", "-t", "5"]);
    pend("ffu1", &["-A", "chem", "-p", "high", "-n", "4", "-t", "5"]);
    pend(
        "ffu2",
        &["-A", "theory", "-p", "low", "-n", "32", "-t", "10"],
    );
    pend(
        "ffu3",
        &[
            "-A", "chem", "-p", "low", "-q", "hiprio", "-n", "2", "-t", "5",
        ],
    );
    pend("ffu3", &["-A", "chem", "-p", "high", "-n", "16", "-t", "5"]);
    let two = pend(
        "ffu2",
        &["-A", "theory", "-p", "low,high", "-n", "4", "-t", "5"],
    );
    cluster.run("scontrol", &["release", &held]);
    cluster.run(
        "scontrol",
        &["update", &format!("jobid={nice}"), "nice=100"],
    );

    // fairflow restarts; a job submitted meanwhile is found at its start.
    std::thread::sleep(Duration::from_secs(3));
    service.terminate();
    pend("ffu3", &["-A", "chem", "-p", "high", "-n", "1", "-t", "5"]);
    let service = start_fairflow(&cluster, &data, &token, &log);

    let multi = vec![held.clone(), two.clone()];
    settle(&cluster, &service);
    let mut differences = compare_all(&cluster, &service, &multi, "Fair Tree");

    cluster.restart_controller_with("PriorityFlags=NO_FAIR_TREE");
    settle(&cluster, &service);
    differences.extend(compare_all(&cluster, &service, &multi, "NO_FAIR_TREE"));

    let failures = service.metric("fairflow_slurm_poll_failures_total");
    println!("polls failed (slurmctld restarting): {failures}");
    for line in log.lock().unwrap().iter() {
        if line.contains("reconciled") || line.contains("poll failed") {
            print!("fairflow: {line}");
        }
    }
    service.terminate();
    assert!(
        differences.is_empty(),
        "fairflow differs from the real Slurm:\n{}",
        differences.join("\n")
    );
}
