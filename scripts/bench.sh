#!/usr/bin/env bash
# bench.sh is `make bench`: the benchmarks, each beside the baseline measured
# in the same run, against a throwaway Postgres and Redis like `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(mktemp -d "${TMPDIR:-/tmp}/bobnet-bench.XXXXXX")
cleanup() {
	scripts/services.sh stop "$dir" || true
	rm -rf "$dir"
}
trap cleanup EXIT
eval "$(scripts/services.sh start "$dir")"
export DATABASE_URL REDIS_URL
go test -run '^$' -bench . -benchmem -count "${BENCH_COUNT:-1}" ${BENCH_TIME:+-benchtime "$BENCH_TIME"} ./...
