//! The cluster's size for `fairflow import slurm`: its nodes, CPUs, memory
//! and GPUs, from `slurm.conf`'s `NodeName=` lines or from `scontrol show
//! node` output, as the one `cluster` event (JOBSIZE and the TRES factors are
//! normalised by it), and Slurm's hostlist expressions (`node[01-16,20]`).

use fairflow_model::tres::TresCounts;

use super::text::CellError;
use super::{ImportError, Lines};

/// A cluster's totals.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct ClusterSize {
    pub nodes: u64,
    pub cpus: u64,
    /// Memory in MiB (Slurm's `RealMemory`).
    pub mem_mb: u64,
    pub gpus: u64,
}

impl ClusterSize {
    /// The `cluster` event's TRES: `cpu`, `node`, and `mem` and `gres/gpu`
    /// when known.
    pub fn tres(&self) -> TresCounts {
        let mut tres = TresCounts::new();
        tres.insert("cpu".to_string(), self.cpus as f64);
        tres.insert("node".to_string(), self.nodes as f64);
        if self.mem_mb > 0 {
            tres.insert("mem".to_string(), self.mem_mb as f64);
        }
        if self.gpus > 0 {
            tres.insert("gres/gpu".to_string(), self.gpus as f64);
        }
        tres
    }

    fn add(&mut self, count: u64, node: &NodeFields) -> Option<()> {
        self.nodes = self.nodes.checked_add(count)?;
        self.cpus = self.cpus.checked_add(count.checked_mul(node.cpus())?)?;
        self.mem_mb = self
            .mem_mb
            .checked_add(count.checked_mul(node.mem_mb.unwrap_or(0))?)?;
        self.gpus = self
            .gpus
            .checked_add(count.checked_mul(node.gpus.unwrap_or(0))?)?;
        Some(())
    }
}

