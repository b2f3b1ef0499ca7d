#!/usr/bin/env bash
# stop.sh WORK: stop and remove everything hack/conformance/run.sh started
# under WORK (default /var/tmp/mkl-conf), in order: the node (kubelet or
# minikubelet), the private containerd with its pods, bridge and host-local
# state (hack/stop-containerd.sh), kube-scheduler, kube-controller-manager,
# kube-apiserver and etcd; kube-proxy's iptables chains (kube-proxy
# --cleanup); the node's interface, the pod network's
# iptables rule, the kubelet's canary chains, its cgroup root /mkl-conf, and
# the sysctls the kubelet changed (put back as they were). The reports
# (WORK/report-*) and logs (WORK/logs) stay; the rest of WORK goes.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_root

WORK=$(realpath -m "${1:-${WORK:-/var/tmp/mkl-conf}}")
[[ $WORK != / ]] || die "refusing to use / as WORK"
[[ -d $WORK ]] || {
	step "nothing to stop: $WORK does not exist"
	exit 0
}
HACK=$(cd "$CONFORMANCE_DIR/.." && pwd)
CP=$WORK/cp

stop_pidfile() { # NAME FILE TIMEOUT
	local pid
	if pid=$(pidfile_alive "$2"); then
		kill_wait "$pid" "$3"
		step "$1: stopped (pid $pid)"
	fi
	rm -f "$2"
}

for n in kubelet minikubelet; do
	stop_pidfile "$n" "$CP/$n.pid" 30
done
if [[ -d $WORK/ctd ]]; then
	"$HACK/stop-containerd.sh" "$WORK/ctd" || warn "hack/stop-containerd.sh $WORK/ctd failed"
fi
# kube-proxy's chains outlive its pod: removed once containerd, and so the
# kube-proxy container that would write them again, is gone.
if [[ -f $WORK/kube-proxy ]]; then
	kp=$(<"$WORK/kube-proxy")
	if "$kp" --cleanup >"$WORK/kube-proxy-cleanup.log" 2>&1; then
		step "removed kube-proxy's iptables chains ($kp --cleanup)"
		rm -f "$WORK/kube-proxy"
	else
		warn "$kp --cleanup failed (log: $WORK/kube-proxy-cleanup.log)"
	fi
fi
for n in kube-scheduler kube-controller-manager; do
	stop_pidfile "$n" "$CP/$n.pid" 30
done
[[ ! -d $CP ]] || "$HACK/cluster/stop.sh" "$CP" all >/dev/null || warn "hack/cluster/stop.sh $CP failed"

if [[ -f $WORK/dummy ]]; then
	read -r dev _ <"$WORK/dummy"
	if ip link show "$dev" >/dev/null 2>&1; then
		ip link del "$dev"
		step "deleted the node interface $dev"
	fi
	rm -f "$WORK/dummy"
fi
if [[ -f $WORK/isolated ]]; then
	cidr=$(<"$WORK/isolated")
	rule=(FORWARD -s "$cidr" ! -d "$cidr" -m comment --comment "minikubelet: isolate pod network $cidr" -j REJECT --reject-with icmp-port-unreachable)
	while iptables -w -C "${rule[@]}" 2>/dev/null; do iptables -w -D "${rule[@]}"; done
	step "removed the FORWARD rule isolating $cidr"
	rm -f "$WORK/isolated"
fi
# The kubelet's only iptables objects: empty canary chains (and the hint
# chain) that tell it when something flushed the tables.
if [[ -f $WORK/kubelet.yaml ]]; then
	for ipt in iptables ip6tables; do
		for table in mangle nat filter; do
			for chain in KUBE-KUBELET-CANARY KUBE-IPTABLES-HINT; do
				"$ipt" -w -t "$table" -X "$chain" 2>/dev/null || true
			done
		done
	done
fi
if [[ -f $WORK/sysctls ]]; then
	while read -r key value; do
		sysctl -q -w "$key=$value" || warn "could not restore $key=$value"
	done <"$WORK/sysctls"
	step "restored the sysctls the kubelet changed ($(tr '\n' ' ' <"$WORK/sysctls"))"
	rm -f "$WORK/sysctls"
fi
# The kubelet's cgroup root (its config's cgroupRoot: /mkl-conf of run.sh;
# / of node.sh, whose pods are below /kubepods), only when this WORK ran the
# kubelet (a minikubelet run beside it must not touch it). Only empty
# cgroups go (rmdir).
if [[ -f $WORK/kubelet.yaml ]]; then
	cgroot=$(awk '$1 == "cgroupRoot:" { print $2 }' "$WORK/kubelet.yaml")
	[[ $cgroot != / ]] || cgroot=/kubepods
	[[ $cgroot == /?* ]] || cgroot=/mkl-conf
	for cg in /sys/fs/cgroup/*"$cgroot"; do
		[[ -d $cg ]] || continue
		find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null || warn "could not remove every cgroup under $cg"
	done
fi
# node.sh: the /rootfs symlink it made, and the mounts of the node's pods
# under the shared root dir (/var/lib/kubelet, which stays).
if [[ -f $WORK/rootfs-link ]]; then
	[[ ! -L /rootfs || $(readlink /rootfs) != / ]] || rm -f /rootfs
	rm -f "$WORK/rootfs-link"
	step "removed the /rootfs symlink"
fi
if [[ -f $WORK/node-root ]]; then
	nroot=$(<"$WORK/node-root")
	awk -v d="$nroot" '$2 == d || index($2, d "/") == 1 { print $2 }' /proc/self/mounts | sort -r | while read -r m; do
		umount -l "$m" 2>/dev/null || true
	done
	rm -f "$WORK/node-root"
	step "unmounted what the node left mounted under $nroot"
fi

# Volumes of the node's pods (tmpfs for secrets, bind mounts), deepest first.
for d in "$WORK/kubelet" "$WORK/mkl-root" "$WORK/run"; do
	[[ -d $d ]] || continue
	# The kubelet bind-mounts its root dir onto itself, hence d itself too.
	awk -v d="$d" '$2 == d || index($2, d "/") == 1 { print $2 }' /proc/self/mounts | sort -r | while read -r m; do
		umount -l "$m" 2>/dev/null || true
	done
	rm -rf "$d" || warn "could not remove $d"
done
mkdir -p "$WORK/logs"
for f in "$CP"/*.log; do
	[[ -f $f ]] && mv -f "$f" "$WORK/logs/"
done
rm -rf "$WORK/cp" "$WORK/cni-data" "$WORK/pod-logs" "$WORK/manifests" "$WORK/minikubelet" "$WORK/minikubelet.sock" "$WORK/agnhost-extra" \
	"$WORK/node.kubeconfig" "$WORK/kubelet-pki" "$WORK/volume-plugins"
step "stopped; reports and logs left in $WORK (logs/, report-*/)"
