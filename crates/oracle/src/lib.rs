//! The batch oracle: a plain, from-scratch implementation of everything
//! fairflow computes, written for clarity. It reads the one book of what
//! happened (`fairflow_book::Book`, which checks and applies events);
//! `tree` derives the fair-share tree and its usage sums; `fairshare` runs each
//! algorithm over it. The incremental engine is held equal to this crate.
//!
//! **Architecture invariant:** the oracle shares scalar formulas and exact
//! usage arithmetic with the engine (from `fairflow-model`), never aggregation
//! code: every sum, ranking and propagation here is recomputed from the state.

#![warn(missing_docs)]

pub mod fairshare;
pub mod priority;
pub mod replay;
/// The book's state, which the oracle aggregates over.
pub mod state {
    pub use fairflow_book::state::*;
}
pub mod tree;

pub use replay::{Replay, ReplayReport};
pub use state::State;
