#!/bin/bash
# Idle memory of `bobnet serve` with Slack and webhooks configured: starts
# the binary against DATABASE_URL and REDIS_URL (scripts/services.sh gives
# throwaway ones), waits until it is idle and prints its resident set.
# As root it first drops the page cache, so the executable's pages count
# only as far as serving touched them.
#   scripts/rss.sh [BINARY]      (default bin/bobnet; make build first)
set -euo pipefail
bin=${1:-bin/bobnet}
: "${DATABASE_URL:?DATABASE_URL is required}" "${REDIS_URL:?REDIS_URL is required}"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if [ "$(id -u)" = 0 ]; then sync; echo 3 > /proc/sys/vm/drop_caches; fi
# Listen on a free port: let the kernel pick one, then hand it over.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
SLACK_BOT_TOKEN=xoxb-rss SLACK_SIGNING_SECRET=rss-signing-secret SLACK_API_URL=http://127.0.0.1:9/api/ \
BOBNET_HOOK_SECRETS=ci=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw \
BOBNET_CALLBACK_SECRET=whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD \
BOBNET_LISTEN=127.0.0.1:$port BOBNET_MODEL=demo "$bin" serve >"$log" 2>&1 &
pid=$!
for _ in $(seq 100); do
	grep -q 'BobNet is serving' "$log" && break
	kill -0 "$pid" 2>/dev/null || { cat "$log"; exit 1; }
	sleep 0.1
done
sleep "${BOBNET_RSS_IDLE:-5}"
awk '/^(VmRSS|RssAnon|RssFile):/ {printf "%s %.1f MB  ", $1, $2/1024} END {print ""}' "/proc/$pid/status"
kill "$pid"
wait "$pid" 2>/dev/null || true
