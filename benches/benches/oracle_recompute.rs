//! The batch oracle's from-scratch recomputation, which the incremental engine
//! is compared against: deriving the fair-share tree and the fair-share table
//! for the whole cluster.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use fairflow_ingest::reader::LogLine;
use fairflow_model::Config;
use fairflow_oracle::tree::Tree;
use fairflow_oracle::{fairshare, Replay};
use fairflow_workload::{Generator, WorkloadParams};

fn state(associations: usize) -> Replay {
    let mut generator = Generator::new(WorkloadParams {
        user_associations: associations,
        pending_jobs: associations * 2,
        running_jobs: associations / 10,
        ..WorkloadParams::default()
    });
    let mut replay = Replay::new(Config::default());
    replay.feed_all(
        generator
            .initial_events()
            .into_iter()
            .enumerate()
            .map(|(i, e)| LogLine {
                line: i as u64 + 1,
                event: Ok(e),
            }),
    );
    replay
}

fn recompute(c: &mut Criterion) {
    let mut group = c.benchmark_group("oracle_recompute");
    group.sample_size(10);
    for associations in [1_000, 10_000] {
        let replay = state(associations);
        group.bench_with_input(BenchmarkId::new("tree", associations), &replay, |b, r| {
            b.iter(|| Tree::build(r.state()))
        });
        group.bench_with_input(
            BenchmarkId::new("fairshare_table", associations),
            &replay,
            |b, r| b.iter(|| fairshare::table(r.state())),
        );
    }
    group.finish();
}

criterion_group!(benches, recompute);
criterion_main!(benches);
