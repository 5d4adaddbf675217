//! Exit codes a script can trust when it feeds inputs: an input every line
//! of which was rejected (a file in the wrong format, say) is an error, and
//! with `--strict` the first rejected line is. Each input is tallied on its
//! own, so one good log does not hide a bad one beside it.

use anyhow::bail;
use fairflow_ingest::Rejection;

/// The lines of one input and how many were rejected.
#[derive(Debug)]
pub struct InputTally {
    name: String,
    strict: bool,
    lines: u64,
    rejected: u64,
}

impl InputTally {
    /// A fresh tally of the input `name`; `strict` fails on its first rejection.
    pub fn new(name: &str, strict: bool) -> Self {
        InputTally {
            name: name.to_string(),
            strict,
            lines: 0,
            rejected: 0,
        }
    }

    /// Count a batch of `lines` lines of which `rejections` were rejected
    /// (already reported); under `--strict` the first rejection is an error.
    pub fn record(&mut self, lines: usize, rejections: &[Rejection]) -> anyhow::Result<()> {
        self.lines += lines as u64;
        self.rejected += rejections.len() as u64;
        if self.strict {
            if let Some(first) = rejections.iter().min_by_key(|r| r.line) {
                bail!(
                    "{}: {first} (--strict stops at the first rejected line)",
                    self.name
                );
            }
        }
        Ok(())
    }

    /// An error when the input had lines and every one was rejected.
    pub fn finish(&self) -> anyhow::Result<()> {
        if self.lines > 0 && self.rejected >= self.lines {
            bail!(
                "{}: every one of its {} lines was rejected (is it an event log in the format of docs/events.md?)",
                self.name,
                self.lines
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_input_wholly_rejected_is_an_error_and_a_partly_rejected_one_is_not() {
        let bad = Rejection::new(2, None, "not JSON");
        let mut tally = InputTally::new("a.jsonl", false);
        tally.record(3, std::slice::from_ref(&bad)).unwrap();
        assert!(tally.finish().is_ok());
        let mut tally = InputTally::new("b.swf", false);
        tally
            .record(2, &[bad.clone(), Rejection::new(1, None, "x")])
            .unwrap();
        let error = tally.finish().unwrap_err().to_string();
        assert!(error.contains("b.swf: every one of its 2 lines"), "{error}");
        assert!(InputTally::new("empty", false).finish().is_ok());
    }

    #[test]
    fn strict_fails_on_the_first_rejected_line() {
        let mut tally = InputTally::new("a.jsonl", true);
        tally.record(5, &[]).unwrap();
        let error = tally
            .record(
                5,
                &[
                    Rejection::new(9, None, "late"),
                    Rejection::new(7, Some("t"), "early"),
                ],
            )
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("a.jsonl: line 7: field `t`: early"),
            "{error}"
        );
    }
}
