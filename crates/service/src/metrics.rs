//! The service's Prometheus metrics, served as OpenMetrics text (see
//! [`CONTENT_TYPE`]): events applied and rejected, batches, checkpoints (all
//! counters, whose samples end in `_total`), the latency of applying a batch
//! (from its commit start to its answer) and the events per batch
//! (histograms), `fairflow_build_info`, gauges read at scrape time (pending
//! jobs, associations, queued batches, resident memory, the engine's event
//! time and the ingest lag behind the wall clock; the priority of the job
//! first in line, `fairflow_queue_head_priority`), and the standard
//! `process_*` metrics of the process (CPU seconds, resident and virtual
//! memory, open file descriptors, start time; Linux `/proc`).
//!
//! With `--follow-slurm`: `fairflow_slurm_polls_total`,
//! `fairflow_slurm_poll_failures_total`,
//! `fairflow_slurm_usage_reconciliations_total` and
//! `fairflow_slurm_last_good_poll_age_seconds` (how old the last poll that
//! read and applied everything is; absent before the first).
//!
//! Per-association fair-share gauges are opt-in (`--metrics-associations N`
//! or `all`, and the exporters' names with `--metrics-names
//! slurm-exporter`): read at scrape time from one read of the fair-share
//! table and written straight from its rows (`scraped`, `exporter`), in the
//! registry's order: fairflow's own after `fairflow_build_info`, the
//! exporters' last.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use prometheus_client::encoding::text::{encode_eof, encode_registry};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::Registry;

use fairflow_model::report::{FairshareRow, FairshareTable};

use crate::backend::Gauges;

pub mod exporter;
mod openmetrics;
pub mod scraped;

pub use exporter::{MetricsNames, UserSeries};
pub use scraped::{ScrapeSettings, ScrapedRows};

use openmetrics::GaugeFamily;

const QUEUE_HEAD_NAME: &str = "fairflow_queue_head_priority";
const QUEUE_HEAD_HELP: &str =
    "The priority of the job first in line (no sample while the queue is empty).";

/// The content type of [`Metrics::render`]'s text: OpenMetrics 1.0.0, which
/// is what the encoder writes (`# EOF` last, counters typed as counters).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The standard `process_*` metrics, set at scrape time.
struct ProcessMetrics {
    cpu_seconds: Counter<f64, AtomicU64>,
    resident_memory: Gauge,
    virtual_memory: Gauge,
    open_fds: Gauge,
    start_time: Gauge<f64, AtomicU64>,
}

/// `(cpu seconds, virtual bytes, start time since boot in seconds)` of this
/// process from `/proc/self/stat` (Linux), with `USER_HZ` = 100.
fn proc_stat() -> Option<(f64, u64, f64)> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may hold spaces), from field 3 on.
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i)?.parse::<f64>().ok();
    // utime is field 14 and stime 15 (1-based), so 11 and 12 here; starttime
    // is field 22 (19 here) and vsize 23 (20 here).
    let cpu = (ticks(11)? + ticks(12)?) / 100.0;
    let start = ticks(19)? / 100.0;
    let virtual_bytes = fields.get(20)?.parse::<u64>().ok()?;
    Some((cpu, virtual_bytes, start))
}

/// The boot time, Unix seconds (`btime` of `/proc/stat`).
fn boot_time() -> Option<f64> {
    std::fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("btime ")?.trim().parse::<f64>().ok())
}

impl ProcessMetrics {
    fn register(registry: &mut Registry) -> Self {
        let metrics = ProcessMetrics {
            cpu_seconds: Counter::default(),
            resident_memory: Gauge::default(),
            virtual_memory: Gauge::default(),
            open_fds: Gauge::default(),
            start_time: Gauge::default(),
        };
        registry.register(
            "process_cpu_seconds",
            "Total user and system CPU time spent in seconds",
            metrics.cpu_seconds.clone(),
        );
        registry.register(
            "process_resident_memory_bytes",
            "Resident memory size in bytes",
            metrics.resident_memory.clone(),
        );
        registry.register(
            "process_virtual_memory_bytes",
            "Virtual memory size in bytes",
            metrics.virtual_memory.clone(),
        );
        registry.register(
            "process_open_fds",
            "Number of open file descriptors",
            metrics.open_fds.clone(),
        );
        registry.register(
            "process_start_time_seconds",
            "Start time of the process since the Unix epoch in seconds",
            metrics.start_time.clone(),
        );
        metrics
    }

