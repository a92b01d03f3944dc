#!/usr/bin/env bash
# A soak on this machine: a fresh PostgreSQL database, the payment simulator (HTTP) with every
# fault knob on, one gateway on PostgreSQL + Redis, then `soak` with the arguments given here.
# Everything started here is stopped (and the database dropped) on exit.
#
#   bash tests/soak/run.sh --arrivals 20000 --seat-count 2000 --window-s 30   # see README.md
#
# Environment: DATABASE_URL (a database on the server to create the scratch one beside),
# REDIS_URL, GATEWAYS (number of gateway processes, default 1), SOAK_KEEP_LOGS=1 to keep logs,
# SOAK_RELEASE=1 to build and run release binaries (the fair setting for big runs; CI uses the
# test build's debug binaries so nothing recompiles), SOAK_NICE=10 to run the soak itself at a
# lower priority than the servers it measures, SOAK_PROXY=nginx to put nginx (deploy/nginx/, the
# configuration the runbook ships) in front of the gateways: the soak's buyers and the payment
# webhooks then go through it, and its CPU is counted with the servers'. SOAK_PERF=OUT.txt samples
# every process on the machine with `perf` for the soak's length and writes the top consumers
# (by process and function) there. SOAK_METRICS=OUT.txt saves each gateway's Prometheus metrics
# as the soak ends (the gateway's own latency per route, beside the soak's). SOAK_PREBUILT=1 runs the debug binaries already in
# target/debug (the test suite's, which `cargo test` left there) without building.
set -euo pipefail
cd "$(dirname "$0")/../.."

DATABASE_URL="${DATABASE_URL:?set DATABASE_URL, e.g. postgres://postgres@127.0.0.1:5432/test}"
REDIS_URL="${REDIS_URL:?set REDIS_URL, e.g. redis://127.0.0.1:6379}"
GATEWAYS="${GATEWAYS:-1}"

if [ "${SOAK_RELEASE:-0}" = 1 ]; then
  cargo build --release --all-features --locked -p gateway -p floodgate-tests --bins
  bin=target/release
elif [ "${SOAK_PREBUILT:-0}" = 1 ]; then
  bin=target/debug
  for b in gateway simulator soak; do
    [ -x "$bin/$b" ] || { echo "error: SOAK_PREBUILT=1 but $bin/$b is not built" >&2; exit 1; }
  done
else
  cargo build --workspace --all-features --locked --bins
  bin=target/debug
fi

server="${DATABASE_URL%/*}"
db="soak_$$"
scratch=$(mktemp -d /tmp/floodgate-soak.XXXXXX)
# nginx's workers (nobody) keep the snapshot cache under it: searchable, not listable.
chmod 711 "$scratch"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  psql "$server/postgres" -qc "drop database if exists $db with (force)" >/dev/null 2>&1 || true
  if [ "${SOAK_KEEP_LOGS:-0}" = 1 ]; then echo "logs kept in $scratch" >&2; else rm -rf "$scratch"; fi
}
trap cleanup EXIT INT TERM

psql "$server/postgres" -qc "create database $db" >/dev/null
db_url="$server/$db"
secret="whsec_soak_$(od -An -N16 -tx1 /dev/urandom | tr -d " \n")"
key="org_soak_$$_$RANDOM$RANDOM"

# The simulator prints "simulator listening on http://127.0.0.1:PORT" once bound.
"$bin/simulator" --listen 127.0.0.1:0 --webhook-secret "$secret" --seed $$ \
  >"$scratch/sim.out" 2>"$scratch/sim.log" &
pids+=($!)
sim_pid=$!
for _ in $(seq 100); do grep -q listening "$scratch/sim.out" 2>/dev/null && break; sleep 0.1; done
sim_url=$(grep -o 'http://[0-9.:]*' "$scratch/sim.out" | head -1)
[ -n "$sim_url" ] || { echo "error: the simulator did not start; see $scratch/sim.log" >&2; exit 1; }

gateway_urls=()
watch="$sim_pid"
for i in $(seq "$GATEWAYS"); do
  DATABASE_URL="$db_url" REDIS_URL="$REDIS_URL" FLOODGATE_LISTEN=127.0.0.1:0 \
  FLOODGATE_PAYMENT_URL="$sim_url" FLOODGATE_WEBHOOK_SECRET="$secret" FLOODGATE_ORGANIZER_KEY="$key" \
  FLOODGATE_TRUSTED_PROXIES=127.0.0.0/8 FLOODGATE_DEMO=false FLOODGATE_LOG=json \
  FLOODGATE_SOCKETS_PER_ADDRESS=100000 \
  RUST_LOG="${GATEWAY_LOG:-warn,gateway=info}" \
    "$bin/gateway" 2>"$scratch/gateway-$i.log" &
  pids+=($!)
  watch="$watch,$!"
  addr=""
  for _ in $(seq 300); do
    addr=$(grep -o '"addr":"[0-9.:]*"' "$scratch/gateway-$i.log" 2>/dev/null | head -1 | cut -d'"' -f4) || true
    [ -n "$addr" ] && break
    kill -0 "${pids[-1]}" 2>/dev/null || break
    sleep 0.1
  done
  [ -n "$addr" ] || { echo "error: gateway $i did not start; its log:" >&2; tail -20 "$scratch/gateway-$i.log" >&2; exit 1; }
  gateway_urls+=("--gateway" "http://$addr")
