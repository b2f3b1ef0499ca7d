#!/usr/bin/env bash
# bench.sh [BENCH FLAGS…]: measure minikubelet against the raw CRI floor
# (test/bench). Installs and starts what the e2e suite needs (dependencies,
# the local registry and its images, the pod-network isolation rule), then
# starts a private containerd of its own (hack/start-containerd.sh) with its
# own /24 of 10.89.0.0/16 and bridge, builds bin/minikubelet and the
# benchmark, runs it, and stops and removes everything it started.
#
# Extra arguments go to the benchmark (go run ./test/bench -h lists them),
# e.g. hack/bench.sh --scenarios start,ready --reps 5. BENCH_FLAGS (split on
# spaces) is added too; `make bench BENCH_FLAGS=--update-docs` rewrites
# the results table of docs/performance.md. Results: bench-results.json and
# bench-results.md in the repository root.
# The manifest scenarios' kubelet column runs the kubelet of the pinned
# k8s.io/kubernetes module, built and cached by hack/conformance/build.sh
# kubelet (the first time several minutes; it waits for another build.sh).
# Env: REGISTRY (default 127.0.0.1:5000), BENCH_PROFILE_DIR (capture the
# daemon's pprof profiles and keep its log and the kubelet's there), KUBELET_BIN (a kubelet
# binary to use instead), BENCH_KUBELET=0 (no kubelet column), CONTAINERD
# (default 2: the pinned containerd 2.x, whose CRI streams container events,
# as the soak; 1.6: Debian's, without them).
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_root

HACK=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HACK/.." && pwd)
export REGISTRY=${REGISTRY:-127.0.0.1:5000}
export PATH=$PATH:/usr/local/go/bin
POD_RANGE=10.89.0.0/16
flavor=$(containerd_flavor "${CONTAINERD:-2}")
export CONTAINERD=$flavor

"$HACK/install-deps.sh"
[[ $flavor == 1.6 ]] || "$HACK/install-containerd2.sh"
[[ $flavor == 1.6 ]] || "$HACK/install-runc2.sh"
"$HACK/start-registry.sh" "$REGISTRY"
(cd "$REPO" && go run ./hack/images --registry "$REGISTRY")
"$HACK/isolate-pod-network.sh" "$POD_RANGE"

# A /24 and bridge nobody on this machine uses (e2e suites pick theirs
# from their pid in 1..253; start from the top to stay clear of them).
subnet=""
for n in $(seq 254 -1 1); do
	if [[ -z $(ip -4 route show "10.89.$n.0/24" 2>/dev/null) && ! -e /sys/class/net/mklb$n ]]; then
		subnet=$n
		break
	fi
done
[[ -n $subnet ]] || die "no free /24 in $POD_RANGE (ip route shows all 254 in use)"
CIDR=10.89.$subnet.0/24
BRIDGE=mklb$subnet

DIR=$(mktemp -d /tmp/mklb-XXXXXX)
CTR=$DIR/ctr
cleanup() {
	if [[ -n ${BENCH_PROFILE_DIR:-} && -f $DIR/work/daemon/minikubelet.log ]]; then
		cp "$DIR/work/daemon/minikubelet.log" "$BENCH_PROFILE_DIR/" || true
	fi
	if [[ -n ${BENCH_PROFILE_DIR:-} && -f $DIR/work/kubelet/kubelet.log ]]; then
		cp "$DIR/work/kubelet/kubelet.log" "$BENCH_PROFILE_DIR/" || true
	fi
	"$HACK/stop-containerd.sh" "$CTR" || warn "stopping the private containerd failed"
	ip link del "$BRIDGE" 2>/dev/null || true
	# The daemon's Secrets tmpfs (and anything else it mounted under its
	# root dir) outlives the daemon: unmount, deepest first, then remove.
	awk -v d="$DIR/" 'index($2, d) == 1 {print $2}' /proc/self/mounts | sort -r |
		while read -r m; do umount "$m" || warn "cannot unmount $m"; done
	rm -rf --one-file-system "$DIR"
}
trap cleanup EXIT

# Before the private containerd: the first build takes minutes.
kubelet=(--kubelet "${KUBELET_BIN:-}")
if [[ -z ${KUBELET_BIN:-} && ${BENCH_KUBELET:-1} != 0 ]]; then
	step "the kubelet for the kubelet column (hack/conformance/build.sh kubelet, cached per machine)"
	"$HACK/conformance/build.sh" kubelet | tee "$DIR/build-kubelet.log" ||
		die "building the kubelet failed (see above); BENCH_KUBELET=0 runs the bench without the kubelet column"
	kubelet=(--kubelet "$(tail -n1 "$DIR/build-kubelet.log")/kubelet")
fi

step "private containerd in $CTR, pod network $CIDR on bridge $BRIDGE"
SOCK=$("$HACK/start-containerd.sh" "$CTR" | tail -n1)

cd "$REPO"
step "building bin/minikubelet, the benchmark and its floor process (rawrun)"
CGO_ENABLED=0 go build -o bin/minikubelet ./cmd/minikubelet
go build -o "$DIR/bench" ./test/bench
# Built as bin/minikubelet is: the run-launch scenario compares their
# launches, binary against binary.
CGO_ENABLED=0 go build -o "$DIR/rawrun" ./test/bench/rawrun

profile=()
if [[ -n ${BENCH_PROFILE_DIR:-} ]]; then
	profile=(--profile-dir "$BENCH_PROFILE_DIR")
fi
step "running the benchmark (several minutes; keep the machine quiet)"
# BENCH_FLAGS is split on spaces on purpose: it holds several flags.
# shellcheck disable=SC2086
"$DIR/bench" \
	--runtime-endpoint "unix://$SOCK" \
	--minikubelet "$REPO/bin/minikubelet" \
	--rawrun "$DIR/rawrun" \
	--registry "$REGISTRY" \
	--pod-cidr "$CIDR" \
	--cni-bridge "$BRIDGE" \
	--cni-conf-dir "$CTR/net.d" \
	--work-dir "$DIR/work" \
	--json "$REPO/bench-results.json" \
	--commit "$(git -C "$REPO" describe --always --dirty 2>/dev/null || echo unknown)" \
	--history-dir "$REPO/docs/bench" \
	--md "$REPO/bench-results.md" \
	--perf-doc "$REPO/docs/performance.md" \
	"${kubelet[@]}" "${profile[@]}" ${BENCH_FLAGS:-} "$@"
