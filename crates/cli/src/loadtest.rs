//! `fairflow loadtest`: a bounded load test of a running `fairflow serve` on
//! this machine. It loads a generated cluster, then for `--duration-secs`
//! one writer posts the generator's activity in batches (the event stream is
//! time-ordered, so it has one writer) while reader threads ask for the top
//! 100 again and again; it reports sustained events per second, write and
//! read latency percentiles (hdrhistogram), and the service's peak resident
//! memory from `/metrics`. Only loopback servers are accepted.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use fairflow_ingest::write::event_to_line;
use fairflow_model::Event;
use fairflow_workload::{Generator, WorkloadParams};
use hdrhistogram::Histogram;
use serde_json::json;

use crate::output::emit;

/// `fairflow loadtest` flags.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The service, on loopback (e.g. `http://127.0.0.1:7471`).
    #[arg(long, value_name = "URL")]
    server: String,
    /// The service's write token.
    #[arg(long, value_name = "FILE")]
    token_file: std::path::PathBuf,
    /// How long to load it, seconds (at most 600).
    #[arg(long, default_value_t = 20)]
    duration_secs: u64,
    /// Events per write request.
    #[arg(long, default_value_t = 200)]
    batch: usize,
    /// Reader threads asking for the top 100.
    #[arg(long, default_value_t = 1)]
    readers: usize,
    /// User associations of the generated cluster.
    #[arg(long, default_value_t = 2_000)]
    associations: usize,
    /// Pending jobs of the generated cluster.
    #[arg(long, default_value_t = 10_000)]
    jobs: usize,
    /// Seed of the generated workload.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// A JSON report instead of text.
    #[arg(long)]
    json: bool,
    /// Load a service that already holds associations, jobs or events. Its
    /// synthetic events go into the service's durable log for good, mixed
    /// with the real ones: without this flag such a service is refused.
    #[arg(long = "i-know")]
    i_know: bool,
}

/// A gauge or counter of the `/metrics` text (0 when absent).
fn metric(text: &str, name: &str) -> u64 {
    text.lines()
        .find_map(|l| {
            l.strip_prefix(name)?
                .strip_prefix(' ')?
                .trim()
                .parse::<f64>()
                .ok()
        })
        .map_or(0, |v| v as u64)
}

/// Refuse a service that holds anything unless `--i-know`: the load test
/// writes permanently into its log. The service's own `/metrics` say whether
/// it is empty (its associations and pending jobs, which a restart keeps, and
/// the events it applied since it started).
fn refuse_unless_empty(metrics: &str, server: &str, i_know: bool) -> anyhow::Result<()> {
    let held = [
        ("associations", metric(metrics, "fairflow_associations")),
        ("pending jobs", metric(metrics, "fairflow_pending_jobs")),
        (
            "events applied",
            metric(metrics, "fairflow_events_applied_total"),
        ),
    ];
    let what: Vec<String> = held
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(name, n)| format!("{n} {name}"))
        .collect();
    if what.is_empty() || i_know {
        return Ok(());
    }
    bail!(
        "the service at {server} already holds data ({}); the load test would write its synthetic \
         events into that service's durable log for good. Run it against a service of its own \
         (`fairflow serve --data-dir $(mktemp -d) ...`), or pass --i-know",
        what.join(", ")
    )
}

fn loopback_only(server: &str) -> anyhow::Result<()> {
    let rest = server.split("://").nth(1).unwrap_or(server);
    let authority = rest.split('/').next().unwrap_or("");
    let host = if let Some(v6) = authority.strip_prefix('[') {
        v6.split(']').next().unwrap_or("").to_string()
    } else {
        authority
            .rsplit_once(':')
            .map_or(authority, |(h, _)| h)
            .to_string()
    };
    let loopback = host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .map(|ip| ip.is_loopback())
            .unwrap_or(false);
    if !loopback {
        bail!("loadtest only targets a service on this machine (127.0.0.0/8, ::1, localhost), not `{host}`");
    }
    Ok(())
}

struct Client {
    agent: ureq::Agent,
    server: String,
    token: String,
}

impl Client {
    fn post(&self, events: &[Event]) -> anyhow::Result<u64> {
        let body: String = events.iter().map(|e| event_to_line(e) + "\n").collect();
        let mut response = self
            .agent
            .post(&format!("{}/v1/events", self.server))
            .header("Authorization", &format!("Bearer {}", self.token))
            .send(body.as_bytes())?;
        let answer: serde_json::Value =
            serde_json::from_str(&response.body_mut().read_to_string()?)?;
        if !response.status().is_success() {
            bail!("write refused: {answer}");
        }
        Ok(answer["accepted"].as_u64().unwrap_or(0))
    }

