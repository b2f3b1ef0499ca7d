#!/usr/bin/env bash
# install-runc2.sh: build the runc the containerd 2.x flavor runs its
# containers with (hack/containerd/RUNC2, the one place to change it), with
# `go install` from the Go module proxy, into
# /var/lib/minikubelet/runc-<version>/bin/runc. hack/start-containerd.sh
# names it in the 2.x config (BinaryName); containerd 1.6 keeps Debian's
# runc (1.1).
#
# Why a runc of its own: containerd 2.x supports user namespaces
# (spec.hostUsers: false) only with an OCI runtime that makes idmapped
# mounts, runc 1.2 or later (containerd's docs/user-namespaces; its CRI
# Status reports the user_namespaces feature only when `runc features`
# lists mountExtensions.idmap). Debian 12's runc is 1.1.5: with it,
# containerd 2.4 reports no user namespace support and minikubelet refuses
# such pods (UserNamespacesNotSupported).
#
# Built as runc's own Makefile does (cgo, -tags seccomp, libseccomp from
# Debian's libseccomp-dev). Idempotent with a stamp and a lock, as
# install-containerd2.sh.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_root

export PATH=$PATH:/usr/local/go/bin
command -v go >/dev/null || die "go missing; install Go 1.24+ into /usr/local/go (see README)"

VERSION=$(runc2_version)
BIN=$(runc2_bin)
DEST=$(dirname "$BIN")
MODULE=github.com/opencontainers/runc
TAGS=seccomp
STAMP="runc v$VERSION $(go env GOVERSION) tags=$TAGS"

built() { [[ -f $DEST/stamp && $(<"$DEST/stamp") == "$STAMP" && -x $BIN/runc ]]; }

if built; then
	step "runc $VERSION: already built ($BIN, $(go env GOVERSION))"
	exit 0
fi

# libseccomp's headers and pkg-config file, for the seccomp tag.
if [[ $(dpkg-query -W -f='${db:Status-Status}' libseccomp-dev 2>/dev/null) != installed ]]; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null
	apt-get install -y -qq --no-install-recommends libseccomp-dev gcc pkg-config >/dev/null ||
		die "installing libseccomp-dev failed; runc $VERSION needs it to build with seccomp"
	step "apt packages: installed libseccomp-dev"
fi

mkdir -p "$MKL_STATE"
build_lock "$MKL_STATE/runc-$VERSION.lock" "runc $VERSION" 10
if built; then
	step "runc $VERSION: built meanwhile by another run ($BIN)"
	exit 0
fi

tmp=$(mktemp -d "$MKL_STATE/.runc-$VERSION.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
step "runc $VERSION: building with $(go env GOVERSION) (go install $MODULE@v$VERSION, cgo, -tags $TAGS)"
CGO_ENABLED=1 GOBIN=$tmp/bin GOFLAGS=-trimpath go install -tags "$TAGS" \
	-ldflags "-X main.version=$VERSION" "$MODULE@v$VERSION" ||
	die "building runc $VERSION failed; check that the Go module proxy is reachable (go env GOPROXY) and that libseccomp-dev is installed, and retry"
got=$("$tmp/bin/runc" --version)
[[ $got == *"runc version $VERSION"* ]] || die "built runc reports '$got', expected $VERSION"
[[ $got == *libseccomp* ]] || die "built runc $VERSION has no seccomp support: $got"
printf '%s\n' "$STAMP" >"$tmp/stamp"
chmod 0755 "$tmp"

old=
if [[ -e $DEST ]]; then
	old=$(mktemp -u "$MKL_STATE/.runc-$VERSION.old.XXXXXX")
	mv "$DEST" "$old"
fi
mv "$tmp" "$DEST"
[[ -z $old ]] || rm -rf "$old"
step "runc $VERSION: installed into $BIN"
