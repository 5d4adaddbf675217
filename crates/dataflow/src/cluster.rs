//! How the engine's timely workers are laid out: `--workers N` threads in one
//! process, or timely's own multi-process mode (`--processes P --process I
//! --hostfile FILE`), where every process runs N workers and the processes
//! connect over TCP to the addresses of the host file (one `host:port` a line,
//! process 0 first; without a file, `localhost:2101`, `localhost:2102`, ...).
//! The processes connect within `connect_timeout` or fail with an error
//! naming the peer that was not there ([`connect`]: timely itself would wait
//! forever).
//!
//! # What stays in process 0, and what is sharded
//! Process 0 hosts the driver and worker 0. **In process 0 only**: the book
//! (every event's effect: the tree, usage, every job, QOS, partitions, the
//! `INCR_ONLY` floors), the tree and job feeds (what was last sent to the
//! dataflow), the interned names, the last `top` read; worker 0's tree
//! stages (subtree sums, the values down the tree, the facts store the
//! fair-share table and `explain` read); the control dataflow's merging of
//! the shards' answers (every read). **Sharded across every worker of every
//! process**: the priority dataflow's job rows and records, each worker's
//! queue (its jobs' records, its user associations' ranked jobs, the
//! submit-time order), the `INCR_ONLY` memory of its jobs, the names of its
//! jobs; jobs go to the worker of their user association (Moab: their user,
//! `priority::shard_key`), so a process holds about its share of the user
//! associations that have jobs and their jobs. **On every worker (copied)**:
//! the combination contexts and the fair-share factors the queue ranks by.
//! The other processes print nothing; process 0 answers every read.
//! [`ShardHoldings`] is what one worker's shard holds, as
//! `--report-layout` prints it.

use std::path::PathBuf;
use std::time::Duration;

use timely::communication::allocator::{AllocatorBuilder, ProcessBuilder};

mod connect;

/// The layout requested on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerLayout {
    /// Worker threads per process.
    pub workers: usize,
    /// Number of processes.
    pub processes: usize,
    /// This process's index, from 0.
    pub process: usize,
    /// The host file, for several processes.
    pub hostfile: Option<PathBuf>,
    /// How long the processes may take to connect to each other (several
    /// processes only).
    pub connect_timeout: Duration,
}

/// The default [`WorkerLayout::connect_timeout`]: time to start every
/// process by hand or by a job launcher.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(60);

impl Default for WorkerLayout {
    fn default() -> Self {
        WorkerLayout {
            workers: 1,
            processes: 1,
            process: 0,
            hostfile: None,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
        }
    }
}

/// What timely's workers of this process are built from: one allocator
/// builder per worker, and what must outlive them (the network threads).
pub struct Communication {
    /// One per worker of this process.
    pub builders: Vec<AllocatorBuilder>,
    /// The network threads' guard (nothing with one process).
    pub guard: Box<dyn std::any::Any + Send>,
    /// Workers per process.
    pub workers_per_process: usize,
    /// Several processes (job names then travel with the rows).
    pub cluster: bool,
}

impl std::fmt::Debug for Communication {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Communication")
            .field("workers", &self.builders.len())
            .field("cluster", &self.cluster)
            .finish_non_exhaustive()
    }
}

impl Communication {
    /// `workers` threads of this one process.
    pub fn process(workers: usize) -> Communication {
        let builders = ProcessBuilder::new_typed_vector(workers, refill(), None)
            .into_iter()
            .map(AllocatorBuilder::Process)
            .collect();
        Communication {
            builders,
            guard: Box::new(()),
            workers_per_process: workers,
            cluster: false,
        }
    }
}

/// Timely's default buffer refill (`Hooks::default`).
fn refill() -> timely::communication::allocator::zero_copy::bytes_slab::BytesRefill {
    timely::communication::Hooks::default().refill
}

/// What one worker's shard holds (see the module documentation), as one
/// worker reads it in its own process.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ShardHoldings {
    /// The worker's global index.
    pub worker: usize,
    /// The process it runs in.
    pub process: usize,
    /// Active jobs (pending, held, running) whose rows and records it holds.
    pub jobs: usize,
    /// Of those, the jobs its queue ranks (pending, eligible, not held).
    pub ranked: usize,
    /// Distinct user associations of those jobs.
    pub user_associations: usize,
    /// Distinct (association, QOS, partition) combinations of those jobs.
    pub combinations: usize,
    /// Its process's peak resident memory when it answered (`VmHWM`), KiB
    /// (0 where `/proc` is not there).
    pub peak_rss_kib: u64,
}

/// A `kB` field of a `/proc/PID/status` text (`VmHWM`, `VmRSS`), in KiB.
pub fn status_field_kib(status: &str, field: &str) -> Option<u64> {
    status.lines().find_map(|line| {
        let rest = line.strip_prefix(field)?.strip_prefix(':')?;
        rest.trim().strip_suffix("kB")?.trim().parse().ok()
    })
}

