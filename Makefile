# minikubelet — run `make help` for the targets.
SHELL := /bin/bash
export PATH := $(PATH):/usr/local/go/bin
GO ?= go
GOTEST ?= $(GO) test
TESTFLAGS ?=
E2E_FLAGS ?=
BIN := bin/minikubelet
REGISTRY ?= 127.0.0.1:5000
# TESTLOG_DIR keeps the JSON of every go test run of make test
# (hack/gotest.sh) for the skip summary at its end (hack/test-summary.sh).
export TESTLOG_DIR ?= $(CURDIR)/bin/testlogs
NODE ?= minikubelet
SUITE ?= nodeconformance
FOCUS ?=

.PHONY: help build install test test-unit test-fuzz test-e2e test-conformance test-node-conformance test-bench-smoke test-cgroupv2 test-privileged test-soak soak test-demo-down demo demo-down verify fmt vet tidy clean bench conformance node-conformance

help: ## show this help
	@grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN{FS=":.*?## "}{printf "  %-16s %s\n", $$1, $$2}'

build: ## build bin/minikubelet
	CGO_ENABLED=0 $(GO) build -o $(BIN) ./cmd/minikubelet

PREFIX ?= /usr/local

install: build ## install bin/minikubelet as $(PREFIX)/bin/minikubelet (root); hack/minikubelet.service runs it from there
	install -D -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/minikubelet

TEST_PARTS := test-unit test-fuzz test-e2e test-conformance test-node-conformance test-bench-smoke test-soak test-cgroupv2

# Each part says how long it took; the run stops at the first part that
# fails, and ends (also then) with the skipped tests by reason and the
# closing "N passed, N failed, N skipped" line. Meanwhile hack/prebuild.sh
# builds the per-machine caches the later parts need (control plane,
# containerd 2.x, conformance binaries, guest image) at nice 19, so a cold
# machine does not wait for them one after another; it is stopped if still
# running at the end; its log is repeated only if a build failed or did not
# finish (else one line: CI keeps only the end of the output, which is for
# the failures).
test: ## everything CI runs: unit tests, fuzzing, the end-to-end suite, the cgroup v2 guest (needs root); ends with the skips by reason
	@rm -rf "$(TESTLOG_DIR)"; mkdir -p "$(TESTLOG_DIR)"; rc=0; \
	mkdir -p bin; : > bin/prebuild.log; setsid hack/prebuild.sh "$(CURDIR)/bin/prebuild.log" & prebuild=$$!; \
	echo "[make test] building the per-machine caches in the background (nice 19; log bin/prebuild.log, pid $$prebuild)"; \
	for part in $(TEST_PARTS); do \
		start=$$SECONDS; echo "[make test] $$part ..."; \
		$(MAKE) --no-print-directory $$part || rc=$$?; \
		if [ $$rc -ne 0 ]; then echo "[make test] $$part: FAILED after $$((SECONDS - start))s"; break; fi; \
		echo "[make test] $$part: done in $$((SECONDS - start))s"; \
	done; \
	if kill -0 $$prebuild 2>/dev/null; then echo "[make test] stopping the background build (bin/prebuild.log)"; kill -- -$$prebuild 2>/dev/null; fi; \
	if grep -q ' all done$$' bin/prebuild.log && ! grep -q ': failed (exit' bin/prebuild.log; then \
		echo "[make test] background build: $$(grep -c ': done in' bin/prebuild.log) caches built or current (bin/prebuild.log)"; \
	else sed 's/^/  /' bin/prebuild.log; fi; \
	hack/test-summary.sh; exit $$rc

test-unit: verify ## unit tests with -race; no root, no containerd
	hack/gotest.sh unit -race -count=1 $(TESTFLAGS) ./...

test-fuzz: ## run every Go fuzz target for FUZZTIME each (default 20s); fails on a crash
	hack/fuzz.sh

test-e2e: ## end-to-end suite (real runc, CNI plugins, registry) against Debian's containerd 1.6 and the pinned 2.x at the same time (E2E_CONCURRENT=0: one after the other); CONTAINERD=1.6 or CONTAINERD=2 runs one (root)
	E2E_FLAGS="$(E2E_FLAGS)" REGISTRY=$(REGISTRY) hack/e2e.sh

test-soak: ## the soak's 5-minute version: pods churned through the API with a daemon kill, a containerd restart and a registry outage; nothing left, footprint within 10 % (root)
	SOAK=$${SOAK:-5m} REGISTRY=$(REGISTRY) hack/soak.sh

soak: ## a month of churn in an hour: 10000 pods (SOAK=60m, SOAK_PODS=10000); figures in bin/soak; SOAK_FLAGS=--update-docs copies the plot to docs/ (root)
	SOAK=$${SOAK:-60m} REGISTRY=$(REGISTRY) hack/soak.sh $(SOAK_FLAGS)

