#!/usr/bin/env bash
# soak.sh: the soak of issue #29 (test/e2e/soak_test.go's TestSoak): pods
# created and deleted through the daemon's API, 20 at a time, for SOAK
# (default 60m; make test-soak gives 5m) or SOAK_PODS pods (default
# 10000), with the daemon killed every 10 minutes, containerd restarted
# once and the registry stopped for a minute; then nothing may be left
# and the daemon's live heap, goroutines and fds are within 10 % of before (RSS reported).
# Figures go to SOAK_OUT (default bin/soak): soak.csv, soak.svg, soak.txt.
# With --update-docs they are copied to docs/soak.svg and docs/soak.txt.
# Env: CONTAINERD (default 2: the pinned 2.x; 1.6 for Debian's), REGISTRY.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_root

HACK=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HACK/.." && pwd)
export REGISTRY=${REGISTRY:-127.0.0.1:5000}
export E2E_POD_CIDR=${E2E_POD_CIDR:-10.89.0.0/16}
export PATH=$PATH:/usr/local/go/bin
SOAK=${SOAK:-60m}
SOAK_PODS=${SOAK_PODS:-10000}
SOAK_OUT=${SOAK_OUT:-$ROOT/bin/soak}
update_docs=0
[[ ${1:-} == --update-docs ]] && update_docs=1
flavor=$(containerd_flavor "${CONTAINERD:-2}")

timed "dependencies (hack/install-deps.sh)" "$HACK/install-deps.sh"
[[ $flavor == 1.6 ]] || timed "containerd $(containerd2_version) (hack/install-containerd2.sh)" "$HACK/install-containerd2.sh"
[[ $flavor == 1.6 ]] || timed "runc $(runc2_version) (hack/install-runc2.sh)" "$HACK/install-runc2.sh"
timed "registry on $REGISTRY (hack/start-registry.sh)" "$HACK/start-registry.sh" "$REGISTRY"
timed "test images (hack/images)" bash -c 'cd "$1" && go run ./hack/images --registry "$2"' _ "$ROOT" "$REGISTRY"
timed "pod network isolation for $E2E_POD_CIDR" "$HACK/isolate-pod-network.sh" "$E2E_POD_CIDR"
mkdir -p "$SOAK_OUT"
# go test's -timeout: the soak's duration (Go's form: 90s, 5m, 1h) plus 30 minutes.
minutes() {
	case $1 in
	*h) echo $((${1%h} * 60)) ;;
	*m) echo "${1%m}" ;;
	*s) echo $((${1%s} / 60 + 1)) ;;
	*) die "SOAK=$1: give a duration like 5m or 1h" ;;
	esac
}
step "soak: $SOAK or $SOAK_PODS pods against containerd $flavor; a line a minute; figures in $SOAK_OUT"
cd "$ROOT"
CONTAINERD=$flavor MINIKUBELET_E2E=1 MINIKUBELET_SOAK=$SOAK MINIKUBELET_SOAK_PODS=$SOAK_PODS SOAK_OUT=$SOAK_OUT \
	hack/gotest.sh "soak-containerd-$flavor" --stream -count=1 -timeout "$(($(minutes "$SOAK") + 30))m" -run '^TestSoak$' -v ./test/e2e/
cat "$SOAK_OUT/soak.txt"
if ((update_docs)); then
	cp "$SOAK_OUT/soak.svg" "$ROOT/docs/soak.svg"
	cp "$SOAK_OUT/soak.txt" "$ROOT/docs/soak.txt"
	step "docs/soak.svg and docs/soak.txt updated"
fi
