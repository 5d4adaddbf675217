//! Parsing and validating event lines: the cost every event pays on entry.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use fairflow_book::Book;
use fairflow_ingest::parse_event;
use fairflow_ingest::write::event_to_line;
use fairflow_workload::{Generator, WorkloadParams};

fn parse(c: &mut Criterion) {
    let mut generator = Generator::new(WorkloadParams {
        user_associations: 2_000,
        pending_jobs: 10_000,
        ..WorkloadParams::default()
    });
    let events = generator.initial_events();
    let lines: Vec<String> = events.iter().map(event_to_line).collect();
    let mut group = c.benchmark_group("ingest_parse");
    group.throughput(Throughput::Elements(lines.len() as u64));
    group.bench_function(format!("parse/{}", lines.len()), |b| {
        b.iter(|| {
            lines
                .iter()
                .enumerate()
                .filter(|(i, l)| parse_event(*i as u64, l).is_ok())
                .count()
        })
    });
    group.bench_function(format!("parse_apply/{}", lines.len()), |b| {
        b.iter(|| {
            let mut book = Book::default();
            lines
                .iter()
                .enumerate()
                .filter(|(i, l)| {
                    parse_event(*i as u64, l)
                        .map(|e| book.apply(*i as u64, &e).is_ok())
                        .unwrap_or(false)
                })
                .count()
        })
    });
    group.finish();
}

criterion_group!(benches, parse);
criterion_main!(benches);
