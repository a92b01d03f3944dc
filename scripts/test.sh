#!/usr/bin/env bash
# The whole test suite, as the README's second set-up command runs it.
#
# It installs what the tests need when missing (scripts/test-tools.sh: Debian packages when run as
# root, else it names the command; a Python environment with Stripe's library and Valkey), then
# finds or starts PostgreSQL, Redis, a Redis Cluster, Valkey and a Valkey cluster
# (scripts/test-services.sh), stopped again on exit. Arguments go to `cargo test`; for one part of
# the suite alone, see scripts/with-services.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each part's time, printed as it ends and together at the end, so a slow run says where it went.
phases=()
phase_done() { # name started
  phases+=("$(printf '%5d s  %s' $((SECONDS - $2)) "$1")")
  echo "== $1: $((SECONDS - $2)) s"
}
phase() { # name command...
  local name=$1 started=$SECONDS
  shift
  "$@"
  phase_done "$name" "$started"
}

source scripts/test-services.sh
phase_done "tools and servers" 0

phase "test build" cargo test --workspace --all-features --locked --no-run "$@"

# The fuzz targets (nightly, a target folder of its own), each for FUZZ_SECONDS (30 by default)
# from the committed corpus. Their instrumented build takes minutes of CPU that the tests below
# mostly leave idle while they wait on their servers, so the build and the runs go beside them at
# the lowest priority; the suite waits for them at the end and fails, with their log, on a crash.
fuzz_log=target/fuzz.log
mkdir -p target
# A session of its own, so an early exit stops the build or the runs with it.
setsid nice -n 19 bash -c 'started=$SECONDS; bash scripts/fuzz.sh || exit
  echo "== fuzz: $((SECONDS - started)) s"' >"$fuzz_log" 2>&1 &
fuzz=$!
trap 'kill -- -"$fuzz" 2>/dev/null || true; cleanup' EXIT

phase "cargo test" cargo test --workspace --all-features --locked "$@"

# The pages, in headless Chromium, against a gateway on the embedded default. `cargo test` left
# the workspace's binaries (gateway, simulator, soak) in target/debug for its own integration
# tests; the rest of the suite runs those, so nothing is compiled twice. Given arguments, the
# test build may have left some out: then they are built first.
[ $# -eq 0 ] || phase "binaries" cargo build --workspace --all-features --locked --bins
phase "pages" env FLOODGATE_GATEWAY_CMD=target/debug/gateway bash tests/pages/run.sh

# The reduced soak: a whole on-sale through the public API, judged from the rows and the
# payment ledger; any breach fails the suite.
phase "soak" env SOAK_PREBUILT=1 bash tests/soak/ci.sh

# schemathesis against the served OpenAPI document, on a gateway of the build above; any
# failure fails the suite (scripts/schemathesis.toml holds what OpenAPI cannot state).
phase "schemathesis" env FLOODGATE_GATEWAY_CMD=target/debug/gateway bash scripts/schemathesis.sh

# The fuzz targets, from their build beside the tests: each target's runs, and any crash.
waited=$SECONDS
if ! wait "$fuzz"; then
  cat "$fuzz_log" >&2
  echo "error: fuzzing failed (log above, $fuzz_log)" >&2
  exit 1
fi
grep -E '^(fuzzing |Done [0-9]+ runs)' "$fuzz_log"
phase_done "fuzz, waited for after the tests ($(sed -n 's/^== fuzz: //p' "$fuzz_log") beside them)" "$waited"

printf '== time by part (%d s in all):\n' "$SECONDS"
printf '   %s\n' "${phases[@]}"
