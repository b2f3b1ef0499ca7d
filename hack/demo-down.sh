#!/usr/bin/env bash
# demo-down.sh: undo `make demo` (hack/setup.sh, hack/demo.sh). Idempotent;
# prints one line per step, saying what it changed or that there was nothing
# to do. Run as root from anywhere (`make demo-down`).
#
#   1. Pods: removes the demo's pod, default/web (examples/web.yaml), from
#      the system containerd: through the daemon when one runs (so it is gone
#      from the daemon's store too), by interrupting a `minikubelet run` that
#      still holds it, else through the CRI (hack/demodown). Any OTHER pod
#      minikubelet created there is listed and nothing is changed, unless
#      ALL_PODS=1 (--all-pods): then every pod minikubelet created on the
#      system containerd is removed too.
#   2. The daemon, if hack/start-minikubelet.sh started it (its pid file):
#      stopped, and the tmpfs of its Secrets beside the socket unmounted.
#      A daemon run any other way (systemd, by hand) makes it stop at step 0.
#   3. The pod network minikubelet wrote: the conflist in /etc/cni/net.d, its
#      bridge (mkl0), host-local's state and CNI result caches, and any
#      iptables rule left for the pod network's CIDR or bridge.
#   4. containerd's config, as hack/setup-containerd.sh left it: the drop-in
#      /etc/containerd/conf.d/minikubelet.toml, the certs.d hosts.toml files
#      it wrote (the registry's; the DOCS_MIRRORS ones), and
#      /etc/containerd/config.toml: restored from the newest
#      config.toml.minikubelet-backup-* it made (or removed when setup wrote
#      it because there was none).
#   5. containerd: stopped if hack/setup-containerd.sh started it in the
#      background (its pid file); on a systemd machine restarted with the
#      restored config instead (Debian's package runs it there).
#   6. The registry, if hack/start-registry.sh started it (its pid file).
#
# Kept: the Debian packages and /opt/cni/bin (other software may use them),
# bin/minikubelet, the registry's storage and the images in containerd's
# store (a second `make demo` then takes seconds), and a daemon's own state
# (--root-dir, /etc/minikubelet). PURGE=1 (--purge) removes the registry's
# storage and the $REGISTRY/... images from containerd as well.
#
# Env: REGISTRY (default 127.0.0.1:5000), DRY_RUN=1 (--dry-run: print every
# change, make none), ALL_PODS=1, PURGE=1. For tests of this script alone:
# CONTAINERD_ETC, CNI_CONF_DIR, MINIKUBELET_SOCKET, CONTAINERD_SOCKET.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DRY=false ALL=false PURGE_ALL=false
[[ ${DRY_RUN:-} == 1 || ${DRY_RUN:-} == true ]] && DRY=true
[[ ${ALL_PODS:-} == 1 || ${ALL_PODS:-} == true ]] && ALL=true
[[ ${PURGE:-} == 1 || ${PURGE:-} == true ]] && PURGE_ALL=true
for a in "$@"; do
	case $a in
	--dry-run) DRY=true ;;
	--all-pods) ALL=true ;;
	--purge) PURGE_ALL=true ;;
	-h | --help)
		sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
		exit 0
		;;
	*) die "unknown argument $a (use --dry-run, --all-pods, --purge)" ;;
	esac
done
require_root

