# shelf's tasks. `make help` lists them. Two matter most:
#   make run   start everything (a local Cassandra included) and serve the API
#   make test  run every test against a real Cassandra
# The tasks that prove (tests, benchmarks, the cluster runs) live in
# tests/proof.mk, included below; tests/README.md says what each proves.
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
GO ?= go
STATICCHECK_VERSION := v0.8.2
# The launcher of the local Cassandra node (see cmd/cassandra-local).
CASSANDRA := $(GO) run ./cmd/cassandra-local

.DEFAULT_GOAL := help

.PHONY: help
help: ## list the targets (the proof lanes of tests/proof.mk after the rest)
	@awk 'BEGIN {FS = ":.*## "} FNR == 1 && FILENAME ~ /proof\.mk$$/ {print "proof lanes (tests/proof.mk, tests/README.md):"} \
		/^[a-z-]+:.*## / {printf "  make %-15s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: run
run: ## fetch the web assets, start the local Cassandra if none is configured or answering, migrate, serve on 127.0.0.1:8080, this machine only (elsewhere: SHELF_HTTP_ADDR=127.0.0.1:8081 SHELF_PUBLIC_URL=http://localhost:8081 make run; SHELF_HTTP_ADDR=:8080 for every interface)
	@bash scripts/web-assets.sh
	@if [ -z "$${SHELF_CASSANDRA_HOSTS:-}" ]; then $(CASSANDRA) up; fi
	@$(GO) build -o bin/api ./cmd/api
	@echo "shelf: starting; the URL is logged once it serves. Ctrl-C stops it (the Cassandra node keeps running until make cassandra-down)."
	@SHELF_HTTP_ADDR=$${SHELF_HTTP_ADDR:-127.0.0.1:8080} SHELF_LOG_FORMAT=$${SHELF_LOG_FORMAT:-console} exec bin/api serve

.PHONY: web-assets
web-assets: ## fetch Swagger UI (for /docs), playwright-core and axe-core (the browser test's driver and accessibility check) from npm into .cache/npm; embed Swagger UI in the next build
	@bash scripts/web-assets.sh

.PHONY: generate
generate: ## regenerate the Go SDK (sdk/shelfclient) from openapi.yaml and the configuration reference (docs/configuration.md) from internal/config's settings table; a test fails when either is stale
	@cd sdk/shelfclient && $(GO) generate ./...
	@$(GO) run ./internal/config/cmd/configref

.PHONY: lint
lint: ## gofmt, go vet and staticcheck
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@$(GO) vet ./...
	@$(GO) vet -tags integration ./...
	@$(GO) vet -tags bench ./tests/bench/
	@$(GO) vet -tags degraded ./tests/bench/degraded/
	@$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) -tags integration,bench,degraded,nemesis,regions,hammer ./...

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
cluster-up: ## start three nodes on 127.0.0.1, .2 and .3 (stop the single node first); DCS=2 instead starts two data centres, dc1 on 127.0.0.61 and dc2 on .71 (PER_DC=2: .62 and .72 too; GossipingPropertyFileSnitch), and prints the hosts per data centre
	@$(CASSANDRA) cluster-up $(DCS) $(PER_DC)

.PHONY: cluster-down
cluster-down: ## stop the three nodes (DCS=2 [PER_DC=2]: the data centres' nodes)
	@$(CASSANDRA) cluster-down $(DCS) $(PER_DC)

.PHONY: clean
clean: ## remove build output and the local nodes' data (not the jar cache)
	@$(CASSANDRA) down || true
	@$(CASSANDRA) cluster-down || true
	@$(CASSANDRA) cluster-down 3 3 || true
	rm -rf bin .cassandra

include tests/proof.mk
