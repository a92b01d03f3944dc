#!/usr/bin/env bash
# A soak against a throwaway PostgreSQL with pg_stat_statements loaded, then the statements
# that took the database's time: calls, mean and total milliseconds, rows, shared blocks.
#
#   bash tests/soak/pg-stats.sh OUT.txt --arrivals 500000 ...   # the rest goes to run.sh
#
# The cluster lives in a temporary directory on PG_STATS_PORT (default 5499) and is removed on
# exit; REDIS_URL and every run.sh setting (SOAK_RELEASE, SOAK_NICE, ...) pass through.
set -euo pipefail
cd "$(dirname "$0")/../.."

out="${1:?usage: pg-stats.sh OUT.txt [run.sh arguments]}"
shift
port="${PG_STATS_PORT:-5499}"
pg_bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
[ -x "$pg_bin/initdb" ] || { echo "error: PostgreSQL's server binaries are not installed" >&2; exit 1; }

dir=$(mktemp -d /tmp/floodgate-pgstats.XXXXXX)
chown postgres "$dir" 2>/dev/null || true
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
cleanup() {
  as_pg "$pg_bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT INT TERM

as_pg "$pg_bin/initdb" -D "$dir/data" -U postgres --auth=trust >/dev/null
# The server's settings as the machine's own cluster has them, plus the statement statistics.
cat >>"$dir/data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir'
max_connections = 300
shared_buffers = 512MB
shared_preload_libraries = 'pg_stat_statements'
pg_stat_statements.track = all
pg_stat_statements.max = 2000
CONF
as_pg "$pg_bin/pg_ctl" -D "$dir/data" -l "$dir/pg.log" -w start >/dev/null
url="postgres://postgres@127.0.0.1:$port/postgres"
psql "$url" -qc "create extension pg_stat_statements" >/dev/null

start=$(date +%s)
status=0
DATABASE_URL="$url" bash tests/soak/run.sh "$@" || status=$?

{
  echo "# pg_stat_statements after: tests/soak/run.sh $*"
  echo "# soak exit status $status, $(( $(date +%s) - start )) s wall"
  psql "$url" -Atc "select 'total execution ms: ' || round(sum(total_exec_time)::numeric) || ', calls: ' || sum(calls) from pg_stat_statements"
  echo
  psql "$url" -P pager=off -c "
    select calls, round(mean_exec_time::numeric, 3) as mean_ms,
           round(total_exec_time::numeric) as total_ms,
           round((100 * total_exec_time / sum(total_exec_time) over ())::numeric, 1) as pct,
           rows, shared_blks_hit + shared_blks_read as blocks,
           left(regexp_replace(query, '\s+', ' ', 'g'), 160) as query
      from pg_stat_statements
     order by total_exec_time desc
     limit 25"
} >"$out"
cat "$out"
exit "$status"
