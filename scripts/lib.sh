# lib.sh is sourced by the scripts that start servers and run checks: the
# helpers they share. It runs nothing of its own.

# free_port prints a free loopback port. With an offset, the port + offset
# is free too (and below 65536): a Redis Cluster node listens on both, its
# bus on the second.
free_port() {
	python3 - "${1:-0}" <<'EOF' 2>/dev/null || echo $((20000 + RANDOM % 20000))
import socket, sys
offset = int(sys.argv[1])
while True:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    if offset == 0:
        break
    if p + offset >= 65536:
        continue
    t = socket.socket()
    try:
        t.bind(("127.0.0.1", p + offset))
    except OSError:
        continue
    finally:
        t.close()
    break
print(p)
EOF
}

# pg_bindir prints the folder of Debian's Postgres programs (initdb,
# pg_ctl, psql…); it fails when Postgres is not installed.
pg_bindir() {
	local d
	for d in /usr/lib/postgresql/*/bin; do
		[ -x "$d/initdb" ] && { echo "$d"; return 0; }
	done
	return 1
}

# as_pg runs a command as the `postgres` user when we are root: Postgres
# refuses to run as root.
as_pg() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

# pg_init makes a cluster in the folder $2 with Postgres's programs in $1:
# the role bobnet, trusted on loopback, UTF-8. Its callers look for one
# there first (PG_VERSION), and say that they make it.
pg_init() {
	as_pg "$1/initdb" -D "$2" -U bobnet --auth=trust -E UTF8 >/dev/null
}

# pg_start starts the cluster in the folder $2 on loopback port $3, its
# log in $4, with the settings every throwaway server has (no fsync: test
# data) and any further `-c name=value` that follow.
pg_start() {
	local bindir=$1 data=$2 port=$3 logfile=$4
	shift 4
	as_pg "$bindir/pg_ctl" -D "$data" -w -t 60 -l "$logfile" \
		-o "-p $port -k $(dirname "$data") -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=300 $*" start >/dev/null
}

# pg_createdb makes the database bobnet on the server at loopback port $2
# unless it has it.
pg_createdb() {
	as_pg "$1/psql" -h 127.0.0.1 -p "$2" -U bobnet -d postgres -tAc \
		"SELECT 1 FROM pg_database WHERE datname='bobnet'" | grep -q 1 ||
		as_pg "$1/psql" -h 127.0.0.1 -p "$2" -U bobnet -d postgres -qc "CREATE DATABASE bobnet" >/dev/null
}

# ensure_room makes sure the temporary folder and Go's build cache have
# some 6 GB free (a cold build cache is 3.5 GB, the servers' data the
# rest). A build cache that has grown until the disk is nearly full is
# emptied: it is only a cache, and what is needed is built again. Short of
# room after that, it says where and how much, and exits: better than
# failing test by test or benchmark by benchmark. $1 names the caller in
# its messages.
ensure_room() {
	local who=$1 need_kb=$((6 * 1024 * 1024)) gocache tmp d
	gocache=$(go env GOCACHE)
	tmp=${TMPDIR:-/tmp}
	if [ "$(free_kb "$tmp")" -ge "$need_kb" ] && [ "$(free_kb "$gocache")" -ge "$need_kb" ]; then
		return 0
	fi
	echo "$who: under 6 GB free; emptying the Go build cache ($gocache, $(du -sh "$gocache" | cut -f1))" >&2
	go clean -cache
	for d in "$tmp" "$gocache"; do
		if [ "$(free_kb "$d")" -lt "$need_kb" ]; then
			echo "$who: $d has $(($(free_kb "$d") / 1024)) MB free; the run needs some 6 GB" >&2
			exit 1
		fi
	done
}

# free_kb prints the kilobytes free on the file system holding $1.
free_kb() { df -Pk "$1" | awk 'NR == 2 { print $4 }'; }
