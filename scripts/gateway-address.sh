# Sourced by scripts that start a gateway of their own on 127.0.0.1:0:
#   gateway_address LOG PID  prints the address the gateway logged as listening, waiting up to
#   10 minutes (a first run may compile it); exits the caller with the log shown when the gateway
#   dies or never listens.
gateway_address() {
  local log="$1" pid="$2" addr=""
  for _ in $(seq 1 1200); do
    addr="$(grep -a -m1 'listening' "$log" | grep -aoE '127\.0\.0\.1:[0-9]+' | head -n1 || true)"
    [ -n "$addr" ] && { echo "$addr"; return 0; }
    if ! kill -0 "$pid" 2>/dev/null; then
      cat "$log" >&2
      echo "the gateway exited before listening" >&2
      exit 1
    fi
    sleep 0.5
  done
  cat "$log" >&2
  echo "the gateway never logged its address" >&2
  exit 1
}
