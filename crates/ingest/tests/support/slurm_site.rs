//! A Slurm site at scale for the follower's measurements: the outputs of
//! its commands, in the real commands' formats, written as files, and
//! stand-in commands (`cat`) that print them. Shared by
//! `crates/ingest/tests/follow_poll_scale.rs` (the poll) and
//! `crates/service/tests/follow_apply_scale.rs` (applying its events).
#![allow(dead_code)]

use std::fmt::Write as _;
use std::path::Path;

use fairflow_ingest::slurm_live::command::SlurmCommand;
use fairflow_ingest::slurm_live::SlurmCommands;

/// User and system CPU seconds of this process so far (Linux).
pub fn cpu_secs() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .collect();
    (fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap()) / 100.0
}

pub fn count(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

pub fn cat(file: &Path) -> SlurmCommand {
    SlurmCommand::new("cat", &[file.to_str().unwrap()])
}

/// The jobs file: `jobs` pending jobs over `users` user associations, the
/// first `changed` with nice `nice`.
pub fn jobs_text(jobs: usize, users: usize, changed: usize, nice: i64) -> String {
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

/// Write the site's files into `dir`: `users` user associations in
/// `users / 10` accounts, `jobs` pending jobs, none changed, 1,000 finished
/// jobs; the commands that print them.
pub fn write_site(dir: &Path, users: usize, jobs: usize) -> SlurmCommands {
    let accounts = users / 10;
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
    std::fs::write(file("finished"), finished_text(1_000, users)).unwrap();
    SlurmCommands {
        assoc: cat(&file("assoc")),
        qos: cat(&file("qos")),
        config: cat(&file("config")),
        nodes: cat(&file("nodes")),
        partitions: cat(&file("partitions")),
        jobs: cat(&file("jobs")),
        usage: cat(&file("usage")),
        finished: SlurmCommand::new(
            "sh",
            &["-c", &format!("cat {}", file("finished").display())],
        ),
        ..SlurmCommands::default()
    }
}

/// `n` jobs of sacct's `FINISHED_FORMAT` that ran a minute and finished,
/// submitted after every listed job.
pub fn finished_text(n: usize, users: usize) -> String {
    let mut text = String::new();
    for j in 0..n {
        let u = j % users;
        let _ = writeln!(
            text,
            "f{j}|u{u}|a{}|batch|normal|2026-11-28T11:00:00|2026-11-28T11:00:00|2026-11-28T11:01:00|COMPLETED|4|1|1:00:00",
            u / 10
        );
    }
    text
}

pub fn at(text: &str) -> i64 {
    fairflow_ingest::slurm_time::parse_site_time(text)
        .unwrap()
        .unwrap()
}
