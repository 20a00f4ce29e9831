#!/usr/bin/env bash
# dendrite.sh runs a throwaway Dendrite Matrix homeserver for the Matrix
# adapter's integration tests. Dendrite is only a test tool: it is built from
# its own module in the Go module cache, never imported by BobNet, and
# neither its code nor its binaries are part of this repository.
#
#   scripts/dendrite.sh build          build once into the cache folder, print it
#   scripts/dendrite.sh start DIR      start a homeserver with its data in DIR
#   scripts/dendrite.sh stop DIR       stop it
#
# `start` prints `export MATRIX_TEST_HOMESERVER=…` and
# `export MATRIX_TEST_SHARED_SECRET=…` on stdout; everything else goes to
# stderr. The homeserver is named localhost, listens on a free 127.0.0.1
# port, keeps its data in SQLite under DIR, has federation off and lets
# tests register users with the shared-secret admin API.
set -euo pipefail

version=v0.15.2
cache=${BOBNET_DENDRITE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/bobnet/dendrite-$version}

log() { echo "dendrite: $*" >&2; }

. "$(dirname "$0")/lib.sh"

build() {
	if [ -x "$cache/dendrite" ] && [ -x "$cache/generate-config" ] && [ -x "$cache/generate-keys" ]; then
		return 0
	fi
	if ! command -v jq >/dev/null; then
		if [ "$(id -u)" != 0 ]; then
			log "need jq; install it with: sudo apt-get install -y jq"
			exit 1
		fi
		DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq jq >&2
	fi
	log "building Dendrite $version into $cache (once; a few minutes)"
	# Download outside any module so BobNet's go.mod never hears of it.
	local tmp src
	tmp=$(mktemp -d)
	src=$(cd "$tmp" && GOFLAGS=-mod=mod go mod download -json "github.com/element-hq/dendrite@$version" | jq -r .Dir)
	rm -rf "$tmp"
	[ -d "$src" ] || { log "download of Dendrite $version failed"; exit 1; }
	mkdir -p "$cache.tmp"
	(cd "$src" && go build -o "$cache.tmp" ./cmd/dendrite ./cmd/generate-keys ./cmd/generate-config ./cmd/create-account) >&2
	rm -rf "$cache"
	mv "$cache.tmp" "$cache"
}

# answers reports whether url answers 200, with curl or, lacking it, Python.
answers() {
	if command -v curl >/dev/null; then
		curl -fsS "$1" >/dev/null 2>&1
	else
		python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' "$1" >/dev/null 2>&1
	fi
}

start() {
	build
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	local port secret url
	if [ -f "$dir/port" ]; then port=$(cat "$dir/port"); else port=$(free_port); echo "$port" >"$dir/port"; fi
	if [ -f "$dir/secret" ]; then secret=$(cat "$dir/secret"); else
		secret=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
		echo "$secret" >"$dir/secret"
	fi
	url="http://127.0.0.1:$port"
	if [ ! -f "$dir/dendrite.yaml" ]; then
		"$cache/generate-keys" --private-key "$dir/matrix_key.pem" >/dev/null 2>&1
		"$cache/generate-config" -ci -server localhost -dir "$dir" >"$dir/dendrite.yaml"
		# The CI config already has rate limiting off; the key file is found
		# relative to DIR, where Dendrite runs.
		sed -i -e 's/^  disable_federation: false$/  disable_federation: true/' \
			-e 's/^  registration_disabled: false$/  registration_disabled: true/' \
			-e "s/^  registration_shared_secret: .*$/  registration_shared_secret: $secret/" \
			"$dir/dendrite.yaml"
		for want in "disable_federation: true" "registration_disabled: true" "registration_shared_secret: $secret" "private_key: matrix_key.pem"; do
			grep -q "^  $want$" "$dir/dendrite.yaml" || { log "unexpected config from generate-config (no \"$want\")"; exit 1; }
		done
	fi
	if ! { [ -f "$dir/pid" ] && kill -0 "$(cat "$dir/pid")" 2>/dev/null; }; then
		log "homeserver localhost on $url"
		(cd "$dir" && exec "$cache/dendrite" -config "$dir/dendrite.yaml" -http-bind-address "127.0.0.1:$port" \
			>"$dir/dendrite.log" 2>&1 </dev/null) &
		echo $! >"$dir/pid"
		local ok=
		for _ in $(seq 300); do
			if answers "$url/_matrix/client/versions"; then ok=1; break; fi
			kill -0 "$(cat "$dir/pid")" 2>/dev/null || break
			sleep 0.2
		done
		if [ -z "$ok" ]; then
			log "homeserver did not come up; last lines of $dir/dendrite.log:"
			tail -20 "$dir/dendrite.log" >&2 || true
			exit 1
		fi
	fi
	echo "export MATRIX_TEST_HOMESERVER=$url"
	echo "export MATRIX_TEST_SHARED_SECRET=$secret"
}

stop() {
	[ -f "$dir/pid" ] || return 0
	local pid
	pid=$(cat "$dir/pid")
	kill "$pid" 2>/dev/null || true
	for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	kill -9 "$pid" 2>/dev/null || true
	rm -f "$dir/pid"
}

cmd=${1:?usage: dendrite.sh build|start DIR|stop DIR}
case "$cmd" in
build) build; echo "$cache" ;;
start) dir=${2:?usage: dendrite.sh start DIR}; start ;;
stop) dir=${2:?usage: dendrite.sh stop DIR}; stop ;;
*) echo "usage: dendrite.sh build|start DIR|stop DIR" >&2; exit 2 ;;
esac
