#!/usr/bin/env bash
# bench.sh is `make bench`: the process-level benchmarks (scripts/loadbench)
# against a throwaway Postgres and Redis like `make test`. It builds
# bin/bobnet (make build) and the harness, which starts `bobnet serve` as a
# process of its own, drives it over HTTP the way traffic comes (approvals
# of proposals the pipeline made, signed Slack events, previews after a
# 2-second model), times a bare implementation of each path in a process
# of its own with the same client, interleaved, and prints one table: each
# figure's median over BENCH_COUNT rounds (5) with their range, and the
# median of the rounds' ratios. The table is kept in bin/bench.md, the
# processes' logs in bin/loadbench-logs/.
#
#   scripts/bench.sh          the process-level table (make bench)
#   scripts/bench.sh go       the in-process go benchmarks, for profiling
#                             (go test -bench; benchtable's table of them)
#   scripts/bench.sh cluster  BobNet on a 3-master Redis Cluster beside
#                             BobNet on one Redis, interleaved: ingest and
#                             approve, and the bare ingest handler on both
#                             (make bench-cluster; the cluster is
#                             scripts/rediscluster.sh's, without append-only
#                             files like the throwaway Redis beside it)
#
# LOADBENCH_REDIS_URL (with LOADBENCH_REDIS_MODE=cluster for a cluster)
# measures against that Redis instead of the throwaway one; BobNet gets
# it as REDIS_URL, with any BOBNET_REDIS_* of the environment. LOADBENCH_ARGS
# adds flags (scripts/loadbench -h), e.g. -workloads approve.
# BENCH_PPROF=DIR profiles BobNet instead: it builds bin/bobnet-pprof
# (-tags pprof: net/http/pprof on the admin listener) and writes each
# workload's CPU and allocation profiles into DIR (go tool pprof reads them).
set -euo pipefail
cd "$(dirname "$0")/.."
# Room on disk: benchmarks build binaries of their own (lib.sh).
. scripts/lib.sh
ensure_room bench
. scripts/throwaway.sh
mkdir -p bin
if [ "${1:-}" = go ]; then
	: >bin/bench.txt
	for round in $(seq "${BENCH_COUNT:-5}"); do
		echo "bench: round $round" >&2
		go test -p 1 -run '^$' -bench . -benchmem -count 1 ${BENCH_TIME:+-benchtime "$BENCH_TIME"} ./... | tee -a bin/bench.txt
	done
	echo
	go run ./scripts/benchtable < bin/bench.txt
	exit 0
fi
if [ -n "${LOADBENCH_REDIS_URL:-}" ]; then
	REDIS_URL=$LOADBENCH_REDIS_URL
fi
if [ "${1:-}" = cluster ]; then
	cluster_dir=$(mktemp -d "${TMPDIR:-/tmp}/bobnet-cluster.XXXXXX")
	cluster_cleanup() {
		scripts/rediscluster.sh stop "$cluster_dir" || true
		rm -rf "$cluster_dir"
		throwaway_cleanup
	}
	trap cluster_cleanup EXIT
	eval "$(BOBNET_REDIS_MEMORY_ONLY=1 scripts/rediscluster.sh cluster "$cluster_dir")"
	export LOADBENCH_CLUSTER_URL=$REDIS_CLUSTER_URL
	LOADBENCH_ARGS="-workloads cluster ${LOADBENCH_ARGS:-}"
fi
go build -o bin/loadbench ./scripts/loadbench
if [ -n "${BENCH_PPROF:-}" ]; then
	CGO_ENABLED=0 go build -tags goolm,pprof -o bin/bobnet-pprof ./cmd/bobnet
	# Not exec: the throwaway servers are stopped when this script exits.
	# shellcheck disable=SC2086
	bin/loadbench -rounds "${BENCH_COUNT:-5}" -bin bin/bobnet-pprof -pprof "$BENCH_PPROF" ${LOADBENCH_ARGS:-}
	exit
fi
make --no-print-directory build
# shellcheck disable=SC2086
table=bin/bench.md
if [ "${1:-}" = cluster ]; then table=bin/bench-cluster.md; fi
bin/loadbench -rounds "${BENCH_COUNT:-5}" ${LOADBENCH_ARGS:-} | tee "$table"
