# minikubelet — run `make help` for the targets.
SHELL := /bin/bash
export PATH := $(PATH):/usr/local/go/bin
GO ?= go
GOTEST ?= $(GO) test
TESTFLAGS ?=
E2E_FLAGS ?=
BIN := bin/minikubelet
REGISTRY ?= 127.0.0.1:5000
NODE ?= minikubelet
FOCUS ?=

.PHONY: help build test test-unit test-fuzz test-e2e test-cgroupv2 test-privileged demo verify fmt vet tidy clean bench conformance

help: ## show this help
	@grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN{FS=":.*?## "}{printf "  %-16s %s\n", $$1, $$2}'

build: ## build bin/minikubelet
	CGO_ENABLED=0 $(GO) build -o $(BIN) ./cmd/minikubelet

test: test-unit test-fuzz test-e2e test-cgroupv2 ## everything CI runs: unit tests, fuzzing, the end-to-end suite, the cgroup v2 guest (needs root)

test-unit: verify ## unit tests with -race; no root, no containerd
	$(GOTEST) -race -count=1 $(TESTFLAGS) ./...

test-fuzz: ## run every Go fuzz target for FUZZTIME each (default 20s); fails on a crash
	hack/fuzz.sh

test-e2e: ## end-to-end suite (real runc, CNI plugins, registry) against Debian's containerd 1.6, then the pinned 2.x; CONTAINERD=1.6 or CONTAINERD=2 runs one (root)
	E2E_FLAGS="$(E2E_FLAGS)" REGISTRY=$(REGISTRY) hack/e2e.sh

bench: ## benchmark against the raw CRI floor (root, minutes, quiet machine); BENCH_FLAGS=--update-docs rewrites docs/performance.md's results
	BENCH_FLAGS="$(BENCH_FLAGS)" REGISTRY=$(REGISTRY) hack/bench.sh

test-cgroupv2: ## e2e cgroup/lifecycle/probe cases in a cgroup v2 + systemd qemu guest, both drivers (root; guest image cached per machine)
	MINIKUBELET_VM=1 REGISTRY=$(REGISTRY) $(GOTEST) -count=1 -timeout 60m -v ./test/cgroupv2/

conformance: ## Kubernetes' [NodeConformance] e2e suite against NODE=minikubelet|kubelet in a private cluster (root; builds cached; ~30 min; FOCUS=regexp narrows, then docs stay)
	NODE=$(NODE) FOCUS="$(FOCUS)" REGISTRY=$(REGISTRY) hack/conformance/run.sh

demo: ## set this machine up (containerd, CNI plugins, registry, images) and run examples/web.yaml
	hack/setup.sh
	$(MAKE) build
	hack/demo.sh

verify: vet ## gofmt, go vet, import direction
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
