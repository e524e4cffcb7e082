#!/usr/bin/env bash
# The public read routes of `swarmscore serve` against a bare net/http
# server answering the same bytes (internal/httpapi/testdata/bare; for
# verify, one that reads the body and checks its HMAC-SHA256), over
# loopback with wrk, the two alternating route by route (which goes first
# alternates too), RUNS repetitions; prints each run and, per route, the
# median of the per-pair ratios serve/bare.
#
#   scripts/bench-routes.sh                  # SQLite, then PostgreSQL
#   scripts/bench-routes.sh sqlite           # one back end
#   scripts/bench-routes.sh postgres [DSN]   # default: a scratch database
#                                            # swarmscore_bench_routes at 127.0.0.1:5432,
#                                            # dropped and created here
#
# Needs wrk (apt-get install -y wrk), curl, and psql for PostgreSQL.
# RUNS (default 3), DURATION (default 5s) per wrk run, CONNS (32),
# THREADS (2), ROUTES (default "cert score verify page") and SERVE_BIN (a
# swarmscore binary to measure instead of this tree's, e.g. an earlier
# build) may be set in the environment. Every wrk run is bounded by DURATION and by timeout(1).
# The server runs as `serve` does by default (access log on, to a file),
# with --rate-limit 0.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-3}
dur=${DURATION:-5s}
conns=${CONNS:-32}
threads=${THREADS:-2}
routes=${ROUTES:-cert score verify page}
backends=${1:-sqlite postgres}
[ "$#" -gt 0 ] && shift
pgdsn=${1:-}
work=$(mktemp -d)
serve_pid= bare_pid=
stop() { # stop PID: end one process this script started
  if [ -n "$1" ]; then kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; fi
}
cleanup() {
  stop "$serve_pid"; stop "$bare_pid"
  rm -rf "$work"
}
trap cleanup EXIT

if [ -n "${SERVE_BIN:-}" ]; then cp "$SERVE_BIN" "$work/swarmscore"; else go build -o "$work/swarmscore" ./cmd/swarmscore; fi
go build -o "$work/bare" ./internal/httpapi/testdata/bare
export SWARMSCORE_SIGNING_KEY=bench-signing-key-0123456789abcdefghijklmnop
export SWARMSCORE_ADMIN_TOKEN=bench-admin-token-0123456789abcdefghijklmnop
serve=http://127.0.0.1:18080 bare=http://127.0.0.1:18081

wait_up() { for _ in $(seq 1 100); do curl -sf -o /dev/null "$1" && return 0; sleep 0.1; done; echo "$1 did not come up" >&2; exit 1; }

url() { # url ROUTE BASE
  case "$1" in
    cert) echo "$2/swarmscore/agent-1/certificate" ;;
    score) echo "$2/swarmscore/agent-1" ;;
    verify) echo "$2/swarmscore/verify" ;;
    page) echo "$2/agents/agent-1" ;;
  esac
}

cpu() { # cpu PID: the process's user + system CPU time so far, in clock ticks
  awk '{print $14 + $15}' "/proc/$1/stat"
}

run() { # run BACKEND ROUTE WHICH BASE PID: one wrk run; prints "BACKEND ROUTE WHICH req/s CPU-µs/request"
  local args=()
  [ "$2" = verify ] && args=(-s "$work/post.lua")
  local out before after
  before=$(cpu "$5")
  out=$(timeout 120 wrk -t"$threads" -c"$conns" -d"$dur" "${args[@]}" "$(url "$2" "$4")")
  after=$(cpu "$5")
  if grep -q 'Non-2xx' <<<"$out"; then echo "$1 $2 $3: non-2xx answers" >&2; echo "$out" >&2; exit 1; fi
  echo "$1 $2 $3 $(awk -v ticks=$((after - before)) -v hz="$(getconf CLK_TCK)" '
    / requests in / {n = $1} /Requests\/sec/ {rate = $2}
    END {printf "%s %.1f", rate, ticks / hz * 1e6 / n}' <<<"$out")"
}

