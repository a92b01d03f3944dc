#!/usr/bin/env bash
# Starts nginx in the foreground with a configuration rendered into a scratch prefix: what the
# tests and the soak run. Arguments go to render.sh (--listen, --prefix, --upstream …).
#
#   bash deploy/nginx/start.sh --listen 127.0.0.1:8088 --prefix /tmp/fg-nginx --upstream 127.0.0.1:8080
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
prefix=""
args=("$@")
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix="$2"; shift 2 ;;
    *) shift ;;
  esac
done
[ -n "$prefix" ] || { echo "start.sh: --prefix DIR is required" >&2; exit 2; }
nginx="${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}"
[ -x "$nginx" ] || { echo "error: nginx is not installed (apt-get install nginx, or bash scripts/test-tools.sh)" >&2; exit 1; }
mkdir -p "$prefix"
# Run as root, nginx's workers become `nobody`: they must reach the prefix, through every folder
# above it. A cache they cannot write fails every snapshot read, so this is checked first.
chmod 755 "$prefix"
if [ "$(id -u)" = 0 ] && ! setpriv --reuid=nobody --regid=nogroup --clear-groups test -x "$prefix"; then
  echo "error: nginx's workers (nobody) cannot reach $prefix: every folder above it must be searchable (chmod o+x)" >&2
  exit 1
fi
bash "$here/render.sh" "${args[@]}" >"$prefix/nginx.conf"
"$nginx" -t -q -p "$prefix" -c "$prefix/nginx.conf"
exec "$nginx" -p "$prefix" -c "$prefix/nginx.conf" -g 'daemon off;'
