//! The priority dataflow's own tests, inside the crate because they drive
//! its private stages directly (`priority`, `job_feed`, `names`), which the
//! crate's public API keeps private: hand-computed cases and the random
//! streams against the oracle. The streams are shared with the integration
//! tests (`tests/priority_stream`), which drive the whole engine.

mod priority_dataflow;
#[path = "../../tests/priority_stream/mod.rs"]
mod priority_stream;

mod priority_equivalence;
mod priority_hand;
pub(crate) mod random_tree;