HACK=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HACK/.." && pwd)
export PATH=$PATH:/usr/local/go/bin
REGISTRY=${REGISTRY:-127.0.0.1:5000}
ETC=${CONTAINERD_ETC:-/etc/containerd}
CONFIG=$ETC/config.toml
DROPIN_DIR=$ETC/conf.d
DROPIN=$DROPIN_DIR/minikubelet.toml
IMPORT_GLOB="/etc/containerd/conf.d/*.toml"
CSOCK=${CONTAINERD_SOCKET:-/run/containerd/containerd.sock}
CONTAINERD_PIDFILE=$MKL_RUN/containerd.pid
CONTAINERD_STAMP=$MKL_RUN/containerd.config
MSOCK=${MINIKUBELET_SOCKET:-/run/minikubelet/minikubelet.sock}
DAEMON_PIDFILE=$MKL_RUN/minikubelet.pid
REGISTRY_NAME=registry-${REGISTRY//[^A-Za-z0-9.]/_}
REGISTRY_PIDFILE=$MKL_RUN/$REGISTRY_NAME.pid
CNI_CONF_DIR=${CNI_CONF_DIR:-/etc/cni/net.d}
CNI_STATE=/var/lib/cni
BIN=$REPO/bin/minikubelet
DEMO_POD=default/web
# The marker the hack/ scripts write into every containerd file they own.
MARKER="Written by minikubelet's hack/"

$DRY && step "dry run: printing every change, making none"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# change WHAT CMD...: run CMD and print WHAT (in a dry run only print it).
change() {
	local what=$1
	shift
	if $DRY; then
		step "would: $what"
	else
		"$@"
		step "$what"
	fi
}

# Commands whose own output is not wanted between the step lines.
delete_via_daemon() { "$BIN" delete pod "$2" -n "$1" --wait --socket "$MSOCK" >/dev/null; }
write_config() { install_file "$1" "$CONFIG" 0644 >/dev/null; }
rmdir_cgroup() { rmdir "$1" 2>/dev/null || warn "pods: cgroup $1 still holds processes; left in place"; }
remove_images() { ctr --address "$CSOCK" -n k8s.io images rm "$@" >/dev/null; }

daemon_answers() { curl -sf -m 2 --unix-socket "$MSOCK" http://localhost/healthz -o /dev/null; }
socket_pid() {
	ss -xlpn 2>/dev/null | awk -v s="$1" '$5 == s { if (match($0, /pid=[0-9]+/)) print substr($0, RSTART + 4, RLENGTH - 4); exit }'
}

# Step 0: look before changing anything.
if command -v systemctl >/dev/null && [[ -d /run/systemd/system ]] && systemctl -q is-active minikubelet 2>/dev/null; then
	die "minikubelet runs as the systemd service minikubelet, which the demo did not start; nothing was changed. Stop it first (systemctl stop minikubelet) or leave the demo's setup in place"
fi
daemon_pid=$(pidfile_alive "$DAEMON_PIDFILE" || true)
if daemon_answers && [[ -z $daemon_pid ]]; then
	die "a minikubelet daemon answers on $MSOCK (pid $(socket_pid "$MSOCK")) that hack/start-minikubelet.sh did not start; nothing was changed. Stop it first; its pods keep running and stop the containerd they run on from being stopped"
fi
pods=()
containerd_up=false
if containerd_answers "$CSOCK"; then
	containerd_up=true
	(cd "$REPO" && go build -o "$tmp/demodown" ./hack/demodown) || die "building hack/demodown failed"
	mapfile -t pods < <("$tmp/demodown" -endpoint "unix://$CSOCK" list)
fi
others=()
for p in "${pods[@]}"; do
	[[ ${p%% *} == "$DEMO_POD" ]] || others+=("${p%% *}")
done
if ((${#others[@]})) && ! $ALL; then
	die "minikubelet runs pods on $CSOCK that are not the demo's: ${others[*]}; nothing was changed. Delete them first (minikubelet delete pod NAME -n NAMESPACE, or Ctrl-C their 'minikubelet run'), or remove them with the demo's: make demo-down ALL_PODS=1"
fi

# Step 1: the pods (the demo's, or with ALL_PODS every minikubelet pod).
if ((${#pods[@]} == 0)); then
	if $containerd_up; then step "pods: minikubelet runs no pod on $CSOCK"; else step "pods: containerd does not answer on $CSOCK; no pod to remove"; fi
fi
for p in "${pods[@]}"; do
	read -r key state agent _ <<<"$p"
	ns=${key%%/*} name=${key#*/}
	if [[ $agent == serve* ]] && daemon_answers; then
		change "pod $key ($state): deleted through the daemon" delete_via_daemon "$ns" "$name"
	elif [[ $agent == run-* ]] && pid_alive "${agent#run-}" && grep -qa minikubelet "/proc/${agent#run-}/cmdline"; then
		# The run that holds it removes its pods on Ctrl-C.
		change "pod $key ($state): interrupted 'minikubelet run' (pid ${agent#run-}), which removed it" \
			bash -c "kill -INT ${agent#run-}; source '$HACK/lib.sh'; wait_for 120 'minikubelet run to remove its pods' proc_gone ${agent#run-}"
	fi
done
if ((${#pods[@]})); then
	keys=()
	if ! $DRY; then
		# What is left has no minikubelet holding it: removed through CRI.
		mapfile -t left < <("$tmp/demodown" -endpoint "unix://$CSOCK" list)
		for p in "${left[@]}"; do
			if $ALL || [[ ${p%% *} == "$DEMO_POD" ]]; then keys+=("${p%% *}"); fi
		done
	fi
	if ((${#keys[@]})); then
		"$tmp/demodown" -endpoint "unix://$CSOCK" remove "${keys[@]}" | sed "s|^|[$MKL_PREFIX] pods: |"
	fi
	# The pod cgroups minikubelet made (cgroupfs driver) of the pods removed
	# without it; the QoS tiers above them stay (every minikubelet shares them).
	for p in "${pods[@]}"; do
		read -r _ _ _ uid <<<"$p"
		[[ -n $uid ]] || continue
		for d in /sys/fs/cgroup/kubepods/pod"$uid" /sys/fs/cgroup/kubepods/*/pod"$uid" /sys/fs/cgroup/*/kubepods/pod"$uid" /sys/fs/cgroup/*/kubepods/*/pod"$uid"; do
			[[ -d $d ]] && change "pods: removed the cgroup $d" rmdir_cgroup "$d"
		done
	done
fi

# Step 2: the daemon hack/start-minikubelet.sh started.
if [[ -n $daemon_pid ]]; then
	change "daemon: stopped minikubelet (pid $daemon_pid, started by hack/start-minikubelet.sh)" kill_wait "$daemon_pid" 60
	change "daemon: removed $DAEMON_PIDFILE" rm -f "$DAEMON_PIDFILE"
else
	step "daemon: not running (no live pid in $DAEMON_PIDFILE)"
	[[ -e $DAEMON_PIDFILE ]] && change "daemon: removed the stale $DAEMON_PIDFILE" rm -f "$DAEMON_PIDFILE"
fi
secrets=$(dirname "$MSOCK")/secrets
if mountpoint -q "$secrets" 2>/dev/null && ! daemon_answers; then
	change "daemon: unmounted the Secrets tmpfs $secrets" umount "$secrets"
fi
if [[ -d $secrets ]] && ! mountpoint -q "$secrets" && [[ -z $(ls -A "$secrets") ]] && ! daemon_answers; then
	change "daemon: removed the empty $secrets" rmdir "$secrets"
fi

# Step 3: the pod network. Every minikubelet conflist (network name
# "minikubelet" unless --cni-network-name changed it) is recognised by
# minikubelet's comment-free bridge+host-local+portmap shape and its name.
found_net=false
for conf in "$CNI_CONF_DIR"/*minikubelet*.conflist; do
	[[ -f $conf ]] || continue
	found_net=true
	net=$(grep -o '"name"[[:space:]]*:[[:space:]]*"[^"]*"' "$conf" | head -n1 | sed 's/.*"\([^"]*\)"$/\1/')
	bridge=$(grep -o '"bridge"[[:space:]]*:[[:space:]]*"[^"]*"' "$conf" | head -n1 | sed 's/.*"\([^"]*\)"$/\1/')
	subnet=$(grep -o '"subnet"[[:space:]]*:[[:space:]]*"[^"]*"' "$conf" | head -n1 | sed 's/.*"\([^"]*\)"$/\1/')
	# ip, not /sys/class/net: that shows the network namespace sysfs was
	# mounted in.
	if [[ -n $bridge ]] && ip link show "$bridge" >/dev/null 2>&1; then
		if $DRY || wait_for 5 "ports of bridge $bridge to go" bash -c "[[ -z \$(ip -o link show master '$bridge') ]]"; then
			change "network: deleted the bridge $bridge" ip link delete "$bridge"
		else
			warn "network: bridge $bridge still has ports ($(ip -o link show master "$bridge" | awk -F': ' '{ print $2 }' | tr '\n' ' ')); left in place"
		fi
	else
		step "network: no bridge ${bridge:-?} on this machine"
	fi
	if [[ -n $net && -d $CNI_STATE/networks/$net ]]; then
		left=$(find "$CNI_STATE/networks/$net" -mindepth 1 ! -name lock ! -name 'last_reserved_ip.*' -printf '%f ')
		if [[ -n $left ]]; then
			warn "network: host-local network $net still has reservations ($left); left in place"
		else
			change "network: removed host-local state $CNI_STATE/networks/$net" rm -rf "${CNI_STATE:?}/networks/$net"
		fi
	fi
	mapfile -t results < <(find "$CNI_STATE/results" -maxdepth 1 -name "$net-*" 2>/dev/null)
	((${#results[@]})) && change "network: removed ${#results[@]} CNI result caches of $net" rm -f "${results[@]}"
	# iptables rules for the pod CIDR or the bridge that a missed CNI DEL
	# left (a proper DEL removes its own): deleted, with their CNI-* chains.
	if command -v iptables-save >/dev/null; then
		for table in nat filter; do
			pats=(-e "\\\"$net\\\"")
			[[ -n $subnet ]] && pats+=(-e " $subnet ")
			[[ -n $bridge ]] && pats+=(-e " $bridge ")
			rules=$(iptables-save -t "$table" 2>/dev/null | grep -E '^-A ' | grep -F "${pats[@]}" || true)
			[[ -n $rules ]] || continue
			n=$(grep -c . <<<"$rules")
			{
				echo "*$table"
				sed 's/^-A /-D /' <<<"$rules"
				grep -oE -- '-j CNI-[0-9a-f]{24}' <<<"$rules" | sort -u | awk '{ print "-F " $2; print "-X " $2 }'
				echo COMMIT
			} >"$tmp/ipt-$table"
			change "network: deleted $n iptables rule(s) of $net in table $table" iptables-restore -w -n "$tmp/ipt-$table"
		done
	fi
	change "network: removed $conf" rm -f "$conf"
done
# host-local's and libcni's directories, once empty (CNI makes them again).
for d in "$CNI_STATE/networks" "$CNI_STATE/results"; do
	[[ -d $d && -z $(ls -A "$d") ]] && ! $DRY && change "network: removed the empty $d" rmdir "$d"
done
$found_net || step "network: no minikubelet conflist in $CNI_CONF_DIR"

# Step 4: containerd's config.
# owned FILE: true if one of the hack/ scripts wrote FILE.
owned() { [[ -f $1 ]] && grep -qF "$MARKER" "$1"; }
if [[ -f $DROPIN ]]; then change "containerd config: removed the drop-in $DROPIN" rm -f "$DROPIN"; else step "containerd config: no drop-in $DROPIN"; fi
[[ -d $DROPIN_DIR ]] && [[ -z $(ls -A "$DROPIN_DIR") ]] && change "containerd config: removed the empty $DROPIN_DIR" rmdir "$DROPIN_DIR"
hosts_files=("$ETC/certs.d/$REGISTRY/hosts.toml")
while read -r upstream _; do hosts_files+=("$ETC/certs.d/$upstream/hosts.toml"); done < <(mirror_upstreams)
removed_hosts=0
for f in "${hosts_files[@]}"; do
	if owned "$f"; then
		change "containerd config: removed $f" rm -f "$f"
		removed_hosts=$((removed_hosts + 1))
		[[ -d ${f%/*} && -z $(ls -A "${f%/*}") ]] && change "containerd config: removed the empty ${f%/*}" rmdir "${f%/*}"
	fi
done
((removed_hosts)) || step "containerd config: no hosts.toml of minikubelet's in $ETC/certs.d"
[[ -d $ETC/certs.d && -z $(ls -A "$ETC/certs.d") ]] && change "containerd config: removed the empty $ETC/certs.d" rmdir "$ETC/certs.d"

config_changed=false
if [[ -f $CONFIG ]] && head -n1 "$CONFIG" | grep -qF "# Written by minikubelet's hack/setup-containerd.sh"; then
	# setup wrote it because there was none: containerd's defaults again.
	change "config.toml: removed $CONFIG (hack/setup-containerd.sh wrote it; there was none before)" rm -f "$CONFIG"
	config_changed=true
elif [[ -f $CONFIG ]] && grep -E '^[[:space:]]*imports[[:space:]]*=' "$CONFIG" | grep -qF "\"$IMPORT_GLOB\""; then
	# Undo exactly what setup did: drop the line it put first, or our glob
	# from an imports array it extended.
	awk -v g="\"$IMPORT_GLOB\"" '
		NR == 1 && $0 == "imports = [" g "]" { next }
		/^[[:space:]]*imports[[:space:]]*=/ { gsub(", " g, ""); gsub(g ", ", ""); gsub(g, "") }
		{ print }' "$CONFIG" >"$tmp/config"
	backup=$(ls -1 "$CONFIG".minikubelet-backup-* 2>/dev/null | sort | tail -n1 || true)
	if [[ -n $backup ]] && cmp -s "$tmp/config" "$backup"; then
		change "config.toml: restored $CONFIG from $backup (the import of $IMPORT_GLOB is gone)" mv -f "$backup" "$CONFIG"
	else
		[[ -n $backup ]] && warn "config.toml: $CONFIG changed since $backup was made; removing only the import and keeping the backup"
		change "config.toml: removed the import of $IMPORT_GLOB from $CONFIG" write_config "$tmp/config"
	fi
	config_changed=true
else
	step "config.toml: ${CONFIG} $([[ -f $CONFIG ]] && echo "does not import $IMPORT_GLOB" || echo "does not exist"); nothing to restore"
fi
mapfile -t backups < <(ls -1 "$CONFIG".minikubelet-backup-* 2>/dev/null || true)
if ! $DRY; then
	for b in "${backups[@]}"; do
		[[ -n $b ]] || continue
		# A backup identical to the restored config is only clutter.
		if [[ -f $CONFIG ]] && cmp -s "$b" "$CONFIG"; then
			change "config.toml: removed $b (the same as $CONFIG)" rm -f "$b"
		else
			step "config.toml: kept $b (it differs from $CONFIG)"
		fi
	done
fi

# Step 5: containerd itself.
if $PURGE_ALL && $containerd_up; then
	mapfile -t imgs < <(ctr --address "$CSOCK" -n k8s.io images ls -q 2>/dev/null | grep -F "$REGISTRY/" || true)
	((${#imgs[@]})) && change "containerd: removed ${#imgs[@]} image(s) of $REGISTRY (PURGE)" remove_images "${imgs[@]}"
fi
cpid=$(pidfile_alive "$CONTAINERD_PIDFILE" || true)
if [[ -d /run/systemd/system ]] && command -v systemctl >/dev/null; then
	if systemctl -q is-active containerd && { $config_changed || $DRY; }; then
		change "containerd: restarted with systemctl to load the restored config (systemd runs it; not stopped)" systemctl restart containerd
	else
		step "containerd: runs under systemd; left as it is"
	fi
elif [[ -n $cpid && $(socket_pid "$CSOCK") == "$cpid" ]]; then
	change "containerd: stopped pid $cpid (hack/setup-containerd.sh started it)" kill_wait "$cpid" 20
elif $containerd_up; then
	warn "containerd on $CSOCK was not started by hack/setup-containerd.sh; left running (restart it to load the restored config)"
else
	step "containerd: not running"
fi
# The pid file and the config stamp of hack/setup-containerd.sh, once the
# containerd they describe is gone (a later setup starts it afresh).
if $DRY || ! pidfile_alive "$CONTAINERD_PIDFILE" >/dev/null; then
	for f in "$CONTAINERD_PIDFILE" "$CONTAINERD_STAMP"; do
		[[ -e $f ]] && change "containerd: removed $f" rm -f "$f"
	done
fi

# Step 6: the registry.
if rpid=$(pidfile_alive "$REGISTRY_PIDFILE"); then
	change "registry: stopped docker-registry on $REGISTRY (pid $rpid, started by hack/start-registry.sh)" kill_wait "$rpid" 20
	change "registry: removed $REGISTRY_PIDFILE" rm -f "$REGISTRY_PIDFILE"
elif http_ok "http://$REGISTRY/v2/"; then
	step "registry: $REGISTRY answers but hack/start-registry.sh did not start it; left alone"
else
	step "registry: not running on $REGISTRY"
	[[ -e $REGISTRY_PIDFILE ]] && change "registry: removed the stale $REGISTRY_PIDFILE" rm -f "$REGISTRY_PIDFILE"
fi
if $PURGE_ALL; then
	for f in "$MKL_STATE/registry" "$MKL_STATE/$REGISTRY_NAME.yml" "$MKL_STATE/$REGISTRY_NAME.log"; do
		[[ -e $f ]] && change "registry: removed $f (PURGE)" rm -rf "$f"
	done
fi
$DRY && step "dry run: nothing was changed" || step "done: the demo is down; 'make demo' sets it up again"
