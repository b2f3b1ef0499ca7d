#!/usr/bin/env bash
# run.sh DIR: run minikubelet's end-to-end cgroup, lifecycle and probe cases
# inside a Debian bookworm guest with systemd and cgroup v2 (qemu with KVM
# when /dev/kvm is usable, software emulation otherwise), once with the systemd cgroup driver and once with cgroupfs, in
# one boot. test/cgroupv2 (make test-cgroupv2) calls it and reports DIR/out
# as Go test output; run by hand it leaves everything in DIR:
#
#   DIR/bin/minikubelet, DIR/bin/e2e.test   static builds of this tree
#   DIR/repo/hack, DIR/repo/test/e2e        what the e2e TestMain needs
#   DIR/registry                            a copy of the local registry's storage
#   DIR/payload.sh, DIR/run.env             the guest side and its settings
#   DIR/console.log                         the guest's serial console
#   DIR/out/                                the guest's results (see payload.sh)
#
# DIR is shared with the guest over 9p. The guest image is built once per
# machine (hack/vm/image.sh). At most one guest runs on the machine at a time
# (flock /tmp/mkl-qemu.lock): a guest keeps ~1.4 cores busy.
# Env: VM_DRIVERS (default "systemd cgroupfs"), VM_TEST_RUN (go test -run
# regexp of the cases), VM_TIME_SCALE (E2E_TIME_SCALE in the guest, default
# 30), VM_TIMEOUT (seconds for the whole boot, default 2700), REGISTRY
# (default 127.0.0.1:5000).
set -euo pipefail
MKL_PREFIX=vm-run
# shellcheck source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
require_root

