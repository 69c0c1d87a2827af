# lockworker: the two commands a newcomer needs are `make demo` and `make test`.
# CI (.ci/run) runs these targets verbatim.

GO          ?= go
BIN         ?= bin/lockworker
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
# Static, as the Dockerfile builds it.
BUILD_FLAGS ?= -trimpath -ldflags='-s -w'
# The Go modules: the daemon's, the bench's (its peers stay out of the
# daemon's go.mod) and the alert rules' tests (Prometheus's code likewise).
MODULES     := . bench deploy/prometheus

# bin/ first on PATH: .ci/apt-install may link bin/redis-server there.
export PATH := $(CURDIR)/bin:$(PATH)

.PHONY: all build run demo test fmt-check fmt vet lint bench bench-partitions bench-time chaos chaos-schedule redis-server chromium compose-check compose-e2e clean

all: fmt-check vet test build

build:
	CGO_ENABLED=0 $(GO) build $(BUILD_FLAGS) -o $(BIN) ./cmd/lockworker

## run: one replica against REDIS_URLS (default redis://127.0.0.1:6379).
run: build
	./$(BIN)

## demo: a Redis of its own, 3 replicas, a graceful handover and a crash failover.
## PARTITIONS=8: the same fleet sharing eight partitions (demo --partitions 8);
## DEMO_FLAGS=--verbose streams the replicas' logs.
DEMO_FLAGS ?=
demo: redis-server build
	./$(BIN) demo $(if $(PARTITIONS),--partitions $(PARTITIONS)) $(DEMO_FLAGS)

## test: every module's tests: the daemon's and the bench's with the race
## detector, against real redis-server processes and a real (headless)
## chromium for the dashboard; the alert rules' with Prometheus's own code
## (deploy/prometheus, without -race: it runs Prometheus's code over three
## files, and -race would double the first build of its ~700 packages).
## Installs redis-tools and chromium when missing, saying so first
## (.ci/apt-install). Runs every module even when one fails, and fails at
## the end, naming them.
test:
	@.ci/apt-install redis-server chromium
	@start=$$(date +%s); failed=; \
	for m in $(MODULES); do \
		race=-race; [ $$m = deploy/prometheus ] && race=; \
		echo "== $$m: go test $$race -count=1 ./..."; \
		(cd $$m && $(GO) test $$race -count=1 ./...) || failed="$$failed $$m"; \
	done; \
	took=$$(( $$(date +%s) - start )); took="$$((took / 60))m$$((took % 60))s"; \
	if [ -n "$$failed" ]; then echo "make test: FAILED in$$failed after $$took (see the FAIL lines above)"; exit 1; fi; \
	echo "make test: every module passed ($(MODULES)) in $$took"

## bench: lockworker's lock against bsm/redislock and redsync, and the idle
## cost of a leader and a follower (about 3 minutes; BENCH_FLAGS=-idle=10s
## for a quick run); handover and failover latency with real processes on
## one redis-server (notices on and off), a Sentinel group and a Redis
## Cluster, and forced Redis failovers timed to the next committed job
## (about 6 minutes); jobs per second with a no-op handler, one job per
## round trip and with group commit, beside the raw round trip, as one
## table with the ratios (about 1 minute); what the fleet registry and an open dashboard add to an
## idle fleet's Redis load (about 2 minutes); partitions (bench-partitions,
## about 11 minutes); a flood of half-open connections against one replica
## (about 30 seconds); delayed jobs, schedules and idempotent enqueue
## (bench-time, about 12 minutes). The bench is a module of its own
## (bench/go.mod), so the daemon never depends on the peers.
BENCH_FLAGS ?=
bench: redis-server build
	cd bench && $(GO) run ./cmd/peerbench -bin $(abspath $(BIN)) $(BENCH_FLAGS)
	cd bench && $(GO) run ./cmd/handoverbench -bin $(abspath $(BIN))
	cd bench && $(GO) run ./cmd/fleetidle -bin $(abspath $(BIN))
	$(GO) test -run '^$$' -bench 'ProcessNoop|RedisRoundTrip|StepFloor' -count=5 ./internal/jobs | (cd bench && $(GO) run ./cmd/jobsbench)
	cd bench && $(GO) run ./cmd/partitionbench -bin $(abspath $(BIN)) $(PARTITIONBENCH_FLAGS)
	cd bench && $(GO) run ./cmd/floodbench -bin $(abspath $(BIN))
	cd bench && $(GO) run ./cmd/timebench -bin $(abspath $(BIN)) $(TIMEBENCH_FLAGS)

## bench-partitions: what partitions buy and cost, with 3 real replicas per
## fleet on one redis-server, 5 repetitions, one table (about 11 minutes):
## jobs/s with a 10 ms handler and with a no-op one, PARTITIONS=16 beside 1;
## a stopped, killed and joining replica's partitions handed over; an idle
## fleet with PARTITIONS=64. A quick run:
## PARTITIONBENCH_FLAGS='-reps 1 -idle-window 10s -noop-jobs 50000'.
PARTITIONBENCH_FLAGS ?=
bench-partitions: redis-server build
	cd bench && $(GO) run ./cmd/partitionbench -bin $(abspath $(BIN)) $(PARTITIONBENCH_FLAGS)

