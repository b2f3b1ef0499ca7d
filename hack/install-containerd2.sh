#!/usr/bin/env bash
# install-containerd2.sh: build the pinned containerd 2.x
# (hack/containerd/VERSION2) with `go install` from the Go module proxy:
# containerd, its runc shim (containerd-shim-runc-v2) and ctr, into
# /var/lib/minikubelet/containerd-<version>/bin. Debian's containerd 1.6 in
# /usr/bin is left alone; hack/start-containerd.sh runs the 2.x one when
# CONTAINERD selects it.
#
# Idempotent: a stamp (version, Go version, build tags) says what the
# directory holds, and a matching stamp skips the build. A build goes to a
# temporary directory that replaces the old one only once complete, under a
# lock, so a concurrent run waits instead of building twice or seeing half a
# directory. hack/lib.sh's containerd2_bin names the bin directory.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_root

export PATH=$PATH:/usr/local/go/bin
command -v go >/dev/null || die "go missing; install Go 1.24+ into /usr/local/go (see README)"

VERSION=$(containerd2_version)
BIN=$(containerd2_bin)
DEST=$(dirname "$BIN")
MODULE=github.com/containerd/containerd/v2
# btrfs needs its C headers; the tests only use overlayfs.
TAGS=no_btrfs
STAMP="containerd v$VERSION $(go env GOVERSION) tags=$TAGS"

built() {
	[[ -f $DEST/stamp && $(<"$DEST/stamp") == "$STAMP" ]] &&
		[[ -x $BIN/containerd && -x $BIN/containerd-shim-runc-v2 && -x $BIN/ctr ]]
}

if built; then
	step "containerd $VERSION: already built ($BIN, $(go env GOVERSION))"
	exit 0
fi

mkdir -p "$MKL_STATE"
build_lock "$MKL_STATE/containerd-$VERSION.lock" "containerd $VERSION" 15
if built; then
	step "containerd $VERSION: built meanwhile by another run ($BIN)"
	exit 0
fi

tmp=$(mktemp -d "$MKL_STATE/.containerd-$VERSION.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
step "containerd $VERSION: building containerd and ctr with $(go env GOVERSION) (go install $MODULE/cmd/...@v$VERSION, a few minutes on 2 cores)"
GOBIN=$tmp/bin GOFLAGS=-trimpath go install -tags "$TAGS" \
	"$MODULE/cmd/containerd@v$VERSION" "$MODULE/cmd/ctr@v$VERSION" ||
	die "building containerd $VERSION failed; check that the Go module proxy is reachable (go env GOPROXY) and retry"
# The shim is static, as in containerd's own release builds (SHIM_CGO_ENABLED=0).
step "containerd $VERSION: building containerd-shim-runc-v2"
CGO_ENABLED=0 GOBIN=$tmp/bin GOFLAGS=-trimpath go install -tags "$TAGS" "$MODULE/cmd/containerd-shim-runc-v2@v$VERSION" ||
	die "building containerd-shim-runc-v2 $VERSION failed; check that the Go module proxy is reachable and retry"

got=$("$tmp/bin/containerd" --version)
[[ $got == *" $VERSION"* ]] || die "built containerd reports '$got', expected $VERSION"
printf '%s\n' "$STAMP" >"$tmp/stamp"
chmod 0755 "$tmp"

# Swap in the new directory; the old one (other Go version) goes after.
old=
if [[ -e $DEST ]]; then
	old=$(mktemp -u "$MKL_STATE/.containerd-$VERSION.old.XXXXXX")
	mv "$DEST" "$old"
fi
mv "$tmp" "$DEST"
[[ -z $old ]] || rm -rf "$old"
step "containerd $VERSION: installed into $BIN"
