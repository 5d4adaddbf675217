//! The follower's poll at scale (issue 35's target): 100,000 associations
//! and 1,000,000 pending jobs printed by stand-in commands (`cat` of
//! generated files, the real commands' formats), a first poll, then 1% of
//! the jobs changed and a second poll, whose CPU time (this process's, the
//! stand-ins' own excluded) and events are printed. A measurement, not a
//! test of speed: `#[ignore]`d, run by hand (perf/results/ says how).

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use fairflow_ingest::slurm_live::command::SlurmCommand;
use fairflow_ingest::slurm_live::jobs::JobTable;
use fairflow_ingest::slurm_live::policy::Policy;
use fairflow_ingest::slurm_live::{poll_events, Poll, SlurmCommands};

/// User and system CPU seconds of this process so far (Linux).
fn cpu_secs() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .collect();
    (fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap()) / 100.0
}

fn count(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn cat(file: &Path) -> SlurmCommand {
    SlurmCommand::new("cat", &[file.to_str().unwrap()])
}

/// The jobs file: `jobs` pending jobs over `users` user associations, the
/// first `changed` with nice `nice`.
fn jobs_text(jobs: usize, users: usize, changed: usize, nice: i64) -> String {
    let mut text = String::with_capacity(jobs * 110);
    for j in 0..jobs {
        let u = j % users;
        let nice = if j < changed { nice } else { 0 };
        let _ = writeln!(
            text,
            "{}|u{u}|a{}|batch|normal|2026-11-28T10:00:00|4|1|1:00:00|2026-11-28T10:00:00|PENDING|Priority|{nice}|N/A",
            j + 1,
            u / 10
        );
    }
    text
}

#[test]
#[ignore = "a measurement at 100k associations / 1M jobs: run by hand"]
fn one_poll_at_scale() {
    let (users, jobs) = (count("FF_USERS", 91_000), count("FF_JOBS", 1_000_000));
    let accounts = users / 10;
    let dir = std::env::temp_dir().join(format!("ff-poll-scale-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = |name: &str| dir.join(name);
    let mut assoc = String::from("c|root||1|\n");
    let mut usage = String::new();
    for a in 0..accounts {
        let _ = writeln!(assoc, "c|a{a}||1|root");
        let _ = writeln!(usage, "ClusterName=c Account=a{a} UserName= Partition=\n    UsageRaw/Norm/Efctv=10.00/0.00/0.00");
    }
    for u in 0..users {
        let _ = writeln!(assoc, "c|a{}|u{u}|1|", u / 10);
        let _ = writeln!(usage, "ClusterName=c Account=a{} UserName=u{u}(1) Partition=\n    UsageRaw/Norm/Efctv=1.00/0.00/0.00", u / 10);
    }
    std::fs::write(file("assoc"), assoc).unwrap();
    std::fs::write(file("usage"), usage).unwrap();
    std::fs::write(
        file("qos"),
        "Name|Priority|UsageFactor\nnormal|0|1.000000\n",
    )
    .unwrap();
    std::fs::write(
        file("config"),
        "PriorityWeightFairShare = 10000\nPriorityFlags = \n",
    )
    .unwrap();
    std::fs::write(file("nodes"), "NodeName=n1 CPUTot=64 RealMemory=1000\n").unwrap();
    std::fs::write(
        file("partitions"),
        "PartitionName=batch PriorityJobFactor=1 PriorityTier=1\n",
    )
    .unwrap();
    std::fs::write(file("jobs"), jobs_text(jobs, users, 0, 0)).unwrap();
    let commands = SlurmCommands {
        assoc: cat(&file("assoc")),
        qos: cat(&file("qos")),
        config: cat(&file("config")),
        nodes: cat(&file("nodes")),
        partitions: cat(&file("partitions")),
        jobs: cat(&file("jobs")),
        usage: cat(&file("usage")),
        ..SlurmCommands::default()
    };
    let poll = Poll {
        commands: &commands,
        timeout: Duration::from_secs(600),
        cluster: None,
    };
    let (cpu, wall) = (cpu_secs(), Instant::now());
    let first = poll.run(&JobTable::default()).unwrap();
    let events = poll_events(&Policy::default(), &JobTable::default(), None, &first, 1).unwrap();
    println!(
        "first poll: {} associations, {} jobs, {} events, {:.2} s CPU, {:.2} s wall",
        accounts + users,
        first.jobs.len(),
        events.len(),
        cpu_secs() - cpu,
        wall.elapsed().as_secs_f64()
    );
    // 1% of the jobs change (their nice), the rest is as it was.
    let changed = jobs / 100;
    std::fs::write(file("jobs"), jobs_text(jobs, users, changed, 10)).unwrap();
    let (cpu, wall) = (cpu_secs(), Instant::now());
    let second = poll.run(&first.jobs).unwrap();
    let events = poll_events(&first.policy, &first.jobs, None, &second, 2).unwrap();
    let cpu = cpu_secs() - cpu;
    println!(
        "poll with 1% changed: {} events, {cpu:.2} s CPU, {:.2} s wall",
        events.len(),
        wall.elapsed().as_secs_f64()
    );
    assert_eq!(events.len(), changed, "only the changed jobs");
    // Where the second poll's time goes, piece by piece.
    let text = std::fs::read_to_string(file("jobs")).unwrap();
    let cpu = cpu_secs();
    let table = JobTable::read(&first.jobs, "squeue", &text).unwrap();
    println!(
        "  squeue's 1M lines read against the last table: {:.2} s CPU",
        cpu_secs() - cpu
    );
    let cpu = cpu_secs();
    let _ = fairflow_ingest::slurm_live::diff::queue_events(&first.jobs, None, &table, 2);
    println!("  the job diff: {:.2} s CPU", cpu_secs() - cpu);
    let cpu = cpu_secs();
    let _ = poll.run(&table).unwrap();
    println!("  a whole poll's reading: {:.2} s CPU", cpu_secs() - cpu);
    std::fs::remove_dir_all(&dir).unwrap();
}
