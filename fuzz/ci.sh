#!/usr/bin/env bash
# Fuzzing in CI (issue 37), called by .ci/run under CI=true after the tests:
#  1. the corpus replay test on the stable toolchain (tests/corpus.rs: every
#     file of corpus/<target> and artifacts/<target> through its target);
#  2. cargo-fuzz, installed when missing;
#  3. every target (`cargo fuzz list`) fuzzed for FUZZ_SECS seconds (20 by
#     default), one at a time, on a scratch copy of its corpus (work/ci/<target>,
#     ignored by git), so the committed seeds stay as they are.
# A crash (or a timeout or out-of-memory input) fails the script; its input is
# left in artifacts/<target>/ and printed hex-encoded below, so CI's log keeps it
# (`xxd -r -p` turns the hex back into the file).
#
# Time (the project's 2-core machine, 2026-11-29, commit f607131, load average
# 8 to 10 from four other engineers' builds): step 1 from a cold fuzz/target,
# `nice -n 5 cargo test --release --no-run`, took 46 min 14 s (fairflow-dataflow
# alone over 12 min), the replay itself 1.6 s. Steps 2 and 3 were not measured
# in that session (no time was left for the instrumented build); expect the
# instrumented build to cost about as much as step 1's, and step 3's runs
# 14 targets x FUZZ_SECS (4 min 40 s at 20 s). On an idle machine the builds
# are several times faster; CI's budget (90 min for all of .ci/run) must hold
# the workspace's suite beside them.
set -euo pipefail
cd "$(dirname "$0")"

FUZZ_SECS="${FUZZ_SECS:-20}"
# libFuzzer's per-input limit: an input that runs longer is reported as a
# timeout (and fails the run) instead of eating the whole budget.
FUZZ_TIMEOUT_SECS="${FUZZ_TIMEOUT_SECS:-60}"

echo "== fuzz: cargo fmt --check"
cargo fmt --all -- --check

echo "== fuzz: corpus replay on stable (cargo test --release)"
cargo test --release --locked

if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "== fuzz: installing cargo-fuzz"
  cargo install cargo-fuzz --locked
fi

# cargo-fuzz passes nightly flags (-Z...); the machine has the stable
# toolchain only, which RUSTC_BOOTSTRAP=1 lets act as nightly. No sanitizer:
# the workspace forbids unsafe code, and AddressSanitizer would not reach the
# one C library (SQLite, built by cc without cargo-fuzz's flags), so it would
# only slow the build and the runs; a panic is what these targets look for.
export RUSTC_BOOTSTRAP=1
echo "== fuzz: building every target (cargo fuzz build --sanitizer none)"
cargo fuzz build --sanitizer none

hex_of() {
  od -An -tx1 -v "$1" | tr -d ' \n'
}

failed=()
for target in $(cargo fuzz list); do
  scratch="work/ci/$target"
  rm -rf "$scratch"
  mkdir -p "$scratch" "artifacts/$target"
  cp -R "corpus/$target/." "$scratch/"
  before="$(ls "artifacts/$target")"
  echo "== fuzz: $target for ${FUZZ_SECS} s"
  log="work/ci/$target.log"
  if cargo fuzz run --sanitizer none "$target" "$scratch" -- \
      -max_total_time="$FUZZ_SECS" -timeout="$FUZZ_TIMEOUT_SECS" -print_final_stats=1 >"$log" 2>&1; then
    grep -E '^stat::number_of_executed_units|^Done [0-9]+ runs' "$log" || true
  else
    failed+=("$target")
    echo "!! fuzz: $target failed; the end of its log:"
    tail -n 60 "$log"
    for input in "artifacts/$target"/*; do
      [ -f "$input" ] || continue
      if ! grep -qxF "$(basename "$input")" <<<"$before"; then
        echo "!! fuzz: $input (hex): $(hex_of "$input")"
      fi
    done
  fi
done

if [ "${#failed[@]}" -gt 0 ]; then
  echo "!! fuzz: crashes in: ${failed[*]} (inputs in fuzz/artifacts/<target>/, hex above)"
  exit 1
fi
echo "== fuzz: every target ran ${FUZZ_SECS} s without a crash"
