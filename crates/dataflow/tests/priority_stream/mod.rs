//! The random event streams of the priority equivalence tests: a fixed
//! association tree with QOS, partitions and a cluster (`setup`), and batches
//! of submits, updates, holds, releases, cancels, starts, ends, requeues,
//! usage, QOS, partition, priority, cluster and configuration changes chosen
//! against the oracle's state so that most are accepted (`batch`); the
//! rounds of a run (`round_lines`); the scenarios both equivalence tests run
//! (`Scenario`); and the comparison of two priority lists (`compare`).

#![allow(dead_code)]

use fairflow_model::report::JobPriority;
use fairflow_oracle::state::JobPhase;
use fairflow_oracle::State;

/// A small deterministic generator (xorshift64*).
pub struct Rng(pub u64);

impl Rng {
    /// The generator of a test seed.
    pub fn seeded(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

pub const T0: i64 = 1_700_000_000;
pub const ASSOCS: [(&str, &str); 6] = [
    ("a", "u1"),
    ("a", "u2"),
    ("b", "u3"),
    ("c", "u4"),
    ("c", "u1"),
    ("root", "u5"),
];

pub fn setup(model_config: &str) -> Vec<String> {
    let mut lines = vec![
        format!(r#"{{"op":"config","t":{T0},"set":{model_config}}}"#),
        format!(r#"{{"op":"account","t":{T0},"name":"a","shares":3,"priority":10}}"#),
        format!(r#"{{"op":"account","t":{T0},"name":"b","shares":1}}"#),
        format!(r#"{{"op":"account","t":{T0},"name":"c","parent":"a","shares":2,"priority":40}}"#),
        format!(r#"{{"op":"qos","t":{T0},"name":"q1","priority":100}}"#),
        format!(r#"{{"op":"qos","t":{T0},"name":"q2","priority":0}}"#),
        format!(
            r#"{{"op":"partition","t":{T0},"name":"p1","priority_job_factor":2,"priority":5}}"#
        ),
        format!(
            r#"{{"op":"partition","t":{T0},"name":"p2","priority_job_factor":1,"max_time":7200,"tres":{{"cpu":64,"gres/gpu":4}}}}"#
        ),
        format!(r#"{{"op":"cluster","t":{T0},"nodes":8,"tres":{{"cpu":256,"gres/gpu":16}}}}"#),
    ];
    for (account, user) in ASSOCS {
        lines.push(format!(
            r#"{{"op":"user","t":{T0},"user":"{user}","account":"{account}","shares":{}}}"#,
            user.len() % 3 + 1
        ));
    }
    lines
}

pub fn job_spec(rng: &mut Rng, t: i64) -> String {
    let mut fields = Vec::new();
    if rng.chance(80) {
        // Several partitions (Slurm's `-p p1,p2`, or an array) only of
        // defined ones, as the book requires of a list.
        fields.push(format!(
            r#""partition":{}"#,
            rng.pick(&[
                r#""p1""#,
                r#""p2""#,
                r#""p3""#,
                r#""p1,p2""#,
                r#"["p2","p1"]"#
            ])
        ));
    }
    if rng.chance(70) {
        // Several QOS (Slurm 24.11's `--qos q1,q2`): q2 starts at priority
        // 0 (the job's own QOS factor stays for its pairs) and the random
        // `qos` events reorder them.
        fields.push(format!(
            r#""qos":{}"#,
            rng.pick(&[
                r#""q1""#,
                r#""q2""#,
                r#""q3""#,
                r#""q2,q1""#,
                r#"["q1","q2"]"#
            ])
        ));
    }
    if rng.chance(80) {
        let gpu = if rng.chance(30) {
            format!(r#","gres/gpu":{}"#, rng.below(4) + 1)
        } else {
            String::new()
        };
        fields.push(format!(
            r#""tres":{{"cpu":{},"node":{}{gpu}}}"#,
            rng.below(64) + 1,
            rng.below(4) + 1
        ));
    }
    if rng.chance(40) {
        fields.push(format!(r#""time_limit":{}"#, 600 * (rng.below(12) + 1)));
    }
    if rng.chance(20) {
        fields.push(format!(r#""nice":{}"#, rng.below(200) as i64 - 100));
    }
    if rng.chance(10) {
        fields.push(format!(r#""site_factor":{}"#, rng.below(500)));
    }
    if rng.chance(15) {
        let urgency = *rng.pick(&[0u64, 8, 16, 20, 31]);
        fields.push(format!(r#""urgency":{urgency}"#));
    }
    if rng.chance(15) {
        fields.push(format!(r#""begin":{}"#, t + rng.below(2400) as i64));
    }
    if rng.chance(15) {
        fields.push(format!(
            r#""user_priority":{}"#,
            rng.below(1500) as i64 - 1200
        ));
    }
    fields.join(",")
}

fn with_trailing_comma(spec: String) -> String {
    if spec.is_empty() {
        spec
    } else {
        format!("{spec},")
    }
}

pub fn with_comma(spec: String) -> String {
    if spec.is_empty() {
        spec
    } else {
        format!(",{spec}")
    }
}

/// One batch of events at time `t`, chosen against the oracle's state so
/// that most are accepted.
pub fn batch(
    rng: &mut Rng,
    state: &State,
    t: i64,
    next_id: &mut u64,
    config_changes: &[&str],
) -> Vec<String> {
    let mut lines = Vec::new();
    let jobs: Vec<(&String, JobPhase)> = state.jobs.iter().map(|(id, j)| (id, j.phase)).collect();
    let of = |want: fn(&JobPhase) -> bool| -> Vec<String> {
        jobs.iter()
            .filter(|(_, p)| want(p))
            .map(|(id, _)| (*id).clone())
            .collect()
    };
    let pending = of(|p| matches!(p, JobPhase::Pending));
    let held = of(|p| matches!(p, JobPhase::Held));
    let running = of(|p| matches!(p, JobPhase::Running { .. }));
    let queued: Vec<String> = pending.iter().chain(&held).cloned().collect();
    for _ in 0..rng.below(8) + 1 {
        let roll = rng.below(100);
        let line = match roll {
            0..=29 => {
                *next_id += 1;
                let id = if rng.chance(15) {
                    format!("j{}", next_id)
                } else {
                    next_id.to_string()
                };
                let (account, user) = *rng.pick(&ASSOCS);
                let mut spec = job_spec(rng, t);
                // An imported queue: submitted (and eligible) before its
                // event, recently or past the age cap already (both keep
                // a later read without a crossing possible).
                if rng.chance(30) {
                    let waited = if rng.chance(50) {
                        3_600 + rng.below(3_600)
                    } else {
                        rng.below(600)
                    };
                    let submitted = (t - waited as i64).max(0);
                    if !spec.contains("begin") && rng.chance(50) {
                        let eligible = submitted + rng.below((t - submitted) as u64 + 1) as i64;
                        spec = format!(r#"{}"begin":{eligible}"#, with_trailing_comma(spec));
                    }
                    spec = format!(r#"{}"submitted":{submitted}"#, with_trailing_comma(spec));
                }
                format!(
                    r#"{{"op":"submit","t":{t},"job":"{id}","user":"{user}","account":"{account}"{}}}"#,
                    with_comma(spec)
                )
            }
            30..=37 if !queued.is_empty() => {
                let spec = job_spec(rng, t);
                if spec.is_empty() {
                    continue;
                }
                format!(
                    r#"{{"op":"update","t":{t},"job":"{}",{spec}}}"#,
                    rng.pick(&queued)
                )
            }
            38..=42 if !pending.is_empty() => {
                format!(r#"{{"op":"hold","t":{t},"job":"{}"}}"#, rng.pick(&pending))
            }
            43..=46 if !held.is_empty() => {
                format!(r#"{{"op":"release","t":{t},"job":"{}"}}"#, rng.pick(&held))
            }
            47..=50 if !queued.is_empty() => {
                format!(r#"{{"op":"cancel","t":{t},"job":"{}"}}"#, rng.pick(&queued))
            }
            51..=58 if !pending.is_empty() => {
                format!(r#"{{"op":"start","t":{t},"job":"{}"}}"#, rng.pick(&pending))
            }
            59..=63 if !running.is_empty() => {
                format!(r#"{{"op":"end","t":{t},"job":"{}"}}"#, rng.pick(&running))
            }
            64..=67 if !running.is_empty() => {
                // Every third job (by id, so the stream draws as before)
                // goes back marked for expedited requeue (Slurm 25.11).
                let job = rng.pick(&running);
                let expedite = if job.parse::<u64>().is_ok_and(|n| n % 3 == 0) {
                    r#","expedite":true"#
                } else {
                    ""
                };
                format!(r#"{{"op":"requeue","t":{t},"job":"{job}"{expedite}}}"#)
            }
            68..=77 => {
                let (account, user) = *rng.pick(&ASSOCS);
                format!(
                    r#"{{"op":"usage","t":{t},"account":"{account}","user":"{user}","amount":{}}}"#,
                    rng.below(100_000) + 1
                )
            }
            78..=81 => format!(
                r#"{{"op":"qos","t":{t},"name":"{}","priority":{}}}"#,
                rng.pick(&["q1", "q2", "q4"]),
                rng.below(300)
            ),
            82..=85 => {
                let name = rng.pick(&["p1", "p2", "p4"]);
                let factor = rng.below(5);
                let priority = rng.below(50);
                // Slurm's PriorityTier, which reorders the lists of jobs in
                // several partitions (their primary partition and pairs):
                // from the numbers drawn, so the stream draws as before.
                let tier = if priority.is_multiple_of(2) {
                    format!(r#","priority_tier":{}"#, factor % 3)
                } else {
                    String::new()
                };
                format!(
                    r#"{{"op":"partition","t":{t},"name":"{name}","priority_job_factor":{factor},"priority":{priority}{tier}}}"#
                )
            }
            86..=88 => {
                let (account, user) = *rng.pick(&ASSOCS);
                if rng.chance(50) {
                    format!(
                        r#"{{"op":"user","t":{t},"user":"{user}","account":"{account}","priority":{}}}"#,
                        rng.below(100)
                    )
                } else {
                    format!(
                        r#"{{"op":"account","t":{t},"name":"{}","priority":{}}}"#,
                        rng.pick(&["a", "b", "c"]),
                        rng.below(100)
                    )
                }
            }
            89..=90 => format!(
                r#"{{"op":"cluster","t":{t},"nodes":{},"tres":{{"cpu":{},"gres/gpu":{}}}}}"#,
                rng.below(16) + 1,
                32 * (rng.below(16) + 1),
                rng.below(16)
            ),
            91..=93 if !config_changes.is_empty() => format!(
                r#"{{"op":"config","t":{t},"set":{}}}"#,
                rng.pick(config_changes)
            ),
            _ => format!(r#"{{"op":"tick","t":{t}}}"#),
        };
        lines.push(line);
    }
    lines
}

/// The lines of round `round` of a run: the setup first, then a batch after
/// a random step of time (sometimes 5000 s, sometimes none).
pub fn round_lines(
    round: usize,
    rng: &mut Rng,
    state: &State,
    t: &mut i64,
    next_id: &mut u64,
    scenario: &Scenario,
) -> Vec<String> {
    if round == 0 {
        return setup(scenario.config);
    }
    *t += match rng.below(10) {
        0 => 5000,
        1 => 0,
        _ => rng.below(900) as i64,
    };
    batch(rng, state, *t, next_id, scenario.changes)
}

/// A scenario: the model's configuration and the configuration changes the
/// stream may make.
#[derive(Clone)]
pub struct Scenario {
    pub name: &'static str,
    pub config: &'static str,
    pub changes: &'static [&'static str],
    /// Never set `age_capped` (the priority dataflow test only): the reader
    /// must stay exact.
    pub lazy_caps: bool,
}

pub const SLURM_INCR_ONLY: Scenario = Scenario {
    name: "slurm-incr-only",
    config: r#"{"PriorityFlags":"INCR_ONLY,CALCULATE_RUNNING,ACCRUE_ALWAYS","PriorityWeightAge":1000,"PriorityMaxAge":"1:00:00","PriorityWeightFairshare":10000,"PriorityWeightQOS":400}"#,
    changes: &[
        r#"{"PriorityWeightFairshare":20000}"#,
        r#"{"PriorityFlags":"INCR_ONLY"}"#,
        r#"{"PriorityFlags":""}"#,
        r#"{"PriorityFlags":"INCR_ONLY,ACCRUE_ALWAYS"}"#,
    ],
    lazy_caps: false,
};

/// Coarse factors and a tiny age weight: many jobs share an integer priority
/// (truncation) and are ordered by submit time and id, so the reader must
/// read every tie.
pub const SLURM_TIES: Scenario = Scenario {
    name: "slurm-ties",
    // RequeueDelay: a requeued job's begin time moves (Slurm's requeue_delay).
    config: r#"{"PriorityWeightAge":3,"PriorityMaxAge":"0:30:00","PriorityWeightQOS":1000,"PriorityWeightPartition":1000,"RequeueDelay":120}"#,
    changes: &[
        r#"{"PriorityWeightAge":1}"#,
        r#"{"PriorityWeightAge":2000}"#,
    ],
    lazy_caps: false,
};

pub const FLUX: Scenario = Scenario {
    name: "flux",
    config: r#"{"PriorityModel":"flux","FluxWeightWaitTime":5000,"FluxMaxWaitTime":"1:00:00","FluxWeightBank":10,"FluxWeightQOS":300,"FluxWeightJobSize":100,"FluxWeightUser":2000}"#,
    changes: &[
        r#"{"FluxWeightWaitTime":-2000}"#,
        r#"{"FluxMaxWaitTime":"0:15:00"}"#,
        r#"{"FluxWeightFairshare":1000}"#,
        r#"{"FluxWeightUrgency":0}"#,
    ],
    lazy_caps: false,
};

/// Slurm under Fair Tree with every weight (the counted reads' scenario).
pub const SLURM: Scenario = Scenario {
    name: "slurm",
    config: r#"{"PriorityWeightAge":1000,"PriorityMaxAge":"1:00:00","PriorityWeightAssoc":500,"PriorityWeightFairshare":10000,"PriorityWeightJobSize":200,"PriorityWeightPartition":300,"PriorityWeightQOS":400,"PriorityWeightTRES":"CPU=10,GRES/gpu=50"}"#,
    changes: &[
        r#"{"PriorityWeightAge":3000}"#,
        r#"{"PriorityFlags":"CALCULATE_RUNNING"}"#,
        r#"{"PriorityFlags":""}"#,
        r#"{"PriorityWeightFairshare":0}"#,
        r#"{"PriorityWeightFairshare":20000}"#,
    ],
    lazy_caps: false,
};

/// Slurm's classic fair-share.
pub const SLURM_CLASSIC: Scenario = Scenario {
    name: "slurm-classic",
    config: r#"{"PriorityFlags":"NO_FAIR_TREE","PriorityWeightAge":100,"PriorityMaxAge":"1:00:00","PriorityWeightFairshare":100000,"PriorityWeightQOS":400}"#,
    changes: &[r#"{"PriorityWeightFairshare":50000}"#],
    lazy_caps: false,
};

/// Every weight 0: every job at Slurm's floor (priority 1), ordered by
/// submit time and id; a QOS weight now and then lifts some off it.
pub const SLURM_FLOOR: Scenario = Scenario {
    name: "slurm-floor",
    config: r#"{"PriorityWeightAge":0,"PriorityWeightAssoc":0,"PriorityWeightFairshare":0,"PriorityWeightJobSize":0,"PriorityWeightPartition":0,"PriorityWeightQOS":0}"#,
    changes: &[r#"{"PriorityWeightQOS":3}"#, r#"{"PriorityWeightQOS":0}"#],
    lazy_caps: false,
};

pub const MOAB: Scenario = Scenario {
    name: "moab",
    config: r#"{"PriorityModel":"moab","PriorityDecayHalfLife":"1:00:00","CREDWEIGHT":2,"USERWEIGHT":1,"QOSWEIGHT":3,"FSUSERWEIGHT":10,"FSWEIGHT":1,"XFACTORWEIGHT":100,"XFMINWCLIMIT":"0:30:00"}"#,
    changes: &[r#"{"QUEUETIMECAP":60}"#],
    lazy_caps: false,
};

/// A line of the stream made plain, so that the queue's entries are its
/// jobs (what the counted read answers): one partition and one QOS per job,
/// one `PriorityTier`, no expedited requeue.
pub fn plain(line: &str) -> String {
    let mut line = line
        .replace(r#""p1,p2""#, r#""p1""#)
        .replace(r#"["p2","p1"]"#, r#""p2""#)
        .replace(r#""q2,q1""#, r#""q2""#)
        .replace(r#"["q1","q2"]"#, r#""q1""#)
        .replace(r#","expedite":true"#, "");
    for tier in 0..3 {
        line = line.replace(&format!(r#","priority_tier":{tier}"#), "");
    }
    line
}

/// `Ok` when the lists are equal, else the first difference.
pub fn compare(what: &str, got: &[JobPriority], want: &[JobPriority]) -> Result<(), String> {
    if got == want {
        return Ok(());
    }
    let first = got
        .iter()
        .zip(want)
        .position(|(g, w)| g != w)
        .unwrap_or(got.len().min(want.len()));
    Err(format!(
        "{what}: {} vs {} entries; first difference at {first}:\n got  {:?}\n want {:?}",
        got.len(),
        want.len(),
        got.get(first),
        want.get(first)
    ))
}
