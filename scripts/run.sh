#!/usr/bin/env bash
# run.sh is `make run`: it installs Postgres and Redis from Debian's packages
# when missing, starts them with their data in .run/ (ignored by git; Redis
# with its append-only file on), builds BobNet, applies the migrations and
# serves the console and API on BOBNET_LISTEN (default 127.0.0.1:8080).
# Ctrl-C stops BobNet and both servers; the data stays in .run/ for next time.
#
# BOBNET_DEMO=1 (make demo) serves canned plans instead of asking a model.
#
# One checkout runs one BobNet: a second `make run` says where the first is
# and exits without touching its servers. BOBNET_RUN_DIR moves .run/.
set -euo pipefail
cd "$(dirname "$0")/.."

dir=${BOBNET_RUN_DIR:-.run}
listen=${BOBNET_LISTEN:-127.0.0.1:8080}
mkdir -p "$dir"
info="$dir/bobnet.running"

# The lock is held by this script and by BobNet (which inherits it) for as
# long as either lives, and dies with them, so a kill -9 leaves no stale
# lock behind. Postgres and Redis are started without it: they outlive a
# crashed run and must not keep the checkout locked.
exec 9>>"$dir/run.lock"
if ! flock -n 9; then
	echo "run: BobNet is already running in this checkout: $(cat "$info" 2>/dev/null || echo "see $dir")" >&2
	echo "run: stop that one first (Ctrl-C in its terminal), or set BOBNET_RUN_DIR to run a second one" >&2
	exit 1
fi

host=${listen%:*}
port=${listen##*:}
if [ -z "$host" ] || [ "$host" = 0.0.0.0 ]; then host=127.0.0.1; fi
if (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; then
	echo "run: $listen (BOBNET_LISTEN) is already in use by another program; stop it or set BOBNET_LISTEN to a free address" >&2
	exit 1
fi

stop_services() {
	rm -f "$info" "$dir/env"
	scripts/services.sh stop "$dir" 9>&- || true
}
trap stop_services EXIT
eval "$(scripts/services.sh start "$dir" 9>&-)"
export DATABASE_URL REDIS_URL
# `bobnet token …` and `bobnet migrate` run beside this one read the
# services' addresses from here (they hold no secret: the servers trust
# local connections only).
printf 'DATABASE_URL=%s\nREDIS_URL=%s\n' "$DATABASE_URL" "$REDIS_URL" >"$dir/env"

echo "run: building BobNet into bin/bobnet (the first time takes a few minutes)" >&2
# The same binary and path as `make build`; -buildvcs stamps the commit
# into `bobnet version` (in a git checkout) even where GOFLAGS turns it off.
CGO_ENABLED=0 go build -buildvcs=auto -tags goolm -o bin/bobnet ./cmd/bobnet 9>&-
bin/bobnet migrate
if [ -n "${BOBNET_DEMO:-}" ]; then
	# make demo: the canned model on a free loopback port, stopped with
	# BobNet. It serves the example plans in testdata/plans, labelled.
	demo_port=$( (python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])') 2>/dev/null || echo $((20000 + RANDOM % 20000)))
	bin/bobnet demo-model --listen "127.0.0.1:$demo_port" 9>&- &
	demo_pid=$!
	trap 'kill $demo_pid 2>/dev/null || true; stop_services' EXIT
	export OPENAI_BASE_URL="http://127.0.0.1:$demo_port/v1" BOBNET_MODEL="bobnet-demo (canned)"
	echo "run: demo mode: plans and articles come from a canned model (testdata/plans, testdata/demo/articles), not a real one" >&2
fi
# Not exec: the trap must run after bobnet exits to stop the servers.
bin/bobnet serve &
pid=$!
echo "http://$listen/ (pid $pid)" >"$info"
echo "run: BobNet on http://$listen/, pid $pid (Ctrl-C stops it)" >&2
trap 'kill -TERM $pid 2>/dev/null || true' INT TERM
set +e
wait $pid
status=$?
# A signal interrupts the first wait; wait again for BobNet to finish.
if kill -0 $pid 2>/dev/null; then
	wait $pid
	status=$?
fi
exit $status
