//! Seeded random event streams for the engine-versus-oracle tests: a small
//! pool of accounts, users and jobs, so that most events are possible and
//! many retract earlier ones (share changes, moves, removals, ends, requeues,
//! resets, half-life and calc-period changes, long stretches of time); and
//! `lines`, a hand-written log parsed line by line.

#![allow(dead_code)]

use fairflow_ingest::{parse_event, LogLine};

/// A log written by hand, one event a line, parsed (line numbers from 1).
pub fn lines(text: &str) -> Vec<LogLine> {
    text.lines()
        .enumerate()
        .map(|(i, line)| LogLine {
            line: i as u64 + 1,
            event: parse_event(i as u64 + 1, line),
        })
        .collect()
}

/// splitmix64: small, seedable, good enough for test streams.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// Which knobs the stream turns.
#[derive(Debug, Clone, Copy)]
pub struct StreamShape {
    pub accounts: u64,
    pub users: u64,
    pub jobs: u64,
    /// Allow `config` events that change the half-life and the calc period.
    pub config_changes: bool,
    /// Flags to pick from for `PriorityFlags` changes (empty: never).
    pub flags: &'static [&'static str],
    /// Allow `config` events that change `PriorityLevels` (level-based).
    pub levels_changes: bool,
    /// Give half the account and user events a `priority` (from a few
    /// values, so that a move keeps or changes the inherited one).
    pub priorities: bool,
}

impl Default for StreamShape {
    fn default() -> Self {
        StreamShape {
            accounts: 6,
            users: 5,
            jobs: 12,
            config_changes: true,
            flags: &[],
            levels_changes: false,
            priorities: false,
        }
    }
}

/// A seeded generator of log lines.
pub struct Stream {
    rng: Rng,
    shape: StreamShape,
    t: i64,
    line: u64,
}

impl Stream {
    pub fn new(seed: u64, shape: StreamShape) -> Self {
        Stream {
            rng: Rng::new(seed),
            shape,
            t: 1_700_000_000,
            line: 0,
        }
    }

    fn shares(&mut self) -> String {
        match self.rng.below(10) {
            0 => "\"parent\"".to_string(),
            1 => "0".to_string(),
            _ => (1 + self.rng.below(9)).to_string(),
        }
    }

    fn account(&mut self) -> String {
        format!("a{}", self.rng.below(self.shape.accounts))
    }

    fn parent(&mut self) -> String {
        if self.rng.chance(30) {
            "root".to_string()
        } else {
            self.account()
        }
    }

    fn user(&mut self) -> String {
        format!("u{}", self.rng.below(self.shape.users))
    }

    fn job(&mut self) -> String {
        format!("j{}", self.rng.below(self.shape.jobs))
    }

