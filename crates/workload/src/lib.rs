//! A deterministic generator of realistic cluster workloads, as event logs:
//! account trees of configurable depth with skewed fan-out (preferential
//! attachment), heavy-tailed users per account, users with associations in
//! several accounts, share values spread over orders of magnitude, a decayed
//! usage history, job sizes in powers of two with a heavy tail, run times as
//! fractions of their limits, submissions in bursts, and share rebalances and
//! reorganisations. The same seed and parameters always give the same events.
//!
//! [`Generator`] also draws single probe events (one submission, a start, a
//! usage event, a reorganisation of N accounts, ...) consistent with the state
//! it generated, which the benchmark uses.

#![warn(missing_docs)]

use std::collections::BTreeMap;

use fairflow_model::event::{JobSpec, Op};
use fairflow_model::tres::TresCounts;
use fairflow_model::{Event, Shares, Time};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

mod initial;

/// The shape of a workload.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadParams {
    /// Seed of every random choice.
    pub seed: u64,
    /// Number of user associations.
    pub user_associations: usize,
    /// Maximum depth of a user association (root's children are depth 1).
    pub max_depth: usize,
    /// Average user associations per account.
    pub users_per_account: usize,
    /// Pending jobs at the end of the initial state.
    pub pending_jobs: usize,
    /// Running jobs at the end of the initial state.
    pub running_jobs: usize,
    /// Time of the first event, Unix seconds.
    pub start_at: Time,
    /// Span of the generated usage history, seconds.
    pub history_secs: i64,
    /// Nodes in the cluster.
    pub nodes: u64,
    /// CPUs per node.
    pub cpus_per_node: u64,
    /// Slurm's partition `PriorityTier`s and multi-partition jobs: `debug`
    /// in tier 2, `batch` and `gpu` in tier 1, and one `batch` job in
    /// [`MULTI_PARTITION_ONE_IN`] submitted to `batch,debug` (two queue
    /// entries). Off: no tiers, every job in one partition.
    pub tiered_partitions: bool,
}

/// With [`WorkloadParams::tiered_partitions`], one `batch` job in this many
/// is submitted to `batch,debug`.
pub const MULTI_PARTITION_ONE_IN: u32 = 20;

impl Default for WorkloadParams {
    fn default() -> Self {
        WorkloadParams {
            seed: 1,
            user_associations: 1_000,
            max_depth: 4,
            users_per_account: 8,
            pending_jobs: 5_000,
            running_jobs: 500,
            start_at: 1_700_000_000,
            history_secs: 14 * 86_400,
            nodes: 1_000,
            cpus_per_node: 64,
            tiered_partitions: false,
        }
    }
}

/// The generator: its random stream and a mirror of what it generated.
#[derive(Debug, Clone)]
pub struct Generator {
    params: WorkloadParams,
    rng: ChaCha8Rng,
    now: Time,
    /// Accounts by name: (parent, depth).
    accounts: BTreeMap<String, (String, usize)>,
    account_names: Vec<String>,
    associations: Vec<(String, String)>,
    /// Pending jobs (id, association index), running jobs likewise.
    pending: Vec<String>,
    running: Vec<String>,
    job_assoc: BTreeMap<String, usize>,
    next_job: u64,
}

const PARTITIONS: [(&str, u32, &str); 3] = [
    ("batch", 1, "CPU=1.0,Mem=0.25G"),
    ("debug", 10, "CPU=1.0"),
    ("gpu", 5, "CPU=1.0,Mem=0.25G,GRES/gpu=8.0"),
];
const QOS: [(&str, i64, f64); 3] = [("standby", 0, 0.5), ("normal", 10, 1.0), ("high", 100, 2.0)];

impl Generator {
    /// A generator for `params`; nothing is drawn until asked.
    pub fn new(params: WorkloadParams) -> Self {
        let rng = ChaCha8Rng::seed_from_u64(params.seed);
        let now = params.start_at;
        Generator {
            params,
            rng,
            now,
            accounts: BTreeMap::new(),
            account_names: Vec::new(),
            associations: Vec::new(),
            pending: Vec::new(),
            running: Vec::new(),
            job_assoc: BTreeMap::new(),
            next_job: 1,
        }
    }

    /// The time of the last generated event.
    pub fn now(&self) -> Time {
        self.now
    }

