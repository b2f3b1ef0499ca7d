#!/usr/bin/env bash
# build-busybox.sh: build upstream BusyBox 1.37.0, static, for the e2e
# suite's busybox image (hack/images --e2e-busybox), cached per machine in
# /var/lib/minikubelet/busybox-1.37.0; prints the binary's path as the last
# line of stdout.
#
# Why not the host's: the e2e busybox image is Docker Hub's busybox:1.37.0,
# upstream BusyBox, whose ash passes environment variables whose names are
# not shell identifiers (data-1) on to the commands it runs (shell/ash.c
# says why). Debian's busybox (1.35 in bookworm, 1.37 in trixie) drops them,
# and four [Conformance] specs run `sh -c env` in that image with such names
# (ConfigMap and Secrets "should be consumable via the environment" and
# "... as environment variable names with various prefixes"). Other specs
# read ash's own error messages ("/bin/sh: can't create /file: Read-only
# file system"), so another shell will not do either.
#
# The source is Debian's copy of the upstream release tarball
# (busybox_1.37.0.orig.tar.bz2, checked against its SHA-256), from the apt
# mirror this machine reaches; the build is upstream's defconfig, static,
# without tc (it does not compile against this kernel's headers). Needs
# gcc, make and bzip2 (installed here if missing); under `nice` (NICE,
# default 10), about 2 CPU minutes.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_root

VERSION=1.37.0
SHA256=3311dff32e746499f4df0d5df04d7eb396382d7e108bb9250e7b519b837043a4
URL=http://deb.debian.org/debian/pool/main/b/busybox/busybox_$VERSION.orig.tar.bz2
DIR=$MKL_STATE/busybox-$VERSION
STAMP="busybox $VERSION $SHA256 defconfig static no-tc"
NICE=${NICE:-10}

if [[ -x $DIR/busybox && $(cat "$DIR/busybox.stamp" 2>/dev/null) == "$STAMP" ]]; then
	step "busybox $VERSION: already built ($DIR/busybox)"
	printf '%s\n' "$DIR/busybox"
	exit 0
fi
mkdir -p "$DIR"
build_lock "$DIR.lock" "build-busybox.sh" 15
if [[ -x $DIR/busybox && $(cat "$DIR/busybox.stamp" 2>/dev/null) == "$STAMP" ]]; then
	step "busybox $VERSION: built by another run meanwhile ($DIR/busybox)"
	printf '%s\n' "$DIR/busybox"
	exit 0
fi

start=$SECONDS
missing=()
for pkg in gcc make bzip2 libc6-dev; do
	[[ $(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null) == installed ]] || missing+=("$pkg")
done
if ((${#missing[@]})); then
	step "busybox $VERSION: installing ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
		die "apt-get install ${missing[*]} failed: run apt-get update, then this again"
fi
tmp=$(mktemp -d "$DIR/build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
step "busybox $VERSION: downloading $URL"
curl -fsS --retry 3 -o "$tmp/src.tar.bz2" "$URL" ||
	die "cannot download $URL: the Debian mirror must be reachable (the e2e busybox image needs upstream BusyBox; see this script's header)"
echo "$SHA256  $tmp/src.tar.bz2" | sha256sum -c --quiet - ||
	die "$URL does not have the SHA-256 $SHA256"
tar -xjf "$tmp/src.tar.bz2" -C "$tmp"
src=$tmp/busybox-$VERSION
step "busybox $VERSION: building (defconfig, static, nice -n $NICE; a line a minute meanwhile)"
(
	cd "$src"
	nice -n "$NICE" make defconfig >"$tmp/build.log" 2>&1
	sed -i -e 's/^# CONFIG_STATIC is not set$/CONFIG_STATIC=y/' -e 's/^CONFIG_TC=y$/# CONFIG_TC is not set/' .config
	nice -n "$NICE" make -j"$(nproc)" busybox >>"$tmp/build.log" 2>&1
) &
pid=$!
heartbeat "building busybox $VERSION" "$pid" 9>&- &
hb=$!
rc=0
wait "$pid" || rc=$?
kill "$hb" 2>/dev/null || true
if ((rc != 0)); then
	tail -n 20 "$tmp/build.log" >&2
	die "building busybox $VERSION failed (log above)"
fi
install -m 0755 "$src/busybox" "$DIR/busybox"
printf '%s\n' "$STAMP" >"$DIR/busybox.stamp"
step "busybox $VERSION: built in $(duration $((SECONDS - start))) ($DIR/busybox)"
printf '%s\n' "$DIR/busybox"
