#!/bin/bash
# payload.sh: the guest side of hack/vm/run.sh, run by the guest's
# mkl-payload unit from the 9p share (mounted at /share). Starts a registry on 127.0.0.1:5000 serving a copy of the
# host registry's storage (the test images, pushed by hack/images), then runs
# the statically built e2e test binary once per cgroup driver and writes
# everything the host reports into /share/out:
#   guest-info.txt                kernel, systemd, containerd, runc, cgroup mode
#   <driver>.out / <driver>.rc    go test -test.v=test2json output, exit code
#   <driver>-leftovers.txt        pod slices/scopes/cgroups left after the run
#   journal.txt, registry.log, done
# /share/run.env sets DRIVERS, TEST_RUN, TIME_SCALE and TEST_TIMEOUT.
set -uo pipefail
log() { echo "[mkl-payload] $*"; }

out=/share/out
mkdir -p "$out"
# shellcheck source=/dev/null
source /share/run.env

{
	echo "kernel: $(uname -r)"
	echo "systemd: $(systemctl --version | head -n1)"
	echo "containerd: $(containerd --version)"
	echo "runc: $(runc --version | head -n1)"
	echo "cgroup fs: $(stat -fc %T /sys/fs/cgroup)"
	echo "controllers: $(cat /sys/fs/cgroup/cgroup.controllers)"
	echo "cpus: $(nproc)"
	echo "memory: $(grep MemTotal /proc/meminfo)"
} >"$out/guest-info.txt" 2>&1
log "$(tr '\n' ';' <"$out/guest-info.txt")"

cat >/tmp/registry.yml <<REG
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: /share/registry
http:
  addr: 127.0.0.1:5000
REG
docker-registry serve /tmp/registry.yml >"$out/registry.log" 2>&1 &
deadline=$((SECONDS + 120))
until (exec 3<>/dev/tcp/127.0.0.1/5000) 2>/dev/null; do
	if ((SECONDS > deadline)); then
		log "ERROR: the registry did not listen on 127.0.0.1:5000 within 120s"
		break
	fi
	sleep 0.5
done
log "registry up after ${SECONDS}s of payload"

leftovers() {
	# Pod-level cgroups and container scopes must all be gone; the node
	# level (kubepods, its QoS tiers) stays, as with the kubelet.
	find /sys/fs/cgroup -type d \( -name '*-pod*.slice' -o -name 'pod*' -o -name 'cri-containerd-*.scope' \) 2>/dev/null
	systemctl list-units --all --no-legend --plain 'kubepods*-pod*' 'cri-containerd-*' 2>/dev/null | awk 'NF { print "unit " $1 " " $3 "/" $4 }'
}

for driver in $DRIVERS; do
	systemd=false
	[[ $driver == systemd ]] && systemd=true
	log "driver $driver: e2e.test -test.run '$TEST_RUN' (time scale $TIME_SCALE)"
	start=$SECONDS
	(
		cd /share/repo/test/e2e &&
			exec env MINIKUBELET_E2E=1 MINIKUBELET_BIN=/share/bin/minikubelet REGISTRY=127.0.0.1:5000 \
				SYSTEMD_CGROUP=$systemd E2E_CGROUP_DRIVER=$driver E2E_TIME_SCALE=$TIME_SCALE \
				/share/bin/e2e.test -test.v=test2json -test.count=1 -test.parallel 3 \
				-test.timeout "$TEST_TIMEOUT" -test.run "$TEST_RUN"
	) >"$out/$driver.out" 2>&1
	echo $? >"$out/$driver.rc"
	leftovers >"$out/$driver-leftovers.txt"
	log "driver $driver: exit $(cat "$out/$driver.rc") after $((SECONDS - start))s, $(wc -l <"$out/$driver-leftovers.txt") leftovers"
done

journalctl -b --no-pager -o short-monotonic >"$out/journal.txt" 2>&1
sync
echo done >"$out/done"
sync
log "done; powering off"
# The unit's SuccessAction may wait for other jobs; the results are on the
# host already (9p writes are synchronous), so power off at once.
echo o >/proc/sysrq-trigger
