//! The priority dataflows on one timely worker, as the priority tests drive
//! them without the engine: job rows and facts in (the combinations the rows
//! name counted as the engine's driver counts them, `ComboRefs`), a probe
//! on every output, the reader over the captured updates, and a step that
//! closes one logical time and says how many records the operators touched.

#![allow(dead_code)]

use crate::graph::update_all;
use crate::names::JobNames;
use crate::priority::context::build_routed;
use crate::priority::queue::Capture;
use crate::priority::{
    capture_rows, Combo, ComboRefs, Fact, JobRow, PriorityInputs, PriorityReader, Sharding,
    TouchCounter,
};
use crate::types::NameId;
use differential_dataflow::input::{Input, InputSession};
use timely::dataflow::operators::probe::Handle;
use timely::dataflow::operators::Probe;
use timely::worker::Worker;

/// Job row changes for the next step, as the engine's job feed sends them.
#[derive(Default)]
pub struct Rows {
    changes: Vec<(JobRow, isize)>,
}

impl Rows {
    /// Insert a row.
    pub fn insert(&mut self, row: JobRow) {
        self.changes.push((row, 1));
    }

    /// Retract a row (exactly one inserted before).
    pub fn remove(&mut self, row: JobRow) {
        self.changes.push((row, -1));
    }
}

/// The inputs, the reader and the progress of one worker's priority dataflows.
pub struct PriorityDataflow {
    /// Job rows, at the current logical time.
    pub jobs: Rows,
    /// Facts, at the current logical time.
    pub facts: InputSession<u64, Fact, isize>,
    rows: InputSession<u64, JobRow, isize>,
    combos: InputSession<u64, Combo, isize>,
    partition_refs: InputSession<u64, (NameId, u8), isize>,
    combo_refs: ComboRefs,
    /// The reader of the updates captured on worker 0.
    pub reader: PriorityReader,
    /// Counts the updates leaving the priority operators.
    pub touched: TouchCounter,
    /// The current logical time: what is inserted now is at this time.
    pub epoch: u64,
    probe: Handle<u64>,
}

impl PriorityDataflow {
    /// Build the dataflows on `worker`, probing every output.
    pub fn build(worker: &mut Worker, names: JobNames) -> Self {
        let probe = Handle::new();
        let touched = TouchCounter::new();
        let capture = Capture::default();
        let (rows, facts, combos, partition_refs) = worker.dataflow::<u64, _, _>(|scope| {
            let (rows_in, rows) = scope.new_collection::<JobRow, isize>();
            let (facts_in, facts) = scope.new_collection::<Fact, isize>();
            let (combos_in, combos) = scope.new_collection::<Combo, isize>();
            let (refs_in, partition_refs) = scope.new_collection::<(NameId, u8), isize>();
            // One queue on worker 0 (the engine shards it; its suites read
            // the shards merged).
            let out = build_routed(
                PriorityInputs {
                    facts,
                    combos,
                    partition_refs,
                },
                &capture,
                &touched,
                Sharding::OnWorkerZero,
            );
            for stream in out.captured {
                stream.probe_with(&probe);
            }
            capture_rows(rows, &capture, Sharding::OnWorkerZero).probe_with(&probe);
            (rows_in, facts_in, combos_in, refs_in)
        });
        PriorityDataflow {
            jobs: Rows::default(),
            facts,
            rows,
            combos,
            partition_refs,
            combo_refs: ComboRefs::default(),
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
        let changes = std::mem::take(&mut self.jobs.changes);
        let (combos, partition_refs) = self.combo_refs.deltas(&changes);
        update_all(&mut self.rows, changes);
        update_all(&mut self.combos, combos);
        update_all(&mut self.partition_refs, partition_refs);
        self.epoch += 1;
        self.rows.advance_to(self.epoch);
        self.facts.advance_to(self.epoch);
        self.combos.advance_to(self.epoch);
        self.partition_refs.advance_to(self.epoch);
        self.rows.flush();
        self.facts.flush();
        self.combos.flush();
        self.partition_refs.flush();
        while self.probe.less_than(&self.epoch) {
            worker.step();
        }
        self.reader.absorb();
        self.touched.take()
    }
}
