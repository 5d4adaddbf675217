//! The validator: a catalog of what exists (accounts, user associations, jobs
//! and their phase, the current time, the configuration) that decides whether
//! an event is possible. Both engines apply only what it accepts, so they agree
//! on every acceptance by construction.

use std::collections::BTreeMap;

use fairflow_model::event::Op;
use fairflow_model::{Config, Event, Time};

use crate::Rejection;

/// Where a job is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Phase {
    /// Waiting in the queue.
    Pending,
    /// In the queue, held.
    Held,
    /// Running.
    Running,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct AccountEntry {
    parent: Option<String>,
    child_accounts: usize,
    users: usize,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct JobEntry {
    account: String,
    user: String,
    phase: Phase,
}

/// The catalog; see the module documentation.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Validator {
    now: Option<Time>,
    config: Config,
    accounts: BTreeMap<String, AccountEntry>,
    users: BTreeMap<(String, String), usize>,
    jobs: BTreeMap<String, JobEntry>,
}

impl Default for Validator {
    fn default() -> Self {
        Validator::new(Config::default())
    }
}

impl Validator {
    /// A catalog holding only `root`, with the given starting configuration.
    pub fn new(config: Config) -> Self {
        let mut accounts = BTreeMap::new();
        accounts.insert(
            "root".to_string(),
            AccountEntry {
                parent: None,
                child_accounts: 0,
                users: 0,
            },
        );
        Validator {
            now: None,
            config,
            accounts,
            users: BTreeMap::new(),
            jobs: BTreeMap::new(),
        }
    }

    /// The time of the last accepted event.
    pub fn now(&self) -> Option<Time> {
        self.now
    }

    /// The configuration in force.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The phase of an active job.
    pub fn job_phase(&self, job: &str) -> Option<Phase> {
        self.jobs.get(job).map(|j| j.phase)
    }

    /// Does this account exist?
    pub fn has_account(&self, name: &str) -> bool {
        self.accounts.contains_key(name)
    }

