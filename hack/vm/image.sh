#!/usr/bin/env bash
# image.sh: build (once per machine) the Debian bookworm guest that
# hack/vm/run.sh boots to test minikubelet on cgroup v2 with systemd, and
# print its directory as the last line of stdout. The directory holds
# disk.raw (ext4 root, booted with snapshot=on so every boot starts clean),
# vmlinuz and initrd.img (the guest's own kernel, passed to qemu -kernel).
#
# The image lives under /var/lib/minikubelet/vm/<key>, where <key> hashes
# this script and hack/vm/guest/ (package list, systemd unit, the stub
# that runs the payload from the share): editing any of them builds a new image, anything else reuses it.
# Cold: ~2-3 min (debootstrap from the machine's Debian mirror); warm: instant.
# Env: DEBIAN_MIRROR (default: the first deb.debian.org-style URI in apt's
# sources, else http://deb.debian.org/debian), VM_CACHE (default
# /var/lib/minikubelet/vm).
set -euo pipefail
MKL_PREFIX=vm-image
# shellcheck source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
require_root

VM=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
GUEST=$VM/guest
CACHE=${VM_CACHE:-$MKL_STATE/vm}
PACKAGES=$(grep -v '^#' "$GUEST/packages" | xargs | tr ' ' ',')
KEY=$(cat "$VM/image.sh" "$GUEST/packages" "$GUEST/mkl-payload.service" "$GUEST/mkl-payload" | sha256sum | cut -c1-16)
OUT=$CACHE/$KEY

if [[ -f $OUT/disk.raw && -f $OUT/vmlinuz && -f $OUT/initrd.img ]]; then
	step "guest image: already built ($OUT)"
	echo "$OUT"
	exit 0
fi

vm_host_tools # hack/lib.sh: debootstrap and e2fsprogs (and qemu, for run.sh)
mirror=${DEBIAN_MIRROR:-$(grep -rhoE 'https?://deb\.debian\.org/debian/?' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null | head -n1 || true)}
mirror=${mirror:-http://deb.debian.org/debian}

mkdir -p "$CACHE"
# One builder at a time per machine; a second waits and then finds the image.
exec 9>"$CACHE/build.lock"
flock 9
if [[ -f $OUT/disk.raw ]]; then
	step "guest image: built meanwhile by another run ($OUT)"
	echo "$OUT"
	exit 0
fi

work=$(mktemp -d "$CACHE/build.XXXXXX")
trap 'rm -rf "$work"' EXIT
rootfs=$work/rootfs
step "guest image: debootstrap bookworm from $mirror (~2 min, ~750 MB; log $work/debootstrap.log)"
if ! debootstrap --variant=minbase --include="$PACKAGES" bookworm "$rootfs" "$mirror" >"$work/debootstrap.log" 2>&1; then
	tail -n 30 "$work/debootstrap.log" >&2
	die "debootstrap failed (see above); is $mirror reachable? set DEBIAN_MIRROR to another mirror"
fi
cp "$work/debootstrap.log" "$CACHE/debootstrap-$KEY.log"

step "guest image: configuring systemd, cgroup v2 and the payload unit"
echo mkl-guest >"$rootfs/etc/hostname"
printf '127.0.0.1 localhost mkl-guest\n::1 localhost\n' >"$rootfs/etc/hosts"
printf '/dev/vda / ext4 rw,relatime 0 1\n' >"$rootfs/etc/fstab"
# No root password is needed: nobody logs in, the payload unit runs the
# tests and powers off.
install -m 0644 "$GUEST/mkl-payload.service" "$rootfs/etc/systemd/system/mkl-payload.service"
install -m 0755 "$GUEST/mkl-payload" "$rootfs/usr/local/sbin/mkl-payload"
ln -sf /etc/systemd/system/mkl-payload.service "$rootfs/etc/systemd/system/multi-user.target.wants/mkl-payload.service"
# The tests start their own private containerd; the system one, timers and
# a serial login would only take CPU from a guest that is ~40x slower.
for unit in containerd.service docker-registry.service apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer e2scrub_reap.service \
	fstrim.timer man-db.timer dpkg-db-backup.timer serial-getty@ttyS0.service getty@tty1.service systemd-timesyncd.service; do
	ln -sf /dev/null "$rootfs/etc/systemd/system/$unit"
done
# hack/containerd/private.toml points the CRI plugin at /opt/cni/bin.
mkdir -p "$rootfs/opt/cni"
ln -sfn /usr/lib/cni "$rootfs/opt/cni/bin"
mkdir -p "$rootfs/share"

kernel=$(find "$rootfs/boot" -maxdepth 1 -name 'vmlinuz-*' | sort -V | tail -n1)
initrd=$(find "$rootfs/boot" -maxdepth 1 -name 'initrd.img-*' | sort -V | tail -n1)
[[ -n $kernel && -n $initrd ]] || die "no kernel or initrd in the guest's /boot (linux-image-amd64 and initramfs-tools must be in $GUEST/packages)"
rm -rf "$rootfs/var/cache/apt/archives/"*.deb "$rootfs/var/lib/apt/lists/"*

mkdir -p "$work/out"
cp "$kernel" "$work/out/vmlinuz"
cp "$initrd" "$work/out/initrd.img"
step "guest image: mkfs.ext4 -d (2 GiB sparse)"
mkfs.ext4 -q -F -L mklroot -d "$rootfs" "$work/out/disk.raw" 2G
rm -rf "$OUT"
mv "$work/out" "$OUT"
# Older images of this machine are of no further use.
find "$CACHE" -mindepth 1 -maxdepth 1 -type d ! -name "$KEY" ! -name 'build.*' -exec rm -rf {} +
step "guest image: built ($OUT, $(du -sh --apparent-size "$OUT/disk.raw" | cut -f1) apparent, $(du -sh "$OUT/disk.raw" | cut -f1) used)"
echo "$OUT"
