//! Integration tests of the fair-share algorithms, driven through the event
//! log (parse, validate, `State`, `Replay`) and read back as sshare tables and
//! user factors. Expected values come from the seed documents' worked examples
//! and from hand arithmetic written next to each assertion. The worked
//! examples that need only the engine interface run on both engines from data
//! (`crates/engine/tests/cases/`); what stays here reads the oracle's own API
//! or is a property of the oracle.

mod fairshare {
    pub mod support;

    mod decay;
    mod fair_tree;
    mod level_based;
    mod ticket;
}