done
direct_urls=("${gateway_urls[@]}")

# With SOAK_PROXY=nginx every buyer reaches the gateways through nginx (on a free loopback port).
case "${SOAK_PROXY:-}" in
  "") ;;
  nginx)
    upstreams=()
    for ((g = 1; g < ${#gateway_urls[@]}; g += 2)); do
      upstreams+=(--upstream "${gateway_urls[$g]#http://}")
    done
    proxy_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    bash deploy/nginx/start.sh --listen "127.0.0.1:$proxy_port" --prefix "$scratch/nginx" \
      "${upstreams[@]}" 2>"$scratch/nginx.log" &
    pids+=($!)
    watch="$watch,$!"
    for _ in $(seq 100); do
      curl -fsS -o /dev/null "http://127.0.0.1:$proxy_port/healthz" 2>/dev/null && break
      kill -0 "${pids[-1]}" 2>/dev/null || break
      sleep 0.1
    done
    curl -fsS -o /dev/null "http://127.0.0.1:$proxy_port/healthz" \
      || { echo "error: nginx did not start; its log:" >&2; cat "$scratch/nginx.log" "$scratch/nginx/error.log" >&2 2>/dev/null; exit 1; }
    gateway_urls=("--gateway" "http://127.0.0.1:$proxy_port" "--door-log" "$scratch/nginx/joins.log")
    ;;
  *) echo "error: SOAK_PROXY=$SOAK_PROXY: only nginx is known" >&2; exit 2 ;;
esac

# Every fault on: latency, declines, lost answers, 5xx, duplicated and reordered webhooks.
first_gateway="${gateway_urls[1]}"
curl -fsS -X POST "$sim_url/_sim/knobs" -H 'content-type: application/json' -d "{
  \"webhook_url\": \"$first_gateway/api/payments/webhook\",
  \"latency_min_ms\": 2, \"latency_max_ms\": 40, \"slow_ms\": 1500,
  \"decline_rate\": ${SIM_DECLINE_RATE:-0.02}, \"lost_rate\": ${SIM_LOST_RATE:-0.02},
  \"error_rate\": ${SIM_ERROR_RATE:-0.02},
  \"webhook_delay_ms\": 20, \"webhook_duplicate_rate\": 0.2,
  \"webhook_out_of_order\": true, \"reorder_window_ms\": 200
}" >/dev/null

# SOAK_PERF: a flat profile of the whole machine (gateway, PostgreSQL, Redis, nginx, the soak),
# sampled 99 times a second per core; the report is written once the soak ends.
perf_pid=""
if [ -n "${SOAK_PERF:-}" ]; then
  command -v perf >/dev/null || { echo "error: SOAK_PERF needs perf (apt-get install linux-perf)" >&2; exit 1; }
  perf record -a -F 99 -o "$scratch/perf.data" -q 2>"$scratch/perf.log" &
  perf_pid=$!
fi

# SOAK_NICE=N runs the soak at that niceness: on one small machine the load generator for a
# 500k crowd costs more CPU than the gateway it measures, and would otherwise starve it.
status=0
nice -n "${SOAK_NICE:-0}" "$bin/soak" "${gateway_urls[@]}" --organizer-key "$key" --database-url "$db_url" \
  --sim-url "$sim_url" --watch-pid "$watch" "$@" || status=$?
if [ -n "${SOAK_METRICS:-}" ]; then
  for ((g = 1; g < ${#direct_urls[@]}; g += 2)); do
    echo "# ${direct_urls[$g]}/metrics"
    curl -fsS "${direct_urls[$g]}/metrics" || echo "# (no answer)"
  done >"$SOAK_METRICS"
  echo "gateway metrics: $SOAK_METRICS" >&2
fi
if [ -n "$perf_pid" ]; then
  kill -INT "$perf_pid" 2>/dev/null || true
  wait "$perf_pid" 2>/dev/null || true
  # `head` closes the pipe early; perf ending on SIGPIPE is not a failed report.
  top() { perf report -i "$scratch/perf.data" --stdio --no-children --percentage absolute "$@" 2>/dev/null \
    | grep -v '^#' | grep -v '^$' | sed 's/ *$//' | cut -c1-150 | head -"${PERF_TOP:-25}" || true; }
  gateway_pids=$(IFS=,; echo "${pids[*]:1:$GATEWAYS}")
  {
    echo "# perf: every process on the machine during the soak, 99 samples/s per core;"
    echo "# shares are of all samples (idle included)"
    echo "## by command (tokio-rt-worker: the gateway, the soak and the simulator)"
    top --sort comm
    echo "## the gateway (pids $gateway_pids), by function"
    top --pid "$gateway_pids" --sort dso,symbol
    for comm in postgres redis-server nginx; do
      echo "## $comm, by function"
      top --comms "$comm" --sort dso,symbol
    done
  } >"$SOAK_PERF"
  echo "perf profile: $SOAK_PERF" >&2
fi
exit "$status"
