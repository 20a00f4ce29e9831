#!/usr/bin/env bash
# bench.sh is `make bench`: the benchmarks against a throwaway Postgres and
# Redis like `make test`, then one table with each figure beside its
# baseline measured in the same run (BenchmarkX beside BenchmarkXBaseline).
# The benchmarks run in BENCH_COUNT rounds (5); each round runs every
# package once, one package at a time (-p 1, so no benchmark shares the
# cores with another package's), and within a package BenchmarkX and its
# baseline run back to back. The table shows each figure's median and, as
# the ratio, the median of the rounds' ratios: on a shared machine the load
# drifts over minutes, and a pair measured seconds apart shares it.
# The raw output is kept in bin/bench.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/throwaway.sh
mkdir -p bin
: >bin/bench.txt
for round in $(seq "${BENCH_COUNT:-5}"); do
	echo "bench: round $round" >&2
	go test -p 1 -run '^$' -bench . -benchmem -count 1 ${BENCH_TIME:+-benchtime "$BENCH_TIME"} ./... | tee -a bin/bench.txt
done
echo
go run ./scripts/benchtable < bin/bench.txt