    fn get(&self, path: &str) -> anyhow::Result<String> {
        let mut response = self.agent.get(&format!("{}{path}", self.server)).call()?;
        Ok(response.body_mut().read_to_string()?)
    }

    fn resident_memory(&self) -> u64 {
        self.get("/metrics")
            .ok()
            .and_then(|text| {
                text.lines()
                    .find(|l| l.starts_with("fairflow_resident_memory_bytes "))
                    .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
            })
            .unwrap_or(0)
    }
}

fn micros(h: &Histogram<u64>) -> serde_json::Value {
    json!({
        "count": h.len(),
        "p50_us": h.value_at_quantile(0.50),
        "p99_us": h.value_at_quantile(0.99),
        "p999_us": h.value_at_quantile(0.999),
        "max_us": h.max(),
    })
}

/// What the timed phase measured.
struct Measured {
    /// Events the service accepted.
    written: u64,
    /// Seconds the writes ran.
    elapsed_secs: f64,
    write_latency: Histogram<u64>,
    read_latency: Histogram<u64>,
    /// The highest resident memory sampled, bytes.
    peak_memory_bytes: u64,
}

/// Run the load test and print its report.
pub fn run(args: &Args) -> anyhow::Result<()> {
    loopback_only(&args.server)?;
    if args.duration_secs == 0 || args.duration_secs > 600 {
        bail!("--duration-secs must be from 1 to 600");
    }
    let client = Arc::new(connect(args)?);
    let mut generator = Generator::new(WorkloadParams {
        seed: args.seed,
        user_associations: args.associations,
        pending_jobs: args.jobs,
        running_jobs: args.jobs / 10,
        ..WorkloadParams::default()
    });
    let metrics = client
        .get("/metrics")
        .with_context(|| format!("cannot read {}/metrics", client.server))?;
    refuse_unless_empty(&metrics, &args.server, args.i_know)?;
    let initial = generator.initial_events();
    let load_started = Instant::now();
    let mut loaded = 0;
    for chunk in initial.chunks(2_000) {
        loaded += client.post(chunk)?;
    }
    let load_secs = load_started.elapsed().as_secs_f64();
    let memory_before = client.resident_memory();
    let measured = measure(args, &client, &mut generator, memory_before)?;
    report(args, loaded, load_secs, memory_before, &measured)
}

/// A client of `--server` with the token of `--token-file`.
fn connect(args: &Args) -> anyhow::Result<Client> {
    let token = crate::token_file::read_token_file(&args.token_file)?;
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(120)))
        .build()
        .into();
    Ok(Client {
        agent,
        server: args.server.trim_end_matches('/').to_string(),
        token,
    })
}

/// The timed phase: `--readers` threads read the top 100 while this one
/// writes the generator's activity in batches for `--duration-secs`,
/// sampling the resident memory about once a second.
fn measure(
    args: &Args,
    client: &Arc<Client>,
    generator: &mut Generator,
    memory_before: u64,
) -> anyhow::Result<Measured> {
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..args.readers)
        .map(|_| {
            let (client, stop) = (client.clone(), stop.clone());
            std::thread::spawn(move || read_top_until(&client, &stop))
        })
        .collect();
    let mut write_latency = Histogram::<u64>::new(3).expect("3 significant figures is valid");
    let (mut written, mut peak_memory) = (0u64, memory_before);
    let deadline = Instant::now() + Duration::from_secs(args.duration_secs);
    let started = Instant::now();
    let mut pending: Vec<Event> = Vec::new();
    let mut last_sample = Instant::now();
    while Instant::now() < deadline {
        while pending.len() < args.batch.max(1) {
            pending.extend(generator.activity(60));
        }
        let batch: Vec<Event> = pending.drain(..args.batch.max(1)).collect();
        let sent = Instant::now();
        written += client.post(&batch)?;
        let _ = write_latency.record(sent.elapsed().as_micros() as u64);
        if last_sample.elapsed() > Duration::from_secs(1) {
            peak_memory = peak_memory.max(client.resident_memory());
            last_sample = Instant::now();
        }
    }
    let elapsed_secs = started.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let mut read_latency = Histogram::<u64>::new(3).expect("3 significant figures is valid");
    for reader in readers {
        read_latency.add(
            reader
                .join()
                .map_err(|_| anyhow::anyhow!("a reader thread panicked"))?,
        )?;
    }
    Ok(Measured {
        written,
        elapsed_secs,
        write_latency,
        read_latency,
        peak_memory_bytes: peak_memory.max(client.resident_memory()),
    })
}

