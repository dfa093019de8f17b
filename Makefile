# shelf's tasks. `make help` lists them. Two matter most:
#   make run   start everything (a local Cassandra included) and serve the API
#   make test  run every test against a real Cassandra
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
GO ?= go
STATICCHECK_VERSION := v0.8.2
# The launcher of the local Cassandra node (see cmd/cassandra-local).
CASSANDRA := $(GO) run ./cmd/cassandra-local
# How long each of `make bench`'s rounds runs per side, and how many rounds.
BENCH_ROUND ?= 2s
BENCH_ROUNDS ?= 3
# How long `make test-nemesis` runs its workload and faults.
DURATION ?= 3m
# Which deliberately broken build `make test-nemesis-broken` runs.
BROKEN ?= claims
# How long `make fuzz` runs each fuzz target.
FUZZTIME ?= 30s
# How many random fault schedules `make fuzz` explores (make test runs 300).
EXPLORE_ROUNDS ?= 200000

.DEFAULT_GOAL := help

.PHONY: help
help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  make %-15s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: run
run: ## start the local Cassandra if none is configured or answering, migrate, serve on :8080
	@bash scripts/web-assets.sh
	@if [ -z "$${SHELF_CASSANDRA_HOSTS:-}" ]; then $(CASSANDRA) up; fi
	@$(GO) build -o bin/api ./cmd/api
	@echo "shelf: starting; the URL is logged once it serves. Ctrl-C stops it (the Cassandra node keeps running until make cassandra-down)."
	@SHELF_LOG_FORMAT=$${SHELF_LOG_FORMAT:-console} exec bin/api serve

.PHONY: test
test: ## run every test (unit, integration, end-to-end) with -race against a real Cassandra
	@$(CASSANDRA) with -- $(GO) test -race -count=1 -timeout 10m ./...

.PHONY: test-browser
test-browser: ## the console's story and /docs in headless Chromium (playwright-core from npm; chromium installed if missing)
	@$(CASSANDRA) with -- scripts/test-browser.sh

.PHONY: web-assets
web-assets: ## fetch Swagger UI (for /docs) and playwright-core from npm into .cache/npm; embed Swagger UI in the next build
	@bash scripts/web-assets.sh

.PHONY: test-cluster
test-cluster: ## only the three-node cluster test (RF 3, QUORUM, one node killed; also part of make test)
	@$(GO) test -race -count=1 -timeout 15m -run Cluster -v ./internal/localcassandra/

.PHONY: bench
bench: ## issue 12: every operation through shelf, the lean baseline server and the raw driver, side by side; fan-outs beside raw batches; prints the table, saves it and the JSON under .bench/ (BENCH_ROUND 2s, BENCH_ROUNDS 3, BENCH_ONLY a name part)
	@$(CASSANDRA) with -- env BENCH_ROUND=$(BENCH_ROUND) BENCH_ROUNDS=$(BENCH_ROUNDS) $(GO) test -tags bench -count=1 -timeout 60m -run '^TestBench$$' -v ./bench/

.PHONY: capacity
capacity: ## issue 13: the capacity model's inputs (docs/design.md#capacity-model): bytes per row and rows per partition of every table after a realistic mix through the api, read from the local node's SSTables; compare-and-sets per second on one key by contending clients; saved under .bench/capacity-<time>.md (CAPACITY_USERS 2000, CAPACITY_ITEMS 3000)
	@$(CASSANDRA) with -- $(GO) test -tags bench -count=1 -timeout 30m -run '^TestCapacity$$' -v ./bench/

.PHONY: bench-seeds
bench-seeds: ## issue 11: the seeds' uniqueness patterns beside shelf's claims on a three-node cluster of its own (RF 3), with and without a hung node; prints a table (SEEDS_ROUNDS, 20)
	@$(GO) test -tags seeds -count=1 -timeout 60m -run '^TestSeeds$$' -v ./bench/seeds/

