#!/usr/bin/env bash
# schemathesis against a real gateway: it reads the served `GET /api/openapi.json` and sends
# what the document allows (and what it forbids), checking every answer against it with all of
# its checks (all are on by default; `--checks` on the command line would override the
# per-operation settings of the config). Any failure, 5xx or error fails the script. What OpenAPI cannot state (a body's
# byte limit, rules across fields, a webhook's signature) is in scripts/schemathesis.toml, each
# with its reason.
#
# With FLOODGATE_URL set (and FLOODGATE_ORGANIZER_KEY, for the organizer's routes), against that
# gateway; otherwise one is started here on a free loopback port on the embedded default
# (SQLite in a temporary folder, in-memory queue, simulated payments, the `demo` event) and
# stopped afterwards. FLOODGATE_GATEWAY_CMD overrides how it is started.
# Settings: SCHEMATHESIS_EXAMPLES (fuzzed cases per operation, default 100), SCHEMATHESIS_SEED
# (default 1: the same cases every run, so a failure reproduces), SCHEMATHESIS_SECONDS (a hard
# bound on the run, default 240: past it the run is stopped and fails). Each phase runs once
# (no `--max-time`, which would repeat fuzzing until the time is spent).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/gateway-address.sh

if [ -z "${FLOODGATE_PYTHON:-}" ]; then
  source scripts/test-tools.sh
fi
schemathesis="$(dirname "$FLOODGATE_PYTHON")/schemathesis"
[ -x "$schemathesis" ] || {
  echo "error: no schemathesis beside $FLOODGATE_PYTHON: bash scripts/test-tools.sh installs it" >&2
  exit 1
}

# schemathesis keeps what it found under its working folder: a scratch one, not the checkout.
work="$(mktemp -d)"
gateway=""
trap 'if [ -n "$gateway" ]; then kill "$gateway" 2>/dev/null || true; wait "$gateway" 2>/dev/null || true; fi; rm -rf "$work"' EXIT

if [ -z "${FLOODGATE_URL:-}" ]; then
  log="$work/gateway.log"
  export FLOODGATE_ORGANIZER_KEY="${FLOODGATE_ORGANIZER_KEY:-schemathesis-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')}"
  # A bound on the gateway's memory: generated organizer requests may ask for huge seat maps,
  # and that must end as a failed check, not as a machine out of memory.
  (
    ulimit -v $((4 * 1024 * 1024))
    FLOODGATE_LISTEN=127.0.0.1:0 \
    FLOODGATE_JOIN_LIMIT_PER_MIN=1000000 \
    DATABASE_URL="sqlite:$work/floodgate.db" \
      exec ${FLOODGATE_GATEWAY_CMD:-cargo run -q -p gateway --all-features --bin gateway}
  ) >"$log" 2>&1 &
  gateway=$!
  addr="$(gateway_address "$log" "$gateway")"
  export FLOODGATE_URL="http://$addr"
fi
echo "schemathesis against the gateway at $FLOODGATE_URL"

status=0
repo="$PWD"
cd "$work"
started=$SECONDS
timeout --kill-after=10 "${SCHEMATHESIS_SECONDS:-240}" \
  "$schemathesis" --no-color --config-file "$repo/scripts/schemathesis.toml" \
  run "$FLOODGATE_URL/api/openapi.json" \
  --max-examples "${SCHEMATHESIS_EXAMPLES:-100}" \
  --seed "${SCHEMATHESIS_SEED:-1}" \
  --generation-database none \
  --continue-on-failure \
  --request-timeout 10 \
  --header "Authorization: Bearer ${FLOODGATE_ORGANIZER_KEY:?the organizer key of the gateway at FLOODGATE_URL}" \
  || status=$?
cd "$repo"
if [ "$status" = 124 ] || [ "$status" = 137 ]; then
  echo "schemathesis did not finish within ${SCHEMATHESIS_SECONDS:-240} s" >&2
fi
echo "schemathesis ran $((SECONDS - started)) s and exited $status"
if [ -n "$gateway" ] && ! kill -0 "$gateway" 2>/dev/null; then
  echo "the gateway died during the run; its last lines:" >&2
  tail -n 40 "$log" >&2
  status=1
fi
exit "$status"
