//! The rules for events, in one place: [`Book::check`] decides whether an
//! event is possible against the book's state (an unknown account or
//! association, time going backwards, a cycle, a job not in the phase the
//! event needs, a configuration value that does not parse). Both engines
//! apply only what it accepts, so they agree on every acceptance by
//! construction. A rejection names the line, the field and the reason, and
//! changes nothing.
//!
//! What a check looks up or parses and the apply needs travels in its
//! [`Checked`] token ([`Resolved`]): the configuration a `config` event makes
//! (parsed once), the parent a removed account's usage goes to, the user
//! association whose running jobs a `start`, `end` or `requeue` changes. The
//! apply takes them from the token instead of looking them up again.

use fairflow_ingest::Rejection;
use fairflow_model::event::{is_list, Op};
use fairflow_model::{Config, Event};

use crate::{Book, Checked, Phase};

/// What [`Book::check`] resolved for the apply, by event kind.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Resolved {
    /// The event's own fields are all its apply reads.
    AsWritten,
    /// `config`: the configuration in force after it.
    Config(Box<Config>),
    /// `remove_account`: the account's parent (it is not root), which
    /// absorbs its usage.
    RemoveAccount {
        /// The parent account.
        parent: String,
    },
    /// `start`, `end`, `requeue`: the job's user association, whose
    /// running jobs change.
    JobAssoc {
        /// The association's account.
        account: String,
        /// The association's user.
        user: String,
    },
}

impl Book {
    /// Is `event` possible now? `Err` names the line, field and reason; the
    /// book is not changed either way ([`Book::apply`] checks, then applies;
    /// [`Book::apply_checked`] applies with the token this returns, without
    /// checking twice).
    pub fn check(&self, line: u64, event: &Event) -> Result<Checked, Rejection> {
        let resolved = self.check_rules(line, event)?;
        Ok(Checked {
            version: self.version,
            resolved,
        })
    }