    fn refresh(&self) {
        if let Some((cpu, virtual_bytes, start)) = proc_stat() {
            let seen = self.cpu_seconds.get();
            if cpu > seen {
                self.cpu_seconds.inc_by(cpu - seen);
            }
            self.virtual_memory.set(virtual_bytes as i64);
            if let Some(boot) = boot_time() {
                self.start_time.set(boot + start);
            }
        }
        self.resident_memory.set(resident_memory_bytes() as i64);
        if let Ok(entries) = std::fs::read_dir("/proc/self/fd") {
            self.open_fds.set(entries.count() as i64);
        }
    }
}

/// Every metric the service exports.
pub struct Metrics {
    /// The process metrics and fairflow's up to `fairflow_build_info`.
    registry: Registry,
    /// fairflow's after the per-association families.
    tail: Registry,
    /// Events applied.
    pub events_applied: Counter,
    /// Lines rejected (malformed or impossible).
    pub events_rejected: Counter,
    /// Batches committed.
    pub batches: Counter,
    /// Checkpoints written.
    pub checkpoints: Counter,
    /// Writes refused with nothing of them applied (the log could not be
    /// written, the engine failed on them or on a write committed with them).
    pub writes_refused: Counter,
    /// Rebuilds of the engine from the checkpoint and the log (after a
    /// refused append or an engine error).
    pub engine_rebuilds: Counter,
    /// What-ifs stopped before they ended (their client left, their time
    /// ran out, or the service stopped).
    pub whatifs_stopped: Counter,
    /// Seconds to make a batch durable and apply it.
    pub update_latency: Histogram,
    pending_jobs: Gauge,
    associations: Gauge,
    queued_batches: Gauge,
    resident_memory: Gauge,
    held_response_bytes: Gauge,
    held_table_bytes: Gauge,
    /// Events per committed batch.
    pub batch_events: Histogram,
    event_time: Gauge,
    ingest_lag: Gauge,
    process: ProcessMetrics,
    /// The rows of the last read of the fair-share table (opt-in).
    scraped: Mutex<Option<Arc<ScrapedRows>>>,
    /// The priority of the job first in line; `None`: the queue is empty.
    queue_head_priority: Mutex<Option<u64>>,
    /// The Slurm follower's polls (`follow_slurm`).
    pub slurm: SlurmFollowMetrics,
}

/// The Slurm follower's metrics (see the module documentation).
#[derive(Debug, Default)]
pub struct SlurmFollowMetrics {
    /// Polls that read and applied everything.
    pub polls: Counter,
    /// Polls that failed (a command failed, hung or printed something
    /// unreadable; or the write was refused): nothing of them applied.
    pub failures: Counter,
    /// Usage reconciliations logged (a `reset_usage` and the associations'
    /// usage, brought to Slurm's).
    pub reconciliations: Counter,
    /// Unix seconds of the last good poll, 0 before the first.
    pub last_good_poll: std::sync::atomic::AtomicI64,
    last_good_poll_age: Gauge,
}

/// `v` with an infinity as the largest finite `f64` of its sign.
pub(crate) fn finite(v: f64) -> f64 {
    if v.is_infinite() {
        f64::MAX.copysign(v)
    } else {
        v
    }
}

