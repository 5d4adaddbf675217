//! A seeded run of a scenario's random stream (`priority_stream`) on the
//! incremental engine beside the oracle's replay, for the integration tests
//! that compare a read after every batch (`position_counted`,
//! `position_equivalence`, `page_counted`).

#![allow(dead_code)]

use fairflow_dataflow::Engine;
use fairflow_ingest::reader::read_events;
use fairflow_model::report::JobPriority;
use fairflow_model::Config;
use fairflow_oracle::{fairshare, priority, Replay};

use crate::priority_stream::{plain, round_lines, Rng, Scenario, T0};

/// A seeded run of a scenario's stream on the incremental engine beside
/// the oracle's replay.
pub struct Run {
    pub engine: Engine,
    pub replay: Replay,
    pub rng: Rng,
    /// The time both are at.
    pub t: i64,
    next_id: u64,
}

impl Run {
    /// A run on `workers` workers from `seed`.
    pub fn start(workers: usize, seed: u64) -> Result<Run, String> {
        Ok(Run {
            engine: Engine::start(workers, Config::default()).map_err(|e| e.to_string())?,
            replay: Replay::new(Config::default()),
            rng: Rng::seeded(seed),
            t: T0,
            next_id: 0,
        })
    }

    /// Feed the scenario's `round`-th batch to both (each line made
    /// [`plain`] if asked), then move both to a random later time.
    pub fn round(
        &mut self,
        round: usize,
        scenario: &Scenario,
        made_plain: bool,
    ) -> Result<(), String> {
        let (rng, t, next_id) = (&mut self.rng, &mut self.t, &mut self.next_id);
        let mut lines = round_lines(round, rng, self.replay.state(), t, next_id, scenario);
        if made_plain {
            lines = lines.iter().map(|line| plain(line)).collect();
        }
        let text = lines.join("\n") + "\n";
        self.replay
            .feed_all(read_events(text.as_bytes()).map(Result::unwrap));
        self.engine
            .apply_batch(read_events(text.as_bytes()).map(Result::unwrap).collect())
            .map_err(|e| e.to_string())?;
        self.t += self.rng.below(4000) as i64;
        self.replay.advance_to(self.t);
        self.engine.advance_to(self.t).map_err(|e| e.to_string())
    }

    /// The oracle's listed jobs and its queue at the run's time.
    pub fn oracle(&self) -> (Vec<JobPriority>, Vec<JobPriority>) {
        oracle(&self.replay)
    }
}

/// The oracle's listed jobs and its queue at the replay's time.
pub fn oracle(replay: &Replay) -> (Vec<JobPriority>, Vec<JobPriority>) {
    let fs = fairshare::user_factors(replay.state());
    let listed = priority::evaluate(replay.state(), &fs);
    let queue = priority::entry_queue(&listed);
    (listed, queue)
}
