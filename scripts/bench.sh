#!/usr/bin/env bash
# bench.sh is `make bench`: the benchmarks against a throwaway Postgres and
# Redis like `make test`, then one table with each figure beside its
# baseline measured in the same run (BenchmarkX beside BenchmarkXBaseline).
# Each benchmark runs BENCH_COUNT times (3) and the table shows medians;
# packages run one at a time (-p 1), so no benchmark shares the cores with
# another package's.
# The raw output is kept in bin/bench.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/throwaway.sh
mkdir -p bin
go test -p 1 -run '^$' -bench . -benchmem -count "${BENCH_COUNT:-3}" ${BENCH_TIME:+-benchtime "$BENCH_TIME"} ./... | tee bin/bench.txt
echo
go run ./scripts/benchtable < bin/bench.txt
