# shellcheck shell=bash
# Helpers shared by the hack/cluster/*.sh scripts (on top of hack/lib.sh).
# Source it; do not run it.

# shellcheck source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

# CLUSTER_MOD is the tools module's directory (hack/cluster).
CLUSTER_MOD=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# cluster_module_version MODULE: the version of MODULE that the tools
# module's go.mod pins (the single place the versions are chosen).
cluster_module_version() {
	local v
	v=$(awk -v m="$1" '$1 == m && $2 ~ /^v/ { print $2; exit }' "$CLUSTER_MOD/go.mod")
	[[ -n $v ]] || die "$1 is not required by $CLUSTER_MOD/go.mod"
	printf '%s\n' "$v"
}

# cluster_kube_version / cluster_etcd_version: the pinned releases.
cluster_kube_version() { cluster_module_version k8s.io/kubernetes; }
cluster_etcd_version() { cluster_module_version go.etcd.io/etcd/server/v3; }

# kube_ldflags KUBE: the -ldflags of a Kubernetes binary at release KUBE
# (v1.37.2): stripped, with the version variables the Kubernetes release
# build sets (hack/lib/version.sh there); without them the binaries report
# v0.0.0-master and the kubelet's version skew against the apiserver looks
# absurd. Used by build.sh, build-kubeadm.sh and ../conformance/build.sh.
kube_ldflags() {
	local kube=$1 minor major pkg flags="-s -w"
	minor=${kube#v*.}
	minor=${minor%%.*}
	major=${kube#v}
	major=${major%%.*}
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		flags+=" -X $pkg.gitVersion=$kube -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
		flags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
	done
	printf '%s\n' "$flags"
}

# cluster_bin prints the directory that holds etcd and kube-apiserver for the
# pinned versions: /var/lib/minikubelet/cluster-<kube>-etcd-<etcd>/bin.
# CLUSTER_BIN overrides it (a prebuilt pair elsewhere).
cluster_bin() {
	if [[ -n ${CLUSTER_BIN:-} ]]; then
		printf '%s\n' "$CLUSTER_BIN"
		return
	fi
	printf '%s/cluster-%s-etcd-%s/bin\n' "$MKL_STATE" "$(cluster_kube_version)" "$(cluster_etcd_version)"
}