bench() { # bench BACKEND DB
  local backend=$1 db=$2 d="$work/$1"
  mkdir -p "$d"
  "$work/swarmscore" serve --addr 127.0.0.1:18080 --db "$db" --rate-limit 0 2>"$d/serve.log" &
  serve_pid=$!
  wait_up "$serve/readyz"
  # agent-1: 80/76 Conduit sessions and 40/38 AP2 transactions over the
  # last 60 days (score 760, a page with a 90-day history).
  {
    for i in $(seq 0 119); do
      t=$(date -u -d "$((i / 2)) days ago" +%Y-%m-%dT%H:%M:%SZ)
      if [ "$i" -lt 80 ]; then s=VERIFIED; [ "$i" -ge 76 ] && s=FAILED
        echo "{\"type\":\"conduit_session\",\"id\":\"c$i\",\"agent_id\":\"agent-1\",\"status\":\"$s\",\"started_at\":\"$t\",\"completed_at\":\"$t\"}"
      else s=SETTLED; [ "$i" -ge 118 ] && s=DISPUTED
        echo "{\"type\":\"ap2_transaction\",\"id\":\"t$i\",\"provider_id\":\"agent-1\",\"buyer_id\":\"b\",\"status\":\"$s\",\"escrow_amount_cents\":1000,\"started_at\":\"$t\",\"settled_at\":\"$t\"}"
      fi
    done
  } | curl -sf -H "Authorization: Bearer $SWARMSCORE_ADMIN_TOKEN" -H 'Content-Type: application/x-ndjson' \
      --data-binary @- "$serve/swarmscore/events" >/dev/null
  curl -sf "$(url cert "$serve")" >"$d/cert.json"
  curl -sf "$(url score "$serve")" >"$d/score.json"
  curl -sf "$(url page "$serve")" >"$d/page.html"
  printf '{"certificate":%s,"agent_id":"agent-1"}' "$(cat "$d/cert.json")" >"$d/verify-body.json"
  curl -sf -H 'Content-Type: application/json' --data-binary @"$d/verify-body.json" "$(url verify "$serve")" >"$d/verify.json"
  grep -q '"valid":true' "$d/verify.json" || { echo "verify failed: $(cat "$d/verify.json")" >&2; exit 1; }
  cat >"$work/post.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local f = io.open("$d/verify-body.json", "rb"); wrk.body = f:read("*a"); f:close()
LUA
  "$work/bare" -addr 127.0.0.1:18081 -dir "$d" -key "$SWARMSCORE_SIGNING_KEY" 2>/dev/null &
  bare_pid=$!
  wait_up "$(url cert "$bare")"
  echo "# $backend: bytes: cert $(wc -c <"$d/cert.json"), score $(wc -c <"$d/score.json"), verify body $(wc -c <"$d/verify-body.json") -> $(wc -c <"$d/verify.json"), page $(wc -c <"$d/page.html")"
  for r in $(seq 1 "$runs"); do
    for route in $routes; do
      if [ $((r % 2)) = 1 ]; then
        run "$backend" "$route" serve "$serve" "$serve_pid"; run "$backend" "$route" bare "$bare" "$bare_pid"
      else
        run "$backend" "$route" bare "$bare" "$bare_pid"; run "$backend" "$route" serve "$serve" "$serve_pid"
      fi
    done
  done
  stop "$serve_pid"; serve_pid=
  stop "$bare_pid"; bare_pid=
}

{
  for b in $backends; do
    case "$b" in
      sqlite) bench sqlite "sqlite:$work/bench.db" ;;
      postgres)
        dsn=$pgdsn
        if [ -z "$dsn" ]; then
          psql -q -h 127.0.0.1 -U postgres -d test -c 'DROP DATABASE IF EXISTS swarmscore_bench_routes' -c 'CREATE DATABASE swarmscore_bench_routes'
          dsn='postgres://postgres@127.0.0.1:5432/swarmscore_bench_routes?sslmode=disable'
        fi
        bench postgres "$dsn" ;;
      *) echo "usage: $0 [sqlite|postgres [DSN]]" >&2; exit 2 ;;
    esac
  done
} | tee "$work/runs.txt"

# Per route: each pair's ratio (the serve run and the bare run next to it),
# then the median of the pairs; and the median req/s of each side. The same
# for the server's CPU time per request, bare over serve: what the
# throughput ratio would be if the server alone had the cores (wrk and
# other load left out), which a loaded machine disturbs less.
echo "# backend route: serve req/s (median) / bare req/s (median) = ratio per pair -> median ratio;"
echo "#   CPU µs/request serve / bare (medians): bare/serve per pair -> median"
awk '!/^#/ {k = $1 " " $2; if ($3 == "serve") {s[k] = s[k] " " $4; sc[k] = sc[k] " " $5} else {b[k] = b[k] " " $4; bc[k] = bc[k] " " $5}; keys[k] = 1}
  function median(str,   a, n, i, j, t) {
    n = split(str, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  END {
    for (k in keys) {
      n = split(s[k], sv, " "); split(b[k], bv, " "); rs = ""
      for (i = 1; i <= n; i++) rs = rs " " sprintf("%.2f", sv[i] / bv[i])
      printf "%s: %.0f / %.0f =%s -> %.2f\n", k, median(s[k]), median(b[k]), rs, median(rs)
      split(sc[k], sv, " "); split(bc[k], bv, " "); rs = ""
      for (i = 1; i <= n; i++) rs = rs " " sprintf("%.2f", bv[i] / sv[i])
      printf "%s:   CPU %.1f / %.1f µs:%s -> %.2f\n", k, median(sc[k]), median(bc[k]), rs, median(rs)
    }
  }' "$work/runs.txt" | sort
