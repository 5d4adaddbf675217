//! How the engine's timely workers are laid out: `--workers N` threads in one
//! process, or timely's own multi-process mode (`--processes P --process I
//! --hostfile FILE`), where every process runs N workers and the processes
//! connect over TCP to the addresses of the host file (one `host:port` a line,
//! process 0 first; without a file, `localhost:2101`, `localhost:2102`, ...).
//! Process 0 hosts worker 0, which ingests events and answers reads; the other
//! processes only run their workers' share of the dataflow.

use std::path::PathBuf;

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
}

impl Default for WorkerLayout {
    fn default() -> Self {
        WorkerLayout {
            workers: 1,
            processes: 1,
            process: 0,
            hostfile: None,
        }
    }
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

    /// The timely configuration for this layout.
    pub fn timely_config(&self) -> Result<timely::Config, LayoutError> {
        if self.workers == 0 {
            return Err(LayoutError("--workers must be at least 1".into()));
        }
        if self.processes <= 1 {
            if self.process != 0 {
                return Err(LayoutError(
                    "--process must be 0 without --processes".into(),
                ));
            }
            return Ok(timely::Config::process(self.workers));
        }
        if self.process >= self.processes {
            return Err(LayoutError(format!(
                "--process {} is not below --processes {}",
                self.process, self.processes
            )));
        }
        let addresses = match &self.hostfile {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| {
                    LayoutError(format!("cannot read host file {}: {e}", path.display()))
                })?;
                let addresses = parse_hostfile(&text)?;
                if addresses.len() < self.processes {
                    return Err(LayoutError(format!(
                        "host file {} lists {} addresses for {} processes",
                        path.display(),
                        addresses.len(),
                        self.processes
                    )));
                }
                addresses.into_iter().take(self.processes).collect()
            }
            None => (0..self.processes)
                .map(|i| format!("localhost:{}", 2101 + i))
                .collect(),
        };
        Ok(timely::Config {
            communication: timely::CommunicationConfig::Cluster {
                threads: self.workers,
                process: self.process,
                addresses,
                report: false,
                zerocopy: false,
            },
            worker: timely::WorkerConfig::default(),
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
        assert!(matches!(
            single.timely_config().unwrap().communication,
            timely::CommunicationConfig::Process(4)
        ));
        let bad = WorkerLayout {
            processes: 2,
            process: 2,
            ..WorkerLayout::default()
        };
        assert!(bad.timely_config().is_err());
        let two = WorkerLayout {
            workers: 2,
            processes: 2,
            process: 1,
            hostfile: None,
        };
        match two.timely_config().unwrap().communication {
            timely::CommunicationConfig::Cluster {
                threads,
                process,
                addresses,
                ..
            } => {
                assert_eq!((threads, process), (2, 1));
                assert_eq!(addresses, vec!["localhost:2101", "localhost:2102"]);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(two.total_workers(), 4);
        assert!(!two.hosts_worker_zero());
    }
}
