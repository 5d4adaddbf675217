//! Holds no code: the criterion benchmarks live in `benches/benches/`, one
//! file per stage (`ingest_parse`, `oracle_recompute`, ...). End-to-end
//! latency measurements are `fairflow bench` and live in `perf/`.
