#!/usr/bin/env bash
# build.sh: build what the conformance harness needs beside the control
# plane of hack/cluster/build.sh (etcd, kube-apiserver), from the Go module
# proxy at the versions hack/cluster/go.mod pins (its `tool` lines name them):
#
#   e2e.test                 go test -c k8s.io/kubernetes/test/e2e
#   kube-controller-manager  k8s.io/kubernetes/cmd/kube-controller-manager
#   kube-scheduler           k8s.io/kubernetes/cmd/kube-scheduler
#   kubelet                  k8s.io/kubernetes/cmd/kubelet (the anchor node)
#   ginkgo                   github.com/onsi/ginkgo/v2/ginkgo (the version
#                            k8s.io/kubernetes requires)
#   agnhost, nnp             test/images/agnhost and test/images/nonewprivs,
#                            the programs of the e2e images (hack/images --e2e)
#   e2e_node.test            go test -c k8s.io/kubernetes/test/e2e_node, the
#                            kubelet's node-conformance suite (make
#                            node-conformance), from the module hack/e2enode
#                            (its tests import modules hack/cluster lacks)
#   kube-proxy               k8s.io/kubernetes/cmd/kube-proxy at the same
#                            version, from the module hack/kubeproxy (its own
#                            go.mod: kube-proxy's netlink and nftables modules
#                            in hack/cluster's would change that module's hash
#                            and so every stamp here)
#   coredns                  hack/coredns (CoreDNS with a cluster's plugins)
#   sample-apiserver         k8s.io/sample-apiserver, from the module
#                            hack/sampleapiserver (the Aggregator spec's image)
#   (kube-proxy and coredns are the programs of the cluster add-on images,
#   hack/images --system; hack/cluster/addons)
#
# into /var/lib/minikubelet/conformance-<kube>/bin (lib.sh's conformance_bin).
# Each binary has a stamp (its name, the Kubernetes and Go versions, a hash
# of go.mod and go.sum); a matching stamp skips it, so a second run takes
# seconds. With NAME arguments only those are built (run.sh builds the
# kubelet only for NODE=kubelet; make test-conformance needs no kubelet).
# e2e.test is the slowest (15+ minutes on 2 busy cores): it starts
# first, in the background, while the others build. Every step prints its
# duration. Builds run under `nice` (NICE, default 10). Prints the directory
# as the last line of stdout.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

export PATH=$PATH:/usr/local/go/bin
command -v go >/dev/null || die "go missing; install Go 1.26+ into /usr/local/go (see README)"

