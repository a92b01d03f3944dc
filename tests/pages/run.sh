#!/usr/bin/env bash
# Runs the browser tests. With FLOODGATE_URL set, against that gateway; otherwise starts one
# here on a free loopback port (embedded default: SQLite in a temporary folder, in-memory
# queue, simulated payments), with a known organizer key and a join limit the suite cannot
# reach, and stops it afterwards. FLOODGATE_GATEWAY_CMD overrides how it is started.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/gateway-address.sh

chromium="${CHROMIUM_PATH:-/usr/bin/chromium}"
[ -x "$chromium" ] || { echo "no Chromium at $chromium: bash scripts/test-tools.sh installs it (or set CHROMIUM_PATH)" >&2; exit 1; }
# Where Debian's Node.js is too old, scripts/test-tools.sh puts Node.js 20 here.
[ -x target/node/bin/node ] && export PATH="$PWD/target/node/bin:$PATH"
[ -d tests/pages/node_modules/playwright-core ] && [ -d tests/pages/node_modules/axe-core ] || npm ci --prefix tests/pages --no-audit --no-fund

if [ -z "${FLOODGATE_URL:-}" ]; then
  work="$(mktemp -d)"
  log="$work/gateway.log"
  export FLOODGATE_ORGANIZER_KEY="${FLOODGATE_ORGANIZER_KEY:-pages-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')}"
  FLOODGATE_LISTEN=127.0.0.1:0 \
  FLOODGATE_JOIN_LIMIT_PER_MIN=1000000 \
  DATABASE_URL="sqlite:$work/floodgate.db" \
    ${FLOODGATE_GATEWAY_CMD:-cargo run -q -p gateway} >"$log" 2>&1 &
  gateway=$!
  trap 'kill "$gateway" 2>/dev/null || true; wait "$gateway" 2>/dev/null || true; rm -rf "$work"' EXIT
  addr="$(gateway_address "$log" "$gateway")"
  export FLOODGATE_URL="http://$addr"
  echo "browser tests against the gateway at $FLOODGATE_URL"
fi

# Names given (`bash run.sh organizer_sale.test.js`) run those files only; none runs the suite.
files=()
for name in "$@"; do
  if [ -e "tests/pages/$name" ]; then files+=("tests/pages/$name"); else files+=("$name"); fi
done
[ ${#files[@]} -gt 0 ] || files=(tests/pages/)
# Three files at once (PAGES_CONCURRENCY): a page test mostly waits on the gateway and its
# timers, and node would run one at a time on two cores. Each file makes its own events.
node --test --test-concurrency="${PAGES_CONCURRENCY:-3}" "${files[@]}"