    /// `,"priority":N` for half the association events, with
    /// [`StreamShape::priorities`]; nothing otherwise.
    fn priority(&mut self) -> String {
        if self.shape.priorities && self.rng.chance(50) {
            format!(r#","priority":{}"#, self.rng.below(4) * 10)
        } else {
            String::new()
        }
    }

    fn text(&mut self) -> String {
        let t = self.t;
        let r = self.rng.below(100);
        match r {
            0..=11 => {
                let (name, parent, shares) = (self.account(), self.parent(), self.shares());
                let priority = self.priority();
                if self.rng.chance(50) {
                    format!(
                        r#"{{"op":"account","t":{t},"name":"{name}","parent":"{parent}","shares":{shares}{priority}}}"#
                    )
                } else {
                    format!(
                        r#"{{"op":"account","t":{t},"name":"{name}","shares":{shares}{priority}}}"#
                    )
                }
            }
            12..=23 => {
                let (user, account, shares) = (self.user(), self.parent(), self.shares());
                let priority = self.priority();
                format!(
                    r#"{{"op":"user","t":{t},"user":"{user}","account":"{account}","shares":{shares}{priority}}}"#
                )
            }
            24..=26 => {
                let name = self.account();
                format!(r#"{{"op":"remove_account","t":{t},"name":"{name}"}}"#)
            }
            27..=30 => {
                let (user, account) = (self.user(), self.parent());
                format!(r#"{{"op":"remove_user","t":{t},"user":"{user}","account":"{account}"}}"#)
            }
            31..=48 => {
                let account = self.parent();
                let amount = self.rng.below(1_000_000) as f64 / 7.0;
                if self.rng.chance(80) {
                    let user = self.user();
                    format!(
                        r#"{{"op":"usage","t":{t},"account":"{account}","user":"{user}","amount":{amount}}}"#
                    )
                } else {
                    format!(r#"{{"op":"usage","t":{t},"account":"{account}","amount":{amount}}}"#)
                }
            }
            49..=58 => {
                let (job, user, account) = (self.job(), self.user(), self.parent());
                let cpu = 1 + self.rng.below(64);
                format!(
                    r#"{{"op":"submit","t":{t},"job":"{job}","user":"{user}","account":"{account}","tres":{{"cpu":{cpu}}}}}"#
                )
            }
            59..=68 => {
                let job = self.job();
                format!(r#"{{"op":"start","t":{t},"job":"{job}"}}"#)
            }
            69..=75 => {
                let job = self.job();
                format!(r#"{{"op":"end","t":{t},"job":"{job}"}}"#)
            }
            76..=77 => {
                let job = self.job();
                format!(r#"{{"op":"requeue","t":{t},"job":"{job}"}}"#)
            }
            78..=79 => {
                let job = self.job();
                let op = ["hold", "release", "cancel"][self.rng.below(3) as usize];
                format!(r#"{{"op":"{op}","t":{t},"job":"{job}"}}"#)
            }
            80 => format!(r#"{{"op":"reset_usage","t":{t}}}"#),
            81..=84 if self.shape.config_changes => {
                let set = match self.rng.below(6) {
                    0 => r#""PriorityDecayHalfLife":0"#.to_string(),
                    1 => r#""PriorityDecayHalfLife":60"#.to_string(),
                    2 => r#""PriorityDecayHalfLife":"1-0""#.to_string(),
                    3 => r#""PriorityCalcPeriod":"1:00""#.to_string(),
                    4 => r#""PriorityCalcPeriod":"0""#.to_string(),
                    _ => {
                        let period = ["DAILY", "NONE", "NOW", "WEEKLY"][self.rng.below(4) as usize];
                        format!(r#""PriorityUsageResetPeriod":"{period}""#)
                    }
                };
                format!(r#"{{"op":"config","t":{t},"set":{{{set}}}}}"#)
            }
            85..=86 if !self.shape.flags.is_empty() => {
                let flags =
                    self.shape.flags[self.rng.below(self.shape.flags.len() as u64) as usize];
                format!(r#"{{"op":"config","t":{t},"set":{{"PriorityFlags":"{flags}"}}}}"#)
            }
            87 if self.shape.levels_changes => {
                let levels = [1, 2, 3, 4, 7, 16][self.rng.below(6) as usize];
                format!(r#"{{"op":"config","t":{t},"set":{{"PriorityLevels":{levels}}}}}"#)
            }
            87..=89 => {
                let name = ["normal", "cheap"][self.rng.below(2) as usize];
                let factor = self.rng.below(4) as f64 / 2.0;
                format!(r#"{{"op":"qos","t":{t},"name":"{name}","usage_factor":{factor}}}"#)
            }
            _ => format!(r#"{{"op":"tick","t":{t}}}"#),
        }
    }

    /// The next line; time advances by a random step first (sometimes by
    /// many half-lives, sometimes not at all).
    pub fn next_line(&mut self) -> LogLine {
        self.t += match self.rng.below(10) {
            0..=3 => 0,
            4..=7 => self.rng.below(120) as i64,
            8 => self.rng.below(100_000) as i64,
            _ => self.rng.below(3_000_000) as i64,
        };
        self.line += 1;
        let text = self.text();
        LogLine {
            line: self.line,
            event: parse_event(self.line, &text),
        }
    }

    /// A batch of 1 to `max` lines.
    pub fn next_batch(&mut self, max: u64) -> Vec<LogLine> {
        let n = 1 + self.rng.below(max);
        (0..n).map(|_| self.next_line()).collect()
    }
}
