#!/usr/bin/env bash
# build.sh: build the control plane that the cluster-mode tests run against,
# etcd and kube-apiserver, from the Go module proxy at the versions that
# hack/cluster/go.mod pins, into
# /var/lib/minikubelet/cluster-<kube>-etcd-<etcd>/bin (hack/cluster/lib.sh's
# cluster_bin; CLUSTER_BIN overrides). Prints that directory as the last line
# of stdout.
#
# Idempotent: a stamp (versions, Go version, a hash of go.mod and go.sum) says
# what the directory holds, and a matching stamp skips the build. A build goes
# to a temporary directory that replaces the old one only once complete, under
# a lock, so a concurrent run waits instead of building twice or seeing half a
# directory. The build runs under `nice -n 19`: it takes minutes on 2 cores and
# must not starve benchmarks running beside it.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

export PATH=$PATH:/usr/local/go/bin
command -v go >/dev/null || die "go missing; install Go 1.26+ into /usr/local/go (see README)"

KUBE=$(cluster_kube_version)
ETCD=$(cluster_etcd_version)
BIN=$(cluster_bin)
DEST=$(dirname "$BIN")
SUM=$(cat "$CLUSTER_MOD/go.mod" "$CLUSTER_MOD/go.sum" | sha256sum | cut -c1-16)
STAMP="kube-apiserver $KUBE etcd $ETCD $(go env GOVERSION) mod=$SUM"

built() {
	[[ -f $DEST/stamp && $(<"$DEST/stamp") == "$STAMP" ]] &&
		[[ -x $BIN/etcd && -x $BIN/kube-apiserver && -x $BIN/kubectl ]]
}

if built; then
	step "control plane $KUBE / etcd $ETCD: already built ($BIN)"
	echo "$BIN"
	exit 0
fi

mkdir -p "$(dirname "$DEST")"
lock=$DEST.lock
build_lock "$lock" "control plane" 30
if built; then
	step "control plane $KUBE / etcd $ETCD: built meanwhile by another run ($BIN)"
	echo "$BIN"
	exit 0
fi

tmp=$(mktemp -d "$(dirname "$DEST")/.cluster-build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cd "$CLUSTER_MOD"

# The version variables the Kubernetes release build sets (hack/lib/version.sh
# there); without them the apiserver reports v0.0.0-master.
ldflags=$(kube_ldflags "$KUBE")

# Static binaries, as in the upstream release builds (CGO_ENABLED=0).
build() { # name, package
	local start=$SECONDS
	step "building $1 ($2) with $(go env GOVERSION) under nice -n 19 (several minutes on 2 cores; a line a minute meanwhile)"
	CGO_ENABLED=0 nice -n 19 go build -trimpath -ldflags "$ldflags" -o "$tmp/bin/$1" "$2" &
	local pid=$! rc=0
	heartbeat "building $1" "$pid" &
	local hb=$!
	wait "$pid" || rc=$?
	kill "$hb" 2>/dev/null || true
	((rc == 0)) || die "building $1 failed; check that the Go module proxy is reachable (go env GOPROXY) and retry"
	step "built $1 in $(duration $((SECONDS - start)))"
}
build etcd go.etcd.io/etcd/server/v3
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
build kubectl k8s.io/kubernetes/cmd/kubectl

got=$("$tmp/bin/kube-apiserver" --version)
[[ $got == "Kubernetes $KUBE" ]] || die "built kube-apiserver reports '$got', expected Kubernetes $KUBE"
got=$("$tmp/bin/etcd" --version | sed -n 1p) # not head: etcd would get a SIGPIPE, fatal under pipefail
[[ $got == "etcd Version: ${ETCD#v}" ]] || die "built etcd reports '$got', expected ${ETCD#v}"
printf '%s\n' "$STAMP" >"$tmp/stamp"
chmod 0755 "$tmp"

old=
if [[ -e $DEST ]]; then
	old=$(mktemp -u "$(dirname "$DEST")/.cluster-old.XXXXXX")
	mv "$DEST" "$old"
fi
mv "$tmp" "$DEST"
trap - EXIT
[[ -z $old ]] || rm -rf "$old"
step "control plane $KUBE / etcd $ETCD: installed into $BIN"
echo "$BIN"
