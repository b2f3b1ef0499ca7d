#!/usr/bin/env bash
# setup-containerd.sh: make the system containerd (/run/containerd/containerd.sock)
# able to run minikubelet pods, without silently clobbering its config.
#
#   1. Write the drop-in /etc/containerd/conf.d/minikubelet.toml (from
#      hack/containerd/minikubelet.toml) and the registry's
#      /etc/containerd/certs.d/REGISTRY/hosts.toml (plain HTTP); with
#      DOCS_MIRRORS=true, also certs.d/{docker.io,registry.k8s.io,gcr.io}
#      (hack/containerd/mirror.toml): pulls from those try the local
#      registry's stand-ins first (the documentation examples' images).
#   2. Make /etc/containerd/config.toml import conf.d/*.toml: write a minimal
#      one if there is none, else back it up and add the import, printing
#      the diff. Warn about CRI settings in it that the drop-in supersedes.
#   3. Check with `containerd config dump` that the merged config has our settings.
#   4. Start containerd if it is not running; restart it if it runs with an
#      older config (systemctl on systemd machines, else nohup in the
#      background with a pid file and /var/log/minikubelet-containerd.log).
#   5. Wait until the socket answers and the CRI plugin is loaded.
#
# Env: REGISTRY (default 127.0.0.1:5000), SYSTEMD_CGROUP (default false),
# DOCS_MIRRORS (default false: a real machine pulls the real images).
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_root

REGISTRY=${REGISTRY:-127.0.0.1:5000}
SYSTEMD_CGROUP=${SYSTEMD_CGROUP:-false}
DOCS_MIRRORS=${DOCS_MIRRORS:-false}
ETC=/etc/containerd
CONFIG=$ETC/config.toml
DROPIN_DIR=$ETC/conf.d
DROPIN=$DROPIN_DIR/minikubelet.toml
IMPORT_GLOB="$DROPIN_DIR/*.toml"
SOCKET=/run/containerd/containerd.sock
LOG=/var/log/minikubelet-containerd.log
PIDFILE=$MKL_RUN/containerd.pid
# STAMP records "pid hash-of-config-files" for the containerd this script
# last saw load the current config, so a rerun knows not to restart it.
STAMP=$MKL_RUN/containerd.config
HACK=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

command -v containerd >/dev/null || die "containerd missing; run hack/install-deps.sh first"
mkdir -p "$MKL_RUN"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Step 1: drop-in and registry hosts.toml.
render "$HACK/containerd/minikubelet.toml" REGISTRY="$REGISTRY" SYSTEMD_CGROUP="$SYSTEMD_CGROUP" >"$tmp/dropin"
config_changed=false
case $(install_file "$tmp/dropin" "$DROPIN" 0644) in
changed)
	config_changed=true
	step "drop-in: wrote $DROPIN"
	;;
*) step "drop-in: $DROPIN already up to date" ;;
esac
render "$HACK/containerd/hosts.toml" REGISTRY="$REGISTRY" >"$tmp/hosts"
case $(install_file "$tmp/hosts" "$ETC/certs.d/$REGISTRY/hosts.toml" 0644) in
changed) step "registry hosts: wrote $ETC/certs.d/$REGISTRY/hosts.toml (plain HTTP to $REGISTRY)" ;;
*) step "registry hosts: $ETC/certs.d/$REGISTRY/hosts.toml already up to date" ;;
esac
# Mirrors: docker.io, registry.k8s.io and gcr.io try the local registry
# first, so the documentation examples run unmodified on the stand-ins
# hack/images pushes there; everything else still comes from upstream.
if [[ $DOCS_MIRRORS == true ]]; then
	while read -r upstream server; do
		render "$HACK/containerd/mirror.toml" REGISTRY="$REGISTRY" UPSTREAM="$upstream" SERVER="$server" >"$tmp/mirror"
		case $(install_file "$tmp/mirror" "$ETC/certs.d/$upstream/hosts.toml" 0644) in
		changed) step "mirror: wrote $ETC/certs.d/$upstream/hosts.toml ($upstream pulls try $REGISTRY first, then $server)" ;;
		*) step "mirror: $ETC/certs.d/$upstream/hosts.toml already up to date" ;;
		esac
	done < <(mirror_upstreams)
