#!/usr/bin/env bash
# e2e.sh: run the end-to-end suite against real components: install the
# dependencies, start the local registry, build and push the images, isolate
# the e2e pod CIDR, run the privileged tests once, then `go test
# ./test/e2e/...` with MINIKUBELET_E2E=1 against each selected containerd
# (the control plane for the cluster-mode cases is built first, cached).
# The suite's TestMain starts and stops its own private containerd with
# hack/start-containerd.sh and hack/stop-containerd.sh, which read CONTAINERD.
# Env: CONTAINERD (unset: the system's 1.6, then the pinned 2.x; or one or
# more of 1.6, 2, 2.x's major.minor, space-separated), REGISTRY (default
# 127.0.0.1:5000), E2E_POD_CIDR (default 10.89.0.0/16), E2E_FLAGS (extra go
# test arguments, e.g. -run or -v).
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_root

HACK=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export REGISTRY=${REGISTRY:-127.0.0.1:5000}
export E2E_POD_CIDR=${E2E_POD_CIDR:-10.89.0.0/16}
export PATH=$PATH:/usr/local/go/bin

# Which containerds, validated before anything is installed.
flavors=()
for want in ${CONTAINERD:-1.6 2}; do
	flavor=$(containerd_flavor "$want")
	[[ " ${flavors[*]} " == *" $flavor "* ]] || flavors+=("$flavor")
done
step "containerd under test: ${flavors[*]}"

"$HACK/install-deps.sh"
for flavor in "${flavors[@]}"; do
	[[ $flavor == 1.6 ]] || "$HACK/install-containerd2.sh"
done
# The control plane the cluster-mode cases run against: built once per
# machine from the Go module proxy (minutes on a fresh machine), cached.
"$HACK/cluster/build.sh" >/dev/null
"$HACK/start-registry.sh" "$REGISTRY"
(cd "$HACK/.." && go run ./hack/images --registry "$REGISTRY")
"$HACK/isolate-pod-network.sh" "$E2E_POD_CIDR"

cd "$HACK/.."
step "running the privileged tests (real CNI plugins in a netns, real cgroup v1 files, real subPath bind mounts)"
MINIKUBELET_PRIVILEGED=1 go test -count=1 -run 'Privileged|RealPlugins' ./cni/... ./cgroups/... ./agent/
step "running the control plane harness's own tests (etcd + kube-apiserver on loopback)"
# shellcheck disable=SC2086
MINIKUBELET_E2E=1 go test -count=1 -timeout 10m ${E2E_FLAGS:-} ./test/controlplane/... ./agent/cluster/...

failed=()
for flavor in "${flavors[@]}"; do
	if [[ $flavor == 1.6 ]]; then
		what="containerd $(containerd --version | awk '{print $3}') (system)"
	else
		what="containerd $(containerd2_version) ($(containerd2_bin))"
	fi
	printf '\n'
	step "==== e2e suite against $what: CONTAINERD=$flavor go test -count=1 -parallel 4 -timeout 40m ${E2E_FLAGS:-} ./test/e2e/... ===="
	start=$SECONDS
	# E2E_FLAGS is split on spaces on purpose: it holds several go test arguments.
	# shellcheck disable=SC2086
	if CONTAINERD=$flavor MINIKUBELET_E2E=1 go test -count=1 -parallel 4 -timeout 40m ${E2E_FLAGS:-} ./test/e2e/...; then
		step "==== e2e suite against $what: passed in $((SECONDS - start))s ===="
	else
		step "==== e2e suite against $what: FAILED after $((SECONDS - start))s ===="
		failed+=("$flavor")
	fi
done
if ((${#failed[@]})); then
	die "the e2e suite failed against containerd ${failed[*]}; rerun one with CONTAINERD=${failed[0]} make test-e2e (E2E_FLAGS='-run TestName -v' narrows it)"
fi
step "the e2e suite passed against containerd ${flavors[*]}"