KUBE=$(cluster_kube_version)
BIN=$(conformance_bin)
REPO_HACK=$(dirname "$CONFORMANCE_DIR")
# kube-proxy's module must pin the same Kubernetes as hack/cluster's.
kp=$(awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v/ { print $2; exit }' "$REPO_HACK/kubeproxy/go.mod")
[[ $kp == "$KUBE" ]] || die "hack/kubeproxy/go.mod pins k8s.io/kubernetes $kp, hack/cluster/go.mod $KUBE: make them equal (copy hack/cluster/go.mod's versions, go mod tidy)"
en=$(awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v/ { print $2; exit }' "$REPO_HACK/e2enode/go.mod")
[[ $en == "$KUBE" ]] || die "hack/e2enode/go.mod pins k8s.io/kubernetes $en, hack/cluster/go.mod $KUBE: make them equal (copy hack/cluster/go.mod's versions, go get -t k8s.io/kubernetes/test/e2e_node@$KUBE)"

NICE=${NICE:-10}
SUM=$(cat "$CLUSTER_MOD/go.mod" "$CLUSTER_MOD/go.sum" | sha256sum | cut -c1-16)
GOV=$(go env GOVERSION)
mkdir -p "$BIN"

build_lock "$BIN.lock" "build.sh" 60

# As the release build sets them (hack/cluster/build.sh): without them the
# binaries report v0.0.0-master, and the kubelet's version skew against the
# apiserver would look absurd.
ldflags=$(kube_ldflags "$KUBE")

# modules: the module directory of a binary not built in hack/cluster; its
# stamp hashes that module's go.mod and go.sum instead.
declare -A modules=(
	[kube-proxy]=$REPO_HACK/kubeproxy
	[coredns]=$REPO_HACK/coredns
	[e2e_node.test]=$REPO_HACK/e2enode
	[sample-apiserver]=$REPO_HACK/sampleapiserver
)
mod_of() { printf '%s\n' "${modules[$1]:-$CLUSTER_MOD}"; }
sum_of() {
	local m
	m=$(mod_of "$1")
	if [[ $m == "$CLUSTER_MOD" ]]; then
		printf '%s\n' "$SUM"
	else
		cat "$m/go.mod" "$m/go.sum" | sha256sum | cut -c1-16
	fi
}
stamp_of() { printf '%s %s %s mod=%s\n' "$1" "$KUBE" "$GOV" "$(sum_of "$1")"; }
built() { [[ -x $BIN/$1 && -f $BIN/$1.stamp && $(<"$BIN/$1.stamp") == "$(stamp_of "$1")" ]]; }

# build NAME PACKAGE [test]: build PACKAGE into BIN/NAME unless its stamp
# matches; "test" builds the package's test binary (go test -c).
build() {
	local name=$1 pkg=$2 kind=${3:-} start=$SECONDS cmd
	if built "$name"; then
		step "$name: already built for $KUBE ($BIN/$name)"
		return 0
	fi
	if [[ $kind == test ]]; then
		cmd=(go test -c)
	else
		cmd=(go build)
	fi
	step "$name: building $pkg ($GOV, nice -n $NICE; a line a minute meanwhile)"
	rm -f "$BIN/$name.stamp"
	(cd "$(mod_of "$name")" && CGO_ENABLED=0 nice -n "$NICE" "${cmd[@]}" -trimpath -ldflags "$ldflags" -o "$BIN/$name.tmp" "$pkg") &
	local pid=$! rc=0 hb
	# Without fd 9: its sleep would hold the build lock for up to a minute
	# after this script ends.
	heartbeat "building $name" "$pid" 9>&- &
	hb=$!
	wait "$pid" || rc=$?
	kill "$hb" 2>/dev/null || true
	if ((rc != 0)); then
		warn "$name: building $pkg failed; check that the Go module proxy is reachable (go env GOPROXY)"
		return 1
	fi
	mv "$BIN/$name.tmp" "$BIN/$name"
	stamp_of "$name" >"$BIN/$name.stamp"
	step "$name: built in $(elapsed $((SECONDS - start)))"
}

declare -A pkgs=(
	[e2e.test]=k8s.io/kubernetes/test/e2e
	[kube-controller-manager]=k8s.io/kubernetes/cmd/kube-controller-manager
	[kube-scheduler]=k8s.io/kubernetes/cmd/kube-scheduler
	[kubelet]=k8s.io/kubernetes/cmd/kubelet
	[ginkgo]=github.com/onsi/ginkgo/v2/ginkgo
	[agnhost]=k8s.io/kubernetes/test/images/agnhost
	[nnp]=k8s.io/kubernetes/test/images/nonewprivs
	[kube-proxy]=k8s.io/kubernetes/cmd/kube-proxy
	[coredns]=github.com/minikubelet/minikubelet/hack/coredns
	[e2e_node.test]=k8s.io/kubernetes/test/e2e_node
	[sample-apiserver]=k8s.io/sample-apiserver
)
order=(kube-controller-manager kube-scheduler kubelet ginkgo agnhost nnp sample-apiserver kube-proxy coredns e2e_node.test)
want=("$@")
# Without arguments: what the conformance run needs (not the add-ons).
((${#want[@]})) || want=(e2e.test kube-controller-manager kube-scheduler kubelet ginkgo agnhost nnp)
for n in "${want[@]}"; do
	[[ -n ${pkgs[$n]:-} ]] || die "build.sh: unknown binary $n (known: e2e.test ${order[*]})"
done
wanted() { [[ " ${want[*]} " == *" $1 "* ]]; }

total=$SECONDS
failed=()
e2e_pid=
if wanted e2e.test; then
	# e2e.test first, in the background: it is the long pole.
	build e2e.test "${pkgs[e2e.test]}" test >"$BIN/e2e.test.build.log" 2>&1 &
	e2e_pid=$!
	step "e2e.test: building in the background (pid $e2e_pid, log $BIN/e2e.test.build.log)"
fi
for n in "${order[@]}"; do
	wanted "$n" || continue
	kind=
	[[ $n != *.test ]] || kind=test
	build "$n" "${pkgs[$n]}" "$kind" || failed+=("$n")
done
if [[ -n $e2e_pid ]]; then
	hb=
	if ! built e2e.test; then
		step "e2e.test: waiting for the background build (log $BIN/e2e.test.build.log)"
		heartbeat "building e2e.test" "$e2e_pid" 9>&- &
		hb=$!
	fi
	wait "$e2e_pid" || failed+=(e2e.test)
	[[ -z $hb ]] || kill "$hb" 2>/dev/null || true
	cat "$BIN/e2e.test.build.log"
fi
((${#failed[@]} == 0)) || die "failed to build: ${failed[*]}"

if wanted kubelet; then
	got=$("$BIN/kubelet" --version)
	[[ $got == "Kubernetes $KUBE" ]] || die "built kubelet reports '$got', expected Kubernetes $KUBE"
fi
step "${want[*]}: all built for $KUBE in $(elapsed $((SECONDS - total))) ($BIN)"
echo "$BIN"
