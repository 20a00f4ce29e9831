#!/usr/bin/env bash
# rediscluster.sh starts the distributed Redis set-ups BobNet is tested on,
# from Debian's redis-server, on loopback ports picked free, with their data
# in a folder of our own:
#   - a 6-node Redis Cluster: 3 masters and 3 replicas, append-only files
#     with appendfsync always, cluster-node-timeout 2 s (so a killed
#     master's replica takes over within seconds);
#   - a sentinel set: a master, its replica and 3 sentinels watching them
#     (master name "bobnet", down after 1 s).
#
#   scripts/rediscluster.sh start DIR     start both, print env lines
#   scripts/rediscluster.sh cluster DIR   start the cluster alone (a test
#                                         that kills a master starts its own)
#   scripts/rediscluster.sh stop DIR      stop what DIR holds
#
# BOBNET_REDIS_MEMORY_ONLY=1 starts them without append-only files, as
# scripts/services.sh does its throwaway Redis (`make bench`'s cluster
# comparison, which measures the cluster beside that Redis).
#
# `start` prints `export REDIS_CLUSTER_URL=…` (go-redis's cluster URL form),
# `export REDIS_SENTINEL_URL=…` (its failover form) and the folder as
# `export REDIS_CLUSTER_DIR=…` and `export REDIS_SENTINEL_DIR=…` on stdout;
# everything else goes to stderr.
# Each server writes DIR/<port>.pid and keeps its configuration in
# DIR/<port>.conf, so a test that kills one can start it again with
# `redis-server DIR/<port>.conf`.
set -euo pipefail

cmd=${1:?usage: rediscluster.sh start|stop DIR}
dir=${2:?usage: rediscluster.sh start|stop DIR}

log() { echo "rediscluster: $*" >&2; }

. "$(dirname "$0")/lib.sh"

wait_ping() {
	for _ in $(seq 100); do
		redis-cli -p "$1" ping >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	log "redis on port $1 did not start; see $dir/$1.log"
	exit 1
}

# server PORT [OPTION…]: writes DIR/PORT.conf and starts redis-server on it.
server() {
	local port=$1
	shift
	mkdir -p "$dir/$port"
	{
		echo "bind 127.0.0.1"
		echo "port $port"
		echo "dir $dir/$port"
		echo "daemonize yes"
		echo "pidfile $dir/$port.pid"
		echo "logfile $dir/$port.log"
		echo "save \"\""
		if [ -n "${BOBNET_REDIS_MEMORY_ONLY:-}" ]; then
			echo "appendonly no"
		else
			echo "appendonly yes"
			echo "appendfsync always"
		fi
		for o in "$@"; do echo "$o"; done
	} >"$dir/$port.conf"
	redis-server "$dir/$port.conf" >&2
}

# wait_replicated PORT…: waits until each master has a replica online and
# each replica's link to its master is up (30 s at most).
wait_replicated() {
	local p info
	for p in "$@"; do
		for _ in $(seq 300); do
			info=$(redis-cli -p "$p" info replication 2>/dev/null || true)
			grep -q 'state=online' <<<"$info" && break
			grep -q 'master_link_status:up' <<<"$info" && break
			sleep 0.1
		done
	done
}

start_cluster() {
	command -v redis-server >/dev/null || { log "redis-server is missing: scripts/services.sh installs it"; exit 1; }
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	local ports=() p
	# A node listens on its port and on the port + 10000 (its bus).
	for _ in 1 2 3 4 5 6; do ports+=("$(free_port 10000)"); done
	for p in "${ports[@]}"; do
		server "$p" "cluster-enabled yes" "cluster-config-file $dir/$p/nodes.conf" "cluster-node-timeout 2000"
	done
	for p in "${ports[@]}"; do wait_ping "$p"; done
	local addrs=()
	for p in "${ports[@]}"; do addrs+=("127.0.0.1:$p"); done
	log "cluster on ${addrs[*]}"
	redis-cli --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes >"$dir/create.log" 2>&1 ||
		{ cat "$dir/create.log" >&2; exit 1; }
	for _ in $(seq 100); do
		local ok=0
		for p in "${ports[@]}"; do
			redis-cli -p "$p" cluster info 2>/dev/null | grep -q 'cluster_state:ok' && ok=$((ok + 1))
		done
		[ "$ok" = 6 ] && break
		sleep 0.1
	done
	# Every replica in sync with its master: BobNet acknowledges a request
	# only once a replica has it (WAIT), so a cluster without them
	# refuses everything.
	wait_replicated "${ports[@]}"
	echo "${ports[*]}" >"$dir/cluster.ports"
	local rest=""
	for p in "${addrs[@]:1}"; do rest+="${rest:+&}addr=$p"; done
	echo "export REDIS_CLUSTER_URL='redis://${addrs[0]}?$rest'"
	echo "export REDIS_CLUSTER_DIR=$dir"
}

start() {
	start_cluster
	local master replica p
	master=$(free_port)
	replica=$(free_port)
	server "$master"
	wait_ping "$master"
	server "$replica" "replicaof 127.0.0.1 $master"
	wait_ping "$replica"
	wait_replicated "$master" "$replica"
	local sentinels=()
	for _ in 1 2 3; do
		p=$(free_port)
		sentinels+=("$p")
		mkdir -p "$dir/$p"
		cat >"$dir/$p.conf" <<EOF
bind 127.0.0.1
port $p
dir $dir/$p
daemonize yes
pidfile $dir/$p.pid
logfile $dir/$p.log
sentinel monitor bobnet 127.0.0.1 $master 2
sentinel down-after-milliseconds bobnet 1000
sentinel failover-timeout bobnet 5000
sentinel parallel-syncs bobnet 1
EOF
		redis-server "$dir/$p.conf" --sentinel >&2
	done
	for p in "${sentinels[@]}"; do wait_ping "$p"; done
	echo "$master $replica ${sentinels[*]}" >"$dir/sentinel.ports"
	log "sentinel set: master $master, replica $replica, sentinels ${sentinels[*]}"

	echo "export REDIS_SENTINEL_URL='redis://127.0.0.1:${sentinels[0]}?addr=127.0.0.1:${sentinels[1]}&addr=127.0.0.1:${sentinels[2]}&master_name=bobnet'"
	echo "export REDIS_SENTINEL_DIR=$dir"
}

stop() {
	[ -d "$dir" ] || return 0
	local f pid
	# A server removes its pid file as it exits, so a file may go between
	# the listing and the read.
	for f in "$dir"/*.pid; do
		pid=$(cat "$f" 2>/dev/null) || continue
		kill "$pid" 2>/dev/null || true
	done
	for f in "$dir"/*.pid; do
		pid=$(cat "$f" 2>/dev/null) || continue
		for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		rm -f "$f"
	done
}

case "$cmd" in
start) start ;;
cluster) start_cluster ;;
stop) stop ;;
*) echo "usage: rediscluster.sh start|cluster|stop DIR" >&2; exit 2 ;;
esac
