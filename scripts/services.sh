#!/usr/bin/env bash
# services.sh starts Postgres and Redis for BobNet from Debian's packages,
# installing them when missing, with their data in a folder of our own.
#
#   scripts/services.sh start DIR   start both (data under DIR), print env lines
#   scripts/services.sh stop DIR    stop both
#   scripts/services.sh stop-postgres DIR, stop-redis DIR
#                                   stop one (start brings it back on the
#                                   same port; the soak test restarts them)
#
# Redis keeps its data in an append-only file under DIR, so pending
# proposals, queued requests and dedupe keys survive a restart. Set
# BOBNET_REDIS_MEMORY_ONLY=1 for throwaway servers (the tests) that need no
# durability.
#
# `start` prints `export DATABASE_URL=…` and `export REDIS_URL=…` on stdout;
# everything else goes to stderr. Postgres refuses to run as root, so when we
# are root it runs as the unprivileged `postgres` user (created by the Debian
# package) and DIR is handed to that user.
set -euo pipefail

cmd=${1:?usage: services.sh start|stop|stop-postgres|stop-redis DIR}
dir=${2:?usage: services.sh start|stop DIR}

log() { echo "services: $*" >&2; }

. "$(dirname "$0")/lib.sh"

apt_updated=
apt_install() {
	if [ "$(id -u)" != 0 ]; then
		log "need $* but am not root; install them with: sudo apt-get install -y $*"
		exit 1
	fi
	if [ -z "$apt_updated" ]; then
		log "apt-get update"
		DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
		apt_updated=1
	fi
	log "apt-get install $*"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >&2
}

ensure_packages() {
	local want=()
	pg_bindir >/dev/null || want+=(postgresql)
	command -v redis-server >/dev/null || want+=(redis-server)
	if [ ${#want[@]} -gt 0 ]; then apt_install "${want[@]}"; fi
	# The Debian packages start system-wide servers; we run our own.
	if command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
		systemctl stop postgresql redis-server >/dev/null 2>&1 || true
	fi
}

start() {
	ensure_packages
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	local bindir pgdata pgport redisport
	bindir=$(pg_bindir)
	pgdata="$dir/pg"
	[ "$(id -u)" = 0 ] && chown postgres "$dir"
	if [ -f "$dir/pg.port" ]; then pgport=$(cat "$dir/pg.port"); else pgport=$(free_port); echo "$pgport" >"$dir/pg.port"; fi
	if [ ! -f "$pgdata/PG_VERSION" ]; then
		log "initdb $pgdata"
		pg_init "$bindir" "$pgdata"
	fi
	if ! as_pg "$bindir/pg_ctl" -D "$pgdata" status >/dev/null 2>&1; then
		log "postgres on 127.0.0.1:$pgport"
		pg_start "$bindir" "$pgdata" "$pgport" "$dir/pg.log"
	fi
	pg_createdb "$bindir" "$pgport"

	if [ -f "$dir/redis.port" ]; then redisport=$(cat "$dir/redis.port"); else redisport=$(free_port); echo "$redisport" >"$dir/redis.port"; fi
	if ! { [ -f "$dir/redis.pid" ] && kill -0 "$(cat "$dir/redis.pid")" 2>/dev/null; }; then
		log "redis on 127.0.0.1:$redisport"
		mkdir -p "$dir/redis"
		local persist=(--save '' --appendonly yes --appendfsync everysec)
		if [ -n "${BOBNET_REDIS_MEMORY_ONLY:-}" ]; then persist=(--save '' --appendonly no); fi
		redis-server --bind 127.0.0.1 --port "$redisport" --dir "$dir/redis" --daemonize yes \
			--pidfile "$dir/redis.pid" --logfile "$dir/redis.log" "${persist[@]}" >&2
		for _ in $(seq 50); do
			redis-cli -p "$redisport" ping >/dev/null 2>&1 && break
			sleep 0.1
		done
	fi
	echo "export DATABASE_URL=postgres://bobnet@127.0.0.1:$pgport/bobnet?sslmode=disable"
	echo "export REDIS_URL=redis://127.0.0.1:$redisport/0"
}

stop_postgres() {
	[ -d "$dir" ] || return 0
	local bindir
	if bindir=$(pg_bindir) && [ -f "$dir/pg/PG_VERSION" ]; then
		as_pg "$bindir/pg_ctl" -D "$dir/pg" -m fast -w stop >/dev/null 2>&1 || true
	fi
}

stop_redis() {
	[ -d "$dir" ] || return 0
	if [ -f "$dir/redis.pid" ]; then
		local pid
		pid=$(cat "$dir/redis.pid")
		kill "$pid" 2>/dev/null || true
		# SIGTERM makes Redis write its append-only file and exit; wait
		# for that, so a start right after finds the port free.
		for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		rm -f "$dir/redis.pid"
	fi
}

stop() {
	stop_postgres
	stop_redis
}

case "$cmd" in
start) start ;;
stop) stop ;;
stop-postgres) stop_postgres ;;
stop-redis) stop_redis ;;
*) echo "usage: services.sh start|stop|stop-postgres|stop-redis DIR" >&2; exit 2 ;;
esac
