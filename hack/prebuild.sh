#!/usr/bin/env bash
# prebuild.sh: build in the background, under `nice -n 19`, the per-machine
# caches the later parts of make test need, so that a cold machine does not
# pay for them one after another in the foreground:
#
#   1. the control plane (hack/cluster/build.sh), then metrics-server,
#      the pinned containerd 2.x and kubeadm (TestCluster_KubeadmJoin):
#      the e2e suite's, needed ~15 min in;
#   2. kube-controller-manager, kube-scheduler, kube-proxy and coredns
#      (hack/conformance/build.sh): the system-pods e2e test's (a few
#      minutes; built before e2e.test, which holds the builder's lock for
#      15+ minutes);
#   3. e2e.test, kube-controller-manager, kube-scheduler, ginkgo, agnhost,
#      nnp (hack/conformance/build.sh): make test-conformance's, the
#      slowest (15+ min cold), needed after the e2e suite; then
#      e2e_node.test, make test-node-conformance's (a few minutes more from
#      e2e.test's build cache);
#   4. the cgroup v2 guest image (hack/vm/image.sh; mostly downloads from
#      the apt mirror), needed last.
#
# Each builder holds its cache's lock while it builds, so the part that
# needs it waits for this build (printing its own progress) instead of
# building twice, and finds it done. At nice 19 the builds take only what
# the tests leave of the CPU. A failure here fails nothing: the part that
# needs the artifact builds it again in the foreground and reports the
# error there. Usage: prebuild.sh LOG (make test writes bin/prebuild.log).
set -uo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
MKL_PREFIX=prebuild
HACK=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export PATH=$PATH:/usr/local/go/bin
log=${1:?usage: prebuild.sh LOG}
exec >>"$log" 2>&1 </dev/null

build() {
	local what=$1 start=$SECONDS
	shift
	step "$what ..."
	if nice -n 19 "$@" >/dev/null; then
		step "$what: done in $(duration $((SECONDS - start)))"
	else
		step "$what: failed (exit $?) after $(duration $((SECONDS - start))); the part that needs it builds it again"
	fi
}

build "control plane (hack/cluster/build.sh)" "$HACK/cluster/build.sh"
build "metrics-server (hack/metrics-server/build.sh)" "$HACK/metrics-server/build.sh"
build "containerd $(containerd2_version) (hack/install-containerd2.sh)" "$HACK/install-containerd2.sh"
build "runc $(runc2_version) (hack/install-runc2.sh)" "$HACK/install-runc2.sh"
build "kubeadm (hack/cluster/build-kubeadm.sh)" "$HACK/cluster/build-kubeadm.sh"
build "system-pod binaries (hack/conformance/build.sh)" "$HACK/conformance/build.sh" kube-controller-manager kube-scheduler kube-proxy coredns
build "conformance binaries (hack/conformance/build.sh)" "$HACK/conformance/build.sh" e2e.test kube-controller-manager kube-scheduler ginkgo agnhost nnp
build "e2e_node.test (hack/conformance/build.sh)" "$HACK/conformance/build.sh" e2e_node.test
build "cgroup v2 guest image (hack/vm/image.sh)" "$HACK/vm/image.sh"
step "all done"