/// The indices of the rows of `table` that `keep` keeps, the `limit` with
/// the most raw usage (ties by account, then user), in that order.
pub(crate) fn rows_by_usage(
    table: &FairshareTable,
    keep: impl Fn(&FairshareRow) -> bool,
    limit: usize,
) -> Vec<usize> {
    let rows = &table.rows;
    let mut chosen: Vec<usize> = (0..rows.len()).filter(|&i| keep(&rows[i])).collect();
    let order = |a: &usize, b: &usize| {
        let (a, b) = (&rows[*a], &rows[*b]);
        b.raw_usage.cmp(&a.raw_usage).then_with(|| {
            (&a.account, a.user.as_deref().unwrap_or(""))
                .cmp(&(&b.account, b.user.as_deref().unwrap_or("")))
        })
    };
    if limit < chosen.len() {
        if limit == 0 {
            return Vec::new();
        }
        chosen.select_nth_unstable_by(limit - 1, order);
        chosen.truncate(limit);
    }
    chosen.sort_unstable_by(order);
    chosen
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl SlurmFollowMetrics {
    fn register(registry: &mut Registry) -> Self {
        let metrics = SlurmFollowMetrics::default();
        registry.register(
            "slurm_polls",
            "Slurm follower polls that read and applied everything",
            metrics.polls.clone(),
        );
        registry.register(
            "slurm_poll_failures",
            "Slurm follower polls that failed and changed nothing",
            metrics.failures.clone(),
        );
        registry.register(
            "slurm_usage_reconciliations",
            "Usage reconciliations with Slurm's own raw usage",
            metrics.reconciliations.clone(),
        );
        registry.register(
            "slurm_last_good_poll_age_seconds",
            "Seconds since the Slurm follower's last good poll (-1: none yet)",
            metrics.last_good_poll_age.clone(),
        );
        metrics
    }

    /// Set the age gauge from the last good poll and the wall clock.
    fn refresh(&self) {
        let last = self
            .last_good_poll
            .load(std::sync::atomic::Ordering::Relaxed);
        let age = if last > 0 {
            crate::clock::wall_secs() - last
        } else {
            -1
        };
        self.last_good_poll_age.set(age);
    }
}

/// Resident memory of this process in bytes (Linux), 0 where unknown.
pub fn resident_memory_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .nth(1)
                .and_then(|p| p.parse::<u64>().ok())
        })
        .map_or(0, |pages| pages * 4096)
}

impl Metrics {
    // size: the registry: one registration per metric
    /// A fresh registry.
    pub fn new() -> Self {
        let mut root = Registry::default();
        let process = ProcessMetrics::register(&mut root);
        let registry = root.sub_registry_with_prefix("fairflow");
        let batch_events = Histogram::new(exponential_buckets(1.0, 4.0, 10));
        let event_time = Gauge::default();
        let ingest_lag = Gauge::default();
        registry.register(
            "batch_events",
            "Lines in each committed batch (accepted and rejected)",
            batch_events.clone(),
        );
        registry.register(
            "event_time_seconds",
            "The engine's current event time (Unix seconds): the latest event applied",
            event_time.clone(),
        );
        registry.register(
            "ingest_lag_seconds",
            "Wall-clock time minus the engine's event time (how far the state is behind now)",
            ingest_lag.clone(),
        );
        registry.register(
            "build",
            "The fairflow build",
            Info::new(vec![(
                "version".to_string(),
                env!("CARGO_PKG_VERSION").to_string(),
            )]),
        );
        // The per-association families are written here (`scraped`); the
        // rest of fairflow's follow them.
        let mut tail_root = Registry::default();
        let registry = tail_root.sub_registry_with_prefix("fairflow");
        let events_applied = Counter::default();
        let events_rejected = Counter::default();
        let batches = Counter::default();
        let checkpoints = Counter::default();
        let writes_refused = Counter::default();
        let engine_rebuilds = Counter::default();
        let whatifs_stopped = Counter::default();
        let update_latency = Histogram::new(exponential_buckets(50e-6, 2.0, 18));
        let pending_jobs = Gauge::default();
        let associations = Gauge::default();
        let queued_batches = Gauge::default();
        let resident_memory = Gauge::default();
        let held_response_bytes = Gauge::default();
        let held_table_bytes = Gauge::default();
        registry.register("events_applied", "Events applied", events_applied.clone());
        registry.register(
            "response_held_bytes",
            "Bytes of the response budget held by answers being sent (windows and whole answers)",
            held_response_bytes.clone(),
        );
        registry.register(
            "response_held_table_bytes",
            "Bytes of the distinct tables answers being sent read from (counted once each)",
            held_table_bytes.clone(),
        );
        registry.register(
            "events_rejected",
            "Lines rejected as malformed or impossible",
            events_rejected.clone(),
        );
        registry.register("batches", "Batches committed", batches.clone());
        registry.register("checkpoints", "Checkpoints written", checkpoints.clone());
        registry.register(
            "writes_refused",
            "Writes refused with nothing of them applied (the log could not be written, or the engine failed)",
            writes_refused.clone(),
        );
        registry.register(
            "engine_rebuilds",
            "Rebuilds of the engine from the newest checkpoint and the durable log",
            engine_rebuilds.clone(),
        );
        registry.register(
            "whatifs_stopped",
            "What-ifs stopped before they ended (client gone, deadline passed, or the service stopping)",
            whatifs_stopped.clone(),
        );
        registry.register(
            "update_latency_seconds",
            "Time to make a batch durable and apply it",
            update_latency.clone(),
        );
        registry.register(
            "pending_jobs",
            "Pending, non-held jobs (the queue length)",
            pending_jobs.clone(),
        );
        registry.register(
            "associations",
            "Accounts and user associations",
            associations.clone(),
        );
        registry.register(
            "queued_batches",
            "Write batches waiting for the applier",
            queued_batches.clone(),
        );
        registry.register(
            "resident_memory_bytes",
            "Resident memory of the service",
            resident_memory.clone(),
        );
        let slurm = SlurmFollowMetrics::register(registry);
        Metrics {
            registry: root,
            tail: tail_root,
            events_applied,
            events_rejected,
            batches,
            checkpoints,
            writes_refused,
            engine_rebuilds,
            whatifs_stopped,
            update_latency,
            pending_jobs,
            associations,
            queued_batches,
            resident_memory,
            held_response_bytes,
            held_table_bytes,
            batch_events,
            event_time,
            ingest_lag,
            process,
            scraped: Mutex::default(),
            queue_head_priority: Mutex::default(),
            slurm,
        }
    }

