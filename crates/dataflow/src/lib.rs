//! The incremental engine: the oracle's computations maintained by timely and
//! differential dataflow operators, so that a change costs what it touches.

#![warn(missing_docs)]

pub mod cluster;
pub mod priority;
pub mod topk;
