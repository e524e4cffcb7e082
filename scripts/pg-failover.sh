#!/usr/bin/env bash
# A pg_auto_failover formation on this machine: a monitor, a primary and a
# secondary, each a PostgreSQL 15 cluster of its own under DIR, listening on
# 127.0.0.1 only, on ports PORT (monitor), PORT+1 and PORT+2 (the nodes).
# The database "swarmscore" is replicated synchronously (pg_auto_failover's
# default with one secondary: a commit returns once the secondary has its
# WAL), so a failover loses no acknowledged commit.
#
#   scripts/pg-failover.sh up DIR [PORT]      set it up and start it; prints the
#                                             multi-host DSN on the last line
#   scripts/pg-failover.sh dsn DIR            the multi-host DSN again
#   scripts/pg-failover.sh state DIR          the monitor's view of the nodes
#   scripts/pg-failover.sh primary DIR        the current primary's port
#   scripts/pg-failover.sh kill-primary DIR   kill -9 the primary's postmaster;
#                                             prints its port
#   scripts/pg-failover.sh wait-failover DIR OLDPORT [SECONDS]
#                                             wait until another node is primary
#                                             and the old one is back as secondary
#   scripts/pg-failover.sh down DIR           stop everything and remove DIR
#
# Needs Debian's postgresql-15 and postgresql-15-auto-failover, and root (the
# nodes run as the postgres user). PORT defaults to 5470; use ports of 5440
# and up, never the shared cluster's 5432. The failover timings are the
# monitor's defaults, except the ones set below (see docs/SCALING.md).
set -euo pipefail

PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
export PATH="$PGBIN:$PATH"

die() { echo "pg-failover: $*" >&2; exit 1; }

# as_pg CMD...: run CMD as the postgres user, with pg_autoctl's
# configuration, state and pid files under DIR (nothing in its home).
as_pg() {
  exec_pg=(setpriv --reuid=postgres --regid=postgres --init-groups
    env HOME="$dir" XDG_CONFIG_HOME="$dir/xdg/config" XDG_DATA_HOME="$dir/xdg/data"
    XDG_RUNTIME_DIR="$dir/xdg/run" PATH="$PATH" PG_CONFIG="$PGBIN/pg_config")
  "${exec_pg[@]}" "$@"
}

need() {
  [ "$(id -u)" = 0 ] || die "must run as root (the nodes run as the postgres user)"
  command -v pg_autoctl >/dev/null || die "pg_autoctl not found: apt-get install postgresql-15-auto-failover"
  [ -x "$PGBIN/pg_ctl" ] || die "$PGBIN/pg_ctl not found: apt-get install postgresql-15"
}

# start NAME: run the node's keeper in the background, in a session of its
# own, logging to DIR/NAME.log; its pid goes to DIR/NAME.pid (setsid and
# setpriv exec, so $! is pg_autoctl's).
start() {
  local name=$1
  as_pg true
  setsid "${exec_pg[@]}" pg_autoctl run --pgdata "$dir/$name" >>"$dir/$name.log" 2>&1 </dev/null &
  echo $! >"$dir/$name.pid"
}

monitor_uri() { echo "postgres://autoctl_node@127.0.0.1:$(cat "$dir/port")/pg_auto_failover?sslmode=disable"; }

# The nodes' state as the monitor has it: one "port state" line per node.
states() {
  psql -X -q -At -F ' ' -h 127.0.0.1 -p "$(cat "$dir/port")" -U autoctl_node -d pg_auto_failover \
    -c "SELECT nodeport, reportedstate, goalstate FROM pgautofailover.node ORDER BY nodeid" 2>/dev/null
}

dsn() {
  local p; p=$(cat "$dir/port")
  echo "postgres://postgres@127.0.0.1:$((p + 1)),127.0.0.1:$((p + 2))/swarmscore?target_session_attrs=read-write&sslmode=disable&connect_timeout=2"
}

primary() { states | awk '$2 == "primary" && $3 == "primary" { print $1 }'; }

# wait_for SECONDS CONDITION...: poll until the command succeeds.
wait_for() {
  local secs=$1; shift
  local end=$((SECONDS + secs))
  until "$@"; do
    [ $SECONDS -lt $end ] || return 1
    sleep 0.2
  done
}

settled() { # one primary and one secondary, each where the monitor wants it
  [ "$(states | awk '$2 == $3 && ($2 == "primary" || $2 == "secondary")' | wc -l)" = 2 ] &&
    [ "$(states | awk '$2 == "primary"' | wc -l)" = 1 ]
}

cmd=${1:-}; dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || die "usage: $0 up|dsn|state|primary|kill-primary|wait-failover|down DIR [PORT]"

