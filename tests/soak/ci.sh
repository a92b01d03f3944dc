#!/usr/bin/env bash
# The reduced soak the test suite runs: 20,000 arrivals for 2,000 seats with every knob
# non-zero, against one gateway on PostgreSQL + Redis + the HTTP simulator (see run.sh).
# Exits non-zero on any breach of the verdict, including a sale that did not finish in time.
# Arrivals are spread over a minute (about 330 joins a second): the debug-built gateway on a slow
# 2-core machine answers about 360 a second, and a join shed beyond that comes back behind later
# arrivals, which the FIFO check would count against the queue rather than against the machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
exec bash tests/soak/run.sh --arrivals 20000 --seat-count 2000 --window-s 60 --opens-in-s 6 \
  --prequeue-share 0.1 --ws-share 0.5 --abandon-offer-share 0.03 --abandon-claimed-share 0.02 \
  --abandon-hold-share 0.02 --two-tab-share 0.02 --declined-share 0.05 --slow-share 0.03 \
  --lost-share 0.02 --error-share 0.02 --rate-per-min 9000 --max-active 1500 --offer-s 30 \
  --hold-ttl-s 8 --max-hold-s 20 --resolve-s 3 --abandon-s 10 --max-duration-s 300 \
  --settle-s 30 --quiet --json target/soak-ci.json "$@"