    /// The user associations generated so far, `(account, user)`.
    pub fn associations(&self) -> &[(String, String)] {
        &self.associations
    }

    /// The accounts generated so far (root excluded).
    pub fn accounts(&self) -> &[String] {
        &self.account_names
    }

    /// Pending job ids.
    pub fn pending_jobs(&self) -> &[String] {
        &self.pending
    }

    /// A Pareto-distributed value >= 1 with tail index `alpha`.
    fn pareto(&mut self, alpha: f64) -> f64 {
        let u: f64 = self.rng.random::<f64>().max(1e-12);
        u.powf(-1.0 / alpha)
    }

    fn event(&self, op: Op) -> Event {
        Event { t: self.now, op }
    }

    /// The initial state: configuration, cluster, partitions, QOS, the account
    /// tree, the user associations, a usage history, then running and pending jobs.
    pub fn initial_events(&mut self) -> Vec<Event> {
        let mut all = Vec::new();
        self.initial_events_in_chunks(usize::MAX, &mut |chunk| all.extend(chunk));
        all
    }

    /// The same events as [`Generator::initial_events`], handed to `sink` in
    /// order in chunks of `chunk_len` events (the last may be shorter), so
    /// that a large workload never sits in memory whole.
    pub fn initial_events_in_chunks(&mut self, chunk_len: usize, sink: &mut dyn FnMut(Vec<Event>)) {
        let mut events = Chunks {
            chunk_len: chunk_len.max(1),
            events: Vec::new(),
            sink,
        };
        self.generate_initial(&mut events);
        let rest = std::mem::take(&mut events.events);
        if !rest.is_empty() {
            (events.sink)(rest);
        }
    }

    fn job_spec(&mut self) -> JobSpec {
        let partition = match self.rng.random_range(0..10) {
            0 => "debug",
            1 => "gpu",
            _ => "batch",
        };
        let qos = match self.rng.random_range(0..10) {
            0 => "standby",
            9 => "high",
            _ => "normal",
        };
        let log2_cpus = (self.pareto(1.3).log2().floor() as u32).min(14);
        let cpus = (1u64 << log2_cpus) as f64;
        let nodes = (cpus / self.params.cpus_per_node as f64).ceil().max(1.0);
        let mut tres = TresCounts::from([
            ("cpu".to_string(), cpus),
            ("node".to_string(), nodes),
            ("mem".to_string(), cpus * 2048.0),
        ]);
        if partition == "gpu" {
            tres.insert("gres/gpu".to_string(), nodes * 4.0);
        }
        let limits = [3_600, 7_200, 14_400, 43_200, 86_400, 172_800];
        // Drawn only when tiered, so the untiered stream stays as it was.
        let partition = if self.params.tiered_partitions
            && partition == "batch"
            && self.rng.random_range(0..MULTI_PARTITION_ONE_IN) == 0
        {
            "batch,debug"
        } else {
            partition
        };
        JobSpec {
            partition: Some(partition.to_string()),
            qos: Some(qos.to_string()),
            tres: Some(tres),
            time_limit_secs: Some(limits[self.rng.random_range(0..limits.len())]),
            ..JobSpec::default()
        }
    }

    fn submit_for(&mut self, association: usize) -> Event {
        let id = self.next_job.to_string();
        self.next_job += 1;
        let (account, user) = self.associations[association].clone();
        let spec = self.job_spec();
        self.pending.push(id.clone());
        self.job_assoc.insert(id.clone(), association);
        self.event(Op::Submit {
            job: id,
            user,
            account,
            spec,
            submitted: None,
        })
    }

    /// One new submission by a random association, at the current time.
    pub fn submit(&mut self) -> Event {
        let association = self.rng.random_range(0..self.associations.len());
        self.submit_for(association)
    }

    /// Start the pending job at `index` of the pending list (removed in
    /// `O(1)`: the list's order is not kept).
    fn start_at(&mut self, index: usize) -> Event {
        let id = self.pending.swap_remove(index);
        self.running.push(id.clone());
        self.event(Op::Start {
            job: id,
            tres: None,
        })
    }

    /// Start a random pending job, if any.
    pub fn start(&mut self) -> Option<Event> {
        if self.pending.is_empty() {
            return None;
        }
        let index = self.rng.random_range(0..self.pending.len());
        Some(self.start_at(index))
    }

