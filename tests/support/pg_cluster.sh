#!/bin/sh
# pg_cluster.sh - a throwaway PostgreSQL cluster for the tests that run the store on PostgreSQL
# (Debian's postgresql package, installed by scripts/bootstrap.sh; nothing else needs to run).
#
#   pg_cluster.sh setup DIR       initdb a fresh cluster into DIR/data and start it (CTest
#                                 fixture pg.start); its URL goes into DIR/url
#   pg_cluster.sh setup DIR --durable
#                                 the same with fsync and synchronous_commit on (a measurement,
#                                 bench/run.sh's nodes phase: commits as durable as SQLite's)
#   pg_cluster.sh stop DIR        stop it, keeping its data (a test of an outage)
#   pg_cluster.sh start DIR       start it again on the same port and socket
#   pg_cluster.sh teardown DIR    stop it and remove DIR/data (fixture pg.stop)
#   pg_cluster.sh env DIR CMD...  run CMD with AIRLOCK_TEST_DATABASE set to the cluster's URL
#                                 (and AIRLOCK_TEST_PG_CLUSTER, AIRLOCK_TEST_PG_DIR: this script
#                                 and DIR, for a test that stops and starts the cluster)
#
# The server never runs as root: as root (CI), it runs as the system user airlock-test, created
# here if missing, which owns the data directory. It listens on no TCP address at all, only on a
# Unix socket in DIR (mode 0700: its owner and root connect), at a port number found free, with
# trust authentication for that socket; the superuser is "airlock". fsync is off (unless
# --durable): the cluster is thrown away, and what the tests check is airlockd's behaviour, not
# the disk's.
set -eu

cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: pg_cluster.sh setup|stop|start|teardown|env DIR" >&2; exit 2; }
fsync=off
if [ "$cmd" = setup ] && [ "${3:-}" = --durable ]; then
    fsync=on
elif [ "$cmd" = setup ] && [ -n "${3:-}" ]; then
    echo "pg_cluster: unknown option ${3:-} (setup DIR [--durable])" >&2
    exit 2
fi
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
user=airlock-test

bindir=""
for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    [ -x "$d/initdb" ] && { bindir=$d; break; }
done
[ -n "$bindir" ] || { echo "pg_cluster: no /usr/lib/postgresql/*/bin/initdb (apt-get install postgresql)" >&2; exit 1; }

# as_owner CMD...: runs CMD as the cluster's owner (airlock-test under root, else ourselves)
as_owner() {
    if [ "$(id -u)" -eq 0 ]; then
        runuser -u "$user" -- "$@"
    else
        "$@"
    fi
}

state() { cat "$dir/$1"; }

pg_start() {
    as_owner "$bindir/pg_ctl" -D "$(state datadir)" -l "$(state datadir)/../server.log" -w -t 60 \
        -o "-c port=$(state port) -c unix_socket_directories=$(state sockdir)" start >/dev/null
}

pg_stop() {
    datadir=$(cat "$dir/datadir" 2>/dev/null || true)
    if [ -n "$datadir" ] && [ -f "$datadir/postmaster.pid" ]; then
        as_owner "$bindir/pg_ctl" -D "$datadir" -m fast -w -t 60 stop >/dev/null || true
    fi
}

case "$cmd" in
setup)
    pg_stop
    if [ "$(id -u)" -eq 0 ] && ! id -u "$user" >/dev/null 2>&1; then
        useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$user"
    fi
    base=$dir
    # The owner must reach DIR; a build folder it cannot traverse gets one in /tmp instead.
    : >"$dir/scratch" # what teardown removes besides DIR/cluster
    if [ "$(id -u)" -eq 0 ] && ! runuser -u "$user" -- test -x "$dir"; then
        base=$(mktemp -d /tmp/airlock-pg.XXXXXX)
        chown "$user" "$base"
        echo "$base" >>"$dir/scratch"
    fi
    rm -rf "$base/cluster"
    mkdir -p "$base/cluster/data" "$base/cluster/sock"
    chmod 700 "$base/cluster"
    [ "$(id -u)" -eq 0 ] && chown -R "$user" "$base/cluster"
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    sockdir=$base/cluster/sock
    # a Unix socket's path has at most 107 bytes
    if [ ${#sockdir} -gt 90 ]; then
        sockdir=$(mktemp -d /tmp/airlock-pgsock.XXXXXX)
        echo "$sockdir" >>"$dir/scratch"
        [ "$(id -u)" -eq 0 ] && chown "$user" "$sockdir"
    fi
    echo "$base/cluster/data" >"$dir/datadir"
    echo "$port" >"$dir/port"
    echo "$sockdir" >"$dir/sockdir"
    as_owner "$bindir/initdb" -D "$base/cluster/data" -U airlock --auth=trust -E UTF8 \
        --locale=C.UTF-8 --no-sync >"$base/cluster/initdb.log" 2>&1 ||
        { cat "$base/cluster/initdb.log" >&2; exit 1; }
    cat >>"$base/cluster/data/postgresql.conf" <<EOF
listen_addresses = ''
unix_socket_permissions = 0700
fsync = $fsync
synchronous_commit = on
max_connections = 60
EOF
    pg_start || { cat "$base/cluster/server.log" >&2; exit 1; }
    echo "postgresql://airlock@/postgres?host=$sockdir&port=$port" >"$dir/url"
    echo "pg_cluster: $(state url)"
    ;;
stop)
    pg_stop
    ;;
start)
    pg_start
    ;;
teardown)
    pg_stop
    datadir=$(cat "$dir/datadir" 2>/dev/null || true)
    [ -n "$datadir" ] && rm -rf "$(dirname "$datadir")"
    if [ -f "$dir/scratch" ]; then
        while read -r d; do rm -rf "$d"; done <"$dir/scratch"
    fi
    rm -f "$dir/datadir" "$dir/port" "$dir/sockdir" "$dir/url" "$dir/scratch"
    ;;
env)
    shift 2
    [ -f "$dir/url" ] || { echo "pg_cluster: no cluster in $dir (the pg.start fixture)" >&2; exit 1; }
    AIRLOCK_TEST_DATABASE=$(state url)
    AIRLOCK_TEST_PG_CLUSTER=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
    AIRLOCK_TEST_PG_DIR=$dir
    export AIRLOCK_TEST_DATABASE AIRLOCK_TEST_PG_CLUSTER AIRLOCK_TEST_PG_DIR
    exec "$@"
    ;;
*)
    echo "pg_cluster: unknown command $cmd" >&2
    exit 2
    ;;
esac
