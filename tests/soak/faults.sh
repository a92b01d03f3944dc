#!/usr/bin/env bash
# A soak under one fault, everything private on loopback: a throwaway PostgreSQL cluster
# (initdb + pg_ctl on a free port), a throwaway Redis (single node, or a 3-master Redis Cluster),
# the payment simulator, N gateways on fixed free ports, then `soak` against all of them; on
# cue (FAULT_AT_S seconds after the soak starts) one fault is applied. Prints the timeline of
# what happened when (with the event's admission figures every 3 s) and keeps the JSON report.
# Everything started here is stopped and removed on exit.
#
#   bash tests/soak/faults.sh FAULT [soak flags...]        # figures and timelines: reports/FAULTS.md
#
# FAULT: none | kill-gateway | restart-redis | restart-postgres | pause-sim | stop-sim | slow-sim
#        | stop-gateway | stop-redis | stop-postgres (SIGSTOP for PAUSE_S, then SIGCONT)
# Environment:
#   GATEWAYS (2)            gateway processes; the fault hits the last one, webhooks and the
#                           organizer API use the first (as a load balancer's health check would)
#   FAULT_AT_S (40)         when the fault starts, seconds after the soak starts
#   RESTART_AFTER_S (-)     kill-gateway: start the killed gateway again (same port) this much later
#   PAUSE_S (30)            pause-sim / stop-*: how long the part stays paused / stopped
#   SLOW_MS (8000-12000)    slow-sim: latency range "MIN-MAX" of every simulator call ...
#   SLOW_FOR_S (60)         ... for this long, then back to 2-40 ms
#   REDIS_CLUSTER=1         a 3-master Redis Cluster instead of one node
#   FLOODGATE_BACKPRESSURE, FLOODGATE_BACKPRESSURE_HOLD_P99_MS, FLOODGATE_BACKPRESSURE_OUTBOX_AGE_S
#                           passed to the gateways when set
#   TIMELINE (-)            also write the timeline to this file
#   SOAK_KEEP_LOGS=1        keep the logs and data directories
set -euo pipefail
cd "$(dirname "$0")/../.."

fault="${1:?usage: faults.sh none|kill-gateway|restart-redis|restart-postgres|pause-sim|stop-sim|slow-sim|stop-gateway|stop-redis|stop-postgres [soak flags]}"
shift
case "$fault" in
  none | kill-gateway | restart-redis | restart-postgres | pause-sim | stop-sim | slow-sim \
    | stop-gateway | stop-redis | stop-postgres) ;;
  *) echo "error: unknown fault $fault" >&2; exit 2 ;;
esac
GATEWAYS="${GATEWAYS:-2}"
FAULT_AT_S="${FAULT_AT_S:-40}"
PAUSE_S="${PAUSE_S:-30}"
SLOW_MS="${SLOW_MS:-8000-12000}"
SLOW_FOR_S="${SLOW_FOR_S:-60}"

cargo build --workspace --all-features --locked --bins

scratch=$(mktemp -d /tmp/floodgate-faults.XXXXXX)
chmod 777 "$scratch"
timeline="$scratch/timeline"
: >"$timeline"
# Every process started here, by pid (a file: the fault runs in a background subshell).
track() { echo "$1" >>"$scratch/pids"; }
pg_bin=$(dirname "$(readlink -f "$(command -v pg_ctl)")")
# PostgreSQL refuses to run as root: its commands run as the postgres user then.
run_pg() { if [ "$(id -u)" = 0 ]; then su postgres -s /bin/sh -c "$*"; else sh -c "$*"; fi; }

