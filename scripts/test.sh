#!/usr/bin/env bash
# The whole test suite, as the README's second set-up command runs it.
#
# It installs what the tests need when missing (scripts/test-tools.sh: Debian packages when run as
# root, else it names the command; a Python environment with Stripe's library and Valkey), then
# finds or starts PostgreSQL, Redis, a Redis Cluster, Valkey and a Valkey cluster
# (scripts/test-services.sh), stopped again on exit. Arguments go to `cargo test`; for one part of
# the suite alone, see scripts/with-services.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/test-services.sh

cargo test --workspace --all-features --locked "$@"

# The pages, in headless Chromium, against a gateway on the embedded default.
# Same features as the test build above, so nothing is compiled twice.
cargo build --workspace --all-features --locked --bin gateway
FLOODGATE_GATEWAY_CMD=target/debug/gateway bash tests/pages/run.sh

# The reduced soak: a whole on-sale through the public API, judged from the rows and the
# payment ledger; any breach fails the suite.
bash tests/soak/ci.sh

# schemathesis against the served OpenAPI document, on a gateway of the build above; any
# failure fails the suite (scripts/schemathesis.toml holds what OpenAPI cannot state).
FLOODGATE_GATEWAY_CMD=target/debug/gateway bash scripts/schemathesis.sh

# The fuzz targets (nightly), each for FUZZ_SECONDS (30 by default) from the committed corpus.
bash scripts/fuzz.sh