    /// Export `rows` (one read of the fair-share table) in the
    /// per-association families from now on; `None`: none (the read
    /// failed, or none is asked).
    pub fn set_scraped(&self, rows: Option<Arc<ScrapedRows>>) {
        *self.scraped.lock().unwrap_or_else(|e| e.into_inner()) = rows;
    }

    /// Set the priority of the job first in line (`None`: the queue is
    /// empty, and the family has no sample).
    pub fn set_queue_head(&self, priority: Option<u64>) {
        *self
            .queue_head_priority
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = priority;
    }

    /// Set what answers being sent hold: bytes of the response budget and
    /// of the tables they read.
    pub fn set_held(&self, response_bytes: usize, table_bytes: usize) {
        self.held_response_bytes.set(response_bytes as i64);
        self.held_table_bytes.set(table_bytes as i64);
    }

    /// Count one committed batch.
    pub fn record_batch(&self, applied: u64, rejected: u64, latency: Duration) {
        self.events_applied.inc_by(applied);
        self.events_rejected.inc_by(rejected);
        self.batches.inc();
        self.update_latency.observe(latency.as_secs_f64());
        self.batch_events.observe((applied + rejected) as f64);
    }

    /// The text exposition, with gauges set from `gauges` and `queued`.
    pub fn render(&self, gauges: Option<Gauges>, queued: usize) -> String {
        if let Some(g) = gauges {
            self.pending_jobs.set(g.pending_jobs as i64);
            self.associations.set(g.associations as i64);
            if g.now > 0 {
                let wall = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs() as i64);
                self.event_time.set(g.now);
                self.ingest_lag.set(wall - g.now);
            }
        }
        self.queued_batches.set(queued as i64);
        self.resident_memory.set(resident_memory_bytes() as i64);
        self.slurm.refresh();
        self.process.refresh();
        let scraped = self
            .scraped
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let mut text = String::new();
        // The registry's own families: far under 64 KiB.
        text.reserve(scraped.as_ref().map_or(0, |rows| rows.text_bytes_hint()) + (64 << 10));
        let written = (|| {
            encode_registry(&mut text, &self.registry)?;
            if let Some(rows) = &scraped {
                rows.write_associations(&mut text);
            }
            encode_registry(&mut text, &self.tail)?;
            let head = *self
                .queue_head_priority
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            let mut family = GaugeFamily::open(&mut text, QUEUE_HEAD_NAME, QUEUE_HEAD_HELP);
            if let Some(priority) = head {
                family.sample(&[], priority as f64);
            }
            family.close();
            if let Some(rows) = &scraped {
                rows.write_exporter(&mut text);
            }
            encode_eof(&mut text)
        })();
        written.expect("writing to a String cannot fail");
        text
    }
}
