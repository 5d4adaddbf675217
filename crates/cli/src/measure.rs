//! Measurement helpers shared by `fairflow bench` and `fairflow demo`:
//! latency histograms (hdrhistogram, nanosecond resolution, reported in
//! microseconds), the process's peak resident memory, and what machine and
//! commit a measurement was taken on. Linux's `/proc` is read where it
//! exists; elsewhere the values are absent, never guessed.

use std::time::Duration;

use anyhow::Context;
use hdrhistogram::Histogram;
use serde_json::{json, Value};

/// A latency histogram: records durations in nanoseconds (3 significant
/// digits), reports percentiles in microseconds.
#[derive(Debug, Clone)]
pub struct Latency {
    histogram: Histogram<u64>,
}

impl Latency {
    /// An empty histogram.
    pub fn new() -> anyhow::Result<Self> {
        Ok(Latency {
            histogram: Histogram::new(3).context("cannot create a latency histogram")?,
        })
    }

    /// Record one latency (at least 1 ns, so a sample is never 0).
    pub fn record(&mut self, elapsed: Duration) -> anyhow::Result<()> {
        let nanos = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX).max(1);
        self.histogram
            .record(nanos)
            .context("cannot record a latency")
    }

    /// Samples recorded.
    pub fn len(&self) -> u64 {
        self.histogram.len()
    }

    /// The latency at `quantile` (0..=1), microseconds; 0 when empty.
    pub fn quantile_us(&self, quantile: f64) -> f64 {
        micros(self.histogram.value_at_quantile(quantile))
    }

    /// The largest latency, microseconds.
    pub fn max_us(&self) -> f64 {
        micros(self.histogram.max())
    }

    /// The mean latency, microseconds.
    pub fn mean_us(&self) -> f64 {
        self.histogram.mean() / 1_000.0
    }

    /// `p50_us`, `p99_us`, `p999_us`, `max_us` and `samples` as a JSON
    /// object.
    pub fn percentiles_json(&self) -> Value {
        json!({
            "samples": self.len(),
            "p50_us": self.quantile_us(0.5),
            "p99_us": self.quantile_us(0.99),
            "p999_us": self.quantile_us(0.999),
            "max_us": self.max_us(),
        })
    }
}

/// Nanoseconds as microseconds, rounded to the nanosecond.
fn micros(nanos: u64) -> f64 {
    nanos as f64 / 1_000.0
}

/// A duration in microseconds (f64).
pub fn duration_us(elapsed: Duration) -> f64 {
    elapsed.as_nanos() as f64 / 1_000.0
}

/// A `kB` field of `/proc/self/status` (`VmHWM`), in bytes.
fn status_kib(field: &str) -> Option<u64> {
    fairflow_dataflow::cluster::own_status_kib(field).map(|kib| kib * 1024)
}

/// The process's peak resident memory so far (`VmHWM`), bytes.
pub fn peak_rss_bytes() -> Option<u64> {
    status_kib("VmHWM")
}

/// The process's resident memory now (`VmRSS`), bytes.
pub fn rss_bytes() -> Option<u64> {
    status_kib("VmRSS")
}

/// The bytes the program has allocated and not freed (jemalloc's
/// `stats.allocated`): live data, without the allocator's retained pages
/// and fragmentation that the resident size includes. `None` without
/// jemalloc.
pub fn allocated_bytes() -> Option<u64> {
    #[cfg(not(target_env = "msvc"))]
    {
        tikv_jemalloc_ctl::epoch::advance().ok()?;
        tikv_jemalloc_ctl::stats::allocated::read()
            .ok()
            .and_then(|bytes| u64::try_from(bytes).ok())
    }
    #[cfg(target_env = "msvc")]
    {
        None
    }
}

/// Reset the peak resident memory to the current one (Linux: `5` written to
/// `/proc/self/clear_refs`). Returns whether it was reset.
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// The machine a measurement ran on: cores, memory, CPU model.
pub fn machine() -> Value {
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    let memory_bytes = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            text.lines().find_map(|line| {
                let rest = line.strip_prefix("MemTotal:")?;
                let kib: u64 = rest.trim().strip_suffix("kB")?.trim().parse().ok()?;
                Some(kib * 1024)
            })
        });
    let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| {
            text.lines().find_map(|line| {
                let (key, value) = line.split_once(':')?;
                (key.trim() == "model name").then(|| value.trim().to_string())
            })
        })
        .unwrap_or_else(|| "unknown".to_string());
    json!({
        "cores": cores,
        "memory_bytes": memory_bytes,
        "cpu_model": cpu_model,
    })
}

/// The commit of the source tree this binary was built from (`git
/// rev-parse HEAD` when it was built, `+dirty` when a tracked source file
/// differed from it), or `unknown` when it was built without git or a tree
/// (`build.rs`).
pub fn commit() -> String {
    env!("FAIRFLOW_BUILD_COMMIT").to_string()
}

/// Bytes as a short human size (`1.23 GiB`).
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.2} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_in_microseconds_and_ordered() {
        let mut latency = Latency::new().unwrap();
        // 1..=100 microseconds: the median is 50 us, the maximum 100 us
        // (within the histogram's 3 significant digits).
        for us in 1..=100u64 {
            latency.record(Duration::from_micros(us)).unwrap();
        }
        assert_eq!(latency.len(), 100);
        assert!((latency.quantile_us(0.5) - 50.0).abs() < 0.1);
        assert!((latency.max_us() - 100.0).abs() < 0.1);
        assert!(latency.quantile_us(0.99) <= latency.quantile_us(0.999));
        assert!(latency.quantile_us(0.999) <= latency.max_us());
    }

    #[test]
    fn a_zero_duration_is_recorded_as_one_nanosecond() {
        let mut latency = Latency::new().unwrap();
        latency.record(Duration::ZERO).unwrap();
        assert_eq!(latency.max_us(), 0.001);
    }

    #[test]
    fn human_sizes() {
        assert_eq!(human_bytes(512), "512 B");
        // 1.5 * 1024 * 1024 = 1 572 864.
        assert_eq!(human_bytes(1_572_864), "1.50 MiB");
    }
}
