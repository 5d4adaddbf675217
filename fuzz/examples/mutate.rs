//! A blind mutation run on the stable toolchain, for a machine where
//! `cargo fuzz` cannot be built in time: not coverage-guided (no
//! instrumentation), so a weak stand-in for libFuzzer. For each target named
//! (every target without names) it mutates the target's seeds (bytes flipped,
//! replaced by extreme ones, inserted, deleted, chunks spliced from another
//! seed) for the seconds given, calls the target on each mutant, and writes
//! the first inputs that panic to `artifacts/<target>/mutant-<n>` (which the replay
//! test then runs). `cargo run --release --example mutate -- SECS [TARGET...]`
//! from `fuzz/`; it prints per target the runs, the seconds and the panics.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Bytes a mutation puts in: the ends of the ranges, and JSON's and TOML's
/// punctuation.
const EXTREME_BYTES: &[u8] = b"\x00\xff\x7f\x80-9e.\"{}[]=\n|,:";

/// The most panicking inputs kept per target (the rest are counted).
const MAX_SAVED_PER_TARGET: u64 = 10;

/// A xorshift64 generator (no dependency; reproducible from its seed).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number below `n` (`n` > 0).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// One to four mutations of `input`, splicing from `other`.
fn mutate(rng: &mut Rng, input: &mut Vec<u8>, other: &[u8]) {
    for _ in 0..=rng.below(4) {
        let at = rng.below(input.len() + 1);
        match rng.below(5) {
            0 if at < input.len() => input[at] ^= 1 << rng.below(8),
            1 if at < input.len() => input[at] = EXTREME_BYTES[rng.below(EXTREME_BYTES.len())],
            2 => input.insert(at, EXTREME_BYTES[rng.below(EXTREME_BYTES.len())]),
            3 if at < input.len() => {
                let end = (at + 1 + rng.below(16)).min(input.len());
                input.drain(at..end);
            }
            _ if !other.is_empty() => {
                let from = rng.below(other.len());
                let end = (from + 1 + rng.below(64)).min(other.len());
                input.splice(at..at, other[from..end].iter().copied());
            }
            _ => {}
        }
    }
}

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let secs: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(60);
    let names: Vec<String> = args.collect();
    let fuzz = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    std::panic::set_hook(Box::new(|_| {}));
    for (name, target) in fairflow_fuzz::TARGETS {
        if !names.is_empty() && !names.iter().any(|n| n == name) {
            continue;
        }
        let mut seeds = Vec::new();
        for entry in std::fs::read_dir(fuzz.join("corpus").join(name))? {
            seeds.push(std::fs::read(entry?.path())?);
        }
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ name.len() as u64);
        let (started, mut runs, mut panics) = (Instant::now(), 0u64, 0u64);
        while started.elapsed() < Duration::from_secs(secs) {
            let mut input = seeds[rng.below(seeds.len())].clone();
            let other = &seeds[rng.below(seeds.len())];
            mutate(&mut rng, &mut input, other);
            runs += 1;
            if catch_unwind(AssertUnwindSafe(|| target(&input))).is_err() {
                panics += 1;
                if panics > MAX_SAVED_PER_TARGET {
                    continue;
                }
                let dir = fuzz.join("artifacts").join(name);
                std::fs::create_dir_all(&dir)?;
                std::fs::write(dir.join(format!("mutant-{runs}")), &input)?;
            }
        }
        let elapsed = started.elapsed().as_secs();
        println!("{name}: {runs} runs in {elapsed} s, {panics} panics");
    }
    Ok(())
}
