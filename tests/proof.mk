# shelf's proof lanes, included by the Makefile (`make help` lists them
# after the rest): every target that tests, benchmarks or runs the cluster
# checks. tests/README.md's table says what each proves, what it needs and
# how long it takes. Paths are from the repository's root, where make runs.

# How long each of `make bench`'s rounds runs per side, and how many rounds.
BENCH_ROUND ?= 2s
BENCH_ROUNDS ?= 3
# How long `make test-nemesis` (and test-nemesis-broken) runs its workload
# and faults; `make test-regions` takes it only when given (else 60s).
DURATION ?= 3m
# Which deliberately broken build `make test-nemesis-broken` runs (claims
# or lwt); `make test-regions` runs the real server unless BROKEN=local-serial.
BROKEN ?= claims
# How long `make fuzz` runs each fuzz target.
FUZZTIME ?= 30s
# How many random fault schedules `make fuzz` explores (make test runs 300).
EXPLORE_ROUNDS ?= 200000

.PHONY: test-fast
test-fast: ## every test that needs no database (go test ./...: domain, handlers, the fault explorers' every schedule, memstore against the store contracts); its time: tests/README.md
	@$(GO) test -count=1 -timeout 10m ./...
	@echo "test-fast: passed. The tests that need Cassandra (tag integration: tests/e2e, repository, cmd/api and more) run in make test; the launcher's cluster in make test-cluster, the benchmarks in make bench."

.PHONY: test
test: ## run every test with -tags integration against the local Cassandra node (started when none answers and SHELF_TEST_CASSANDRA_HOSTS is unset): the end-to-end package, the repository on a real node, the store contracts, and every test of make test-fast, once, without -race (make test-race runs them all under it; CI runs both); tests/test-go.sh
	@$(CASSANDRA) with -- env GO=$(GO) tests/test-go.sh

.PHONY: test-race
test-race: ## every test of make test again, under -race (the fault explorers one schedule in eight); CI runs it right after make test; tests/test-go.sh with RACE=-race
	@$(CASSANDRA) with -- env GO=$(GO) RACE=-race tests/test-go.sh

.PHONY: test-browser
test-browser: ## every console page and action with three users and an admin (and a second api requiring verified emails on BROWSER_PORT+1), and /docs, in headless Chromium (playwright-core from npm; Debian's chromium installed if missing, as root); README_SCREENSHOTS=1 saves docs/console.md's screenshots into docs/screenshots (names alice, bob, carol, admin in a keyspace made for the run and dropped after)
	@$(CASSANDRA) with -- tests/browser/test-browser.sh

.PHONY: test-clients
test-clients: ## four generated clients run a short story against a real server, type checked: openapi-generator 7.25's Python and TypeScript (Maven Central), openapi-python-client 0.29 (PyPI, mypy --strict), openapi-typescript 7.13 + openapi-fetch 0.17 (npm); tsc --strict; warnings about openapi.yaml fail it
	@$(CASSANDRA) with -- tests/clients/test-clients.sh

.PHONY: test-cluster
test-cluster: ## the three-node cluster test (build tag cluster; RF 3, QUORUM, one node killed); CI runs it after make test-race
	@$(GO) test -race -tags cluster -count=1 -timeout 15m -run Cluster -v ./tools/localcassandra/

.PHONY: bench
bench: ## every operation through shelf, the lean baseline server and the raw driver, side by side; fan-outs beside raw batches; prints the table, saves it and the JSON under .bench/ (BENCH_ROUND 2s, BENCH_ROUNDS 3, BENCH_ONLY name parts, comma-separated)
	@$(CASSANDRA) with -- env BENCH_ROUND=$(BENCH_ROUND) BENCH_ROUNDS=$(BENCH_ROUNDS) $(GO) test -tags bench -count=1 -timeout 60m -run '^TestBench$$' -v ./tests/bench/

.PHONY: capacity
capacity: ## the capacity model's inputs (docs/design/capacity-model.md): bytes per row and rows per partition of every table after a realistic mix through the api, read from the local node's SSTables; the tombstones a list's first page meets after many edits; compare-and-sets per second on one key by contending clients, on the node and on three nodes of its own (127.0.0.41-43); saved under .bench/capacity-<time>.md (CAPACITY_USERS 2000, CAPACITY_ITEMS 3000)
	@$(CASSANDRA) with -- $(GO) test -tags bench -count=1 -timeout 30m -run '^TestCapacity$$' -v ./tests/bench/

.PHONY: bench-seeds
bench-seeds: ## the seeds' uniqueness patterns beside shelf's claims on a three-node cluster of its own (RF 3), with and without a hung node; prints a table (SEEDS_ROUNDS, 20)
	@$(GO) test -tags seeds -count=1 -timeout 60m -run '^TestSeeds$$' -v ./tests/bench/seeds/