cleanup() {
  set +e
  kill -CONT "${sim_pid:-0}" 2>/dev/null
  [ -f "$scratch/pids" ] && while read -r pid; do kill "$pid" 2>/dev/null; done <"$scratch/pids"
  [ -f "$scratch/pids" ] && while read -r pid; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  done <"$scratch/pids"
  [ -d "$scratch/pg" ] && run_pg "'$pg_bin/pg_ctl' -D '$scratch/pg' -m immediate stop" >/dev/null 2>&1
  if [ "${SOAK_KEEP_LOGS:-0}" = 1 ]; then echo "logs kept in $scratch" >&2; else rm -rf "$scratch"; fi
}
trap cleanup EXIT INT TERM

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
t0=$(date +%s.%N)
mark() {
  local line
  line=$(printf 'T+%6.1fs  %s' "$(echo "$(date +%s.%N) - $t0" | bc)" "$*")
  echo "$line" >>"$timeline"
  echo "[faults] $line" >&2
}

# --- PostgreSQL: a private cluster (never the shared server) -------------------------------
pg_port=$(free_port)
run_pg "'$pg_bin/initdb' -D '$scratch/pg' -U postgres -A trust" >/dev/null
pg_opts="-p $pg_port -k $scratch -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=off"
run_pg "'$pg_bin/pg_ctl' -D '$scratch/pg' -o '$pg_opts' -l '$scratch/pg.log' -w start" >/dev/null
psql "postgres://postgres@127.0.0.1:$pg_port/postgres" -qc 'create database floodgate' >/dev/null
db_url="postgres://postgres@127.0.0.1:$pg_port/floodgate"

# --- Redis: no persistence, so a restart starts empty ---------------------------------------
start_redis() { # port [extra flags]
  local port=$1
  shift
  (cd "$scratch" && exec redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
    --logfile "$scratch/redis-$port.log" "$@") &
  track $!
  redis_pid=$!
  for _ in $(seq 50); do redis-cli -p "$port" ping 2>/dev/null | grep -q PONG && return 0; sleep 0.1; done
  echo "error: redis-server on $port did not start; see $scratch/redis-$port.log" >&2
  exit 1
}
if [ "${REDIS_CLUSTER:-0}" = 1 ]; then
  nodes=()
  for i in 1 2 3; do
    # A cluster node also listens on its port + 10000 (the cluster bus): keep that valid.
    port=$(free_port)
    while [ "$port" -gt 55000 ]; do port=$(free_port); done
    mkdir -p "$scratch/redis-$i"
    start_redis "$port" --cluster-enabled yes --cluster-config-file "$scratch/redis-$i/nodes.conf" \
      --cluster-node-timeout 5000
    nodes+=("127.0.0.1:$port")
  done
  redis-cli --cluster create "${nodes[@]}" --cluster-replicas 0 --cluster-yes >"$scratch/cluster.log"
  for _ in $(seq 100); do
    redis-cli -p "${nodes[0]#*:}" cluster info | grep -q 'cluster_state:ok' && break
    sleep 0.1
  done
  redis_url=$(printf 'redis://%s,' "${nodes[@]}")
  redis_url="${redis_url%,}"
  redis_port="${nodes[0]#*:}"
else
  redis_port=$(free_port)
  start_redis "$redis_port"
  redis_url="redis://127.0.0.1:$redis_port"
fi

# --- the payment simulator ------------------------------------------------------------------
secret="whsec_faults_$(od -An -N16 -tx1 /dev/urandom | tr -d " \n")"
key="org_faults_$$_$RANDOM$RANDOM"
token_secret="tok_faults_$(od -An -N16 -tx1 /dev/urandom | tr -d " \n")"
target/debug/simulator --listen 127.0.0.1:0 --webhook-secret "$secret" --seed $$ \
  >"$scratch/sim.out" 2>"$scratch/sim.log" &
track $!
sim_pid=$!
for _ in $(seq 100); do grep -q listening "$scratch/sim.out" 2>/dev/null && break; sleep 0.1; done
sim_url=$(grep -o 'http://[0-9.:]*' "$scratch/sim.out" | head -1)
[ -n "$sim_url" ] || { echo "error: the simulator did not start; see $scratch/sim.log" >&2; exit 1; }