.PHONY: storm
storm: ## issue 10's storm: colliding signups, renames, password changes while a node of its own hangs (SIGSTOP 2-8 s); STORM_ROUNDS (40)
	@$(CASSANDRA) with -- $(GO) test -tags storm -count=1 -timeout 30m -run '^TestStorm$$' -v ./tests/storm/

.PHONY: test-nemesis
test-nemesis: ## issue 11: a three-node cluster of its own, two API processes (one 2 s ahead), every operation at once, nodes killed/hung (one or two) and API processes killed for DURATION (3m); history, summary and report.html under .nemesis/
	@DURATION=$(DURATION) $(GO) test -tags nemesis -count=1 -timeout 90m -run '^TestNemesis$$' -v ./tests/nemesis/

.PHONY: nemesis-recheck
nemesis-recheck: ## check the claims of a saved nemesis run again with porcupine: RUN=.nemesis/<time>
	@NEMESIS_RECHECK=$(abspath $(RUN)) $(GO) test -tags nemesis -count=1 -run '^TestRecheckClaims$$' -v ./tests/nemesis/

.PHONY: test-nemesis-broken
test-nemesis-broken: ## the nemesis against a deliberately broken build, one node hung at a time; passes when the checker reports U1 or U3. BROKEN=claims (claims released when an activation's outcome is unknown) or lwt (claims by check-then-act, no compare-and-set)
	@NEMESIS_BROKEN=$(BROKEN) NEMESIS_FAULTS=hang-node DURATION=$(DURATION) $(GO) test -tags nemesis -count=1 -timeout 90m -run '^TestNemesis$$' -v ./tests/nemesis/

.PHONY: generate
generate: ## regenerate the Go SDK (sdk/shelfclient) from openapi.yaml; a test fails when it is stale
	@cd sdk/shelfclient && $(GO) generate ./...

.PHONY: fuzz
fuzz: ## Go fuzz targets for FUZZTIME each (decoders, identifiers, cursors) and EXPLORE_ROUNDS random fault schedules
	@for t in FuzzNormalizeUsername FuzzNormalizeEmail; do \
		$(GO) test -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) ./domain || exit 1; done
	@$(GO) test -run '^$$' -fuzz '^FuzzSuspensionCursor$$' -fuzztime $(FUZZTIME) ./domain/moderation
	@$(GO) test -run '^$$' -fuzz '^FuzzHistoryCursor$$' -fuzztime $(FUZZTIME) ./domain/moderation
	@$(GO) test -run '^$$' -fuzz '^FuzzLibraryCursor$$' -fuzztime $(FUZZTIME) ./domain/library
	@$(GO) test -run '^$$' -fuzz '^FuzzDecodeJSON$$' -fuzztime $(FUZZTIME) ./handlers
	@$(GO) test -count=1 -run '^TestExploreAccountsRandom$$' ./tests/faults -explore.rounds=$(EXPLORE_ROUNDS)

.PHONY: fuzz-api
fuzz-api: ## schemathesis against a running api with the served openapi.yaml (FUZZ_EXAMPLES per operation, 30)
	@$(CASSANDRA) with -- scripts/fuzz-api.sh

.PHONY: lint
lint: ## gofmt, go vet and staticcheck
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@$(GO) vet ./...
	@$(GO) vet -tags bench ./bench/
	@$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

.PHONY: cassandra-up
cassandra-up: ## start the local Cassandra node on 127.0.0.1:9042 (fetched from Maven Central the first time)
	@$(CASSANDRA) up

.PHONY: cassandra-down
cassandra-down: ## stop the local node
	@$(CASSANDRA) down

.PHONY: cassandra-status
cassandra-status: ## say whether the local node runs and answers
	@$(CASSANDRA) status

.PHONY: cluster-up
cluster-up: ## start three nodes on 127.0.0.1, .2 and .3 (stop the single node first)
	@$(CASSANDRA) cluster-up

.PHONY: cluster-down
cluster-down: ## stop the three nodes
	@$(CASSANDRA) cluster-down

.PHONY: clean
clean: ## remove build output and the local nodes' data (not the jar cache)
	@$(CASSANDRA) down || true
	@$(CASSANDRA) cluster-down || true
	rm -rf bin .cassandra
