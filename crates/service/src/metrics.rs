//! The service's Prometheus metrics: events applied and rejected, batches,
//! checkpoints, the latency of applying a batch (from its commit start to its
//! answer), and gauges read at scrape time (pending jobs, associations, queued
//! batches, resident memory).

use std::time::Duration;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

use crate::backend::Gauges;

/// Every metric the service exports.
pub struct Metrics {
    registry: Registry,
    /// Events applied.
    pub events_applied: Counter,
    /// Lines rejected (malformed or impossible).
    pub events_rejected: Counter,
    /// Batches committed.
    pub batches: Counter,
    /// Checkpoints written.
    pub checkpoints: Counter,
    /// Seconds to make a batch durable and apply it.
    pub update_latency: Histogram,
    pending_jobs: Gauge,
    associations: Gauge,
    queued_batches: Gauge,
    resident_memory: Gauge,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
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
    /// A fresh registry.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("fairflow");
        let events_applied = Counter::default();
        let events_rejected = Counter::default();
        let batches = Counter::default();
        let checkpoints = Counter::default();
        let update_latency = Histogram::new(exponential_buckets(50e-6, 2.0, 18));
        let pending_jobs = Gauge::default();
        let associations = Gauge::default();
        let queued_batches = Gauge::default();
        let resident_memory = Gauge::default();
        registry.register("events_applied", "Events applied", events_applied.clone());
        registry.register(
            "events_rejected",
            "Lines rejected as malformed or impossible",
            events_rejected.clone(),
        );
        registry.register("batches", "Batches committed", batches.clone());
        registry.register("checkpoints", "Checkpoints written", checkpoints.clone());
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
        Metrics {
            registry,
            events_applied,
            events_rejected,
            batches,
            checkpoints,
            update_latency,
            pending_jobs,
            associations,
            queued_batches,
            resident_memory,
        }
    }

    /// Count one committed batch.
    pub fn record_batch(&self, applied: u64, rejected: u64, latency: Duration) {
        self.events_applied.inc_by(applied);
        self.events_rejected.inc_by(rejected);
        self.batches.inc();
        self.update_latency.observe(latency.as_secs_f64());
    }

    /// The text exposition, with gauges set from `gauges` and `queued`.
    pub fn render(&self, gauges: Option<Gauges>, queued: usize) -> String {
        if let Some(g) = gauges {
            self.pending_jobs.set(g.pending_jobs as i64);
            self.associations.set(g.associations as i64);
        }
        self.queued_batches.set(queued as i64);
        self.resident_memory.set(resident_memory_bytes() as i64);
        let mut text = String::new();
        encode(&mut text, &self.registry).expect("writing to a String cannot fail");
        text
    }
}
