#!/usr/bin/env bash
# test.sh is `make test`: it starts a throwaway Postgres and Redis (installing
# them from Debian's packages when missing), a 6-node Redis Cluster and a
# Redis sentinel set (scripts/rediscluster.sh), makes sure headless Chromium
# is there for the browser tests, then runs go vet and go test -race over
# the whole module, and the engine's, the pipelines' and the exactly-once
# tests a second time on the cluster (the list is in README.md). The services are stopped and their data removed afterwards,
# whether the tests pass or fail.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v chromium >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ]; then
		echo "test: installing chromium for the browser tests" >&2
		DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >&2
	else
		echo "test: chromium is missing; install it with: sudo apt-get install -y chromium" >&2
		exit 1
	fi
fi

# Node and npm: a test checks every outbound callback with the official
# standardwebhooks npm package (pinned in
# adapters/webhook/outbox/testdata/receiver/package-lock.json, installed
# there by the test with npm ci).
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ]; then
		echo "test: installing node and npm for the Standard Webhooks receiver" >&2
		DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >&2
	else
		echo "test: node or npm is missing; install them with: sudo apt-get install -y nodejs npm" >&2
		exit 1
	fi
fi

# Room on disk for the build cache and the servers' data (lib.sh).
. scripts/lib.sh
ensure_room test

. scripts/throwaway.sh
# A throwaway Dendrite homeserver for the Matrix adapter's tests (built once
# into a cache folder), a Postgres primary with a synchronous standby
# (PG_FAILOVER_URL names both), a 6-node Redis Cluster and a sentinel set,
# all stopped before the services' folder is removed.
eval "$(scripts/dendrite.sh start "$throwaway_dir/dendrite")"
export MATRIX_TEST_HOMESERVER MATRIX_TEST_SHARED_SECRET
eval "$(scripts/pgstandby.sh start "$throwaway_dir/pgpair")"
export PG_FAILOVER_URL
# The Redis Cluster and the sentinel set.
eval "$(scripts/rediscluster.sh start "$throwaway_dir/rediscluster")"
export REDIS_CLUSTER_URL REDIS_CLUSTER_DIR REDIS_SENTINEL_URL REDIS_SENTINEL_DIR
trap 'scripts/rediscluster.sh stop "$throwaway_dir/rediscluster" || true; scripts/dendrite.sh stop "$throwaway_dir/dendrite" || true; scripts/pgstandby.sh stop "$throwaway_dir/pgpair" || true; throwaway_cleanup' EXIT
export BOBNET_CHROMIUM=${BOBNET_CHROMIUM:-$(command -v chromium)}

echo "test: gofmt, go vet, staticcheck" >&2
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
	echo "gofmt would change: $unformatted" >&2
	exit 1
fi
# -tags goolm: Matrix end-to-end encryption with the pure-Go Olm (no cgo).
go vet -tags goolm ./...
go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 -tags goolm ./...
# The Helm chart: lint and render it with helm's own CLI, built from its Go
# module outside ours (deploy/deploy_test.go renders it again through HELM).
echo "test: helm lint and template" >&2
modsum=$(cat go.mod go.sum | cksum)
HELM=$(scripts/helm.sh)
export HELM
"$HELM" lint --strict deploy/helm/bobnet
"$HELM" template bobnet deploy/helm/bobnet >/dev/null
[ "$modsum" = "$(cat go.mod go.sum | cksum)" ] || { echo "test: building helm changed go.mod or go.sum" >&2; exit 1; }

# openapi.json is linted by an independent validator, the Redocly CLI pinned
# in scripts/openapi (httpapi's TestOpenAPILintsClean runs it).
REDOCLY=$(scripts/openapi/redocly.sh)
export REDOCLY

echo "test: go test -race ./..." >&2
go test -tags goolm -race -count=1 -timeout 20m "$@" ./...

# The engine's, the pipeline's and the exactly-once tests once more on the
# primary with its synchronous standby, through the multi-host URL (the
# failover tests start pairs of their own, since they stop the primary).
echo "test: the engine, pipeline and exactly-once tests on a primary with a synchronous standby" >&2
# README.md lists them.
pair_tests='^(TestNewspaperEndToEnd|TestConcurrentApprovesCreateOneBoard|TestSlowModelIsPlannedOnce|TestWorkerKilledMidPlanIsAnsweredOnce|TestKilledWhilePostingIsAnsweredAfterRestart|TestConcurrentRevisesMakeOneVersion|TestExecuteConcurrentlyCreatesOneBoard|TestCloseWaitsForAStalledApproval|TestExecuteRetriesATransactionCutBeforeCommit|TestExecuteReplaysACommitWhoseAnswerWasLost)$'
DATABASE_URL=$PG_FAILOVER_URL go test -tags goolm -race -count=1 -timeout 10m -run "$pair_tests" ./bot ./store

# The same engine, pipeline and exactly-once tests on the Redis Cluster
# (bottest reads BOBNET_TEST_REDIS_MODE); keep this list and README.md's
# in step. The sentinel tests and the cluster failover (on a cluster of its
# own) ran above, once.
echo "test: the engine's tests again on the Redis Cluster" >&2
BOBNET_TEST_REDIS_MODE=cluster go test -tags goolm -race -count=1 -timeout 10m "$@" \
	-skip 'Sentinel|ClusterFailover' ./bot/redisstore/
BOBNET_TEST_REDIS_MODE=cluster go test -tags goolm -race -count=1 -timeout 10m "$@" \
	-run "$(scripts/clustertests.sh bot)" ./bot/
BOBNET_TEST_REDIS_MODE=cluster go test -tags goolm -race -count=1 -timeout 10m "$@" \
	-run "$(scripts/clustertests.sh slack)" ./adapters/slack/

# The fuzz targets of what outsiders send, each run briefly beyond its seed
# corpus (which every go test above already ran). The budget is a count of
# executions, not a duration: Go 1.26's fuzz coordinator can report its own
# -fuzztime deadline as a failure ("context deadline exceeded", no failing
# input) when a loaded machine delays a worker at that moment (Go issue
# 75804, fixed in Go 1.27). A count has no deadline to race.
# A target named here that no longer exists is an error: go test would
# fuzz nothing and pass.
echo "test: fuzzing the Slack decoders, the REST bodies, the model's output (the plan check, the draft reader, the streamed chunks) and run outputs drawn as HTML" >&2
for target in "FuzzEvents ./adapters/slack" "FuzzEnvelopeMatchesEncodingJSON ./adapters/slack" "FuzzInteractivity ./adapters/slack" \
	"FuzzRESTBodies ./httpapi" "FuzzCheck ./planner" "FuzzDraftReader ./planner" "FuzzStreamChunk ./planner" "FuzzOutputHTML ./web"; do
	set -- $target
	listed=$(go test -list "^$1\$" "$2")
	if ! grep -qx "$1" <<<"$listed"; then
		echo "test: $2 has no fuzz target $1" >&2
		exit 1
	fi
	go test -run '^$' -fuzz "^$1\$" -fuzztime "${BOBNET_FUZZTIME:-20000x}" "$2"
done