# --- gateways, each on a fixed port so a killed one can come back at the same address -------
gateway_ports=()
gateway_pids=()
start_gateway() { # index (1-based)
  local i=$1 port=${gateway_ports[$(($1 - 1))]}
  local extra=()
  for var in FLOODGATE_BACKPRESSURE FLOODGATE_BACKPRESSURE_HOLD_P99_MS FLOODGATE_BACKPRESSURE_OUTBOX_AGE_S; do
    [ -n "${!var:-}" ] && extra+=("$var=${!var}")
  done
  env DATABASE_URL="$db_url" REDIS_URL="$redis_url" FLOODGATE_LISTEN="127.0.0.1:$port" \
    FLOODGATE_PAYMENT_URL="$sim_url" FLOODGATE_WEBHOOK_SECRET="$secret" FLOODGATE_ORGANIZER_KEY="$key" \
    FLOODGATE_TOKEN_SECRET="$token_secret" FLOODGATE_TRUSTED_PROXIES=127.0.0.0/8 FLOODGATE_DEMO=false \
    FLOODGATE_SOCKETS_PER_ADDRESS=100000 \
    FLOODGATE_LOG=json RUST_LOG="${GATEWAY_LOG:-warn,gateway=info}" "${extra[@]}" \
    target/debug/gateway 2>>"$scratch/gateway-$i.log" &
  track $!
  gateway_pids[$((i - 1))]=$!
  for _ in $(seq 300); do
    curl -fsS -o /dev/null "http://127.0.0.1:$port/healthz" 2>/dev/null && return 0
    kill -0 "$!" 2>/dev/null || break
    sleep 0.1
  done
  echo "error: gateway $i did not start; its log:" >&2
  tail -20 "$scratch/gateway-$i.log" >&2
  exit 1
}
gateway_urls=()
watch="$sim_pid"
for i in $(seq "$GATEWAYS"); do
  gateway_ports+=("$(free_port)")
  start_gateway "$i"
  watch="$watch,${gateway_pids[$((i - 1))]}"
  gateway_urls+=("--gateway" "http://127.0.0.1:${gateway_ports[$((i - 1))]}")
done
first="http://127.0.0.1:${gateway_ports[0]}"
victim=$GATEWAYS

# Every fault on, as run.sh: latency, declines, lost answers, 5xx, duplicated and reordered webhooks.
knobs() { curl -fsS -X POST "$sim_url/_sim/knobs" -H 'content-type: application/json' -d "$1" >/dev/null; }
knobs "{
  \"webhook_url\": \"$first/api/payments/webhook\",
  \"latency_min_ms\": 2, \"latency_max_ms\": 40, \"slow_ms\": 1500,
  \"decline_rate\": ${SIM_DECLINE_RATE:-0.02}, \"lost_rate\": ${SIM_LOST_RATE:-0.02},
  \"error_rate\": ${SIM_ERROR_RATE:-0.02},
  \"webhook_delay_ms\": 20, \"webhook_duplicate_rate\": 0.2,
  \"webhook_out_of_order\": true, \"reorder_window_ms\": 200
}"

event="faults-${fault}-$$"
# The event's figures every 3 s from the first gateway: offers, sessions, seats, backpressure.
sample() {
  while sleep 3; do
    s=$(curl -fsS -m 5 -H "authorization: Bearer $key" "$first/api/admin/events/$event/stats" 2>/dev/null) || {
      mark "stats: no answer"
      continue
    }
    mark "stats: $(jq -c '{admitted: .queue.admitted_total, waiting: .queue.waiting, active: .queue.active,
      outflow_per_min: .queue.outflow_per_min, sold: .seats.sold, paying: .seats.paying,
      backpressure: .backpressure}' <<<"$s" 2>/dev/null | tr -d ' ')"
  done
}

# SIGSTOP the processes for PAUSE_S, then SIGCONT: a part that hangs rather than refuses.
stop_for() { # description pid...
  local what=$1
  shift
  kill -STOP "$@"
  mark "fault: SIGSTOP $what"
  sleep "$PAUSE_S"
  kill -CONT "$@"
  mark "recovery: SIGCONT $what"
}

