# shellcheck shell=bash
# Helpers shared by the hack/conformance/*.sh scripts (on top of
# hack/cluster/lib.sh and hack/lib.sh). Source it; do not run it.

# shellcheck source=../cluster/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../cluster/lib.sh"

# CONFORMANCE_DIR is this directory (hack/conformance).
CONFORMANCE_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# conformance_bin prints the directory that holds what build.sh builds for
# the pinned Kubernetes release: kube-controller-manager, kube-scheduler,
# kubelet, ginkgo, e2e.test, and the e2e programs agnhost and nnp:
# /var/lib/minikubelet/conformance-<kube>/bin. CONFORMANCE_BIN overrides it.
conformance_bin() {
	if [[ -n ${CONFORMANCE_BIN:-} ]]; then
		printf '%s\n' "$CONFORMANCE_BIN"
		return
	fi
	printf '%s/conformance-%s/bin\n' "$MKL_STATE" "$(cluster_kube_version)"
}

# elapsed SECONDS: "1m23s" for a duration.
elapsed() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }
