#!/usr/bin/env bash
# stop-containerd.sh DIR: stop the private containerd that
# hack/start-containerd.sh DIR started and remove every trace of it, also
# when the tests left pods behind:
#
#   1. stop containerd (SIGTERM, SIGKILL after 10 s);
#   2. kill and delete its containers with runc (processes and cgroups);
#   3. kill its leftover shims and remove their sockets in /run/containerd/s;
#      (containerd 1.6 and 2.x alike: the layouts differ where noted)
#   4. release host-local IPs and CNI result caches held by its sandboxes;
#   5. unmount everything under DIR, deepest first (lazy), which also frees
#      the pods' network namespaces and with them their veths;
#   6. delete the bridge and host-local state of its conflist once unused;
#   7. remove DIR.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_root

(($# == 1)) || die "usage: $0 DIR"
DIR=$(realpath -m "$1")
SOCKET=$DIR/containerd.sock
CNI_STATE=/var/lib/cni

if [[ ! -e $DIR ]]; then
	step "private containerd: $DIR does not exist, nothing to stop"
	exit 0
fi
[[ $DIR != / ]] || die "refusing to use / as DIR"
grep -qs 'hack/start-containerd.sh' "$DIR/config.toml" ||
	die "$DIR/config.toml was not written by hack/start-containerd.sh; not removing $DIR"

# procs_with_arg ARG: pids whose command line has ARG as one argument.
procs_with_arg() {
	local f pid
	for f in /proc/[0-9]*/cmdline; do
		pid=${f#/proc/}
		pid=${pid%/cmdline}
		# The process may be gone by now: the redirection's error is hidden too.
		{ tr '\0' '\n' <"$f"; } 2>/dev/null | grep -qxF -- "$1" && echo "$pid"
	done
	return 0
}

# Sandbox ids: the CRI plugin keeps one directory per sandbox.
mapfile -t sandboxes < <(ls "$DIR/root/io.containerd.grpc.v1.cri/sandboxes" 2>/dev/null || true)

# Step 1: containerd itself (found by pid file or by its --config argument).
pids=$(
	cat "$DIR/containerd.pid" 2>/dev/null || true
	procs_with_arg "$DIR/config.toml"
)
stopped=()
while read -r pid; do
	if pid_alive "$pid"; then
		kill_wait "$pid" 10
		stopped+=("$pid")
	fi
done < <(sort -u <<<"$pids")
if ((${#stopped[@]})); then step "containerd: stopped pid ${stopped[*]}"; else step "containerd: was not running"; fi

# Step 2: containers still alive, killed through runc's own state.
killed=0
for root in "$DIR"/runc/*/; do
	[[ -d $root ]] || continue
	for id in $(runc --root "$root" list -q 2>/dev/null); do
		runc --root "$root" kill --all "$id" KILL >/dev/null 2>&1 || true
		runc --root "$root" delete --force "$id" >/dev/null 2>&1 || true
		killed=$((killed + 1))
	done
done
step "containers: $( ((killed)) && echo "killed and deleted $killed" || echo "none left")"

# Step 3: shims, recognised by their -address argument; their sockets live
# outside DIR and are named in each task bundle: containerd 1.x writes an
# "address" file, 2.x a bootstrap.json with an "address" field.
mapfile -t shims < <(procs_with_arg "$SOCKET")
for pid in "${shims[@]}"; do
	kill_wait "$pid" 5
done
sockets=0
for bundle in "$DIR"/state/io.containerd.runtime.v2.task/*/*/; do
	[[ -d $bundle ]] || continue
	sock=
	if [[ -f $bundle/address ]]; then
		sock=$(<"$bundle/address")
	elif [[ -f $bundle/bootstrap.json ]]; then
		sock=$(grep -o '"address"[[:space:]]*:[[:space:]]*"[^"]*"' "$bundle/bootstrap.json" | head -n1 | sed 's/.*"\([^"]*\)"$/\1/')
	fi
	sock=${sock#unix://}
	if [[ $sock == /run/containerd/s/* && -S $sock ]]; then
		rm -f "$sock"
		sockets=$((sockets + 1))
	fi
done
step "shims: $( ((${#shims[@]})) && echo "killed ${#shims[@]}" || echo "none left"), removed $sockets stale shim sockets"

# Step 4: IP reservations and CNI caches that a missed CNI DEL left behind.
declare -A ours=()
for id in "${sandboxes[@]}"; do
	[[ -n $id ]] && ours[$id]=1
	rm -f "$CNI_STATE"/results/*-"$id"-* 2>/dev/null || true
done
released=0
for f in "$CNI_STATE"/networks/*/*; do
	[[ -f $f && ${f##*/} != lock && ${f##*/} != last_reserved_ip.* ]] || continue
	# host-local writes "<container id>\r\n<ifname>" into each reservation.
	owner=$(head -n1 "$f" | tr -d '\r')
	if [[ -n $owner && -n ${ours[$owner]:-} ]]; then
		rm -f "$f"
		released=$((released + 1))
	fi
done
step "CNI: ${#sandboxes[@]} sandboxes known, released $released leaked IP reservations"

# Step 5: mounts under DIR (rootfs overlays, shm, netns), deepest first.
mapfile -t mounts < <(awk -v d="$DIR/" 'index($5, d) == 1 { print length($5), $5 }' /proc/self/mountinfo | sort -rn | cut -d' ' -f2-)
for m in "${mounts[@]}"; do
	umount -l "$m" 2>/dev/null || warn "umount $m failed"
done
step "mounts: unmounted ${#mounts[@]}"

# Step 6: the bridge and host-local directory of the test's network, once no
# pod uses them (a veth disappears with its network namespace).
cleaned=()
for conf in "$DIR"/net.d/*.conflist "$DIR"/net.d/*.conf; do
	[[ -f $conf ]] || continue
	net=$(grep -o '"name"[[:space:]]*:[[:space:]]*"[^"]*"' "$conf" | head -n1 | sed 's/.*"\([^"]*\)"$/\1/')
	bridge=$(grep -o '"bridge"[[:space:]]*:[[:space:]]*"[^"]*"' "$conf" | head -n1 | sed 's/.*"\([^"]*\)"$/\1/')
	if [[ -n $bridge && -d /sys/class/net/$bridge/brif ]]; then
		# Veths of just-freed namespaces take a moment to go.
		if wait_for 5 "ports of bridge $bridge to go" bash -c "[[ -z \$(ls /sys/class/net/$bridge/brif) ]]"; then
			ip link delete "$bridge" && cleaned+=("bridge $bridge")
		else
			warn "bridge $bridge still has ports: $(find "/sys/class/net/$bridge/brif" -mindepth 1 -printf '%f ')"
		fi
	fi
	if [[ -n $net && -d $CNI_STATE/networks/$net ]]; then
		left=$(find "$CNI_STATE/networks/$net" -mindepth 1 ! -name lock ! -name 'last_reserved_ip.*' -printf '%f ')
		if [[ -n $left ]]; then
			warn "host-local network $net still has reservations: $left"
		else
			rm -rf "${CNI_STATE:?}/networks/$net"
			cleaned+=("$CNI_STATE/networks/$net")
		fi
	fi
done
if ((${#cleaned[@]})); then step "network: removed ${cleaned[*]}"; else step "network: nothing to remove"; fi

# Step 7: the directory itself; --one-file-system so a mount that would not
# go away is never descended into.
rm -rf --one-file-system "$DIR"
step "removed $DIR"