/// This process's `field` of `/proc/self/status`, in KiB.
pub fn own_status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status_field_kib(&status, field)
}

/// Why a layout cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct LayoutError(pub String);

/// Parse a host file: one `host:port` a line; blank lines and `#` comments ignored.
pub fn parse_hostfile(text: &str) -> Result<Vec<String>, LayoutError> {
    let mut addresses = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        match line.rsplit_once(':') {
            Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok() => {
                addresses.push(line.to_string())
            }
            _ => {
                return Err(LayoutError(format!(
                    "host file line {}: `{line}` is not host:port",
                    i + 1
                )))
            }
        }
    }
    Ok(addresses)
}

impl WorkerLayout {
    /// Total workers across processes.
    pub fn total_workers(&self) -> usize {
        self.workers * self.processes
    }

    /// Does this process host worker 0 (the one that ingests and answers)?
    pub fn hosts_worker_zero(&self) -> bool {
        self.process == 0
    }

    /// The addresses of every process (several processes only), or why
    /// this layout cannot be used.
    fn addresses(&self) -> Result<Option<Vec<String>>, LayoutError> {
        if self.workers == 0 {
            return Err(LayoutError("--workers must be at least 1".into()));
        }
        if self.processes <= 1 {
            if self.process != 0 {
                return Err(LayoutError(
                    "--process must be 0 without --processes".into(),
                ));
            }
            return Ok(None);
        }
        if self.process >= self.processes {
            return Err(LayoutError(format!(
                "--process {} is not below --processes {}",
                self.process, self.processes
            )));
        }
        let Some(path) = &self.hostfile else {
            return Ok(Some(
                (0..self.processes)
                    .map(|i| format!("localhost:{}", 2101 + i))
                    .collect(),
            ));
        };
        let text = std::fs::read_to_string(path)
            .map_err(|e| LayoutError(format!("cannot read host file {}: {e}", path.display())))?;
        let addresses = parse_hostfile(&text)?;
        if addresses.len() < self.processes {
            return Err(LayoutError(format!(
                "host file {} lists {} addresses for {} processes",
                path.display(),
                addresses.len(),
                self.processes
            )));
        }
        Ok(Some(addresses.into_iter().take(self.processes).collect()))
    }

    /// Check the layout and, with several processes, connect to the other
    /// processes (within `connect_timeout`): what this process's workers
    /// are built from.
    pub fn communication(&self) -> Result<Communication, LayoutError> {
        let Some(addresses) = self.addresses()? else {
            return Ok(Communication::process(self.workers));
        };
        let sockets = connect::connect_peers(&addresses, self.process, self.connect_timeout)?;
        let hooks = timely::communication::Hooks::default();
        let local = ProcessBuilder::new_typed_vector(self.workers, hooks.refill.clone(), None);
        let (builders, guard) =
            timely::communication::allocator::zero_copy::initialize::initialize_networking_from_sockets(
                local,
                sockets,
                self.process,
                self.workers,
                hooks,
            )
            .map_err(|e| LayoutError(format!("cannot start the network threads: {e}")))?;
        Ok(Communication {
            builders: builders.into_iter().map(AllocatorBuilder::Tcp).collect(),
            guard: Box::new(guard),
            workers_per_process: self.workers,
            cluster: true,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_files_and_layouts() {
        assert_eq!(
            parse_hostfile("# cluster\nnode1:2101\n\n node2:2101 # second\n").unwrap(),
            vec!["node1:2101", "node2:2101"]
        );
        assert!(parse_hostfile("node1\n").unwrap_err().0.contains("line 1"));
        assert!(parse_hostfile("node1:99999\n").is_err());
        let single = WorkerLayout {
            workers: 4,
            ..WorkerLayout::default()
        };
        assert_eq!(single.addresses().unwrap(), None);
        let bad = WorkerLayout {
            processes: 2,
            process: 2,
            ..WorkerLayout::default()
        };
        assert!(bad.addresses().is_err());
        let two = WorkerLayout {
            workers: 2,
            processes: 2,
            process: 1,
            ..WorkerLayout::default()
        };
        assert_eq!(
            two.addresses().unwrap().unwrap(),
            vec!["localhost:2101", "localhost:2102"]
        );
        assert_eq!(two.total_workers(), 4);
        assert!(!two.hosts_worker_zero());
    }

    #[test]
    fn status_fields_are_read_in_kib() {
        let status = "Name:\tfairflow\nVmHWM:\t  123456 kB\nVmRSS:\t 7890 kB\n";
        assert_eq!(status_field_kib(status, "VmHWM"), Some(123_456));
        assert_eq!(status_field_kib(status, "VmRSS"), Some(7_890));
        assert_eq!(status_field_kib(status, "VmSwap"), None);
    }
}
