#!/usr/bin/env bash
# pgstandby.sh runs a Postgres primary with a synchronous streaming standby
# from Debian's packages, on loopback ports, with their data in a folder of
# our own: what a deployment with failover runs (Patroni, CloudNativePG, a
# managed service), small enough for the tests.
#
#   scripts/pgstandby.sh start DIR         start both (data under DIR), print env lines
#   scripts/pgstandby.sh stop DIR          stop both
#   scripts/pgstandby.sh stop-primary DIR  stop the primary (fast: its sessions are cut)
#   scripts/pgstandby.sh kill-primary DIR  stop the primary at once (immediate: no
#                                          shutdown checkpoint, as a crash)
#   scripts/pgstandby.sh promote DIR       make the standby the primary
#
# The standby is made with pg_basebackup -R and streams from the primary;
# the primary names it in synchronous_standby_names, so a commit is
# acknowledged only once the standby has it and a promotion loses no
# acknowledged transaction. The setting is given to the primary's server
# alone, so the standby, once promoted, commits on its own.
#
# `start` prints `export PG_FAILOVER_URL=…` on stdout: one URL naming both
# hosts with target_session_attrs=read-write, so a client connects to
# whichever is the primary; everything else goes to stderr. Once promoted,
# the old primary is not started again (`start` refuses: two primaries).
# Postgres refuses to run as root, so when we are root it runs as the
# unprivileged `postgres` user and DIR is handed to that user.
set -euo pipefail

cmd=${1:?usage: pgstandby.sh start|stop|stop-primary|kill-primary|promote DIR}
dir=${2:?usage: pgstandby.sh start|stop|stop-primary|kill-primary|promote DIR}
here=$(cd "$(dirname "$0")" && pwd)

log() { echo "pgstandby: $*" >&2; }

. "$here/lib.sh"

port_of() {
	local f="$dir/$1.port"
	[ -f "$f" ] || free_port >"$f"
	cat "$f"
}

running() { as_pg "$bindir/pg_ctl" -D "$dir/$1" status >/dev/null 2>&1; }

# run_server starts the server whose data is $dir/$1 on port $2 with the
# extra settings that follow.
run_server() {
	local name=$1 port=$2
	shift 2
	running "$name" && return 0
	log "$name on 127.0.0.1:$port"
	pg_start "$bindir" "$dir/$name" "$port" "$dir/$name.log" "$@"
}

start() {
	if ! pg_bindir >/dev/null; then
		# services.sh installs the packages (and stops the system-wide
		# servers they start); start and stop it on a folder of its own.
		BOBNET_REDIS_MEMORY_ONLY=1 "$here/services.sh" start "$dir/install" >/dev/null
		"$here/services.sh" stop "$dir/install"
	fi
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	bindir=$(pg_bindir)
	[ "$(id -u)" = 0 ] && chown postgres "$dir"
	local pport sport
	pport=$(port_of primary)
	sport=$(port_of standby)
	if [ -f "$dir/promoted" ]; then
		log "the standby was promoted; not starting the old primary beside it"
	else
		if [ ! -f "$dir/primary/PG_VERSION" ]; then
			log "initdb $dir/primary"
			pg_init "$bindir" "$dir/primary"
		fi
		# Any standby confirms (there is one); on the command line, so
		# pg_basebackup does not copy it to the standby.
		run_server primary "$pport" "-c synchronous_standby_names=*"
		if [ ! -f "$dir/standby/PG_VERSION" ]; then
			log "pg_basebackup -R $dir/standby"
			as_pg "$bindir/pg_basebackup" -h 127.0.0.1 -p "$pport" -U bobnet -D "$dir/standby" -R -X stream -c fast >/dev/null
		fi
	fi
	run_server standby "$sport"
	if [ ! -f "$dir/promoted" ]; then
		pg_createdb "$bindir" "$pport"
	fi
	echo "export PG_FAILOVER_URL='postgres://bobnet@127.0.0.1:$pport,127.0.0.1:$sport/bobnet?sslmode=disable&target_session_attrs=read-write'"
}

stop_server() {
	local name=$1 mode=$2
	[ -f "$dir/$name/PG_VERSION" ] || return 0
	as_pg "$bindir/pg_ctl" -D "$dir/$name" -m "$mode" -w stop >/dev/null 2>&1 || true
}

promote() {
	[ -f "$dir/standby/PG_VERSION" ] || { log "no standby in $dir"; exit 1; }
	touch "$dir/promoted"
	as_pg "$bindir/pg_ctl" -D "$dir/standby" -w -t 60 promote >/dev/null
	log "standby promoted"
}

[ -d "$dir" ] || [ "$cmd" = start ] || exit 0
bindir=$(pg_bindir || true)
case "$cmd" in
start) start ;;
stop) stop_server primary fast; stop_server standby fast ;;
stop-primary) stop_server primary fast ;;
kill-primary) stop_server primary immediate ;;
promote) promote ;;
*) echo "usage: pgstandby.sh start|stop|stop-primary|kill-primary|promote DIR" >&2; exit 2 ;;
esac
