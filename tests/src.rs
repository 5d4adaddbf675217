//! Holds no code: the end-to-end tests of fairflow live in `tests/tests/`.
