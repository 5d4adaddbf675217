//! The serving layer: renders what an engine computed (`fairflow_model::report`)
//! as Slurm-style tables, parsable `|` text and JSON, exactly as
//! `../shared/spec/interfaces.md` specifies. It knows nothing of how the
//! numbers were computed.

#![warn(missing_docs)]
