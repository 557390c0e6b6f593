# jaco developer targets. `make help` lists them.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

GO     ?= go
PROTOC ?= protoc
BIN    := $(CURDIR)/bin
# Where protoc finds google/protobuf/*.proto (Debian's protobuf-compiler).
PROTO_INCLUDE ?= /usr/include

.PHONY: help
help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-18s %s\n", $$1, $$2}'

# ---------------------------------------------------------------------------
# Code generation (docs/adr/0001-protobuf.md)
#
# Generated code is committed. protoc-gen-go and protoc-gen-go-grpc are pinned
# in vendor-tools/go.mod; protoc-gen-raftproxy and protoc-gen-access are built
# from this module.
# ---------------------------------------------------------------------------

RAFTPROXY    := protobuf/plugin/raftproxy
ECHOTEST     := $(RAFTPROXY)/internal/echotest
GOLDEN       := $(RAFTPROXY)/testdata
ACCESS        := protobuf/plugin/access
ACCESS_GOLDEN := $(ACCESS)/testdata
# .proto files are named from the repository root (import "api/objects.proto"),
# which keeps their names unique in the process-wide protobuf registry.
PROTOC_INCLUDES := -I . -I $(PROTO_INCLUDE)
PROTOC_PLUGINS  := \
	--plugin=protoc-gen-go=$(BIN)/protoc-gen-go \
	--plugin=protoc-gen-go-grpc=$(BIN)/protoc-gen-go-grpc \
	--plugin=protoc-gen-raftproxy=$(BIN)/protoc-gen-raftproxy \
	--plugin=protoc-gen-access=$(BIN)/protoc-gen-access
# Every output lands next to its .proto.
PROTOC_GO := $(PROTOC) $(PROTOC_INCLUDES) $(PROTOC_PLUGINS) \
	--go_out=. --go_opt=paths=source_relative \
	--go-grpc_out=. --go-grpc_opt=paths=source_relative \
	--raftproxy_out=. --raftproxy_opt=paths=source_relative
# api/*.proto also declare each rpc's access policy (docs/adr/0015); the
# plugin fails on an rpc without one.
PROTOC_API := $(PROTOC_GO) --access_out=. --access_opt=paths=source_relative

.PHONY: tools
tools: ## build the protoc plugins (and staticcheck) into ./bin
	cd vendor-tools && $(GO) build -o $(BIN)/protoc-gen-go google.golang.org/protobuf/cmd/protoc-gen-go
	cd vendor-tools && $(GO) build -o $(BIN)/protoc-gen-go-grpc google.golang.org/grpc/cmd/protoc-gen-go-grpc
	$(GO) build -o $(BIN)/protoc-gen-raftproxy ./$(RAFTPROXY)/cmd/protoc-gen-raftproxy
	$(GO) build -o $(BIN)/protoc-gen-access ./$(ACCESS)/cmd/protoc-gen-access
	cd vendor-tools && $(GO) build -o $(BIN)/staticcheck honnef.co/go/tools/cmd/staticcheck