case "$cmd" in
up)
  need
  port=${3:-5470}
  [ "$port" -ge 5440 ] || die "port $port: use 5440 and up"
  [ ! -e "$dir" ] || die "$dir exists: run '$0 down $dir' first"
  mkdir -p "$dir/xdg/config" "$dir/xdg/data" "$dir/xdg/run"
  chmod 700 "$dir/xdg/run"
  chown -R postgres:postgres "$dir"
  echo "$port" >"$dir/port"
  as_pg pg_autoctl create monitor --pgdata "$dir/monitor" --pgport "$port" \
    --hostname 127.0.0.1 --auth trust --no-ssl >>"$dir/create.log" 2>&1 ||
    { tail -20 "$dir/create.log" >&2; die "creating the monitor failed"; }
  # Faster than the defaults (5 s checks, 20 s to call a node unhealthy),
  # still far above a loopback round trip: set before the nodes join.
  as_pg pg_autoctl config set --pgdata "$dir/monitor" postgresql.listen_addresses 127.0.0.1 >/dev/null
  cat >>"$dir/monitor/postgresql.conf" <<'EOF'
pgautofailover.health_check_period = 1000
pgautofailover.health_check_timeout = 1000
pgautofailover.health_check_retry_delay = 500
pgautofailover.node_considered_unhealthy_timeout = 5000
EOF
  start monitor
  wait_for 30 psql -X -q -At -h 127.0.0.1 -p "$port" -U autoctl_node -d pg_auto_failover -c 'SELECT 1' >/dev/null 2>&1 ||
    { tail -20 "$dir/monitor.log" >&2; die "the monitor did not start"; }
  for n in 1 2; do
    as_pg pg_autoctl create postgres --pgdata "$dir/node$n" --pgport $((port + n)) \
      --hostname 127.0.0.1 --listen 127.0.0.1 --auth trust --no-ssl --dbname swarmscore \
      --name "node$n" --monitor "$(monitor_uri)" >>"$dir/create.log" 2>&1 ||
      { tail -20 "$dir/create.log" >&2; die "creating node$n failed"; }
    start "node$n"
    # The second node clones the first once the first is primary.
    wait_for 60 bash -c "[ \"\$(psql -X -q -At -h 127.0.0.1 -p $port -U autoctl_node -d pg_auto_failover \
      -c \"SELECT count(*) FROM pgautofailover.node WHERE reportedstate = goalstate AND reportedstate IN ('single','primary','secondary')\")\" = $n ]" ||
      { tail -20 "$dir/node$n.log" >&2; die "node$n did not join"; }
  done
  wait_for 60 settled || { states >&2; die "the formation did not settle"; }
  dsn
  ;;
dsn) dsn ;;
state) states ;;
primary) primary ;;
kill-primary)
  p=$(primary)
  [ -n "$p" ] || die "no primary now"
  node=node$((p - $(cat "$dir/port")))
  pid=$(head -1 "$dir/$node/postmaster.pid")
  kill -9 "$pid"
  echo "$p"
  ;;
wait-failover)
  old=${3:?old primary port}
  wait_for "${4:-120}" bash -c "[ -n \"\$($0 primary $dir)\" ] && [ \"\$($0 primary $dir)\" != $old ]" ||
    { states >&2; die "no other node became primary"; }
  wait_for "${4:-120}" settled || { states >&2; die "the old primary did not come back as secondary"; }
  ;;
down)
  [ -d "$dir" ] || exit 0
  for n in node2 node1 monitor; do
    [ -f "$dir/$n.pid" ] || continue
    [ -d "$dir/$n" ] && as_pg pg_autoctl stop --pgdata "$dir/$n" >/dev/null 2>&1 || true
  done
  # The keepers stop their Postgres; whatever is left after 20 s is killed,
  # by pid: the keeper's, then each postmaster's.
  for _ in $(seq 1 100); do
    alive=
    for n in node2 node1 monitor; do
      [ -f "$dir/$n.pid" ] && kill -0 "$(cat "$dir/$n.pid")" 2>/dev/null && alive=1
    done
    [ -z "$alive" ] && break
    sleep 0.2
  done
  for n in node2 node1 monitor; do
    [ -f "$dir/$n.pid" ] && kill -9 "$(cat "$dir/$n.pid")" 2>/dev/null || true
    if [ -f "$dir/$n/postmaster.pid" ]; then
      pid=$(head -1 "$dir/$n/postmaster.pid")
      if [ -n "$pid" ] && grep -q "$dir/$n" "/proc/$pid/cmdline" 2>/dev/null; then kill -9 "$pid" || true; fi
    fi
  done
  rm -rf "$dir"
  ;;
*) die "unknown command $cmd" ;;
esac
