#!/usr/bin/env bash
# e2e.sh: run the end-to-end suite against real components: install the
# dependencies, start the local registry, build and push the images, isolate
# the e2e pod CIDR, then `go test ./test/e2e/...` with MINIKUBELET_E2E=1.
# The suite's TestMain starts and stops its own private containerd with
# hack/start-containerd.sh and hack/stop-containerd.sh.
# Env: REGISTRY (default 127.0.0.1:5000), E2E_POD_CIDR (default
# 10.89.0.0/16), E2E_FLAGS (extra go test arguments, e.g. -run or -v).
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_root

HACK=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export REGISTRY=${REGISTRY:-127.0.0.1:5000}
export E2E_POD_CIDR=${E2E_POD_CIDR:-10.89.0.0/16}
export PATH=$PATH:/usr/local/go/bin

"$HACK/install-deps.sh"
"$HACK/start-registry.sh" "$REGISTRY"
(cd "$HACK/.." && go run ./hack/images --registry "$REGISTRY")
"$HACK/isolate-pod-network.sh" "$E2E_POD_CIDR"

cd "$HACK/.."
step "running the privileged tests (real CNI plugins in a netns, real cgroup v1 files)"
MINIKUBELET_PRIVILEGED=1 go test -count=1 -run 'Privileged|RealPlugins' ./cni/... ./cgroups/...
step "running the e2e suite: go test -count=1 -timeout 40m ${E2E_FLAGS:-} ./test/e2e/..."
# E2E_FLAGS is split on spaces on purpose: it holds several go test arguments.
# shellcheck disable=SC2086
MINIKUBELET_E2E=1 go test -count=1 -parallel 4 -timeout 40m ${E2E_FLAGS:-} ./test/e2e/...
