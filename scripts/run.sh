#!/usr/bin/env bash
# run.sh is `make run`: it installs Postgres and Redis from Debian's packages
# when missing, starts them with their data in .run/ (ignored by git), builds
# BobNet, applies the migrations and serves the console and API on
# BOBNET_LISTEN (default 127.0.0.1:8080). Ctrl-C stops BobNet and both
# servers; the data stays in .run/ for next time.
set -euo pipefail
cd "$(dirname "$0")/.."

dir=.run
mkdir -p "$dir"
stop_services() { scripts/services.sh stop "$dir" || true; }
trap stop_services EXIT
eval "$(scripts/services.sh start "$dir")"
export DATABASE_URL REDIS_URL

go build -tags goolm -o bin/bobnet ./cmd/bobnet
bin/bobnet migrate
echo "run: BobNet on http://${BOBNET_LISTEN:-127.0.0.1:8080}/ (Ctrl-C stops it)" >&2
# Not exec: the trap must run after bobnet exits to stop the servers.
bin/bobnet serve &
pid=$!
trap 'kill -TERM $pid 2>/dev/null || true' INT TERM
wait $pid || true
wait $pid 2>/dev/null || true
