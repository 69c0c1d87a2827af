# lockworker: the two commands a newcomer needs are `make demo` and `make test`.
# CI (.ci/run) runs these targets verbatim.

GO          ?= go
BIN         ?= bin/lockworker
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
# Static, as the Dockerfile builds it.
BUILD_FLAGS ?= -trimpath -ldflags='-s -w'

.PHONY: all build run demo test fmt-check fmt vet lint bench chaos redis-server chromium promtool compose-check compose-e2e clean

all: fmt-check vet test build

build:
	CGO_ENABLED=0 $(GO) build $(BUILD_FLAGS) -o $(BIN) ./cmd/lockworker

## run: one replica against REDIS_URLS (default redis://127.0.0.1:6379).
run: build
	./$(BIN)

## demo: a Redis of its own, 3 replicas, a graceful handover and a crash failover.
demo: redis-server build
	./$(BIN) demo

## test: everything, with the race detector, against real redis-server
## processes, a real (headless) chromium for the dashboard and promtool for
## the alert rules; the bench module's own tests too, so the benchmarks
## cannot rot.
test: redis-server chromium promtool
	$(GO) test -race -count=1 ./...
	cd bench && $(GO) test -race -count=1 ./...

## bench: lockworker's lock against bsm/redislock and redsync, and the idle
## cost of a leader and a follower (about 3 minutes; BENCH_FLAGS=-idle=10s
## for a quick run); handover and failover latency with real processes on
## one redis-server (notices on and off), a Sentinel group and a Redis
## Cluster, and forced Redis failovers timed to the next committed job
## (about 6 minutes); jobs per second with a no-op handler, one job per
## round trip and with group commit, beside the raw round trip, as one
## table with the ratios (about 1 minute); what the fleet registry and an open dashboard add to an
## idle fleet's Redis load (about 2 minutes). The bench is a module of its own
## (bench/go.mod), so the daemon never depends on the peers.
BENCH_FLAGS ?=
bench: redis-server build
	cd bench && $(GO) run ./cmd/peerbench -bin $(abspath $(BIN)) $(BENCH_FLAGS)
	cd bench && $(GO) run ./cmd/handoverbench -bin $(abspath $(BIN))
	cd bench && $(GO) run ./cmd/fleetidle -bin $(abspath $(BIN))
	$(GO) test -run '^$$' -bench 'ProcessNoop|RedisRoundTrip|StepFloor' -count=5 ./internal/jobs | (cd bench && $(GO) run ./cmd/jobsbench)

## chaos: the long fault-injection run (200 faults, 2s TTL): prints a summary
## table and fails on any safety violation. SEED=n repeats a run's faults;
## BATCH=n sets the replicas' JOB_BATCH (0: the daemon's default).
FAULTS ?= 200
BATCH  ?= 0
chaos: redis-server
	@seed=$${SEED:-$$(date +%s)}; echo "chaos: seed $$seed (repeat with: make chaos SEED=$$seed)"; \
	$(GO) test -count=1 -timeout 90m -v -run '^TestChaos$$' ./internal/testkit/chaos \
		-args -chaos.long -chaos.seed=$$seed -chaos.faults=$(FAULTS) -chaos.batch=$(BATCH)

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

fmt:
	gofmt -w $$(git ls-files '*.go')

vet:
	$(GO) vet ./...
	cd bench && $(GO) vet ./...

lint:
	$(GO) run $(STATICCHECK) ./...
	cd bench && $(GO) run $(STATICCHECK) ./...

## redis-server: installed from Debian's packages when missing.
redis-server:
	@command -v redis-server >/dev/null 2>&1 || { \
		echo "redis-server is missing: installing it (apt-get install -y redis-server)"; \
		SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq redis-server >/dev/null; \
		command -v redis-server >/dev/null 2>&1 || { echo "could not install redis-server"; exit 1; }; \
	}

## chromium: Debian's headless browser for the dashboard's browser tests,
## installed when missing (no browser is ever downloaded).
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
		echo "chromium is missing: installing it (apt-get install -y chromium)"; \
		SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; \
		command -v chromium >/dev/null 2>&1 || { echo "could not install chromium"; exit 1; }; \
	}

## promtool: Debian's Prometheus tools, to check deploy/prometheus/alerts.yml
## and run its unit tests; installed when missing (package prometheus, which
## on a systemd host also enables a Prometheus service on :9090:
## `systemctl disable --now prometheus` if you do not want it).
promtool:
	@command -v promtool >/dev/null 2>&1 || { \
		echo "promtool is missing: installing it (apt-get install -y prometheus)"; \
		SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq prometheus >/dev/null; \
		command -v promtool >/dev/null 2>&1 || { echo "could not install promtool"; exit 1; }; \
	}

## compose-check: both compose files through Debian's docker-compose
## `config` (no Docker engine needed); installed when missing.
compose-check:
	@command -v docker-compose >/dev/null 2>&1 || { \
		echo "docker-compose is missing: installing it (apt-get install -y docker-compose)"; \
		SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq docker-compose >/dev/null; \
	}
	docker-compose -f docker-compose.yml config -q
	docker-compose -f deploy/docker-compose.redlock.yml config -q
	@echo "compose files: valid"

## compose-e2e: both compose files, as shipped, in this machine's Docker
## engine with --scale worker=3 (about 5 minutes): one leader, a docker stop
## handover, a docker kill failover, jobs in order across both, the
## containers' hardening and health, a Redlock node stopped; everything
## torn down, then a summary with the times measured. With no registry the
## images are built from this machine (deploy/standin-images.sh).
## E2E_FLAGS=-h lists the settings.
E2E_FLAGS ?=
compose-e2e: redis-server
	$(GO) run ./deploy/e2e $(E2E_FLAGS)

clean:
	rm -rf bin
