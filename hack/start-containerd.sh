#!/usr/bin/env bash
# start-containerd.sh DIR: start a private containerd for the end-to-end
# tests that keeps everything under DIR and runs beside the system one:
#
#   DIR/config.toml            rendered from hack/containerd/private.toml
#                              (containerd 1.6) or private-v2.toml (2.x)
#   DIR/flavor                 which containerd runs there (1.6 or 2.x's major.minor)
#   DIR/root, DIR/state        its metadata, snapshots and runtime state
#   DIR/containerd.sock(.ttrpc) its API sockets
#   DIR/net.d                  its CNI conf dir, empty (the test installs a conflist)
#   DIR/certs.d                hosts.toml for the local registry (plain HTTP), and
#                              mirrors of docker.io, registry.k8s.io and gcr.io to it
#   DIR/runc                   runc state of its containers
#   DIR/containerd.log, DIR/containerd.pid
#
# Waits until the socket answers with the CRI plugin loaded, then prints the
# socket path as the last line of stdout. Stop it with hack/stop-containerd.sh DIR.
# Env: REGISTRY (default 127.0.0.1:5000), SYSTEMD_CGROUP (default false),
# CONTAINERD: 1.6 (default: the system's containerd in /usr/bin) or 2 (the
# pinned containerd 2.x that hack/install-containerd2.sh built; also its
# major.minor, e.g. 2.4). Each runs with its own runc shim, named by absolute
# path in the config (runtime_path), never the other's; 2.x also with its
# own runc (hack/install-runc2.sh, BinaryName).
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_root

(($# == 1)) || die "usage: $0 DIR"
DIR=$(realpath -m "$1")
REGISTRY=${REGISTRY:-127.0.0.1:5000}
SYSTEMD_CGROUP=${SYSTEMD_CGROUP:-false}
HACK=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SOCKET=$DIR/containerd.sock

[[ $DIR != / ]] || die "refusing to use / as DIR"
# sun_path holds 108 bytes; the ttrpc socket adds 6 and containerd's shims
# derive further names from the address.
((${#SOCKET} + 6 < 100)) || die "DIR too long for a unix socket path: $SOCKET"
FLAVOR=$(containerd_flavor "${CONTAINERD:-}")
if [[ $FLAVOR == 1.6 ]]; then
	CONTAINERD_BIN=$(command -v containerd) || die "containerd missing; run hack/install-deps.sh first"
	TEMPLATE=$HACK/containerd/private.toml
else
	CONTAINERD_BIN=$(containerd2_bin)/containerd
	[[ -x $CONTAINERD_BIN ]] || die "containerd $(containerd2_version) is not built; run hack/install-containerd2.sh first"
	TEMPLATE=$HACK/containerd/private-v2.toml
	# The runc it runs containers with (1.2+: user namespaces need its
	# idmapped mounts); containerd 1.6 keeps Debian's from PATH. Not built:
	# Debian's too (BinaryName ""), and pods with hostUsers: false are
	# refused (UserNamespacesNotSupported).
	RUNC=$(runc2_bin)/runc
	if [[ ! -x $RUNC ]]; then
		step "runc $(runc2_version) is not built (hack/install-runc2.sh): containerd $FLAVOR runs Debian's runc, without user namespaces"
		RUNC=
	fi
fi
# The shim and ctr of the same build, beside the daemon.
BIN=$(dirname "$(realpath "$CONTAINERD_BIN")")
SHIM=$BIN/containerd-shim-runc-v2
[[ -x $SHIM ]] || die "$SHIM missing: containerd $FLAVOR needs its own runc shim beside it"
export CTR=$BIN/ctr
[[ -x $CTR ]] || die "$CTR missing: needed to check that containerd $FLAVOR answers"

if pid=$(pidfile_alive "$DIR/containerd.pid") && containerd_answers "$SOCKET"; then
	running=$(cat "$DIR/flavor" 2>/dev/null || echo 1.6)
	[[ $running == "$FLAVOR" ]] ||
		die "$DIR already runs containerd $running (pid $pid), not $FLAVOR; stop it first: hack/stop-containerd.sh $DIR"
	step "private containerd $FLAVOR: already running (pid $pid)"
	echo "$SOCKET"
	exit 0
fi

mkdir -p "$DIR"/{root,state,net.d,runc,opt} "$DIR/certs.d/$REGISTRY"
chmod 0711 "$DIR"
render "$TEMPLATE" DIR="$DIR" REGISTRY="$REGISTRY" SYSTEMD_CGROUP="$SYSTEMD_CGROUP" SHIM="$SHIM" RUNC="${RUNC:-}" >"$DIR/config.toml"
echo "$FLAVOR" >"$DIR/flavor"
render "$HACK/containerd/hosts.toml" REGISTRY="$REGISTRY" >"$DIR/certs.d/$REGISTRY/hosts.toml"
# docker.io, registry.k8s.io and gcr.io pull from the local registry only:
# the stand-ins for the documentation examples' images (hack/images). The
# upstream is replaced by the local registry too, so a test never reaches
# out of the machine for an image the registry lacks.
while read -r upstream _; do
	mkdir -p "$DIR/certs.d/$upstream"
	render "$HACK/containerd/mirror.toml" REGISTRY="$REGISTRY" UPSTREAM="$upstream" SERVER="http://$REGISTRY" >"$DIR/certs.d/$upstream/hosts.toml"
done < <(mirror_upstreams)

# setsid detaches it from this shell so it outlives the script; the tests
# stop it with stop-containerd.sh. Its own directory leads PATH, so whatever
# it looks up there (the shim, should a runtime lack runtime_path) is of
# the same build.
PATH=$BIN:$PATH setsid "$CONTAINERD_BIN" --config "$DIR/config.toml" </dev/null >>"$DIR/containerd.log" 2>&1 &
pid=$!
echo "$pid" >"$DIR/containerd.pid"

if ! wait_for 60 "private containerd on $SOCKET" containerd_answers "$SOCKET" || ! cri_plugin_ok "$SOCKET"; then
	tail -n 30 "$DIR/containerd.log" >&2 || true
	kill_wait "$pid" 10
	die "private containerd did not come up on $SOCKET (log: $DIR/containerd.log)"
fi
step "private containerd $FLAVOR: started (pid $pid, $CONTAINERD_BIN, config $DIR/config.toml, log $DIR/containerd.log)"
echo "$SOCKET"
