#!/usr/bin/env bash
# bench.sh is `make bench`: the benchmarks, each beside the baseline measured
# in the same run, against a throwaway Postgres and Redis like `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/throwaway.sh
go test -run '^$' -bench . -benchmem -count "${BENCH_COUNT:-1}" ${BENCH_TIME:+-benchtime "$BENCH_TIME"} ./...
