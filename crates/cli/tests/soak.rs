//! A bounded soak of `fairflow serve` on loopback (issue 37, item 6).
//!
//! The service starts on a generated cluster (`fairflow gen`: 200 user
//! associations, 2,000 pending and 200 running jobs, usage). One writer then
//! posts a body of events every [`BODY_EVERY`] through `POST /v1/events`,
//! each one second of cluster time later than the last: submits, starts,
//! ends, cancels, holds, releases, usage, share changes and a bad line now
//! and then, at rates that keep the number of active jobs steady. Two
//! readers read `top`, `sshare`, a job's `position` and `/metrics`
//! meanwhile. The service checkpoints every 2,000 log records; a third of
//! the way through it is stopped cleanly (SIGTERM) and restarted, two thirds
//! of the way killed (SIGKILL) and restarted. Every body carries an
//! `Idempotency-Key`, and the writer retries a body until it is
//! acknowledged, so a body the kill caught after its sync is acknowledged
//! on the retry as a duplicate, never applied twice.
//!
//! At the end: every body's answer rejected exactly its bad line; the
//! service's `top`, `sshare -a -l`, `sprio` and `position` equal, byte for
//! byte, the batch oracle's on the log of every acknowledged event (the
//! generated cluster, then each body without its bad line, in order); and
//! the service's resident memory (`VmRSS` of `/proc/PID/status`, sampled
//! every second) stayed under [`rss_bound_kib`] (its reasoning there and in
//! `docs/http.md`). It runs 75 s of writing by default (about 80 s in all)
//! and 900 s with `FAIRFLOW_HEAVY=1`; it prints its figures (events/s, read
//! latencies, memory over time, restart times) for
//! `perf/results/2026-11-29-soak-s25.md`.

#[path = "support/binary.rs"]
mod binary;
#[path = "support/log_jobs.rs"]
mod log_jobs;
#[path = "support/service.rs"]
mod service;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use binary::run;
use log_jobs::LogJobs;
use service::{exchange, Service};

const TOKEN: &str = "soak-test-token";

/// One body of events this often.
const BODY_EVERY: Duration = Duration::from_millis(50);

/// Log records between the service's checkpoints.
const CHECKPOINT_EVERY: &str = "2000";

/// How long the writer retries one body (the service restarting) before the
/// test fails.
const RETRY_FOR: Duration = Duration::from_secs(120);

/// The bound on the service's resident memory, KiB, for `jobs` active jobs
/// and `associations` user associations (`docs/http.md`, "Memory").
/// Measured (`perf/results/2026-11-29-soak-s25.md`: the service on the
/// incremental engine, one worker, loaded with `fairflow gen` clusters of
/// 200 user associations and 2,200 active jobs, 200 and 20,200, 2,000 and
/// 22,000, then idle): 48 MiB at rest before any event, then about 4.5 KiB
/// per active job and 5 KiB per user association. The bound doubles the
/// per-job and per-association figures and adds 32 MiB for what is held for
/// a moment (a checkpoint being written, answers in flight, the allocator's
/// huge pages). About 102 MiB here (2,337 jobs), where the service measures 64 to 76 MiB:
/// a copy of its state kept per checkpoint or restart would cross it, and so
/// would a leak of 2 KiB per event in the default run (about 21,000 events)
/// or of 200 bytes per event under `FAIRFLOW_HEAVY=1` (about 250,000).
fn rss_bound_kib(jobs: u64, associations: u64) -> u64 {
    const REST_KIB: u64 = 48 * 1024;
    const PER_JOB_BYTES: u64 = 4_608;
    const PER_ASSOCIATION_BYTES: u64 = 5_120;
    const TRANSIENT_KIB: u64 = 32 * 1024;
    let state_bytes = PER_JOB_BYTES * jobs + PER_ASSOCIATION_BYTES * associations;
    REST_KIB + 2 * state_bytes / 1024 + TRANSIENT_KIB
}

/// A pseudo-random number generator (a 64-bit LCG): the same run every time.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) % n as u64) as usize
    }
}

/// The writer's view of the cluster: what it may do next.
struct Cluster {
    associations: Vec<(String, String)>,
    pending: VecDeque<String>,
    running: VecDeque<String>,
    held: VecDeque<String>,
    next_job: u64,
    t: i64,
    random: Lcg,
}

/// One body: its lines and the line (from 1) that must be rejected, if any.
struct Body {
    text: String,
    bad_line: Option<usize>,
}

