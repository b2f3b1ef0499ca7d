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