    // size: one rule arm per event kind (20 kinds), each read on its own
    pub(crate) fn check_rules(&self, line: u64, event: &Event) -> Result<Resolved, Rejection> {
        let err = |field: &str, reason: String| Rejection::new(line, Some(field), reason);
        if let Some(now) = self.last_event_at() {
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
        let state = self.state();
        let unknown_assoc = |account: &str, user: &str| {
            err(
                "user",
                format!("no user association `{user}` in account `{account}`"),
            )
        };
        match &event.op {
            Op::Account { name, parent, .. } => {
                if name == "root" {
                    return Err(err("name", "root cannot be changed".into()));
                }
                if let Some(parent) = parent {
                    if !state.accounts.contains_key(parent) {
                        return Err(err("parent", format!("unknown account `{parent}`")));
                    }
                    let moves = state
                        .accounts
                        .get(name)
                        .is_some_and(|a| a.parent.as_deref() != Some(parent.as_str()));
                    if moves && self.is_ancestor_or_self(name, parent) {
                        return Err(err(
                            "parent",
                            format!("moving `{name}` under `{parent}` would make a cycle"),
                        ));
                    }
                }
            }
            Op::User { account, .. } => {
                if !state.accounts.contains_key(account) {
                    return Err(err("account", format!("unknown account `{account}`")));
                }
            }
            Op::RemoveAccount { name } => {
                let Some(account) = state.accounts.get(name) else {
                    return Err(err("name", format!("unknown account `{name}`")));
                };
                let Some(parent) = account.parent.as_ref().filter(|_| name != "root") else {
                    return Err(err("name", "root cannot be removed".into()));
                };
                let (child_accounts, users) = (self.child_accounts(name), self.users_in(name));
                if child_accounts > 0 || users > 0 {
                    return Err(err(
                        "name",
                        format!(
                            "account `{name}` still has {child_accounts} child accounts and {users} user associations"
                        ),
                    ));
                }
                return Ok(Resolved::RemoveAccount {
                    parent: parent.clone(),
                });
            }
            Op::RemoveUser { user, account } => {
                if !self.has_assoc(account, user) {
                    return Err(unknown_assoc(account, user));
                }
                let running = self.running_jobs_of(account, user);
                if running > 0 {
                    return Err(err(
                        "user",
                        format!(
                            "`{user}` in `{account}` has {running} running jobs; end them first"
                        ),
                    ));
                }
            }
            Op::Usage {
                account,
                user,
                period,
                ..
            } => {
                if let Some(period) = period {
                    if state.flux_bins.is_none() {
                        return Err(err(
                            "period",
                            "usage bins are kept under UsageModel=flux only".into(),
                        ));
                    }
                    let count = state
                        .config
                        .flux_bins
                        .count(state.config.decay_half_life_secs);
                    if *period as usize >= count {
                        return Err(err(
                            "period",
                            format!("bin {period} is beyond the {count} usage bins kept"),
                        ));
                    }
                }
                if !state.accounts.contains_key(account) {
                    return Err(err("account", format!("unknown account `{account}`")));
                }
                if let Some(user) = user {
                    if !self.has_assoc(account, user) {
                        return Err(unknown_assoc(account, user));
                    }
                }
            }
            Op::Submit {
                job,
                user,
                account,
                spec,
                submitted,
            } => {
                check_lists(state, spec).map_err(|(field, reason)| err(field, reason))?;
                if let Some(submitted) = submitted.filter(|s| *s > event.t) {
                    return Err(err(
                        "submitted",
                        format!(
                            "the submit time {submitted} is after the event's time {}",
                            event.t
                        ),
                    ));
                }
                if let Some(phase) = self.job_phase(job) {
                    let phase = match phase {
                        Phase::Running => "running",
                        _ => "pending",
                    };
                    return Err(err("job", format!("job `{job}` is already {phase}")));
                }
                if !state.accounts.contains_key(account) {
                    return Err(err("account", format!("unknown account `{account}`")));
                }
                if !self.has_assoc(account, user) {
                    return Err(unknown_assoc(account, user));
                }
                self.check_sluid(line, job, spec)?;
            }
            Op::Update { job, account, spec } => {
                let Some(entry) = state.jobs.get(job) else {
                    return Err(err("job", format!("unknown job `{job}`")));
                };
                check_lists(state, spec).map_err(|(field, reason)| err(field, reason))?;
                if self.job_phase(job) == Some(Phase::Running) {
                    return Err(err(
                        "job",
                        format!("job `{job}` is running; only pending jobs change"),
                    ));
                }
                self.check_sluid(line, job, spec)?;
                if let Some(account) = account {
                    if !self.has_assoc(account, &entry.user) {
                        return Err(err(
                            "account",
                            format!(
                                "no user association `{}` in account `{account}`",
                                entry.user
                            ),
                        ));
                    }
                }
            }
            Op::Hold { job }
            | Op::Release { job }
            | Op::Cancel { job }
            | Op::Start { job, .. }
            | Op::End { job }
            | Op::Requeue { job, .. } => {
                let Some(found) = state.jobs.get(job) else {
                    return Err(err("job", format!("unknown job `{job}`")));
                };
                let phase = Phase::of(found);
                let (ok, what) = match &event.op {
                    Op::Hold { .. } => (phase == Phase::Pending, "pending"),
                    Op::Release { .. } => (phase == Phase::Held, "held"),
                    Op::Cancel { .. } => (phase != Phase::Running, "pending or held"),
                    Op::Start { .. } => (phase == Phase::Pending, "pending (not held)"),
                    _ => (phase == Phase::Running, "running"),
                };
                if !ok {
                    let now = match phase {
                        Phase::Pending => "pending",
                        Phase::Held => "held",
                        Phase::Running => "running",
                    };
                    return Err(err(
                        "job",
                        format!(
                            "job `{job}` is {now}; {} needs a {what} job",
                            event.op.name()
                        ),
                    ));
                }
                if let Op::Start { .. } | Op::End { .. } | Op::Requeue { .. } = &event.op {
                    return Ok(Resolved::JobAssoc {
                        account: found.account.clone(),
                        user: found.user.clone(),
                    });
                }
            }
            Op::Config { set } => {
                let next = state.config.patched(set).map_err(|bad| {
                    Rejection::new(line, Some(&format!("set.{}", bad.key)), bad.error.reason)
                })?;
                return Ok(Resolved::Config(Box::new(next)));
            }
            Op::Cluster { nodes, .. } => {
                if *nodes == 0 {
                    return Err(err("nodes", "a cluster has at least one node".into()));
                }
            }
            Op::ResetUsage | Op::Qos { .. } | Op::Partition { .. } | Op::Tick => {}
        }
        Ok(Resolved::AsWritten)
    }

    /// Is `ancestor` on the account chain from `node` up to root (or `node` itself)?
    fn is_ancestor_or_self<'a>(&'a self, ancestor: &str, mut node: &'a str) -> bool {
        let accounts = &self.state().accounts;
        loop {
            if node == ancestor {
                return true;
            }
            match accounts.get(node).and_then(|a| a.parent.as_deref()) {
                Some(parent) => node = parent,
                None => return false,
            }
        }
    }