impl Cluster {
    fn from_log(log: &str) -> Cluster {
        let jobs = LogJobs::of(log);
        Cluster {
            associations: jobs.associations.iter().cloned().collect(),
            pending: jobs.pending(false).into(),
            running: jobs.running().into(),
            held: jobs.pending(true).into(),
            next_job: 0,
            t: jobs.last_t,
            random: Lcg(37),
        }
    }

    /// The `number`th body, one second after the last: 4 submits, 3 starts,
    /// 3 ends, 1 cancel, 3 usage events; a hold or release every ninth, a
    /// share change every tenth, a bad line every fifth.
    fn body(&mut self, number: u64) -> Body {
        self.t += 1;
        let t = self.t;
        let mut lines: Vec<String> = Vec::new();
        for _ in 0..4 {
            let (user, account) = &self.associations[self.random.below(self.associations.len())];
            let job = format!("soak{}", self.next_job);
            self.next_job += 1;
            let cpus = 1 + self.random.below(16);
            lines.push(format!(
                r#"{{"op":"submit","t":{t},"job":"{job}","user":"{user}","account":"{account}","tres":{{"cpu":{cpus}}},"time_limit":3600}}"#
            ));
            self.pending.push_back(job);
        }
        for _ in 0..3 {
            if let Some(job) = self.running.pop_front() {
                lines.push(format!(r#"{{"op":"end","t":{t},"job":"{job}"}}"#));
            }
            if let Some(job) = self.pending.pop_front() {
                lines.push(format!(r#"{{"op":"start","t":{t},"job":"{job}"}}"#));
                self.running.push_back(job);
            }
        }
        if let Some(job) = self.pending.pop_back() {
            lines.push(format!(r#"{{"op":"cancel","t":{t},"job":"{job}"}}"#));
        }
        match number % 9 {
            0 => {
                if let Some(job) = self.pending.pop_back() {
                    lines.push(format!(r#"{{"op":"hold","t":{t},"job":"{job}"}}"#));
                    self.held.push_back(job);
                }
            }
            4 => {
                if let Some(job) = self.held.pop_front() {
                    lines.push(format!(r#"{{"op":"release","t":{t},"job":"{job}"}}"#));
                    self.pending.push_back(job);
                }
            }
            _ => {}
        }
        for _ in 0..3 {
            let (user, account) = &self.associations[self.random.below(self.associations.len())];
            let amount = 60 * (1 + self.random.below(600));
            lines.push(format!(
                r#"{{"op":"usage","t":{t},"account":"{account}","user":"{user}","amount":{amount}}}"#
            ));
        }
        if number.is_multiple_of(10) {
            let (user, account) = &self.associations[self.random.below(self.associations.len())];
            let shares = 1 + self.random.below(9);
            lines.push(format!(
                r#"{{"op":"user","t":{t},"user":"{user}","account":"{account}","shares":{shares}}}"#
            ));
        }
        let mut bad_line = None;
        if number.is_multiple_of(5) {
            let bad = match number / 5 % 3 {
                0 => "{not json".to_string(),
                1 => format!(r#"{{"op":"end","t":{t},"job":"no-such-job"}}"#),
                _ => format!(r#"{{"op":"usage","t":{t},"account":"nowhere","amount":-5}}"#),
            };
            let at = self.random.below(lines.len() + 1);
            lines.insert(at, bad);
            bad_line = Some(at + 1);
        }
        Body {
            text: lines.join("\n") + "\n",
            bad_line,
        }
    }
}

/// What the writer and readers share with the test.
struct Shared {
    /// The service's address now (a restart listens on another port).
    address: Mutex<SocketAddr>,
    stop: AtomicBool,
    /// The log of every acknowledged event, in order.
    acknowledged: Mutex<String>,
    /// Read latencies by route, and the unexpected answers.
    reads: Mutex<Reads>,
}

#[derive(Default)]
struct Reads {
    latencies: std::collections::BTreeMap<&'static str, Vec<Duration>>,
    unexpected: Vec<String>,
}

/// Post bodies until told to stop; each retried until acknowledged.
fn write(shared: &Shared, mut cluster: Cluster) -> (u64, u64) {
    let (mut bodies, mut events) = (0u64, 0u64);
    let mut next_at = Instant::now();
    while !shared.stop.load(Ordering::SeqCst) {
        let body = cluster.body(bodies);
        let key = format!("soak-{bodies}");
        let headers = [
            ("Authorization", format!("Bearer {TOKEN}")),
            ("Idempotency-Key", key),
        ];
        let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        let retrying_since = Instant::now();
        let answer = loop {
            let address = *shared.address.lock().unwrap();
            let (status, answer) = exchange(address, "POST", "/v1/events", &headers, &body.text);
            if status == 200 {
                break answer;
            }
            // Down (0) or shutting down (503) while restarting: the same
            // body again, with the same key.
            assert!(matches!(status, 0 | 503), "{status}: {answer}");
            assert!(
                retrying_since.elapsed() < RETRY_FOR,
                "body {bodies} never acknowledged"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        let answer: serde_json::Value = serde_json::from_str(&answer).unwrap();
        let lines: Vec<&str> = body.text.lines().collect();
        if answer["duplicate"] != true {
            let rejected: Vec<u64> = (answer["rejected"].as_array().unwrap().iter())
                .map(|r| r["line"].as_u64().unwrap())
                .collect();
            let want: Vec<u64> = body.bad_line.iter().map(|&l| l as u64).collect();
            assert_eq!(rejected, want, "body {bodies}: {answer}\n{}", body.text);
            let accepted = answer["accepted"].as_u64().unwrap();
            assert_eq!(accepted as usize, lines.len() - want.len(), "body {bodies}");
        }
        let mut log = shared.acknowledged.lock().unwrap();
        for (i, line) in lines.iter().enumerate() {
            if body.bad_line != Some(i + 1) {
                log.push_str(line);
                log.push('\n');
                events += 1;
            }
        }
        drop(log);
        bodies += 1;
        next_at += BODY_EVERY;
        std::thread::sleep(next_at.saturating_duration_since(Instant::now()));
    }
    (bodies, events)
}

/// Read the routes in turn until told to stop.
fn read(shared: &Shared, jobs: Vec<String>, seed: u64) {
    let mut random = Lcg(seed);
    let mut local = Reads::default();
    while !shared.stop.load(Ordering::SeqCst) {
        let job = &jobs[random.below(jobs.len())];
        let position = format!("/v1/jobs/{job}/position");
        for (route, path) in [
            ("top", "/v1/top?k=20"),
            ("sshare", "/v1/sshare"),
            ("position", position.as_str()),
            ("metrics", "/metrics"),
        ] {
            let address = *shared.address.lock().unwrap();
            let started = Instant::now();
            let (status, body) = exchange(address, "GET", path, &[], "");
            let took = started.elapsed();
            match status {
                200 => local.latencies.entry(route).or_default().push(took),
                // A job that started or ended is not in line.
                404 | 409 if route == "position" => {
                    local.latencies.entry(route).or_default().push(took)
                }
                // Restarting.
                0 | 503 => std::thread::sleep(Duration::from_millis(20)),
                _ => local.unexpected.push(format!("{path}: {status} {body}")),
            }
        }
    }
    let mut reads = shared.reads.lock().unwrap();
    for (route, mut latencies) in local.latencies {
        reads
            .latencies
            .entry(route)
            .or_default()
            .append(&mut latencies);
    }
    reads.unexpected.append(&mut local.unexpected);
}

fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    fairflow_dataflow::cluster::status_field_kib(&status, "VmRSS")
}

fn quantile(sorted: &[Duration], q: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

#[test]
fn the_service_soaks_writes_reads_checkpoints_and_restarts() {
    let soak = Duration::from_secs(if fairflow_testkit::heavy() { 900 } else { 75 });
    let dir = tempfile::tempdir().unwrap();
    let token_file = service::token_file(dir.path(), TOKEN);
    let data = dir.path().join("data");
    let cluster_log = dir.path().join("cluster.jsonl");
    let (ok, _, err) = run(&[
        "gen",
        "--seed",
        "25",
        "--associations",
        "200",
        "--jobs",
        "2000",
        "--running",
        "200",
        "--activity-secs",
        "600",
        "-o",
        cluster_log.to_str().unwrap(),
    ]);
    assert!(ok, "gen: {err}");
    let cluster_text = std::fs::read_to_string(&cluster_log).unwrap();
    let flags = [
        "--checkpoint-every",
        CHECKPOINT_EVERY,
        "--no-calc-period-ticks",
    ];
    let mut service = Service::start(&data, &token_file, &flags);
    let (status, answer) = service.request("POST", "/v1/events", Some(TOKEN), &cluster_text);
    assert_eq!(status, 200, "{answer}");
    let cluster = Cluster::from_log(&cluster_text);
    let associations = cluster.associations.len() as u64;
    let jobs_steady = (cluster.pending.len() + cluster.running.len() + cluster.held.len()) as u64;
    let some_jobs: Vec<String> = cluster.pending.iter().step_by(50).cloned().collect();
    let shared = Arc::new(Shared {
        address: Mutex::new(service.address),
        stop: AtomicBool::new(false),
        acknowledged: Mutex::new(cluster_text.clone()),
        reads: Mutex::default(),
    });
    let started = Instant::now();
    let writer = {
        let shared = shared.clone();
        std::thread::spawn(move || write(&shared, cluster))
    };
    let readers: Vec<_> = (0..2)
        .map(|seed| {
            let (shared, jobs) = (shared.clone(), some_jobs.clone());
            std::thread::spawn(move || read(&shared, jobs, seed))
        })
        .collect();
    let mut rss: Vec<(u64, u64)> = Vec::new();
    let mut restarts: Vec<(&str, Duration)> = Vec::new();
    while started.elapsed() < soak {
        std::thread::sleep(Duration::from_secs(1));
        if let Some(kib) = rss_kib(service.child.id()) {
            rss.push((started.elapsed().as_secs(), kib));
        }
        let third = restarts.len() as u32 + 1;
        if third < 3 && started.elapsed() >= soak * third / 3 {
            let how = if third == 1 { "SIGTERM" } else { "SIGKILL" };
            let stopping = Instant::now();
            if third == 1 {
                assert!(service.terminate().success(), "a clean stop exits 0");
            } else {
                service.kill();
            }
            service = Service::start(&data, &token_file, &flags);
            restarts.push((how, stopping.elapsed()));
            println!(
                "restart after {how}: {:?}; {}",
                stopping.elapsed(),
                service.banner.trim()
            );
            *shared.address.lock().unwrap() = service.address;
        }
    }
    shared.stop.store(true, Ordering::SeqCst);
    let (bodies, events) = writer.join().unwrap();
    for reader in readers {
        reader.join().unwrap();
    }
    let wrote_for = started.elapsed();

    // Figures.
    println!(
        "{bodies} bodies, {events} events acknowledged in {wrote_for:?}: {:.0} events/s",
        events as f64 / wrote_for.as_secs_f64()
    );
    let reads = shared.reads.lock().unwrap();
    for (route, latencies) in &reads.latencies {
        let mut sorted = latencies.clone();
        sorted.sort();
        println!(
            "{route}: {} reads, p50 {:?}, p99 {:?}, max {:?}",
            sorted.len(),
            quantile(&sorted, 0.5),
            quantile(&sorted, 0.99),
            sorted[sorted.len() - 1]
        );
    }
    let bound = rss_bound_kib(jobs_steady, associations);
    let peak = rss.iter().map(|&(_, kib)| kib).max().unwrap_or(0);
    println!(
        "RSS (s, KiB) every 10 s: {:?}",
        rss.iter().step_by(10).collect::<Vec<_>>()
    );
    println!("peak RSS {peak} KiB, bound {bound} KiB ({jobs_steady} jobs, {associations} user associations)");

    // Checks.
    assert!(reads.unexpected.is_empty(), "{:?}", reads.unexpected);
    for route in ["top", "sshare", "position", "metrics"] {
        assert!(
            reads.latencies.get(route).is_some_and(|l| l.len() > 10),
            "{route} was read"
        );
    }
    assert!(bodies > 100, "the writer wrote: {bodies} bodies");
    assert_eq!(restarts.len(), 2);
    assert!(
        !rss.is_empty() && peak < bound,
        "RSS {peak} KiB over the bound {bound} KiB"
    );
    let log = dir.path().join("acknowledged.jsonl");
    std::fs::write(&log, &*shared.acknowledged.lock().unwrap()).unwrap();
    let log = log.to_str().unwrap();
    let server = format!("http://{}", service.address);
    let final_jobs = LogJobs::of(&std::fs::read_to_string(log).unwrap());
    let pending = final_jobs.pending(false);
    let mut commands = vec![
        vec!["top", "-k", "200"],
        vec!["sshare", "-a", "-l"],
        vec!["sprio", "-P"],
    ];
    for job in [&pending[0], &pending[pending.len() / 2]] {
        commands.push(vec!["position", job]);
    }
    for command in commands {
        let served = run(&[command.as_slice(), &["--server", &server]].concat());
        let oracle = run(&[command.as_slice(), &["--events", log, "--engine", "batch"]].concat());
        assert!(
            oracle.0 && !oracle.1.is_empty(),
            "{command:?}: {}",
            oracle.2
        );
        assert_eq!(served, oracle, "{command:?}: the service and the oracle");
    }
    service.kill();
}