else
	step "mirror: DOCS_MIRRORS=$DOCS_MIRRORS, leaving $ETC/certs.d/{docker.io,registry.k8s.io,gcr.io} alone"
fi

# Step 2: config.toml imports the drop-in directory.
if [[ ! -e $CONFIG ]]; then
	cat >"$tmp/config" <<EOF
# Written by minikubelet's hack/setup-containerd.sh: everything else is in the
# drop-ins; see \`containerd config dump\` for the merged result.
version = 2
imports = ["$IMPORT_GLOB"]
EOF
	install_file "$tmp/config" "$CONFIG" 0644 >/dev/null
	step "config.toml: there was none; wrote $CONFIG importing $IMPORT_GLOB"
elif grep -E '^[[:space:]]*imports[[:space:]]*=' "$CONFIG" | grep -qF -e "\"$IMPORT_GLOB\"" -e "\"$DROPIN\""; then
	step "config.toml: $CONFIG already imports $IMPORT_GLOB"
else
	grep -qE '^[[:space:]]*version[[:space:]]*=[[:space:]]*2' "$CONFIG" ||
		die "$CONFIG is not a version 2 config, which imports need; add: imports = [\"$IMPORT_GLOB\"] yourself"
	backup=$CONFIG.minikubelet-backup-$(date +%Y%m%d-%H%M%S)
	cp -p "$CONFIG" "$backup"
	if grep -qE '^[[:space:]]*imports[[:space:]]*=' "$CONFIG"; then
		# Append our glob to the existing (single-line) imports array.
		grep -qE '^[[:space:]]*imports[[:space:]]*=[[:space:]]*\[.*\][[:space:]]*$' "$CONFIG" ||
			die "$CONFIG has a multi-line imports array; add \"$IMPORT_GLOB\" to it yourself"
		sed -E "s|^([[:space:]]*imports[[:space:]]*=[[:space:]]*\[)[[:space:]]*(.*)\][[:space:]]*$|\1\2, \"$IMPORT_GLOB\"]|; s|\[, |[|" "$CONFIG" >"$tmp/config"
	else
		# A top-level key must precede every [table]: put it on the first line.
		{ printf 'imports = ["%s"]\n' "$IMPORT_GLOB"; cat "$CONFIG"; } >"$tmp/config"
	fi
	install_file "$tmp/config" "$CONFIG" 0644 >/dev/null
	config_changed=true
	step "config.toml: added the import of $IMPORT_GLOB to $CONFIG (backup: $backup); the change:"
	diff -u "$backup" "$CONFIG" | sed -n '3,$p' | sed "s|^|[$MKL_PREFIX]     |" || true
