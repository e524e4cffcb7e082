#!/usr/bin/env bash
# HTTP benchmarks of `swarmscore serve` against a bare net/http server that
# writes the same bytes (testdata/bare). Loopback only, bounded duration.
#
#   internal/httpapi/testdata/bench.sh sqlite            # embedded store
#   internal/httpapi/testdata/bench.sh postgres DSN      # a scratch database
#
# Needs wrk (apt-get install -y wrk). RUNS (default 3) and DURATION (10s)
# may be set in the environment. Prints one wrk summary per run.
set -euo pipefail
cd "$(dirname "$0")/../../.."
backend=${1:-sqlite}
runs=${RUNS:-3}
dur=${DURATION:-10s}
work=$(mktemp -d)
cleanup() {
  [ -n "${bare_pid:-}" ] && kill "$bare_pid" 2>/dev/null
  [ -n "${serve_pid:-}" ] && kill "$serve_pid" 2>/dev/null
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/swarmscore" ./cmd/swarmscore
go build -o "$work/bare" ./internal/httpapi/testdata/bare

export SWARMSCORE_SIGNING_KEY=bench-signing-key-0123456789abcdefghijklmnop
export SWARMSCORE_ADMIN_TOKEN=bench-admin-token-0123456789abcdefghijklmnop
case "$backend" in
  sqlite) db="sqlite:$work/bench.db" ;;
  postgres) db=${2:?postgres DSN} ;;
  *) echo "usage: $0 sqlite | postgres DSN" >&2; exit 2 ;;
esac
"$work/swarmscore" serve --addr 127.0.0.1:18080 --db "$db" --rate-limit 0 2>"$work/serve.log" &
serve_pid=$!
bare_pid=
for _ in $(seq 1 100); do curl -sf http://127.0.0.1:18080/readyz >/dev/null && break; sleep 0.1; done

# 80/76 Conduit sessions and 40/38 AP2 transactions: score 760.
t=$(date -u -d '1 day ago' +%Y-%m-%dT%H:%M:%SZ)
{
  for i in $(seq 0 79); do s=VERIFIED; [ "$i" -ge 76 ] && s=FAILED
    echo "{\"type\":\"conduit_session\",\"id\":\"c$i\",\"agent_id\":\"agent-1\",\"status\":\"$s\",\"started_at\":\"$t\",\"completed_at\":\"$t\"}"; done
  for i in $(seq 0 39); do s=SETTLED; [ "$i" -ge 38 ] && s=DISPUTED
    echo "{\"type\":\"ap2_transaction\",\"id\":\"t$i\",\"provider_id\":\"agent-1\",\"buyer_id\":\"b\",\"status\":\"$s\",\"escrow_amount_cents\":1000,\"started_at\":\"$t\",\"settled_at\":\"$t\"}"; done
} | curl -sf -H "Authorization: Bearer $SWARMSCORE_ADMIN_TOKEN" --data-binary @- http://127.0.0.1:18080/swarmscore/events >/dev/null

curl -sf http://127.0.0.1:18080/swarmscore/agent-1/certificate >"$work/cert.json"
printf '{"certificate":%s,"agent_id":"agent-1"}' "$(cat "$work/cert.json")" >"$work/verify-body.json"
curl -sf --data-binary @"$work/verify-body.json" http://127.0.0.1:18080/swarmscore/verify >"$work/verify.json"
grep -q '"valid":true' "$work/verify.json" || { echo "verify failed: $(cat "$work/verify.json")" >&2; exit 1; }
cat >"$work/post.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local f = io.open("$work/verify-body.json", "rb"); wrk.body = f:read("*a"); f:close()
LUA

bare() { # bare FILE: restart the baseline serving FILE
  if [ -n "$bare_pid" ]; then kill "$bare_pid"; wait "$bare_pid" 2>/dev/null || true; fi
  "$work/bare" -addr 127.0.0.1:18081 -file "$1" 2>/dev/null &
  bare_pid=$!
  for _ in $(seq 1 50); do curl -sf -o /dev/null http://127.0.0.1:18081/ && break; sleep 0.1; done
}
run() { # run LABEL URL [wrk args]
  local label=$1 url=$2; shift 2
  echo "### $label"
  wrk -t2 -c32 -d"$dur" --latency "$@" "$url" | grep -E 'Requests/sec|^ +99%|^ +50%|Non-2xx'
}
for r in $(seq 1 "$runs"); do
  bare "$work/cert.json"
  run "run $r GET certificate (serve, $backend)" http://127.0.0.1:18080/swarmscore/agent-1/certificate
  run "run $r GET certificate (bare)" http://127.0.0.1:18081/swarmscore/agent-1/certificate
  bare "$work/verify.json"
  run "run $r POST verify (serve, $backend)" http://127.0.0.1:18080/swarmscore/verify -s "$work/post.lua"
  run "run $r POST verify (bare)" http://127.0.0.1:18081/swarmscore/verify -s "$work/post.lua"
done
