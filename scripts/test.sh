#!/usr/bin/env bash
# The whole test suite, as the README's second set-up command runs it.
#
# Tests talk to a real PostgreSQL and a real Redis. This script uses DATABASE_URL and REDIS_URL
# when they answer (defaulting to the local servers on their standard ports); otherwise it starts
# throwaway servers from the installed binaries under a temporary folder and removes them after;
# otherwise it stops and names the Debian packages to install.
set -euo pipefail
cd "$(dirname "$0")/.."

export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}"
export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379}"

scratch=""
cleanup() {
  if [ -n "$scratch" ]; then
    [ -f "$scratch/redis.pid" ] && kill "$(cat "$scratch/redis.pid")" 2>/dev/null || true
    if [ -d "$scratch/pg" ]; then
      su postgres -s /bin/sh -c "pg_ctl -D '$scratch/pg' -m immediate stop" >/dev/null 2>&1 \
        || pg_ctl -D "$scratch/pg" -m immediate stop >/dev/null 2>&1 || true
    fi
    rm -rf "$scratch"
  fi
}
trap cleanup EXIT
scratch_dir() { [ -n "$scratch" ] || scratch=$(mktemp -d /tmp/floodgate-test.XXXXXX); chmod 777 "$scratch"; }

find_pg_bin() {
  for dir in "$(dirname "$(command -v pg_ctl 2>/dev/null || echo /nonexistent/x)")" /usr/lib/postgresql/*/bin; do
    [ -x "$dir/pg_ctl" ] && [ -x "$dir/initdb" ] && { echo "$dir"; return 0; }
  done
  return 1
}

pg_answers() { psql "$DATABASE_URL" -Atqc 'select 1' >/dev/null 2>&1; }
redis_answers() { redis-cli -u "$REDIS_URL" ping 2>/dev/null | grep -q PONG; }

command -v psql >/dev/null || { echo "error: psql not found; install PostgreSQL: apt-get install -y postgresql postgresql-client" >&2; exit 1; }
command -v redis-cli >/dev/null || { echo "error: redis-cli not found; install Redis: apt-get install -y redis-server redis-tools" >&2; exit 1; }

if ! pg_answers; then
  bin=$(find_pg_bin) || { echo "error: PostgreSQL does not answer at $DATABASE_URL and no server binaries were found; install it: apt-get install -y postgresql" >&2; exit 1; }
  scratch_dir
  port=55432
  echo "PostgreSQL does not answer at $DATABASE_URL: starting a throwaway server on 127.0.0.1:$port"
  run_pg() { if [ "$(id -u)" = 0 ]; then su postgres -s /bin/sh -c "$*"; else sh -c "$*"; fi; }
  run_pg "'$bin/initdb' -D '$scratch/pg' -U postgres -A trust" >/dev/null
  run_pg "'$bin/pg_ctl' -D '$scratch/pg' -o '-p $port -k $scratch -c listen_addresses=127.0.0.1 -c max_connections=400 -c fsync=off' -l '$scratch/pg.log' -w start" >/dev/null
  psql "postgres://postgres@127.0.0.1:$port/postgres" -qc 'create database test' >/dev/null
  export DATABASE_URL="postgres://postgres@127.0.0.1:$port/test"
  pg_answers || { echo "error: the throwaway PostgreSQL did not start; see $scratch/pg.log" >&2; exit 1; }
fi

if ! redis_answers; then
  command -v redis-server >/dev/null || { echo "error: Redis does not answer at $REDIS_URL and redis-server is not installed; install it: apt-get install -y redis-server" >&2; exit 1; }
  scratch_dir
  port=56379
  echo "Redis does not answer at $REDIS_URL: starting a throwaway server on 127.0.0.1:$port"
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \
    --pidfile "$scratch/redis.pid" --logfile "$scratch/redis.log" >/dev/null
  export REDIS_URL="redis://127.0.0.1:$port"
  for _ in $(seq 50); do redis_answers && break; sleep 0.1; done
  redis_answers || { echo "error: the throwaway Redis did not start; see $scratch/redis.log" >&2; exit 1; }
fi

command -v chromium >/dev/null || { echo "error: the page tests need Chromium; install it: apt-get install -y chromium" >&2; exit 1; }
command -v node >/dev/null || { echo "error: the page tests need Node.js 20+; install it: apt-get install -y nodejs npm" >&2; exit 1; }

# Each test makes its own database (t_<uuid>, t_e2e_<uuid>, soak_…) and leaves it for a look after a
# failure; the next run drops those left over, so repeated runs do not fill the disk.
psql "$DATABASE_URL" -Atqc "select datname from pg_database where datname ~ '^(t_|t_e2e_|soak_)[0-9a-f]{32}$'" 2>/dev/null \
  | while read -r db; do psql "$DATABASE_URL" -qc "drop database if exists \"$db\"" >/dev/null 2>&1 || true; done

echo "testing against DATABASE_URL=$DATABASE_URL REDIS_URL=$REDIS_URL"
cargo test --workspace --all-features --locked "$@"

# The pages, in headless Chromium, against a gateway on the embedded default.
# Same features as the test build above, so nothing is compiled twice.
cargo build --workspace --all-features --locked --bin gateway
FLOODGATE_GATEWAY_CMD=target/debug/gateway bash tests/pages/run.sh

# The reduced soak: a whole on-sale through the public API, judged from the rows and the
# payment ledger; any breach fails the suite.
bash tests/soak/ci.sh