fi
# containerd replaces whole plugin sections from imports: when we changed
# something, say which settings of config.toml stop applying because of that.
$config_changed && shadowed=$(awk '
	/^[[:space:]]*\[/ { in_cri = ($0 ~ /\[plugins\."io\.containerd\.grpc\.v1\.cri"/) ; next }
	in_cri && /=/ { gsub(/^[[:space:]]+/, ""); printf "%s%s", sep, $0; sep = "; " }
' "$CONFIG")
if [[ -n ${shadowed:-} ]]; then
	warn "$CONFIG sets CRI options that the drop-in's [plugins.\"io.containerd.grpc.v1.cri\"] section replaces (containerd merges imports per plugin section): $shadowed"
fi

# Step 3: the merged config really has our settings.
containerd --config "$CONFIG" config dump >"$tmp/dump" 2>"$tmp/dump.err" ||
	die "containerd rejects the config: $(cat "$tmp/dump.err")"
missing=()
for want in "sandbox_image = \"$REGISTRY/minikubelet/pause:3.10\"" "restrict_oom_score_adj = true" \
	'bin_dir = "/opt/cni/bin"' 'conf_dir = "/etc/cni/net.d"' "config_path = \"$ETC/certs.d\"" \
	"SystemdCgroup = $SYSTEMD_CGROUP" 'snapshotter = "overlayfs"'; do
	grep -qF "$want" "$tmp/dump" || missing+=("$want")
done
((${#missing[@]} == 0)) || die "merged config lacks: ${missing[*]} (another drop-in in $DROPIN_DIR overrides ours?)"
step "merged config: has the minikubelet settings (checked with containerd config dump)"
# The stamp's hash covers the config files themselves: what a restart reloads.
hash=$(cat "$CONFIG" "$DROPIN_DIR"/*.toml | sha256sum | cut -d' ' -f1)

# socket_pid prints the pid of the process listening on $SOCKET, if any.
socket_pid() {
	ss -xlpn 2>/dev/null | awk -v s="$SOCKET" '$5 == s { if (match($0, /pid=[0-9]+/)) print substr($0, RSTART + 4, RLENGTH - 4); exit }'
}

# start_time PID prints the process start time in seconds since the epoch
# (rounded down; /proc/stat's btime has one-second resolution).
start_time() {
	local stat ticks btime
	stat=$(<"/proc/$1/stat")
	ticks=$(awk '{ print $20 }' <<<"${stat##*) }")
	btime=$(awk '$1 == "btime" { print $2 }' /proc/stat)
	echo $((btime + ticks / $(getconf CLK_TCK)))
}

# loaded_current_config PID: true if that containerd runs with today's config:
# the stamp says this script saw it start with this exact merged config, or
# (when it was started elsewhere) it started well after the config files
# last changed.
loaded_current_config() {
	local pid=$1
	[[ $(cat "$STAMP" 2>/dev/null) == "$pid $hash" ]] && return 0
	local newest
	newest=$(stat -c %Y "$CONFIG" "$DROPIN_DIR"/*.toml | sort -n | tail -n1)
	if (($(start_time "$pid") > newest + 1)); then
		echo "$pid $hash" >"$STAMP"
		return 0
	fi
	return 1
}

# Step 4: run containerd with this config.
pid=$(socket_pid)
if [[ -n $pid ]]; then
	args=$(tr '\0' ' ' <"/proc/$pid/cmdline")
	if [[ $args =~ (-c|--config)[=\ ]([^ ]+) && ${BASH_REMATCH[2]} != "$CONFIG" ]]; then
		die "the containerd on $SOCKET (pid $pid) runs with config ${BASH_REMATCH[2]}, not $CONFIG; not touching it"
	fi
fi
systemd=false
[[ -d /run/systemd/system ]] && systemd=true
if [[ -n $pid ]] && loaded_current_config "$pid"; then
	action="already running with this config (pid $pid)"
elif $systemd; then
	if [[ -n $pid ]]; then
		systemctl restart containerd
		action="restarted with systemctl: it ran with an older config (pods keep running)"
	else
		systemctl enable --now containerd >/dev/null 2>&1 || systemctl start containerd
		action="started with systemctl"
	fi
else
	if [[ -n $pid ]]; then
		kill_wait "$pid" 20
		action="restarted (pid $pid ran with an older config; its pods keep running)"
	else
		action="started"
	fi
	# setsid detaches it from this shell so it outlives the script.
	setsid nohup containerd --config "$CONFIG" </dev/null >>"$LOG" 2>&1 &
	echo $! >"$PIDFILE"
	action+=" in the background: pid $!, log $LOG"
fi

# Step 5: wait for the API and the CRI plugin.
if ! wait_for 60 "containerd on $SOCKET" containerd_answers "$SOCKET"; then
	$systemd || tail -n 20 "$LOG" >&2
	die "containerd did not answer on $SOCKET"
fi
cri_plugin_ok "$SOCKET" || die "containerd runs but its CRI plugin failed to load; see ${LOG} ('ctr plugins ls')"
pid=$(socket_pid)
echo "$pid $hash" >"$STAMP"
step "containerd: $action; CRI ready on $SOCKET"