    fn is_ancestor_or_self<'a>(&'a self, ancestor: &str, mut node: &'a str) -> bool {
        loop {
            if node == ancestor {
                return true;
            }
            match self.accounts.get(node).and_then(|a| a.parent.as_deref()) {
                Some(parent) => node = parent,
                None => return false,
            }
        }
    }

    /// Accept `event` (updating the catalog) or reject it (changing nothing).
    pub fn check(&mut self, line: u64, event: &Event) -> Result<(), Rejection> {
        let err = |field: &str, reason: String| Rejection::new(line, Some(field), reason);
        if let Some(now) = self.now {
            if event.t < now {
                return Err(err(
                    "t",
                    format!(
                        "time goes backwards: {} is before the current time {now}",
                        event.t
                    ),
                ));
            }
        }
        let assoc_exists = |this: &Self, account: &str, user: &str| {
            this.users
                .contains_key(&(account.to_string(), user.to_string()))
        };
        match &event.op {
            Op::Account { name, parent, .. } => {
                if name == "root" {
                    return Err(err("name", "root cannot be changed".into()));
                }
                if let Some(parent) = parent {
                    if !self.accounts.contains_key(parent) {
                        return Err(err("parent", format!("unknown account `{parent}`")));
                    }
                }
                match self.accounts.get(name).cloned() {
                    Some(entry) => {
                        if let Some(parent) = parent {
                            if entry.parent.as_deref() != Some(parent.as_str()) {
                                if self.is_ancestor_or_self(name, parent) {
                                    return Err(err(
                                        "parent",
                                        format!(
                                            "moving `{name}` under `{parent}` would make a cycle"
                                        ),
                                    ));
                                }
                                if let Some(old) = entry.parent.as_deref() {
                                    self.accounts
                                        .get_mut(old)
                                        .expect("parent exists")
                                        .child_accounts -= 1;
                                }
                                self.accounts
                                    .get_mut(parent)
                                    .expect("checked")
                                    .child_accounts += 1;
                                self.accounts.get_mut(name).expect("exists").parent =
                                    Some(parent.clone());
                            }
                        }
                    }
                    None => {
                        let parent = parent.clone().unwrap_or_else(|| "root".to_string());
                        self.accounts
                            .get_mut(&parent)
                            .expect("checked")
                            .child_accounts += 1;
                        self.accounts.insert(
                            name.clone(),
                            AccountEntry {
                                parent: Some(parent),
                                child_accounts: 0,
                                users: 0,
                            },
                        );
                    }
                }
            }
            Op::User { user, account, .. } => {
                if !self.accounts.contains_key(account) {
                    return Err(err("account", format!("unknown account `{account}`")));
                }
                let key = (account.clone(), user.clone());
                if let std::collections::btree_map::Entry::Vacant(entry) = self.users.entry(key) {
                    entry.insert(0);
                    self.accounts.get_mut(account).expect("checked").users += 1;
                }
            }
            Op::RemoveAccount { name } => {
                let Some(entry) = self.accounts.get(name) else {
                    return Err(err("name", format!("unknown account `{name}`")));
                };
                if name == "root" {
                    return Err(err("name", "root cannot be removed".into()));
                }
                if entry.child_accounts > 0 || entry.users > 0 {
                    return Err(err(
                        "name",
                        format!(
                            "account `{name}` still has {} child accounts and {} user associations",
                            entry.child_accounts, entry.users
                        ),
                    ));
                }
                let parent = entry.parent.clone().expect("not root");
                self.accounts
                    .get_mut(&parent)
                    .expect("parent exists")
                    .child_accounts -= 1;
                self.accounts.remove(name);
            }
            Op::RemoveUser { user, account } => {
                let key = (account.clone(), user.clone());
                let Some(&running) = self.users.get(&key) else {
                    return Err(err(
                        "user",
                        format!("no user association `{user}` in account `{account}`"),
                    ));
                };
                if running > 0 {
                    return Err(err(
                        "user",
                        format!(
                            "`{user}` in `{account}` has {running} running jobs; end them first"
                        ),
                    ));
                }
                self.users.remove(&key);
                self.accounts.get_mut(account).expect("exists").users -= 1;
                self.jobs
                    .retain(|_, j| !(j.account == *account && j.user == *user));
            }
            Op::Usage { account, user, .. } => {
                if !self.accounts.contains_key(account) {
                    return Err(err("account", format!("unknown account `{account}`")));
                }
                if let Some(user) = user {
                    if !assoc_exists(self, account, user) {
                        return Err(err(
                            "user",
                            format!("no user association `{user}` in account `{account}`"),
                        ));
                    }
                }
            }
            Op::Submit {
                job, user, account, ..
            } => {
                if let Some(existing) = self.jobs.get(job) {
                    let phase = match existing.phase {
                        Phase::Running => "running",
                        _ => "pending",
                    };
                    return Err(err("job", format!("job `{job}` is already {phase}")));
                }
                if !self.accounts.contains_key(account) {
                    return Err(err("account", format!("unknown account `{account}`")));
                }
                if !assoc_exists(self, account, user) {
                    return Err(err(
                        "user",
                        format!("no user association `{user}` in account `{account}`"),
                    ));
                }
                self.jobs.insert(
                    job.clone(),
                    JobEntry {
                        account: account.clone(),
                        user: user.clone(),
                        phase: Phase::Pending,
                    },
                );
            }
            Op::Update { job, account, .. } => {
                let Some(entry) = self.jobs.get(job) else {
                    return Err(err("job", format!("unknown job `{job}`")));
                };
                if entry.phase == Phase::Running {
                    return Err(err(
                        "job",
                        format!("job `{job}` is running; only pending jobs change"),
                    ));
                }
                if let Some(account) = account {
                    if !assoc_exists(self, account, &entry.user) {
                        return Err(err(
                            "account",
                            format!(
                                "no user association `{}` in account `{account}`",
                                entry.user
                            ),
                        ));
                    }
                    self.jobs.get_mut(job).expect("exists").account = account.clone();
                }
            }
            Op::Hold { job }
            | Op::Release { job }
            | Op::Cancel { job }
            | Op::Start { job, .. }
            | Op::End { job }
            | Op::Requeue { job } => {
                let Some(entry) = self.jobs.get(job) else {
                    return Err(err("job", format!("unknown job `{job}`")));
                };
                let (account, user) = (entry.account.clone(), entry.user.clone());
                let phase = entry.phase;
                let want = |ok: bool, what: &str| {
                    if ok {
                        Ok(())
                    } else {
                        let now = match phase {
                            Phase::Pending => "pending",
                            Phase::Held => "held",
                            Phase::Running => "running",
                        };
                        Err(err(
                            "job",
                            format!(
                                "job `{job}` is {now}; {} needs a {what} job",
                                event.op.name()
                            ),
                        ))
                    }
                };
                let running = |this: &mut Self, delta: isize| {
                    let count = this
                        .users
                        .get_mut(&(account.clone(), user.clone()))
                        .expect("assoc of a job exists");
                    *count = count
                        .checked_add_signed(delta)
                        .expect("running count stays >= 0");
                };
                match &event.op {
                    Op::Hold { .. } => {
                        want(phase == Phase::Pending, "pending")?;
                        self.jobs.get_mut(job).expect("exists").phase = Phase::Held;
                    }
                    Op::Release { .. } => {
                        want(phase == Phase::Held, "held")?;
                        self.jobs.get_mut(job).expect("exists").phase = Phase::Pending;
                    }
                    Op::Cancel { .. } => {
                        want(phase != Phase::Running, "pending or held")?;
                        self.jobs.remove(job);
                    }
                    Op::Start { .. } => {
                        want(phase == Phase::Pending, "pending (not held)")?;
                        self.jobs.get_mut(job).expect("exists").phase = Phase::Running;
                        running(self, 1);
                    }
                    Op::End { .. } => {
                        want(phase == Phase::Running, "running")?;
                        self.jobs.remove(job);
                        running(self, -1);
                    }
                    Op::Requeue { .. } => {
                        want(phase == Phase::Running, "running")?;
                        self.jobs.get_mut(job).expect("exists").phase = Phase::Pending;
                        running(self, -1);
                    }
                    _ => unreachable!("matched above"),
                }
            }
            Op::Config { set } => {
                self.config = self.config.patched(set).map_err(|bad| {
                    Rejection::new(line, Some(&format!("set.{}", bad.key)), bad.error.reason)
                })?;
            }
            Op::Cluster { nodes, .. } => {
                if *nodes == 0 {
                    return Err(err("nodes", "a cluster has at least one node".into()));
                }
            }
            Op::ResetUsage | Op::Qos { .. } | Op::Partition { .. } | Op::Tick => {}
        }
        self.now = Some(event.t);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_event;

    fn run(lines: &[&str]) -> (Validator, Vec<Rejection>) {
        let mut v = Validator::default();
        let mut rejected = Vec::new();
        for (i, text) in lines.iter().enumerate() {
            let line = i as u64 + 1;
            let event = parse_event(line, text).unwrap();
            if let Err(r) = v.check(line, &event) {
                rejected.push(r);
            }
        }
        (v, rejected)
    }

    fn field_and_reason(r: &Rejection) -> (u64, &str, &str) {
        (r.line, r.field.as_deref().unwrap_or(""), r.reason.as_str())
    }

    #[test]
    fn impossible_events_are_rejected_and_change_nothing() {
        let (v, rejected) = run(&[
            r#"{"op":"account","t":10,"name":"a"}"#,
            r#"{"op":"account","t":10,"name":"b","parent":"a"}"#,
            r#"{"op":"account","t":11,"name":"a","parent":"b"}"#,
            r#"{"op":"account","t":11,"name":"c","parent":"nope"}"#,
            r#"{"op":"usage","t":9,"account":"a","amount":1}"#,
            r#"{"op":"user","t":12,"user":"u","account":"ghost"}"#,
            r#"{"op":"user","t":12,"user":"u","account":"b"}"#,
            r#"{"op":"remove_account","t":12,"name":"a"}"#,
            r#"{"op":"submit","t":13,"job":"1","user":"u","account":"a"}"#,
            r#"{"op":"submit","t":13,"job":"1","user":"u","account":"b"}"#,
            r#"{"op":"submit","t":13,"job":"1","user":"u","account":"b"}"#,
            r#"{"op":"end","t":14,"job":"1"}"#,
            r#"{"op":"start","t":14,"job":"1"}"#,
            r#"{"op":"start","t":14,"job":"1"}"#,
            r#"{"op":"remove_user","t":15,"user":"u","account":"b"}"#,
            r#"{"op":"config","t":15,"set":{"PriorityWeightAge":10,"PriorityFlags":"BOGUS"}}"#,
            r#"{"op":"end","t":16,"job":"2"}"#,
        ]);
        let got: Vec<_> = rejected.iter().map(field_and_reason).collect();
        assert_eq!(
            got,
            vec![
                (3, "parent", "moving `a` under `b` would make a cycle"),
                (4, "parent", "unknown account `nope`"),
                (
                    5,
                    "t",
                    "time goes backwards: 9 is before the current time 10"
                ),
                (6, "account", "unknown account `ghost`"),
                (
                    8,
                    "name",
                    "account `a` still has 1 child accounts and 0 user associations"
                ),
                (9, "user", "no user association `u` in account `a`"),
                (11, "job", "job `1` is already pending"),
                (12, "job", "job `1` is pending; end needs a running job"),
                (
                    14,
                    "job",
                    "job `1` is running; start needs a pending (not held) job"
                ),
                (15, "user", "`u` in `b` has 1 running jobs; end them first"),
                (
                    16,
                    "set.PriorityFlags",
                    "unknown PriorityFlags flag `BOGUS`"
                ),
                (17, "job", "unknown job `2`"),
            ]
        );
        // The rejected config changed nothing, not even its valid key.
        assert_eq!(v.config().weight_age, 0);
        assert_eq!(v.now(), Some(14));
        assert_eq!(v.job_phase("1"), Some(Phase::Running));
    }

    #[test]
    fn removing_a_user_cancels_its_pending_jobs() {
        let (v, rejected) = run(&[
            r#"{"op":"user","t":1,"user":"u","account":"root"}"#,
            r#"{"op":"submit","t":2,"job":"7","user":"u","account":"root"}"#,
            r#"{"op":"remove_user","t":3,"user":"u","account":"root"}"#,
            r#"{"op":"hold","t":4,"job":"7"}"#,
        ]);
        assert_eq!(rejected.len(), 1);
        assert_eq!(rejected[0].reason, "unknown job `7`");
        assert_eq!(v.job_phase("7"), None);
    }
}