    /// End a random running job, if any.
    pub fn end(&mut self) -> Option<Event> {
        if self.running.is_empty() {
            return None;
        }
        let index = self.rng.random_range(0..self.running.len());
        let id = self.running.swap_remove(index);
        self.job_assoc.remove(&id);
        Some(self.event(Op::End { job: id }))
    }

    /// End the running job `id` (one this generator started); `None` if it
    /// is not running.
    pub fn end_job(&mut self, id: &str) -> Option<Event> {
        let index = self.running.iter().rposition(|j| j == id)?;
        self.running.swap_remove(index);
        self.job_assoc.remove(id);
        Some(self.event(Op::End {
            job: id.to_string(),
        }))
    }

    /// Move the generator's clock forward by `secs` (negative: no change);
    /// later events carry the new time.
    pub fn advance_by(&mut self, secs: i64) {
        self.now += secs.max(0);
    }

    /// A usage event for a random association.
    pub fn usage(&mut self) -> Event {
        let (account, user) =
            self.associations[self.rng.random_range(0..self.associations.len())].clone();
        let amount = (self.pareto(1.1) * 600.0).round();
        self.event(Op::Usage {
            account,
            user: Some(user),
            amount,
            period: None,
        })
    }

    /// A share change of a random account.
    pub fn share_change(&mut self) -> Event {
        let name = self.account_names[self.rng.random_range(0..self.account_names.len())].clone();
        let shares = (10f64.powf(self.rng.random::<f64>() * 3.0)).round() as u32;
        self.event(Op::Account {
            name,
            parent: None,
            shares: Some(Shares::Value(shares)),
            priority: None,
        })
    }

    /// A reorganisation: up to `count` accounts moved under new parents (never
    /// under their own subtree, never deeper than the workload's depth).
    pub fn reorganisation(&mut self, count: usize) -> Vec<Event> {
        let mut events = Vec::new();
        let max_account_depth = self.params.max_depth.saturating_sub(1).max(1);
        for _ in 0..count.min(self.account_names.len()) {
            let name =
                self.account_names[self.rng.random_range(0..self.account_names.len())].clone();
            let height = self.subtree_height(&name);
            // Candidates: root or an account shallow enough, not in the subtree.
            let candidate =
                self.account_names[self.rng.random_range(0..self.account_names.len())].clone();
            let (parent, depth) = if candidate != name
                && !self.is_in_subtree(&candidate, &name)
                && self.accounts[&candidate].1 + height < max_account_depth
            {
                (candidate.clone(), self.accounts[&candidate].1)
            } else {
                ("root".to_string(), 0)
            };
            if self.accounts[&name].0 == parent {
                continue;
            }
            self.set_depths(&name, depth + 1);
            self.accounts.get_mut(&name).expect("exists").0 = parent.clone();
            events.push(self.event(Op::Account {
                name,
                parent: Some(parent),
                shares: None,
                priority: None,
            }));
        }
        events
    }

    fn is_in_subtree(&self, node: &str, subtree_root: &str) -> bool {
        let mut current = node;
        loop {
            if current == subtree_root {
                return true;
            }
            match self.accounts.get(current) {
                Some((parent, _)) => current = parent,
                None => return false,
            }
        }
    }

    fn children(&self, name: &str) -> Vec<String> {
        self.accounts
            .iter()
            .filter(|(_, (p, _))| p == name)
            .map(|(n, _)| n.clone())
            .collect()
    }

    fn subtree_height(&self, name: &str) -> usize {
        self.children(name)
            .iter()
            .map(|c| 1 + self.subtree_height(c))
            .max()
            .unwrap_or(0)
    }

    fn set_depths(&mut self, name: &str, depth: usize) {
        self.accounts.get_mut(name).expect("exists").1 = depth;
        for child in self.children(name) {
            self.set_depths(&child, depth + 1);
        }
    }

