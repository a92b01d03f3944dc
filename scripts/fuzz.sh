#!/usr/bin/env bash
# The fuzz targets (tests/fuzz): what the edge parses from strangers — queue tokens, webhook
# signature headers, ids, request bodies — each run for a bounded time from the committed
# corpus. Any crash (a panic, an overflow, a failed property) fails the script and leaves the
# input under tests/fuzz/artifacts/TARGET/.
#
# Needs the nightly toolchain (`rustup toolchain install nightly`); installs cargo-fuzz when it
# is missing. Settings:
#   FUZZ_SECONDS     seconds per target (default 30)
#   FUZZ_TARGETS     which targets (default: all of them)
#   FUZZ_TARGET_DIR  where the instrumented build goes (default target/fuzz)
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${FUZZ_SECONDS:-30}"
target_dir="${FUZZ_TARGET_DIR:-$PWD/target/fuzz}"
fuzz_dir=tests/fuzz

if ! cargo +nightly --version >/dev/null 2>&1; then
  echo "error: the fuzz targets need the nightly toolchain: rustup toolchain install nightly" >&2
  exit 1
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  echo "installing cargo-fuzz"
  cargo install cargo-fuzz --locked
fi

targets="${FUZZ_TARGETS:-$(cargo +nightly fuzz list --fuzz-dir "$fuzz_dir")}"

# The workspace forbids unsafe code, so the sanitizer would guard only dependencies' C; without
# it the build and the runs are about twice as quick. Debug assertions turn on overflow checks,
# so an arithmetic overflow on hostile input is a crash here rather than a silent wrap.
# Sixteen codegen units rather than release's one: the gateway and its dependencies build in
# parallel within each crate, for somewhat fewer runs a second.
flags=(--fuzz-dir "$fuzz_dir" --target-dir "$target_dir" --sanitizer none --debug-assertions
  --codegen-units 16)
# The gateway's request body types, where this checkout has them in one public module.
[ -f gateway/src/requests.rs ] && flags+=(--features requests)

cargo +nightly fuzz build "${flags[@]}"

for target in $targets; do
  echo "fuzzing $target for ${seconds}s"
  # The committed seeds stay as they are: new inputs go to a scratch corpus next to them.
  scratch="$target_dir/corpus/$target"
  mkdir -p "$scratch" "$fuzz_dir/artifacts/$target"
  cargo +nightly fuzz run "${flags[@]}" "$target" "$scratch" "$fuzz_dir/corpus/$target" -- \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=16384 \
    -print_final_stats=1
done
echo "fuzzing: no crashes in $(echo "$targets" | wc -w) targets"
