//! A log's jobs and user associations, counted by the tests from the
//! events' documented effects (`docs/events.md`), not by fairflow: which
//! jobs are active (submitted, not ended or cancelled), running or held.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};

/// What a log says about its jobs and user associations.
#[derive(Debug, Default, Clone)]
pub struct LogJobs {
    /// Active jobs by id.
    pub active: BTreeMap<String, ActiveJob>,
    /// Every user association, `(user, account)`.
    pub associations: BTreeSet<(String, String)>,
    /// The last event's time.
    pub last_t: i64,
}

/// One active job.
#[derive(Debug, Clone)]
pub struct ActiveJob {
    /// Its user association, `(user, account)`.
    pub association: (String, String),
    /// Started (and not ended).
    pub running: bool,
    /// Held (and not released).
    pub held: bool,
}

impl LogJobs {
    /// Count the lines of `log` (`#` comments and blank lines skipped).
    pub fn of(log: &str) -> LogJobs {
        let mut counted = LogJobs::default();
        for line in log.lines().filter(|l| l.starts_with('{')) {
            counted.apply(line);
        }
        counted
    }

    /// Count one event line (it must be valid: the tests feed their own).
    pub fn apply(&mut self, line: &str) {
        let event: serde_json::Value = serde_json::from_str(line).unwrap();
        let field = |name: &str| event[name].as_str().unwrap_or_default().to_string();
        self.last_t = self.last_t.max(event["t"].as_i64().unwrap());
        let job = field("job");
        match event["op"].as_str().unwrap() {
            "user" => {
                self.associations.insert((field("user"), field("account")));
            }
            "submit" => {
                let association = (field("user"), field("account"));
                let state = ActiveJob {
                    association,
                    running: false,
                    held: false,
                };
                self.active.insert(job, state);
            }
            "start" => self.active.get_mut(&job).unwrap().running = true,
            "hold" => self.active.get_mut(&job).unwrap().held = true,
            "release" => self.active.get_mut(&job).unwrap().held = false,
            "end" | "cancel" => {
                self.active.remove(&job).unwrap();
            }
            _ => {}
        }
    }

    /// The pending jobs, held or not, in id order.
    pub fn pending(&self, held: bool) -> Vec<String> {
        (self.active.iter())
            .filter(|(_, job)| !job.running && job.held == held)
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// The running jobs, in id order.
    pub fn running(&self) -> Vec<String> {
        (self.active.iter())
            .filter(|(_, job)| job.running)
            .map(|(id, _)| id.clone())
            .collect()
    }
}
