#!/usr/bin/env bash
# build-kubeadm.sh: build kubeadm from the k8s.io/kubernetes that
# hack/cluster/go.mod pins, into the control plane's directory
# (hack/cluster/build.sh; cluster_bin) beside kube-apiserver, for the
# `kubeadm join` end-to-end check (hack/cluster/kubeadm-join.sh). Prints that
# directory as the last line of stdout.
#
# Idempotent, as build.sh: a stamp of its own (stamp.kubeadm: version, Go
# version, a hash of go.mod and go.sum) says what is there, and a build
# happens under the control plane's lock, so that it never races build.sh
# replacing the directory (which drops kubeadm and its stamp with it).
#
# kubeadm needs two modules the control plane does not
# (github.com/coredns/corefile-migration, k8s.io/system-validators). It is
# built from a temporary copy of the tools module that resolves them
# (-mod=mod), so go.mod and go.sum stay as they are: listing kubeadm as a
# tool there would change their hash, and with it build.sh's stamp, and
# rebuild etcd and kube-apiserver on every checkout that has the other
# go.sum. Runs under `nice -n 19`.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

export PATH=$PATH:/usr/local/go/bin
command -v go >/dev/null || die "go missing; install Go 1.26+ into /usr/local/go (see README)"

BIN=$("$CLUSTER_MOD/build.sh" | tail -n1)
KUBE=$(cluster_kube_version)
DEST=$(dirname "$BIN")
SUM=$(cat "$CLUSTER_MOD/go.mod" "$CLUSTER_MOD/go.sum" | sha256sum | cut -c1-16)
STAMP="kubeadm $KUBE $(go env GOVERSION) mod=$SUM"

built() { [[ -f $DEST/stamp.kubeadm && $(<"$DEST/stamp.kubeadm") == "$STAMP" && -x $BIN/kubeadm ]]; }

if built; then
	step "kubeadm $KUBE: already built ($BIN/kubeadm)"
	echo "$BIN"
	exit 0
fi
build_lock "$DEST.lock" "kubeadm" 30
if built; then
	step "kubeadm $KUBE: built meanwhile by another run ($BIN/kubeadm)"
	echo "$BIN"
	exit 0
fi

tmp=$(mktemp -d "$DEST/.kubeadm-build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cp "$CLUSTER_MOD/go.mod" "$CLUSTER_MOD/go.sum" "$tmp/"
ldflags=$(kube_ldflags "$KUBE")
start=$SECONDS
step "building kubeadm (k8s.io/kubernetes/cmd/kubeadm $KUBE) under nice -n 19 (minutes on 2 cores)"
(cd "$tmp" && CGO_ENABLED=0 GOFLAGS=-mod=mod nice -n 19 go build -trimpath -ldflags "$ldflags" -o "$tmp/kubeadm" k8s.io/kubernetes/cmd/kubeadm) &
pid=$! rc=0
heartbeat "building kubeadm" "$pid" &
hb=$!
wait "$pid" || rc=$?
kill "$hb" 2>/dev/null || true
((rc == 0)) || die "building kubeadm failed; check that the Go module proxy is reachable (go env GOPROXY) and retry"
got=$("$tmp/kubeadm" version -o short)
[[ $got == "$KUBE" ]] || die "built kubeadm reports '$got', expected $KUBE"
mv -f "$tmp/kubeadm" "$BIN/kubeadm"
printf '%s\n' "$STAMP" >"$DEST/stamp.kubeadm"
step "built kubeadm in $(duration $((SECONDS - start))): $BIN/kubeadm"
echo "$BIN"
