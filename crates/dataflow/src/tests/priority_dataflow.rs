//! The priority dataflow on one timely worker, as the priority tests drive it
//! without the engine: job rows and facts in, a probe on every output, the
//! reader over the captured updates, and a step that closes one logical
//! time and says how many records the operators touched.

#![allow(dead_code)]

use crate::names::JobNames;
use crate::priority::{
    build_routed, Fact, JobRow, PriorityInputs, PriorityReader, Sharding, TouchCounter,
};
use differential_dataflow::input::{Input, InputSession};
use timely::dataflow::operators::probe::Handle;
use timely::dataflow::operators::Probe;
use timely::worker::Worker;

/// The inputs, the reader and the progress of one worker's priority dataflow.
pub struct PriorityDataflow {
    /// Job rows, at the current logical time.
    pub jobs: InputSession<u64, JobRow, isize>,
    /// Facts, at the current logical time.
    pub facts: InputSession<u64, Fact, isize>,
    /// The reader of the updates captured on worker 0.
    pub reader: PriorityReader,
    /// Counts the updates leaving the priority operators.
    pub touched: TouchCounter,
    /// The current logical time: what is inserted now is at this time.
    pub epoch: u64,
    probe: Handle<u64>,
}

impl PriorityDataflow {
    /// Build the dataflow on `worker`, probing every output.
    pub fn build(worker: &mut Worker, names: JobNames) -> Self {
        let probe = Handle::new();
        let touched = TouchCounter::new();
        let (jobs, facts, capture) = worker.dataflow::<u64, _, _>(|scope| {
            let (jobs_in, jobs) = scope.new_collection::<JobRow, isize>();
            let (facts_in, facts) = scope.new_collection::<Fact, isize>();
            // One queue on worker 0 (the engine shards it; its suites read
            // the shards merged).
            let out = build_routed(
                PriorityInputs { jobs, facts },
                &touched,
                Sharding::OnWorkerZero,
            );
            for stream in out.captured {
                stream.probe_with(&probe);
            }
            (jobs_in, facts_in, out.capture)
        });
        PriorityDataflow {
            jobs,
            facts,
            reader: PriorityReader::new(names, capture, touched.clone()),
            touched,
            epoch: 0,
            probe,
        }
    }

    /// Close the current logical time, run `worker` until every output has
    /// caught up with it, and return the records touched since the last
    /// count.
    pub fn step(&mut self, worker: &mut Worker) -> u64 {
        self.epoch += 1;
        self.jobs.advance_to(self.epoch);
        self.facts.advance_to(self.epoch);
        self.jobs.flush();
        self.facts.flush();
        while self.probe.less_than(&self.epoch) {
            worker.step();
        }
        self.reader.absorb();
        self.touched.take()
    }
}