.PHONY: bench-jobs
bench-jobs: ## deletions of accounts of 0, 100, 1 000 and 10 000 items and closings of groups of 1 and 1 000 members: the answer (202) against the empty one's, and the time until the job reads finished; a 10 000-item deletion whose api is killed (SIGKILL) mid-job; saved under .bench/jobs-<time>.md
	@$(CASSANDRA) with -- $(GO) test -tags bench -count=1 -timeout 30m -run '^TestBenchJobs$$' -v ./tests/bench/

.PHONY: bench-degraded
bench-degraded: ## the api in cluster mode on three nodes of its own (127.0.0.51-53, RF 3), 16 clients of a mix of reads, pages, updates and signups; healthy (after a warm-up until the nodes' compilers calm), one node hung, killed and restarted, slow (SIGSTOP 100 ms of every 300 ms), two nodes hung, a rolling restart of the two api processes the clients balance over, then of every node (SIGTERM, start, the next), each window against the healthy one, each fault begun once the cluster has settled from the one before; each node's CPU (the JIT's share) per window; table, JSON and HTML report under .bench/ (DEGRADED_WINDOW 15s, DEGRADED_NODE 2, DEGRADED_FAULTS hung,killed,slow,majority,api-roll,roll, DEGRADED_ROLL_PAUSE 0, DEGRADED_RATE 0 (requests a second in all; 0: as fast as answered), DEGRADED_API_ENV, DEGRADED_SPECULATIVE_RETRY (every table's, e.g. MIN(99p,50ms)), DEGRADED_LABEL)
	@$(GO) test -tags degraded -count=1 -timeout 30m -run '^TestDegraded$$' -v ./tests/bench/degraded/

.PHONY: storm
storm: ## the storm: colliding signups, renames, password changes while a node of its own hangs (SIGSTOP 2-8 s); STORM_ROUNDS (40)
	@$(GO) test -tags storm -count=1 -timeout 30m -run '^TestStorm$$' -v ./tests/storm/

.PHONY: test-nemesis
test-nemesis: ## the nemesis: a three-node cluster of its own, two API processes (one 2 s ahead), every operation at once, nodes killed/hung (one or two) and API processes killed for DURATION (3m); history, summary and report.html under .nemesis/
	@DURATION=$(DURATION) $(GO) test -tags nemesis -count=1 -timeout 90m -run '^TestNemesis$$' -v ./tests/nemesis/

.PHONY: nemesis-recheck
nemesis-recheck: ## check the claims of a saved nemesis run again with porcupine: RUN=.nemesis/<time>
	@NEMESIS_RECHECK=$(abspath $(RUN)) $(GO) test -tags nemesis -count=1 -run '^TestRecheckClaims$$' -v ./tests/nemesis/

.PHONY: test-nemesis-broken
test-nemesis-broken: ## the nemesis against a deliberately broken build, one node hung at a time; passes when the checker reports U1 or U3. BROKEN=claims (claims released when an activation's outcome is unknown) or lwt (claims by check-then-act, no compare-and-set)
	@NEMESIS_BROKEN=$(BROKEN) NEMESIS_FAULTS=hang-node DURATION=$(DURATION) $(GO) test -tags nemesis -count=1 -timeout 90m -run '^TestNemesis$$' -v ./tests/nemesis/

.PHONY: test-regions
test-regions: ## two data centres of their own (dc1 on 127.0.0.101, dc2 on .102, one node each, the link between them through a relay), an API process in each, colliding signups, renames, email changes and suspensions through both for DURATION (60s here) while the link is slowed (REGIONS_LINK_DELAY, 50ms each way) and one data centre hangs; U1 (porcupine), U3, S2 and the latency of reads and signups per data centre; files under .regions/. BROKEN=local-serial: compare-and-sets at LOCAL_SERIAL, passes only when the checker reports U1 or U3
	@DURATION=$(if $(filter command line environment,$(origin DURATION)),$(DURATION),60s) REGIONS_BROKEN=$(if $(filter local-serial,$(BROKEN)),local-serial,) \
		$(GO) test -tags regions -count=1 -timeout 30m -run '^TestRegions$$' -v ./tests/regions/

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
fuzz-api: ## schemathesis against a running api with the served openapi.yaml, as an admin that keeps its session and anonymous, for each seed of FUZZ_SEEDS ("1 7"), FUZZ_EXAMPLES per operation (30)
	@$(CASSANDRA) with -- tests/fuzz/fuzz-api.sh
