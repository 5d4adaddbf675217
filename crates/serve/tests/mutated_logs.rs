//! Mutated logs through both engines (issue 16, item 8, the stable-toolchain
//! part of the fuzzing): the repository's example logs, with bytes flipped,
//! numbers replaced by extreme values (1e35, 1e303, -1, i64 bounds, the end of
//! the calendar), lines duplicated, dropped and swapped, are fed in batches to
//! the batch and the incremental engine. Neither may panic, and they must
//! reject the same lines and give the same answers. Bounded: 48 cases of at
//! most 40 lines.

use fairflow_ingest::reader::read_events;
use fairflow_model::Config;
use fairflow_serve::engine::{BatchEngine, Engine, IncrementalEngine};
use proptest::prelude::*;

fn example_lines() -> Vec<String> {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../datasets/events");
    let mut lines = Vec::new();
    for name in ["small.jsonl", "priority.jsonl", "bad-lines.jsonl"] {
        let text = std::fs::read_to_string(dir.join(name)).expect("example log");
        lines.extend(text.lines().map(str::to_string));
    }
    lines
}

const EXTREMES: [&str; 10] = [
    "1e35",
    "1e303",
    "-1",
    "0",
    "1.5",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551615",
    "253402300799",
    "253402300800",
];

#[derive(Debug, Clone)]
enum Mutation {
    FlipByte {
        line: usize,
        at: usize,
        bit: u8,
    },
    Extreme {
        line: usize,
        nth_number: usize,
        value: usize,
    },
    Duplicate {
        line: usize,
    },
    Drop {
        line: usize,
    },
    Swap {
        line: usize,
    },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<usize>(), 0u8..8).prop_map(|(line, at, bit)| Mutation::FlipByte {
            line,
            at,
            bit
        }),
        (any::<usize>(), 0usize..4, 0..EXTREMES.len()).prop_map(|(line, nth_number, value)| {
            Mutation::Extreme {
                line,
                nth_number,
                value,
            }
        }),
        any::<usize>().prop_map(|line| Mutation::Duplicate { line }),
        any::<usize>().prop_map(|line| Mutation::Drop { line }),
        any::<usize>().prop_map(|line| Mutation::Swap { line }),
    ]
}

/// Replace the `nth` run of digits (with its sign, fraction and exponent) by `value`.
fn replace_number(line: &str, nth: usize, value: &str) -> String {
    let bytes = line.as_bytes();
    let mut runs = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii_digit() && (i == 0 || bytes[i - 1] != b'"') {
            let start = if i > 0 && bytes[i - 1] == b'-' {
                i - 1
            } else {
                i
            };
            while i < bytes.len() && (bytes[i].is_ascii_digit() || b".eE+-".contains(&bytes[i])) {
                i += 1;
            }
            runs.push(start..i);
        } else {
            i += 1;
        }
    }
    match runs.get(nth) {
        Some(range) => format!("{}{}{}", &line[..range.start], value, &line[range.end..]),
        None => line.to_string(),
    }
}

fn mutate(mut lines: Vec<Vec<u8>>, mutations: &[Mutation]) -> Vec<Vec<u8>> {
    for m in mutations {
        if lines.is_empty() {
            break;
        }
        let n = lines.len();
        match *m {
            Mutation::FlipByte { line, at, bit } => {
                let l = &mut lines[line % n];
                if !l.is_empty() {
                    let at = at % l.len();
                    l[at] ^= 1 << bit;
                }
            }
            Mutation::Extreme {
                line,
                nth_number,
                value,
            } => {
                let l = &mut lines[line % n];
                let text = String::from_utf8_lossy(l).to_string();
                *l = replace_number(&text, nth_number, EXTREMES[value]).into_bytes();
            }
            Mutation::Duplicate { line } => {
                let copy = lines[line % n].clone();
                lines.insert(line % n, copy);
            }
            Mutation::Drop { line } => {
                lines.remove(line % n);
            }
            Mutation::Swap { line } => lines.swap(line % n, (line + 1) % n),
        }
    }
    lines
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn mutated_logs_never_panic_and_both_engines_agree(
        mutations in prop::collection::vec(mutation(), 1..12),
        chunk in 1usize..9,
    ) {
        let lines: Vec<Vec<u8>> = example_lines().into_iter().map(String::into_bytes).collect();
        let mutated = mutate(lines, &mutations);
        let mut batch = BatchEngine::new(Config::default());
        let mut incremental = IncrementalEngine::start(2, Config::default()).unwrap();
        for part in mutated.chunks(chunk) {
            let body = part.join(&b'\n');
            let read: Vec<_> = read_events(&body[..]).filter_map(Result::ok).collect();
            let want = batch.apply(read.clone());
            let got = incremental.apply(read);
            prop_assert_eq!(got, want);
        }
        prop_assert_eq!(incremental.fairshare(), batch.fairshare());
        prop_assert_eq!(incremental.priorities(), batch.priorities());
        prop_assert_eq!(incremental.top(5), batch.top(5));
        prop_assert_eq!(incremental.applied(), batch.applied());
    }
}
