#!/usr/bin/env bash
# Runs one command with everything the test suite has: the tools installed (scripts/test-tools.sh)
# and the servers found or started (scripts/test-services.sh), stopped when the command ends. For
# a part of the suite, e.g.:
#   bash scripts/with-services.sh cargo test -p admission --test conformance
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || { echo "usage: bash scripts/with-services.sh COMMAND [ARGS…]" >&2; exit 2; }
source scripts/test-services.sh
"$@"