    /// Activity over `duration_secs` from now: submissions in bursts, starts,
    /// ends, usage, occasional share changes and small reorganisations.
    pub fn activity(&mut self, duration_secs: i64) -> Vec<Event> {
        let mut events = Vec::new();
        let end = self.now + duration_secs;
        while self.now < end {
            self.now += self.rng.random_range(0..5);
            match self.rng.random_range(0..100) {
                0..=34 => {
                    let burst = (self.pareto(1.5) as usize).min(50);
                    let association = self.rng.random_range(0..self.associations.len());
                    for _ in 0..burst {
                        events.push(self.submit_for(association));
                    }
                }
                35..=59 => events.extend(self.start()),
                60..=84 => events.extend(self.end()),
                85..=96 => events.push(self.usage()),
                97..=98 => events.push(self.share_change()),
                _ => events.extend(self.reorganisation(3)),
            }
        }
        events
    }
}

/// Events collected for [`Generator::initial_events_in_chunks`], handed on
/// every `chunk_len` events.
struct Chunks<'a> {
    chunk_len: usize,
    events: Vec<Event>,
    sink: &'a mut dyn FnMut(Vec<Event>),
}

impl Chunks<'_> {
    fn push(&mut self, event: Event) {
        self.events.push(event);
        if self.events.len() >= self.chunk_len {
            (self.sink)(std::mem::take(&mut self.events));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fairflow_ingest::reader::LogLine;
    use fairflow_model::Config;
    use fairflow_oracle::Replay;

    fn small() -> WorkloadParams {
        WorkloadParams {
            user_associations: 300,
            pending_jobs: 400,
            running_jobs: 40,
            ..WorkloadParams::default()
        }
    }

    fn replay(events: Vec<Event>) -> Replay {
        let mut replay = Replay::new(Config::default());
        replay.feed_all(events.into_iter().enumerate().map(|(i, e)| LogLine {
            line: i as u64 + 1,
            event: Ok(e),
        }));
        replay
    }

    #[test]
    fn the_same_seed_gives_the_same_events() {
        let a = Generator::new(small()).initial_events();
        let b = Generator::new(small()).initial_events();
        assert_eq!(a, b);
        let c = Generator::new(WorkloadParams { seed: 2, ..small() }).initial_events();
        assert_ne!(a, c);
    }

    #[test]
    fn chunks_concatenate_to_the_whole_initial_state() {
        let whole = Generator::new(small()).initial_events();
        let mut chunked = Vec::new();
        let mut lengths = Vec::new();
        Generator::new(small()).initial_events_in_chunks(100, &mut |chunk| {
            lengths.push(chunk.len());
            chunked.extend(chunk);
        });
        assert_eq!(chunked, whole);
        // Every chunk but the last is full.
        assert!(lengths[..lengths.len() - 1].iter().all(|&n| n == 100));
        assert!(*lengths.last().unwrap() <= 100);
    }

    #[test]
    fn a_started_job_ends_once_and_time_moves_forward() {
        let mut generator = Generator::new(small());
        generator.initial_events();
        let before = generator.now();
        generator.advance_by(5);
        let start = generator.start().unwrap();
        assert_eq!(start.t, before + 5);
        let Op::Start { job, .. } = &start.op else {
            panic!("not a start: {start:?}")
        };
        let end = generator.end_job(job).unwrap();
        assert_eq!(end.op, Op::End { job: job.clone() });
        assert_eq!(generator.end_job(job), None);
    }

    #[test]
    fn a_generated_workload_is_a_valid_log_of_the_requested_shape() {
        let params = small();
        let mut generator = Generator::new(params.clone());
        let mut events = generator.initial_events();
        events.extend(generator.activity(3_600));
        events.extend(generator.reorganisation(50));
        let replay = replay(events);
        assert!(
            replay.report.rejected.is_empty(),
            "{:?}",
            &replay.report.rejected[..3.min(replay.report.rejected.len())]
        );
        assert_eq!(replay.state().users.len(), params.user_associations);
        let accounts = &replay.state().accounts;
        let depth_of = |account: &str| {
            let (mut depth, mut current) = (0, account.to_string());
            while let Some(parent) = accounts[&current].parent.clone() {
                depth += 1;
                current = parent;
            }
            depth
        };
        let deepest = replay
            .state()
            .users
            .keys()
            .map(|(a, _)| depth_of(a) + 1)
            .max()
            .unwrap();
        assert!(deepest <= params.max_depth, "{deepest}");
        assert!(replay.state().jobs.len() >= params.pending_jobs / 2);
    }
}