apply_fault() {
  sleep "$FAULT_AT_S"
  case "$fault" in
    none) ;;
    kill-gateway)
      kill -9 "${gateway_pids[$((victim - 1))]}"
      mark "fault: SIGKILL gateway $victim (pid ${gateway_pids[$((victim - 1))]}, :${gateway_ports[$((victim - 1))]}); its buyers fail over"
      if [ -n "${RESTART_AFTER_S:-}" ]; then
        sleep "$RESTART_AFTER_S"
        start_gateway "$victim"
        mark "recovery: gateway $victim started again on :${gateway_ports[$((victim - 1))]} (pid ${gateway_pids[$((victim - 1))]})"
      fi
      ;;
    restart-redis)
      kill -9 "$redis_pid"
      mark "fault: SIGKILL redis-server :$redis_port (no persistence: its data is gone)"
      for _ in $(seq 50); do redis-cli -p "$redis_port" ping >/dev/null 2>&1 || break; sleep 0.1; done
      start_redis "$redis_port"
      mark "recovery: a fresh, empty redis-server answers on :$redis_port"
      ;;
    restart-postgres)
      mark "fault: pg_ctl restart -m fast"
      run_pg "'$pg_bin/pg_ctl' -D '$scratch/pg' -m fast -w restart -o '$pg_opts' -l '$scratch/pg.log'" >/dev/null
      mark "recovery: PostgreSQL answers again"
      ;;
    pause-sim)
      curl -fsS -X POST "$sim_url/_sim/pause" >/dev/null
      mark "fault: simulator paused (every call waits)"
      sleep "$PAUSE_S"
      curl -fsS -X POST "$sim_url/_sim/resume" >/dev/null
      mark "recovery: simulator resumed"
      ;;
    stop-sim) stop_for "simulator" "$sim_pid" ;;
    stop-gateway)
      # Its sockets and requests hang.
      stop_for "gateway $victim (:${gateway_ports[$((victim - 1))]})" "${gateway_pids[$((victim - 1))]}"
      ;;
    stop-redis) stop_for "redis-server :$redis_port (data kept, no answers)" "$redis_pid" ;;
    stop-postgres)
      # The postmaster and every backend: a database that hangs rather than refuses.
      pm=$(head -1 "$scratch/pg/postmaster.pid")
      # shellcheck disable=SC2046
      stop_for "PostgreSQL (postmaster and backends)" "$pm" $(pgrep -P "$pm")
      ;;
    slow-sim)
      knobs "{\"latency_min_ms\": ${SLOW_MS%-*}, \"latency_max_ms\": ${SLOW_MS#*-}}"
      mark "fault: simulator latency ${SLOW_MS} ms per call"
      sleep "$SLOW_FOR_S"
      knobs '{"latency_min_ms": 2, "latency_max_ms": 40}'
      mark "recovery: simulator latency back to 2-40 ms"
      ;;
  esac
}

t0=$(date +%s.%N)
mark "start: ${GATEWAYS} gateways (${gateway_ports[*]}), redis $redis_url, postgres :$pg_port, simulator $sim_url; fault $fault at T+${FAULT_AT_S}s"
sample &
sampler=$!
apply_fault &
applier=$!
status=0
target/debug/soak "${gateway_urls[@]}" --organizer-key "$key" --database-url "$db_url" \
  --sim-url "$sim_url" --watch-pid "$watch" --event "$event" --quiet "$@" || status=$?
mark "soak ended: exit $status"
kill "$sampler" "$applier" 2>/dev/null || true
wait "$sampler" "$applier" 2>/dev/null || true

echo "== timeline ($fault) ==" >&2
cat "$timeline" >&2
[ -n "${TIMELINE:-}" ] && cp "$timeline" "$TIMELINE"
exit "$status"
