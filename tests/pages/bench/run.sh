#!/usr/bin/env bash
# Runs the seat page benchmark (bench/stadium.js) against a gateway: FLOODGATE_URL's, or one
# started here as tests/pages/run.sh starts it. Not part of the page tests.
set -euo pipefail
cd "$(dirname "$0")/../../.."
source scripts/gateway-address.sh
[ -d tests/pages/node_modules/playwright-core ] || npm ci --prefix tests/pages --no-audit --no-fund
if [ -z "${FLOODGATE_URL:-}" ]; then
  work="$(mktemp -d)"
  log="$work/gateway.log"
  export FLOODGATE_ORGANIZER_KEY="${FLOODGATE_ORGANIZER_KEY:-bench-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')}"
  FLOODGATE_LISTEN=127.0.0.1:0 FLOODGATE_JOIN_LIMIT_PER_MIN=1000000 DATABASE_URL="sqlite:$work/floodgate.db" \
    ${FLOODGATE_GATEWAY_CMD:-cargo run -q -p gateway} >"$log" 2>&1 &
  gateway=$!
  trap 'kill "$gateway" 2>/dev/null || true; wait "$gateway" 2>/dev/null || true; rm -rf "$work"' EXIT
  export FLOODGATE_URL="http://$(gateway_address "$log" "$gateway")"
  export BENCH_GATEWAY="${BENCH_GATEWAY:-started here (${FLOODGATE_GATEWAY_CMD:-cargo run -q -p gateway}), SQLite}"
fi
node tests/pages/bench/stadium.js