# Outputs are overwritten, never deleted first: a failed run must not lose
# committed code. Whoever deletes a .proto deletes its outputs too.
.PHONY: generate
generate: tools ## regenerate all protobuf code (api/, plugin test inputs)
	$(PROTOC_API) api/*.proto
	$(PROTOC_GO) $(ECHOTEST)/*.proto
	@# The golden test reads this descriptor set, so `go test` needs no
	@# protoc; the golden is the plugin's output for it. The file is named
	@# raftproxytest.proto in it (-I $(GOLDEN)): it is never linked into Go.
	$(PROTOC) -I $(GOLDEN) $(PROTOC_INCLUDES) $(PROTOC_PLUGINS) \
		--include_imports --include_source_info --descriptor_set_out=$(GOLDEN)/raftproxytest.pb \
		--raftproxy_out=$(GOLDEN) --raftproxy_opt=paths=source_relative $(GOLDEN)/raftproxytest.proto
	@# The same for protoc-gen-access's golden test.
	$(PROTOC) -I $(ACCESS_GOLDEN) $(PROTOC_INCLUDES) $(PROTOC_PLUGINS) \
		--include_imports --include_source_info --descriptor_set_out=$(ACCESS_GOLDEN)/accesstest.pb \
		--access_out=$(ACCESS_GOLDEN) --access_opt=paths=source_relative $(ACCESS_GOLDEN)/accesstest.proto

.PHONY: check-generated
check-generated: generate ## fail when committed generated code is stale
	git diff --exit-code -- api protobuf
	@untracked="$$(git status --porcelain --untracked-files=all -- '*.pb.go' '*.pb')"; \
	if [ -n "$$untracked" ]; then \
		echo "generated files not committed:"; echo "$$untracked"; exit 1; \
	fi

# ---------------------------------------------------------------------------
# Build, checks, tests
# ---------------------------------------------------------------------------

.PHONY: build
build: ## build jacod and jaco into ./bin
	$(GO) build -o $(BIN)/ ./cmd/jacod ./cmd/jaco

# The benchmark harness, which scripts/bench-*.sh build and run themselves
# (docs/bench/); it is no part of what is shipped.
.PHONY: jaco-bench
jaco-bench: ## build the benchmark harness (bench/) into ./bin/jaco-bench
	$(GO) build -o $(BIN)/jaco-bench ./bench

.PHONY: lint
lint: tools ## gofmt, go vet, staticcheck, no binary, large file or Go file over 500 lines tracked, no comment citing an issue number
	./scripts/check-tracked-files.sh
	./scripts/check-issue-refs.sh
	@unformatted="$$(gofmt -l $$(git ls-files '*.go'))"; \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(BIN)/staticcheck ./...

# Every package runs under the race detector; the integration tests start
# real jacod processes built by their TestMain. Lint and fuzzing run
# beside the tests, niced, in the CPU the tests' waits leave
# (scripts/check-all.sh).
.PHONY: test
test: check-generated ## every check and test, as CI runs them
	GO=$(GO) MAKE=$(MAKE) FUZZTIME=10 ./scripts/check-all.sh

# Each fuzz target for FUZZTIME seconds (scripts/fuzz.sh); `make test`
# runs them for 10 s each, a crash becomes a seed under testdata/fuzz.
FUZZTIME ?= 10
.PHONY: fuzz
fuzz: ## run every fuzz target for FUZZTIME seconds each (default 10; FUZZTIME=60 make fuzz for longer)
	./scripts/fuzz.sh $(FUZZTIME)

# The long randomized fault suite (internal/chaos, docs/reliability/): every
# nemesis, then a random one per episode, each for CHAOS_DURATION, with a
# fresh seed unless CHAOS_SEED is given; CHAOS_MANAGERS=5 for five managers.
# Root (network namespaces). The test process runs without -race so the checker keeps up with long histories;
# `make test` runs the short version under -race.
CHAOS_DURATION ?= 3m
CHAOS_SEED     ?= $(shell date +%s)
CHAOS_NEMESES  ?= all,random
CHAOS_MANAGERS ?= 3
CHAOS_RESULTS  ?= $(CURDIR)/docs/reliability/results.md
.PHONY: chaos
chaos: ## long randomized fault suite, writes docs/reliability/results.md (root; CHAOS_DURATION per nemesis, CHAOS_SEED)
	cd integration && JACO_CHAOS_DURATION=$(CHAOS_DURATION) JACO_CHAOS_SEED=$(CHAOS_SEED) \
		JACO_CHAOS_NEMESES=$(CHAOS_NEMESES) JACO_CHAOS_MANAGERS=$(CHAOS_MANAGERS) JACO_CHAOS_REPORT=$(CHAOS_RESULTS) \
		$(GO) test -run '^TestChaos$$' -count=1 -timeout 24h -v .

.PHONY: bench
bench: ## committed-write benchmark and its fsync reference, read consistencies beside a write (docs/bench)
	$(GO) test -run '^$$' -bench 'CommittedWrites|FsyncReference|ReadConsistency' -benchtime 2000x -count 5 ./manager/ ./manager/state/raft/storage/ ./manager/state/raft/

.PHONY: bench-updates
bench-updates: ## time to roll a 30-replica service at update parallelism 1, 5, 30 beside the floor of replacing them directly (root; docs/bench/updates.md)
	./scripts/bench-updates.sh

.PHONY: bench-network
bench-network: ## overlay throughput and round trips beside the underlay, DNS answers, a dead or new replica reaching another node's DNS and VIPs (root; docs/bench/network.md)
	$(GO) test -run '^$$' -bench Network -benchtime 2s -count 3 -timeout 20m ./integration/

.PHONY: bench-stacks
bench-stacks: ## a 50-service stack deployed by stack deploy beside 50 service creates, until all 100 replicas run (root; docs/bench/stacks.md)
	$(GO) test -run '^$$' -bench Stacks -benchtime 1x -count 1 -timeout 20m ./integration/

.PHONY: bench-volume-move
bench-volume-move: ## a 200 MiB volume moved by a drain beside tar | nc between the same two nodes, 3 rounds (root; docs/bench/volume-move.md)
	./scripts/bench-volume-move.sh

.PHONY: compat-compose
compat-compose: ## public compose files on jaco and on this machine's Docker swarm (root; FILES=..., docs/compat/compose.md)
	./scripts/compat-compose.sh $(FILES)

.PHONY: bench-day-two
bench-day-two: ## a worker partitioned from the managers and a dead one: time to replacement, 5 rounds (root; docs/bench/day-two.md)
	./scripts/bench-day-two.sh

.PHONY: demo
demo: ## the main job: a manager and three workers in network namespaces running a web service
	./scripts/demo.sh