## bench-time: delayed jobs, schedules and idempotent enqueue, 3
## repetitions, one table (about 12 minutes): 10,000 delayed jobs over 100
## keys due within 10 s on 3 replicas with PARTITIONS=16 (early starts,
## lateness, per-key due-time order); the Redis commands/s that 10,000 jobs
## due in an hour and 100 schedules every minute add to an idle fleet;
## 1,000 enqueues sent twice with one Idempotency-Key across a forced
## Sentinel failover (jobs run per key). A quick run: TIMEBENCH_FLAGS=-quick.
TIMEBENCH_FLAGS ?=
bench-time: redis-server build
	cd bench && $(GO) run ./cmd/timebench -bin $(abspath $(BIN)) $(TIMEBENCH_FLAGS)

## chaos: the long fault-injection run (200 faults, 2s TTL, 3 replicas), once
## for each value of PARTITIONS (unset: "1 8": one lock, then eight
## partitions with keyed jobs, order checked per key and fencing per
## partition): prints a summary table per run and fails on any safety
## violation. SEED=n repeats a run's faults; PARTITIONS=8 runs only the
## partitioned one; BATCH=n sets the replicas' JOB_BATCH (0: the daemon's
## default).
FAULTS ?= 200
BATCH  ?= 0
chaos: redis-server
	@seed=$${SEED:-$$(date +%s)}; failed=; \
	for p in $(or $(PARTITIONS),1 8); do \
		echo "chaos: seed $$seed, PARTITIONS=$$p (repeat with: make chaos SEED=$$seed PARTITIONS=$$p)"; \
		$(GO) test -count=1 -timeout 90m -v -run '^TestChaos$$' ./internal/testkit/chaos \
			-args -chaos.long -chaos.seed=$$seed -chaos.faults=$(FAULTS) -chaos.batch=$(BATCH) -chaos.partitions=$$p \
			|| failed="$$failed $$p"; \
	done; \
	if [ -n "$$failed" ]; then echo "make chaos: FAILED with PARTITIONS=$$failed (seed $$seed)"; exit 1; fi

## chaos-schedule: issue 35's measurement: a schedule every second on 3
## replicas and one Redis (appendfsync always) for DURATION (default 10m)
## under kill -9, SIGTERM, SIGSTOP past the lease and Redis restarts;
## prints a table and fails on a tick run twice or lost while owned.
## FAULT_EVERY=5s spaces the faults (default: one right after another).
DURATION ?= 10m
FAULT_EVERY ?= 0
chaos-schedule: redis-server
	@seed=$${SEED:-$$(date +%s)}; echo "chaos-schedule: seed $$seed, $(DURATION)"; \
	$(GO) test -count=1 -timeout 90m -v -run '^TestChaosSchedule$$' ./internal/testkit/chaos \
		-args -chaos.seed=$$seed -chaos.schedule-run=$(DURATION) -chaos.fault-every=$(FAULT_EVERY)

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

fmt:
	gofmt -w $$(git ls-files '*.go')

vet:
	@set -e; for m in $(MODULES); do echo "== $$m: go vet ./..."; (cd $$m && $(GO) vet ./...); done

lint:
	@set -e; for m in $(MODULES); do echo "== $$m: staticcheck ./..."; (cd $$m && $(GO) run $(STATICCHECK) ./...); done

## redis-server, chromium: installed from Debian's packages when missing,
## with --no-install-recommends, after saying so; nothing installed starts a
## service. redis-server comes from redis-tools (the package redis-server
## would also start a Redis on port 6379), as bin/redis-server. A package
## manager that holds its lock is waited for, up to APT_LOCK_WAIT seconds
## (300). See .ci/apt-install.
redis-server:
	@.ci/apt-install redis-server

chromium:
	@.ci/apt-install chromium

## compose-check: both compose files through Debian's docker-compose
## `config` (no Docker engine needed, none installed); installed when missing.
compose-check:
	@.ci/apt-install docker-compose
	docker-compose -f docker-compose.yml config -q
	docker-compose -f deploy/docker-compose.redlock.yml config -q
	@echo "compose files: valid"

## compose-e2e: both compose files, as shipped, in this machine's Docker
## engine with --scale worker=3 (about 5 minutes): one leader, a docker stop
## handover, a docker kill failover, jobs in order across both, the
## containers' hardening and health, a Redlock node stopped; then
## docker-compose.yml with PARTITIONS=8 (the partitions shared, each of a
## stopped or killed worker's led elsewhere, each key's jobs in order;
## E2E_FLAGS=-partitions=0 skips it, -files= runs it alone); everything
## torn down, then a summary with the times measured. With no registry the
## images are built from this machine (deploy/standin-images.sh).
## E2E_FLAGS=-h lists the settings.
E2E_FLAGS ?=
compose-e2e: redis-server
	$(GO) run ./deploy/e2e $(E2E_FLAGS)

clean:
	rm -rf bin
