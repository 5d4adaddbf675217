//! Integration tests of the fair-share algorithms, driven through the event
//! log (parse, validate, `State`, `Replay`) and read back as sshare tables and
//! user factors. Expected values come from the seed documents' worked examples
//! and from hand arithmetic written next to each assertion.

mod fairshare {
    pub mod support;

    mod classic;
    mod decay;
    mod fair_tree;
    mod fair_tree_slurm;
    mod level_based;
    mod ticket;
}
