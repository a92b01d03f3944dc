#!/usr/bin/env bash
# Writes a whole nginx.conf for Floodgate from floodgate.conf.in to standard output.
#
#   bash deploy/nginx/render.sh --listen 0.0.0.0:80 --prefix /var/lib/floodgate-nginx \
#     --upstream 10.0.0.11:8080 --upstream 10.0.0.12:8080 > /etc/nginx/nginx.conf
#
# --prefix is a folder nginx may write to (its pid file, error log, temporary files and the
# snapshot cache); --workers defaults to `auto` (one per core).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
listen="" prefix="" workers="auto"
upstreams=()
while [ $# -gt 0 ]; do
  case "$1" in
    --listen) listen="$2"; shift 2 ;;
    --prefix) prefix="$2"; shift 2 ;;
    --upstream) upstreams+=("$2"); shift 2 ;;
    --workers) workers="$2"; shift 2 ;;
    *) echo "render.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -n "$listen" ] || { echo "render.sh: --listen HOST:PORT is required" >&2; exit 2; }
[ -n "$prefix" ] || { echo "render.sh: --prefix DIR is required" >&2; exit 2; }
[ ${#upstreams[@]} -gt 0 ] || { echo "render.sh: at least one --upstream HOST:PORT" >&2; exit 2; }
servers=""
for u in "${upstreams[@]}"; do
  servers+="        server $u max_fails=0;"$'\n'
done
servers="${servers%$'\n'}"
template="$(cat "$here/floodgate.conf.in")"
template="${template//@LISTEN@/$listen}"
template="${template//@PREFIX@/$prefix}"
template="${template//@WORKERS@/$workers}"
printf '%s\n' "${template//@UPSTREAMS@/$servers}"
