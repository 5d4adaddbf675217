//! The domain of fairflow, shared by every other crate: the events of the log
//! (`event`), the configuration they carry (`config`, `tres`, `time`), the exact
//! fixed-point usage arithmetic both engines must agree on (`usage`) and the
//! range of inputs it holds (`limits`), and the
//! result types the engines produce and the serving layer renders (`report`).
//!
//! Nothing here does IO, starts threads, or reads a clock.

#![warn(missing_docs)]

pub mod config;
pub mod event;
pub mod formula;
pub mod job_priority;
pub mod limits;
pub mod moab;
pub mod priority_formula;
pub mod report;
pub mod reset;
pub mod sluid;
pub mod time;
pub mod tres;
pub mod usage;

pub use config::{Algorithm, Config, FairTreeTies, PriorityModel};
pub use event::{Event, JobSpec, Shares};
pub use sluid::Sluid;

/// Unix seconds, UTC: the time of every event and every query.
pub type Time = i64;

/// Why a value of the configuration or of an event could not be accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct InvalidValue {
    /// A sentence saying what is wrong and what is expected.
    pub reason: String,
}

impl InvalidValue {
    /// Build from anything displayable.
    pub fn new(reason: impl Into<String>) -> Self {
        InvalidValue {
            reason: reason.into(),
        }
    }
}