(($# == 1)) || die "usage: $0 DIR"
DIR=$(realpath -m "$1")
VM=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$VM/../.." && pwd)
export REGISTRY=${REGISTRY:-127.0.0.1:5000}
export PATH=$PATH:/usr/local/go/bin
DRIVERS=${VM_DRIVERS:-systemd cgroupfs}
TEST_RUN=${VM_TEST_RUN:-^(TestQoS_(Guaranteed|Burstable|BestEffort|OOMKilledIsRestarted|PodCgroupsRemovedOnSIGINT|BurstableTierFollowsPods)|TestLifecycle_CrashLoopBackOff|TestProbe_ExecLivenessRestarts)\$}
TIME_SCALE=${VM_TIME_SCALE:-30}
TIMEOUT=${VM_TIMEOUT:-2700}

vm_host_tools # hack/lib.sh
# The host side needs what the e2e suite needs (registry, busybox, CNI
# plugins) when this runs alone, e.g. `make test-cgroupv2` on a fresh machine.
timed "host dependencies (hack/install-deps.sh)" "$REPO/hack/install-deps.sh"
# image.sh prints its progress lines, then the image directory last: show
# them all (a first build debootstraps for minutes, quietly: the heartbeat
# says once a minute that it is alive), keep the last. The heartbeat lives
# here, not in image.sh, whose text is part of the image's cache key.
image_start=$SECONDS
step "guest image (hack/vm/image.sh) ..."
image_out=$(mktemp)
("$VM/image.sh" | tee /dev/stderr >"$image_out") &
image_pid=$!
heartbeat "building the guest image (hack/vm/image.sh)" "$image_pid" &
image_hb=$!
image_rc=0
wait "$image_pid" || image_rc=$?
kill "$image_hb" 2>/dev/null || true
image=$(tail -n1 "$image_out")
rm -f "$image_out"
((image_rc == 0)) || die "building the guest image failed (exit $image_rc); its output is above"
step "guest image (hack/vm/image.sh): done in $(duration $((SECONDS - image_start)))"

mkdir -p "$DIR"
rm -rf "${DIR:?}"/{bin,repo,registry,out} "$DIR/console.log"
mkdir -p "$DIR"/{bin,repo/test/e2e,out}

timed "building static minikubelet and e2e.test" bash -c 'cd "$1" && CGO_ENABLED=0 go build -o "$2/bin/minikubelet" ./cmd/minikubelet && CGO_ENABLED=0 go test -c -o "$2/bin/e2e.test" ./test/e2e' _ "$REPO" "$DIR"

timed "registry on $REGISTRY (hack/start-registry.sh)" "$REPO/hack/start-registry.sh" "$REGISTRY"
timed "test images (hack/images)" bash -c 'set -o pipefail; cd "$1" && go run ./hack/images --registry "$2" | tail -n1' _ "$REPO" "$REGISTRY"
cp -a "$MKL_STATE/registry" "$DIR/registry"
cp -a "$REPO/hack" "$DIR/repo/hack"
install -m 0755 "$VM/payload.sh" "$DIR/payload.sh"
cat >"$DIR/run.env" <<ENV
DRIVERS='$DRIVERS'
TEST_RUN='$TEST_RUN'
TIME_SCALE='$TIME_SCALE'
TEST_TIMEOUT='$(((TIMEOUT - 300) / $(wc -w <<<"$DRIVERS")))s'
ENV

# KVM when /dev/kvm is usable, software emulation (TCG) otherwise. Usable
# means the guest's kernel, booted under KVM with the run's CPU model,
# prints its banner on the serial console within 15 s (about a second when
# KVM works). A device node is not enough: a nested KVM (a cloud VM) may
# abort qemu on an MSR of -cpu host (IA32_ARCH_CAPABILITIES, 0x10a), hence
# host without arch-capabilities, or hang the guest right after "Probing
# EDD", as on the 2-core machine this was written on.
kvm_cpu=host,-arch-capabilities
kvm_usable() {
	[[ -c /dev/kvm ]] || return 1
	local log=$DIR/kvm-probe.log pid ok=1 deadline=$((SECONDS + 15))
	rm -f "$log"
	qemu-system-x86_64 -accel kvm -cpu "$kvm_cpu" -smp 1 -m 256 -kernel "$image/vmlinuz" \
		-append "console=ttyS0 panic=-1" -nic none -display none -monitor none \
		-serial "file:$log" -no-reboot </dev/null >/dev/null 2>&1 &
	pid=$!
	while ((SECONDS < deadline)) && pid_alive "$pid"; do
		if grep -qs 'Linux version' "$log"; then
			ok=0
			break
		fi
		sleep 0.2
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	return "$ok"
}
accel=(-accel tcg,thread=multi,tb-size=256 -cpu max)
accel_name="software emulation (TCG), ~1 min to boot"
probe_start=$SECONDS
if kvm_usable; then
	accel=(-accel kvm -cpu "$kvm_cpu")
	accel_name="KVM"
elif [[ -c /dev/kvm ]]; then
	accel_name+="; /dev/kvm is there but a guest kernel did not boot under it within 15 s ($DIR/kvm-probe.log)"
fi
step "accelerator: $accel_name (probed in $(duration $((SECONDS - probe_start))))"

kernel_args="root=/dev/vda rw console=ttyS0 loglevel=4 systemd.unified_cgroup_hierarchy=1 systemd.show_status=auto"
qemu=(qemu-system-x86_64 -name mkl-cgroupv2
	"${accel[@]}" -smp 2 -m 2048
	-kernel "$image/vmlinuz" -initrd "$image/initrd.img" -append "$kernel_args"
	-drive "file=$image/disk.raw,format=raw,if=virtio,snapshot=on"
	-nic none -display none -monitor none -no-reboot
	-serial "file:$DIR/console.log"
	-virtfs "local,path=$DIR,mount_tag=share,security_model=none,id=share")

lock=/tmp/mkl-qemu.lock
exec 8>"$lock"
if ! flock -n 8; then
	step "waiting for another guest on this machine to finish ($lock)"
	flock 8
fi
step "booting the guest (drivers: $DRIVERS; $accel_name, then the cases; timeout ${TIMEOUT}s; console $DIR/console.log)"
start=$SECONDS
rc=0
timeout --kill-after=10 "$TIMEOUT" "${qemu[@]}" </dev/null &
qpid=$!
# A run that is interrupted takes its guest with it.
trap '[[ -z ${qpid:-} ]] || kill -TERM "$qpid" 2>/dev/null || true' EXIT
# The payload powers the guest off. Should the guest linger once the
# results are written, stop it rather than wait for the timeout.
next_beat=$((SECONDS + 60))
while pid_alive "$qpid"; do
	if [[ -f $DIR/out/done ]]; then
		if ! wait_for 120 "the guest to power off after its payload" proc_gone "$qpid"; then
			warn "the guest wrote its results but did not power off within 120s; stopping qemu"
			kill -TERM "$qpid" 2>/dev/null || true
		fi
		break
	fi
	sleep 1
	if ((SECONDS >= next_beat)); then
		# A line a minute: the guest may run its cases for many minutes.
		next_beat=$((SECONDS + 60))
		step "guest running for $(duration $((SECONDS - start))); results so far: $(find "$DIR/out" -name '*.rc' -printf '%f ' 2>/dev/null)"
	fi
done
wait "$qpid" || rc=$?
qpid=
flock -u 8
elapsed=$((SECONDS - start))
if [[ ! -f $DIR/out/done ]]; then
	tail -n 40 "$DIR/console.log" >&2 || true
	((rc != 124)) || die "the guest did not finish within ${TIMEOUT}s (console: $DIR/console.log); raise VM_TIMEOUT on a busy machine"
	die "the guest stopped after ${elapsed}s (qemu exit $rc) without finishing its payload (console: $DIR/console.log)"
fi
for driver in $DRIVERS; do
	step "driver $driver: e2e.test exit $(cat "$DIR/out/$driver.rc" 2>/dev/null || echo missing), $(wc -l <"$DIR/out/$driver-leftovers.txt" 2>/dev/null || echo ?) leftover cgroups/units"
done
step "guest done after $(duration "$elapsed"); results in $DIR/out"
