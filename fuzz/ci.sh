#!/usr/bin/env bash
# Fuzzing for CI (issue 37), to run after the
# workspace's tests (which already replayed every corpus on stable: the fuzz
# crate is a workspace member, its test `fuzz/tests/corpus.rs`):
#  1. cargo-fuzz, installed when missing (pinned below);
#  2. every target built once (`cargo fuzz build --features libfuzzer`, with
#     debug assertions and overflow checks, as libFuzzer users build them);
#  3. every target (`cargo fuzz list`) fuzzed for FUZZ_SECS seconds (20 by
#     default) from the fixed seed FUZZ_SEED (1), one at a time, on a scratch copy of its corpus and artifacts
#     (work/ci/<target>, ignored by git): libFuzzer first runs every input of
#     the copy, so a committed seed or a kept crash that panics fails too.
# A crash (or a timeout or out-of-memory input) fails the script; its input is
# left in artifacts/<target>/ and printed hex-encoded below, so CI's log keeps it
# (`xxd -r -p` turns the hex back into the file).
#
# Called by .ci/run under CI=true. Timed on the 2-core machine at load 7-9
# (perf/results/2026-11-29-fuzz-ci-s27.md): cargo-fuzz 0.13.2 installs in
# 8.5 min, the instrumented build takes 22-27 min, the runs 15 x 21 s.
set -euo pipefail
cd "$(dirname "$0")"

FUZZ_SECS="${FUZZ_SECS:-20}"
# libFuzzer's random seed, fixed so that CI mutates the same inputs in the
# same order on every run: a failure is a change's, not the draw's (a longer
# run with other seeds is for the hours recorded in perf/).
FUZZ_SEED="${FUZZ_SEED:-1}"
# libFuzzer's per-input limit: an input that runs longer is reported as a
# timeout (and fails the run) instead of eating the whole budget.
FUZZ_TIMEOUT_SECS="${FUZZ_TIMEOUT_SECS:-60}"
CARGO_FUZZ_VERSION=0.13.2

if ! cargo fuzz --version 2>/dev/null | grep -qF "$CARGO_FUZZ_VERSION"; then
  echo "== fuzz: installing cargo-fuzz $CARGO_FUZZ_VERSION"
  time cargo install cargo-fuzz --locked --version "$CARGO_FUZZ_VERSION"
fi

# cargo-fuzz passes nightly flags (-Z...); the machine has the stable
# toolchain only, which RUSTC_BOOTSTRAP=1 lets act as nightly. No sanitizer:
# the workspace forbids unsafe code, and AddressSanitizer would not reach the
# one C library (SQLite, built by cc without cargo-fuzz's flags), so it would
# only slow the build and the runs; a panic is what these targets look for.
export RUSTC_BOOTSTRAP=1
FUZZ_FLAGS=(--sanitizer none --debug-assertions --features libfuzzer)
echo "== fuzz: building every target (cargo fuzz build ${FUZZ_FLAGS[*]})"
time cargo fuzz build "${FUZZ_FLAGS[@]}"

hex_of() {
  od -An -tx1 -v "$1" | tr -d ' \n'
}

failed=()
for target in $(cargo fuzz list); do
  scratch="work/ci/$target"
  rm -rf "$scratch"
  mkdir -p "$scratch" "artifacts/$target"
  cp -R "corpus/$target/." "artifacts/$target/." "$scratch/"
  before="$(ls "artifacts/$target")"
  echo "== fuzz: $target for ${FUZZ_SECS} s"
  log="work/ci/$target.log"
  if cargo fuzz run "${FUZZ_FLAGS[@]}" "$target" "$scratch" -- \
      -max_total_time="$FUZZ_SECS" -seed="$FUZZ_SEED" -timeout="$FUZZ_TIMEOUT_SECS" -print_final_stats=1 >"$log" 2>&1; then
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
