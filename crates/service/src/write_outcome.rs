//! The answer to a write, as writers read it (`POST /v1/events`, the taps):
//! what was applied and which lines were rejected. A leaf: the applier makes
//! it and `exactly_once` remembers it with a write's idempotency key.

use fairflow_ingest::Rejection;

/// The answer to a write.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct WriteOutcome {
    /// Events applied.
    pub accepted: u64,
    /// Lines rejected, with line numbers relative to the batch.
    pub rejected: Vec<RejectedLine>,
    /// The log sequence number of the batch's first record.
    pub first_sequence: u64,
    /// The write repeats an `Idempotency-Key` already applied: nothing was
    /// applied now, and the counts are the first write's (zero when the first
    /// write was before a restart).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub duplicate: bool,
}

/// A rejected line as the service reports it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RejectedLine {
    /// 1-based line in the batch.
    pub line: u64,
    /// The field at fault.
    pub field: Option<String>,
    /// Why.
    pub reason: String,
}

impl From<Rejection> for RejectedLine {
    fn from(r: Rejection) -> Self {
        RejectedLine {
            line: r.line,
            field: r.field,
            reason: r.reason,
        }
    }
}