/// How many hosts a Slurm hostlist names: comma-separated names, each with
/// any number of bracketed ranges (`node[01-16,20]`, `r[1-2]n[1-4]` is 8).
pub(super) fn hostlist_count(text: &str) -> Result<u64, CellError> {
    let bad = || CellError::NotHostlist(text.to_string());
    let mut total: u64 = 0;
    let mut depth = 0;
    let mut item_start = 0;
    let bytes = text.as_bytes();
    let mut items = Vec::new();
    for (i, b) in bytes.iter().enumerate() {
        match b {
            b'[' => depth += 1,
            b']' if depth > 0 => depth -= 1,
            b']' => return Err(bad()),
            b',' if depth == 0 => {
                items.push(&text[item_start..i]);
                item_start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(bad());
    }
    items.push(&text[item_start..]);
    for item in items {
        if item.is_empty() {
            return Err(bad());
        }
        let mut count: u64 = 1;
        let mut rest = item;
        while let Some(open) = rest.find('[') {
            let close = rest[open..].find(']').ok_or_else(bad)? + open;
            let mut group: u64 = 0;
            for range in rest[open + 1..close].split(',') {
                let (low, high) = range.split_once('-').unwrap_or((range, range));
                let (low, high): (u64, u64) = (
                    low.trim().parse().map_err(|_| bad())?,
                    high.trim().parse().map_err(|_| bad())?,
                );
                if high < low {
                    return Err(bad());
                }
                // `[0-18446744073709551615]` names 2^64 hosts: too many.
                let hosts = (high - low).checked_add(1).ok_or_else(bad)?;
                group = group.checked_add(hosts).ok_or_else(bad)?;
            }
            count = count.checked_mul(group).ok_or_else(bad)?;
            rest = &rest[close + 1..];
        }
        total = total.checked_add(count).ok_or_else(bad)?;
    }
    Ok(total)
}

/// A node definition's sizes (a `NodeName=` line, `NodeName=DEFAULT`, or one
/// node of `scontrol show node`).
#[derive(Debug, Clone, Copy, Default)]
struct NodeFields {
    cpus: Option<u64>,
    boards: Option<u64>,
    sockets: Option<u64>,
    cores_per_socket: Option<u64>,
    threads_per_core: Option<u64>,
    mem_mb: Option<u64>,
    gpus: Option<u64>,
}

impl NodeFields {
    /// `CPUs`, else Slurm's default: boards x sockets x cores x threads
    /// (each 1 when not given).
    fn cpus(&self) -> u64 {
        self.cpus.unwrap_or_else(|| {
            [
                self.boards,
                self.sockets,
                self.cores_per_socket,
                self.threads_per_core,
            ]
            .iter()
            .map(|f| f.unwrap_or(1))
            .product()
        })
    }

    /// Take one `KEY=VALUE`; `Ok(false)` when the key is not a size.
    fn set(&mut self, key: &str, value: &str) -> Result<bool, CellError> {
        let number = || {
            value
                .parse::<u64>()
                .map_err(|_| CellError::NotCount(value.to_string()))
        };
        let slot = match key.to_ascii_lowercase().as_str() {
            "cpus" | "cputot" => &mut self.cpus,
            "boards" => &mut self.boards,
            "sockets" => &mut self.sockets,
            "corespersocket" => &mut self.cores_per_socket,
            "threadspercore" => &mut self.threads_per_core,
            "realmemory" => &mut self.mem_mb,
            "gres" => {
                self.gpus = Some(gres_gpus(value)?);
                return Ok(true);
            }
            _ => return Ok(false),
        };
        *slot = Some(number()?);
        Ok(true)
    }
}

/// The GPUs of a node's `Gres` (`gpu:4`, `gpu:a100:4(S:0-1)`,
/// `gpu:a100:2,gpu:v100:2`, `(null)`); other GRES are not counted.
fn gres_gpus(text: &str) -> Result<u64, CellError> {
    let mut gpus = 0u64;
    for item in text.split(',').filter(|i| !i.is_empty() && *i != "(null)") {
        let item = item.split('(').next().unwrap_or(item);
        let parts: Vec<&str> = item.split(':').collect();
        if parts[0] != "gpu" {
            continue;
        }
        let count = match parts.last() {
            Some(last) if parts.len() > 1 => last
                .parse::<u64>()
                .map_err(|_| CellError::NoGpuCount(item.to_string()))?,
            _ => 1,
        };
        gpus = gpus
            .checked_add(count)
            .ok_or_else(|| CellError::TooManyGpus(text.to_string()))?;
    }
    Ok(gpus)
}

/// `KEY=VALUE` tokens of a line (comments cut), with their keys.
pub(crate) fn pairs(line: &str) -> impl Iterator<Item = (&str, &str)> {
    line.split('#')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .filter_map(|p| p.split_once('='))
}

/// The cluster from `slurm.conf`'s `NodeName=` lines (`NodeName=DEFAULT`
/// sets the sizes of the lines after it); `None` when it has none.
pub(super) fn from_slurm_conf(lines: &Lines<'_>) -> Result<Option<ClusterSize>, ImportError> {
    let mut defaults = NodeFields::default();
    let mut size: Option<ClusterSize> = None;
    for (line, text) in lines.rows() {
        let mut tokens = pairs(text);
        let Some((key, names)) = tokens.next() else {
            continue;
        };
        if !key.eq_ignore_ascii_case("NodeName") {
            continue;
        }
        let mut node = defaults;
        for (key, value) in tokens {
            node.set(key, value)
                .map_err(|reason| lines.err(line, Some(key), reason))?;
        }
        if names.eq_ignore_ascii_case("DEFAULT") {
            defaults = node;
            continue;
        }
        let count =
            hostlist_count(names).map_err(|reason| lines.err(line, Some("NodeName"), reason))?;
        size.get_or_insert_with(ClusterSize::default)
            .add(count, &node)
            .ok_or_else(|| lines.err(line, Some("NodeName"), "the cluster's totals overflow"))?;
    }
    Ok(size)
}

/// The cluster from `scontrol show node` output (one block per node, or one
/// line per node with `-o`): each `NodeName=` starts a node, whose `CPUTot`,
/// `RealMemory` and `Gres` are summed.
pub(super) fn from_scontrol_nodes(lines: &Lines<'_>) -> Result<ClusterSize, ImportError> {
    let mut size = ClusterSize::default();
    let mut current: Option<(u64, NodeFields)> = None;
    let overflow = |line| lines.err(line, Some("NodeName"), "the cluster's totals overflow");
    for (line, text) in lines.rows() {
        for (key, value) in pairs(text) {
            if key == "NodeName" {
                if let Some((start, node)) = current.take() {
                    size.add(1, &node).ok_or_else(|| overflow(start))?;
                }
                current = Some((line, NodeFields::default()));
            } else if let Some((_, node)) = current.as_mut() {
                // CPUs in `scontrol show node` is CPUTot; Sockets etc. are
                // printed too but CPUTot already counts them.
                if key != "Sockets"
                    && key != "Boards"
                    && key != "CoresPerSocket"
                    && key != "ThreadsPerCore"
                {
                    node.set(key, value)
                        .map_err(|reason| lines.err(line, Some(key), reason))?;
                }
            }
        }
    }
    match current {
        Some((start, node)) => size.add(1, &node).ok_or_else(|| overflow(start))?,
        None => {
            return Err(lines.err(
                1,
                Some("NodeName"),
                "no node: expected `scontrol show node` output (`NodeName=... CPUTot=...`)",
            ))
        }
    }
    Ok(size)
}

#[cfg(test)]
mod tests {
    use super::super::Source;
    use super::*;

    #[test]
    fn hostlists_are_counted_as_slurm_expands_them() {
        assert_eq!(hostlist_count("node01"), Ok(1));
        assert_eq!(hostlist_count("node[01-16]"), Ok(16));
        assert_eq!(hostlist_count("node[01-16,20],login1"), Ok(18));
        assert_eq!(hostlist_count("r[1-2]n[1-4]"), Ok(8));
        // The last two name more hosts than a count holds (found by the
        // `import_slurm` fuzz target: the range's size overflowed).
        let too_many = ["n[0-18446744073709551615]", "n[1-2,0-18446744073709551614]"];
        for bad in ["node[3-1]", "node[1-", "node]", "a,,b", "node[x]"]
            .into_iter()
            .chain(too_many)
        {
            assert!(hostlist_count(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn slurm_conf_node_lines_give_the_cluster() {
        // 16 nodes of 32 CPUs / 192000 MiB and 4 GPUs, plus 4 nodes of
        // DEFAULT's 2 sockets x 8 cores x 2 threads = 32 CPUs, 64000 MiB:
        // 20 nodes, 640 CPUs, 16 x 192000 + 4 x 64000 = 3328000 MiB, 64 GPUs.
        let text = "\
ClusterName=demo
NodeName=DEFAULT Sockets=2 CoresPerSocket=8 ThreadsPerCore=2 RealMemory=64000
NodeName=gpu[01-16] CPUs=32 RealMemory=192000 Gres=gpu:a100:4 State=UNKNOWN
NodeName=cpu[1-4] State=UNKNOWN # four small ones
PartitionName=batch Nodes=ALL Default=YES
";
        let lines = Lines {
            source: Source {
                name: "slurm.conf",
                text,
            },
        };
        assert_eq!(
            from_slurm_conf(&lines).unwrap(),
            Some(ClusterSize {
                nodes: 20,
                cpus: 640,
                mem_mb: 3_328_000,
                gpus: 64
            })
        );
        let none = Lines {
            source: Source {
                name: "slurm.conf",
                text: "ClusterName=demo\n",
            },
        };
        assert_eq!(from_slurm_conf(&none).unwrap(), None);
        let bad = Lines {
            source: Source {
                name: "slurm.conf",
                text: "NodeName=n[1-2] CPUs=many\n",
            },
        };
        let e = from_slurm_conf(&bad).unwrap_err();
        assert_eq!((e.line, e.field.as_deref()), (1, Some("CPUs")));
    }

    #[test]
    fn scontrol_show_node_output_gives_the_cluster() {
        // Two nodes as scontrol prints them (abridged): 64 + 16 CPUs,
        // 256000 + 32000 MiB, 4 + 0 GPUs.
        let text = "\
NodeName=g01 Arch=x86_64 CoresPerSocket=16
   CPUAlloc=0 CPUEfctv=64 CPUTot=64 CPULoad=0.01
   AvailableFeatures=(null)
   Gres=gpu:a100:4(S:0-1)
   NodeAddr=g01 NodeHostName=g01 Version=24.11.0
   OS=Linux 5.14.0-427.el9.x86_64 #1 SMP PREEMPT_DYNAMIC
   RealMemory=256000 AllocMem=0 FreeMem=250000 Sockets=2 Boards=1
   State=IDLE ThreadsPerCore=2 TmpDisk=0 Weight=1

NodeName=c01 Arch=x86_64 CoresPerSocket=8
   CPUAlloc=0 CPUEfctv=16 CPUTot=16 CPULoad=0.00
   Gres=(null)
   RealMemory=32000 AllocMem=0 FreeMem=30000 Sockets=1 Boards=1
";
        let lines = Lines {
            source: Source {
                name: "nodes.txt",
                text,
            },
        };
        assert_eq!(
            from_scontrol_nodes(&lines).unwrap(),
            ClusterSize {
                nodes: 2,
                cpus: 80,
                mem_mb: 288_000,
                gpus: 4
            }
        );
        let empty = Lines {
            source: Source {
                name: "nodes.txt",
                text: "no nodes here\n",
            },
        };
        assert_eq!(
            from_scontrol_nodes(&empty).unwrap_err().field.as_deref(),
            Some("NodeName")
        );
        let bad = Lines {
            source: Source {
                name: "nodes.txt",
                text: "NodeName=a CPUTot=4\nNodeName=b CPUTot=x\n",
            },
        };
        let e = from_scontrol_nodes(&bad).unwrap_err();
        assert_eq!((e.line, e.field.as_deref()), (2, Some("CPUTot")));
    }
}