/// One reader: `GET /v1/top?k=100` until `stop`, the latencies of the
/// answered ones in microseconds.
fn read_top_until(client: &Client, stop: &AtomicBool) -> Histogram<u64> {
    let mut latency = Histogram::<u64>::new(3).expect("3 significant figures is valid");
    while !stop.load(Ordering::Relaxed) {
        let started = Instant::now();
        if client.get("/v1/top?k=100").is_ok() {
            let _ = latency.record(started.elapsed().as_micros() as u64);
        }
    }
    latency
}

/// Print the report: one JSON object with `--json`, else text.
fn report(
    args: &Args,
    loaded: u64,
    load_secs: f64,
    memory_before: u64,
    measured: &Measured,
) -> anyhow::Result<()> {
    let Measured {
        written,
        elapsed_secs: elapsed,
        write_latency,
        read_latency,
        peak_memory_bytes: peak_memory,
    } = measured;
    if args.json {
        let report = json!({
            "server": args.server,
            "associations": args.associations,
            "jobs": args.jobs,
            "initial_events": loaded,
            "load_secs": load_secs,
            "duration_secs": elapsed,
            "events_applied": written,
            "events_per_sec": *written as f64 / elapsed,
            "batch": args.batch,
            "write_latency": micros(write_latency),
            "top100_read_latency": micros(read_latency),
            "resident_memory_bytes": {"after_load": memory_before, "peak": peak_memory},
        });
        return emit(&format!("{}\n", serde_json::to_string_pretty(&report)?));
    }
    emit(&format!(
        "loaded {loaded} events ({} associations, {} jobs) in {load_secs:.1} s\n\
         sustained {:.0} events/s over {elapsed:.1} s ({written} events, batches of {})\n\
         write latency  p50 {} us  p99 {} us  max {} us\n\
         top-100 reads  p50 {} us  p99 {} us  max {} us  ({} reads)\n\
         resident memory {} MiB after load, {} MiB peak\n",
        args.associations,
        args.jobs,
        *written as f64 / elapsed,
        args.batch,
        write_latency.value_at_quantile(0.5),
        write_latency.value_at_quantile(0.99),
        write_latency.max(),
        read_latency.value_at_quantile(0.5),
        read_latency.value_at_quantile(0.99),
        read_latency.max(),
        read_latency.len(),
        memory_before >> 20,
        peak_memory >> 20,
    ))
}

#[cfg(test)]
mod tests {
    use super::{loopback_only, refuse_unless_empty};

    #[test]
    fn a_service_holding_data_is_refused_without_i_know() {
        let empty = "# TYPE fairflow_associations gauge\nfairflow_associations 0\nfairflow_pending_jobs 0\nfairflow_events_applied_total 0\n";
        assert!(refuse_unless_empty(empty, "http://127.0.0.1:1", false).is_ok());
        let busy =
            "fairflow_associations 12\nfairflow_pending_jobs 0\nfairflow_events_applied_total 0\n";
        let error = refuse_unless_empty(busy, "http://127.0.0.1:1", false)
            .unwrap_err()
            .to_string();
        assert!(error.contains("12 associations"), "{error}");
        assert!(error.contains("--i-know"), "{error}");
        assert!(refuse_unless_empty(busy, "http://127.0.0.1:1", true).is_ok());
        let written = "fairflow_events_applied_total 5\n";
        assert!(refuse_unless_empty(written, "http://127.0.0.1:1", false).is_err());
    }

    #[test]
    fn only_loopback_servers_are_targets() {
        for ok in [
            "http://127.0.0.1:7471",
            "http://127.5.0.1:1",
            "http://localhost:7471/",
            "http://[::1]:7471",
        ] {
            assert!(loopback_only(ok).is_ok(), "{ok}");
        }
        for refused in [
            "http://10.0.0.5:7471",
            "http://192.168.1.1",
            "http://example.org:7471",
            "http://8.8.8.8",
        ] {
            assert!(loopback_only(refused).is_err(), "{refused}");
        }
    }
}