    /// A job's SLUID (`spec.sluid`, when given) must not be another active
    /// job's: one SLUID names one job.
    fn check_sluid(
        &self,
        line: u64,
        job: &str,
        spec: &fairflow_model::JobSpec,
    ) -> Result<(), Rejection> {
        match spec
            .sluid
            .and_then(|sluid| Some((sluid, self.job_of_sluid(sluid)?)))
        {
            Some((sluid, holder)) if holder != job => Err(Rejection::new(
                line,
                Some("sluid"),
                format!("SLUID {sluid} is already job `{holder}`'s (a SLUID names one active job)"),
            )),
            _ => Ok(()),
        }
    }
}

/// A job's partition and QOS lists (`a,b`): every element of a list of two
/// or more must be defined by a `partition` / `qos` event (a single name
/// need not be: a partition no event defined has the defaults). Returns the
/// field and the reason.
fn check_lists(
    state: &crate::State,
    spec: &fairflow_model::event::JobSpec,
) -> Result<(), (&'static str, String)> {
    use fairflow_model::event::list_items;
    if let Some(list) = spec.partition.as_deref().filter(|l| is_list(l)) {
        if let Some(unknown) = list_items(list).find(|p| !state.partitions.contains_key(*p)) {
            return Err((
                "partition",
                format!(
                    "unknown partition `{unknown}` in the list `{list}` (each partition of a \
                     job in several partitions must be defined by a `partition` event)"
                ),
            ));
        }
    }
    if let Some(list) = spec.qos.as_deref().filter(|l| is_list(l)) {
        if let Some(unknown) = list_items(list).find(|q| !state.qos.contains_key(*q)) {
            return Err((
                "qos",
                format!(
                    "unknown QOS `{unknown}` in the list `{list}` (each QOS of a job with \
                     several QOS must be defined by a `qos` event)"
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::{Book, Phase};
    use fairflow_ingest::{parse_event, Rejection};
    use fairflow_model::Config;

    fn run(lines: &[&str]) -> (Book, Vec<Rejection>) {
        let mut v = Book::new(Config::default());
        let mut rejected = Vec::new();
        for (i, text) in lines.iter().enumerate() {
            let line = i as u64 + 1;
            let event = parse_event(line, text).unwrap();
            if let Err(r) = v.apply(line, &event) {
                rejected.push(r);
            }
        }
        (v, rejected)
    }

    fn field_and_reason(r: &Rejection) -> (u64, &str, &str) {
        (r.line, r.field.as_deref().unwrap_or(""), r.reason.as_str())
    }

    #[test]
    fn a_partition_or_qos_list_names_only_defined_ones() {
        let (book, rejected) = run(&[
            r#"{"op":"account","t":10,"name":"a"}"#,
            r#"{"op":"user","t":10,"user":"u","account":"a"}"#,
            r#"{"op":"partition","t":10,"name":"p1"}"#,
            r#"{"op":"qos","t":10,"name":"hi","priority":10}"#,
            r#"{"op":"qos","t":10,"name":"lo","priority":5}"#,
            r#"{"op":"submit","t":11,"job":"1","user":"u","account":"a","partition":"p1,p2"}"#,
            r#"{"op":"submit","t":11,"job":"1","user":"u","account":"a","qos":"lo,mid"}"#,
            // A single undefined name is still a partition with the defaults.
            r#"{"op":"submit","t":11,"job":"1","user":"u","account":"a","partition":"p9","qos":"lo,hi"}"#,
            r#"{"op":"partition","t":12,"name":"p2"}"#,
            r#"{"op":"update","t":12,"job":"1","partition":"p2,p3"}"#,
            r#"{"op":"update","t":12,"job":"1","partition":"p2,p1"}"#,
        ]);
        let got: Vec<_> = rejected.iter().map(field_and_reason).collect();
        let unknown = |what: &str, name: &str, list: &str| {
            format!(
                "unknown {what} `{name}` in the list `{list}` (each {what} of a job {} must be \
                 defined by a `{}` event)",
                if what == "QOS" {
                    "with several QOS"
                } else {
                    "in several partitions"
                },
                what.to_lowercase()
            )
        };
        let reasons = [
            unknown("partition", "p2", "p1,p2"),
            unknown("QOS", "mid", "lo,mid"),
            unknown("partition", "p3", "p2,p3"),
        ];
        assert_eq!(
            got,
            vec![
                (6, "partition", reasons[0].as_str()),
                (7, "qos", reasons[1].as_str()),
                (10, "partition", reasons[2].as_str()),
            ]
        );
        let job = &book.state().jobs["1"];
        assert_eq!(job.partition(), "p2");
        // The primary QOS is the highest-priority one; the pairs are the
        // partitions as listed, each with its QOS by priority.
        assert_eq!(job.qos(), "lo");
        assert_eq!(book.state().primary_qos(&job.spec), "hi");
        assert_eq!(
            book.state().job_pairs(job),
            vec![("p2", "hi"), ("p2", "lo"), ("p1", "hi"), ("p1", "lo")]
        );
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
        assert_eq!(v.state().config.weight_age, 0);
        assert_eq!(v.last_event_at(), Some(14));
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

    #[test]
    fn a_user_association_exists_from_its_user_event_until_its_removal_and_after_a_restore() {
        let (v, rejected) = run(&[
            r#"{"op":"account","t":1,"name":"a"}"#,
            r#"{"op":"user","t":1,"user":"u","account":"a"}"#,
            r#"{"op":"user","t":1,"user":"w","account":"a"}"#,
            r#"{"op":"usage","t":2,"account":"a","user":"u","amount":5}"#,
            r#"{"op":"remove_user","t":3,"user":"u","account":"a"}"#,
            r#"{"op":"usage","t":4,"account":"a","user":"u","amount":5}"#,
            r#"{"op":"remove_account","t":4,"name":"a"}"#,
            r#"{"op":"remove_user","t":5,"user":"w","account":"a"}"#,
            r#"{"op":"remove_account","t":5,"name":"a"}"#,
            r#"{"op":"usage","t":6,"account":"a","user":"w","amount":5}"#,
            r#"{"op":"account","t":7,"name":"a"}"#,
            r#"{"op":"user","t":7,"user":"u","account":"a"}"#,
            r#"{"op":"usage","t":8,"account":"a","user":"u","amount":5}"#,
        ]);
        let got: Vec<_> = rejected.iter().map(field_and_reason).collect();
        assert_eq!(
            got,
            vec![
                (6, "user", "no user association `u` in account `a`"),
                (
                    7,
                    "name",
                    "account `a` still has 0 child accounts and 1 user associations"
                ),
                (10, "account", "unknown account `a`"),
            ]
        );
        assert!(v.has_assoc("a", "u") && !v.has_assoc("a", "w") && v.users_in("a") == 1);
        // A book restored from the state holds the same associations.
        let restored = Book::from_state(v.state().clone(), v.last_event_at()).unwrap();
        assert!(restored.has_assoc("a", "u") && !restored.has_assoc("a", "w"));
        assert_eq!(restored.users_in("a"), 1);
        assert!(restored == v);
    }
}
