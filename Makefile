# BobNet. `make run` serves the console and API on 127.0.0.1:8080 with a local
# Postgres and Redis; `make test` runs every test against throwaway ones.
GO ?= go
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: all build run demo test soak lint bench bench-go bench-cluster fmt clean

all: build

# -tags goolm: Matrix end-to-end encryption with the pure-Go Olm; no cgo, so a
# static binary (mautrix links a sqlite driver BobNet never opens).
build:
	CGO_ENABLED=0 $(GO) build -buildvcs=auto -tags goolm -o bin/bobnet ./cmd/bobnet

run:
	scripts/run.sh

# make run with a canned model serving testdata/plans: the whole flow in a
# minute with no model server.
demo:
	BOBNET_DEMO=1 scripts/run.sh

test:
	scripts/test.sh

# Three replicas under a mixed workload while replicas are killed and
# Postgres and Redis restarted; prints what it checked as a table. make test
# runs the same for 60 s. BOBNET_SOAK_DURATION=20m make soak for longer.
# BOBNET_SOAK_CLUSTER=1: the soak through failovers instead (a 6-node Redis
# Cluster and Postgres with a synchronous standby; a Redis master SIGKILLed,
# then the Postgres primary stopped and the standby promoted).
soak:
	test=TestSoak; [ "$${BOBNET_SOAK_CLUSTER:-}" = 1 ] && test=TestSoakFailover; \
	BOBNET_SOAK_DURATION=$${BOBNET_SOAK_DURATION:-5m} $(GO) test -tags goolm -count=1 -v -run "^$$test\$$" -timeout 90m ./soak/

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet -tags goolm ./...
	$(STATICCHECK) -tags goolm ./...
	@$(GO) mod tidy -diff || { echo "go.mod/go.sum are not tidy: run go mod tidy"; exit 1; }

# The built binary in its own process, driven over HTTP beside bare
# implementations in theirs (scripts/loadbench): the table of
# docs/operations.md. bench-go: the in-process go benchmarks, for profiling.
bench:
	scripts/bench.sh

bench-go:
	scripts/bench.sh go

bench-cluster:
	scripts/bench.sh cluster

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf bin
