//! `fairflow serve`: the live service. One applier thread owns the engine and
//! the durable log (`applier`); the HTTP layer (`http`) and the taps (`taps`)
//! turn requests into batches for it and reads into queries; `metrics`
//! exports Prometheus text; `budget` bounds the bytes of writes held by every
//! way in together; `stream` sends answers while they are rendered, off the
//! applier, and bounds what slow readers hold; `whatif` evaluates proposals
//! off the applier, bounded in work, time and concurrency. The applier drives anything implementing
//! [`backend::Backend`]; `fairflow serve` gives it an engine
//! (`Box<dyn fairflow_engine::Engine>`: the incremental engine by default, or
//! the batch engine) through [`engine_backend::EngineBackend`].
//!
//! **Architecture invariant:** an event is acknowledged (HTTP 200, a socket
//! answer line) only after its record is synced to the durable log, and the
//! engine answers nothing while it holds events the log does not (`applier`:
//! apply, then log, then answer; roll back by rebuilding); after a crash,
//! recovery applies exactly the logged records after the newest checkpoint,
//! so every acknowledged event is applied exactly once and a refused one never.

#![warn(missing_docs)]

pub mod applier;
pub mod backend;
pub mod budget;
pub mod clock;
pub mod config_file;
pub mod engine_backend;
pub mod exactly_once;
pub mod follow_slurm;
pub mod health;
pub mod held_tables;
pub mod history;
pub mod http;
pub use http::{listener, page, whatif};
mod http_errors;
pub mod log_limit;
pub mod metrics;
pub mod progress;
pub mod quarantine;
pub mod run;
pub mod stream;
pub mod taps;
pub mod ticks;
pub mod write_outcome;