test-bench-smoke: ## the bench end to end, as make bench runs it (its containerd, the kubelet column), one repetition of start, run-launch and manifest-start; checks every column gave a figure, judges none (root; ~30 s warm)
	REGISTRY=$(REGISTRY) hack/gotest.sh benchsmoke --stream -tags benchsmoke -count=1 -timeout 15m -run '^TestBenchSmoke$$' ./test/bench/

bench: ## benchmark against the raw CRI floor and the kubelet (root, minutes, quiet machine; the pinned containerd 2.x, CONTAINERD=1.6 for Debian's); BENCH_FLAGS=--update-docs rewrites docs/performance.md's results
	BENCH_FLAGS="$(BENCH_FLAGS)" REGISTRY=$(REGISTRY) hack/bench.sh

test-cgroupv2: ## e2e cgroup/lifecycle/probe cases in a cgroup v2 + systemd qemu guest, both drivers (root; guest image cached per machine)
	MINIKUBELET_VM=1 REGISTRY=$(REGISTRY) hack/gotest.sh cgroupv2 --stream -count=1 -timeout 60m ./test/cgroupv2/

# make test's part of the conformance suite: its own WORK, addresses,
# bridge and interface, so it can be set up beside a `make conformance`; the
# two wait for each other's kube-proxy (one per machine: its iptables rules).
CI_CONFORMANCE := WORK=/var/tmp/mkl-ci-conf POD_CIDR=10.233.0.0/16 NODE_CIDR=10.234.0.1/24 SERVICE_CIDR=10.235.0.0/16 BRIDGE=mkcibr0 NODE_IF=mkcinode0 KUBELET_PORT=10451

test-conformance: ## the conformance specs hack/conformance/ci-specs.txt lists, against minikubelet in a private cluster with kube-proxy and CoreDNS; fails unless each one ran and passed (root; ~2 min warm; the first run builds e2e.test and the rest, ~12 min)
	NODE=minikubelet SPECS=hack/conformance/ci-specs.txt PROCS=$${PROCS:-4} REGISTRY=$(REGISTRY) $(CI_CONFORMANCE) hack/conformance/run.sh

test-node-conformance: ## the e2e_node specs hack/conformance/ci-node-specs.txt lists, against minikubelet in make node-conformance's harness; fails unless each one ran and passed (root; ~3 min warm)
	NODE=minikubelet SPECS=hack/conformance/ci-node-specs.txt EXPECT=1 PROCS=$${PROCS:-4} REGISTRY=$(REGISTRY) hack/conformance/node.sh

conformance: ## Kubernetes' [NodeConformance] (SUITE=conformance: the whole [Conformance]) e2e suite against NODE=minikubelet|kubelet in a private cluster with kube-proxy and CoreDNS (root; builds cached; ~30 min, SUITE=conformance ~30 min, with CONTAINERD=2 for its image volume specs; FOCUS=regexp narrows, then docs stay)
	NODE=$(NODE) SUITE=$(SUITE) FOCUS="$(FOCUS)" REGISTRY=$(REGISTRY) hack/conformance/run.sh

node-conformance: ## the kubelet's node-conformance suite (e2e_node.test --conformance, its own API server on 127.0.0.1:6443) against NODE=minikubelet|kubelet on this machine (root; builds cached; FOCUS=regexp narrows, then docs stay)
	NODE=$(NODE) FOCUS="$(FOCUS)" REGISTRY=$(REGISTRY) nice -n 19 hack/conformance/node.sh

demo: ## set this machine up (containerd, CNI plugins, registry, images) and run examples/web.yaml
	hack/setup.sh
	$(MAKE) build
	hack/demo.sh

demo-down: ## undo make demo: remove the demo pod, stop what it started, restore /etc/containerd/config.toml (DRY_RUN=1 only prints; ALL_PODS=1 also other minikubelet pods)
	REGISTRY=$(REGISTRY) hack/demo-down.sh

test-demo-down: ## make demo, demo-down, demo, demo-down in a private network and mount namespace; checks that nothing of the demo is left (root; not part of make test)
	MINIKUBELET_DEMO_DOWN_E2E=1 hack/gotest.sh demodown --stream -count=1 -timeout 40m ./test/demodown/

verify: vet ## gofmt, go vet, import direction, no merge conflict markers
	@if git grep -nE '^(<<<<<<<|>>>>>>>)( |$$)' -- . ; then echo "merge conflict markers left in the files above"; exit 1; fi
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '^vendor/')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	hack/verify-imports.sh

vet:
	$(GO) vet ./...

fmt: ## gofmt the tree
	gofmt -w $$(git ls-files '*.go')

tidy:
	$(GO) mod tidy

clean:
	rm -rf bin
