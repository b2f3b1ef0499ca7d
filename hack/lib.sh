# shellcheck shell=bash
# Helpers shared by the hack/*.sh scripts. Source it; do not run it.
#
# Every setup script prints exactly one line per step, prefixed by the
# script's name, saying either what it did or that the step was already done.
# That keeps a second run readable: a column of "already ..." lines.

# MKL_PREFIX is the tag in front of every line this script prints.
MKL_PREFIX="${MKL_PREFIX:-$(basename "${0%.sh}")}"

# MKL_STATE is where long-lived minikubelet machine state lives (registry
# storage, config, logs); MKL_RUN holds pid files that a reboot clears.
# shellcheck disable=SC2034 # used by the scripts that source this file
MKL_STATE=/var/lib/minikubelet
# shellcheck disable=SC2034
MKL_RUN=/run/minikubelet

# step prints one progress line.
step() { printf '[%s] %s\n' "$MKL_PREFIX" "$*"; }

# duration SECONDS prints SECONDS as "42s" or "3m07s".
duration() {
	local s=$1
	if ((s < 60)); then
		printf '%ds\n' "$s"
	else
		printf '%dm%02ds\n' $((s / 60)) $((s % 60))
	fi
}

# timed WHAT CMD...: run CMD between a line saying what it does and one
# saying how long it took (or that it failed, and after how long), so a
# cold machine's long steps are never silent; returns CMD's status.
timed() {
	local what=$1 start=$SECONDS rc=0
	shift
	step "$what ..."
	"$@" || rc=$?
	if ((rc == 0)); then
		step "$what: done in $(duration $((SECONDS - start)))"
	else
		step "$what: FAILED (exit $rc) after $(duration $((SECONDS - start)))"
	fi
	return "$rc"
}

# heartbeat WHAT PID: print "still WHAT (N)" every HEARTBEAT seconds (default
# 60) while PID runs: a long quiet command (a go build of kube-apiserver)
# then shows it is alive. Run it in the background and kill it once PID
# ended (its sleep holds no descriptor of the caller's, so a caller reading
# the output to its end does not wait for it).
heartbeat() {
	local what=$1 pid=$2 start=$SECONDS every=${HEARTBEAT:-60}
	while sleep "$every" </dev/null >/dev/null 2>&1 && pid_alive "$pid"; do
		step "still $what ($(duration $((SECONDS - start))))"
	done
}

# warn prints a warning line to stderr.
warn() { printf '[%s] WARNING: %s\n' "$MKL_PREFIX" "$*" >&2; }

# die prints an error line and exits non-zero.
die() {
	printf '[%s] ERROR: %s\n' "$MKL_PREFIX" "$*" >&2
	exit 1
}

# build_lock FILE WHAT MINUTES: hold FILE's lock on fd 9 for the rest of
# the script (the build scripts' lock-and-build-once): when another run
# holds it, say so and wait up to MINUTES for it. The caller checks its
# stamp again afterwards: the other run may have built it meanwhile.
build_lock() {
	exec 9>"$1"
	if ! flock -n 9; then
		step "$2: another build is running; waiting for it (up to $3 min)"
		flock -w $(($3 * 60)) 9 || die "timed out waiting for the lock $1"
	fi
}

# require_root exits unless the script runs as root.
require_root() {
	[[ $(id -u) -eq 0 ]] || die "must run as root (try: sudo $0)"
}

# repo_root prints the repository root (the parent of hack/).
repo_root() { cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd; }

# wait_for TIMEOUT_SECONDS DESCRIPTION CMD...: run CMD every 0.1 s until it
# succeeds. Returns non-zero after TIMEOUT_SECONDS without success.
wait_for() {
	local timeout=$1 what=$2
	shift 2
	local deadline=$((SECONDS + timeout))
	until "$@" >/dev/null 2>&1; do
		if ((SECONDS >= deadline)); then
			warn "timed out after ${timeout}s waiting for $what"
			return 1
		fi
		sleep 0.1
	done
}

# pid_alive PID: true if PID names a live (non-zombie) process.
pid_alive() {
	local pid=$1
	[[ -n $pid && -r /proc/$pid/stat ]] || return 1
	# Field 3 of /proc/PID/stat is the state; Z means exited, not yet reaped.
	local rest
	rest=$(<"/proc/$pid/stat")
	rest=${rest##*) }
	[[ ${rest%% *} != Z ]]
}

# pidfile_alive FILE: prints the pid stored in FILE if that process is alive.
pidfile_alive() {
	local file=$1 pid
	[[ -r $file ]] || return 1
	pid=$(<"$file")
	pid_alive "$pid" || return 1
	printf '%s\n' "$pid"
}

# proc_gone PID: true once PID has exited (a zombie counts as gone).
proc_gone() { ! pid_alive "$1"; }

# kill_wait PID TIMEOUT: send SIGTERM, wait up to TIMEOUT seconds for the
# process to go away, then SIGKILL it. Returns once it is gone.
kill_wait() {
	local pid=$1 timeout=$2
	pid_alive "$pid" || return 0
	kill -TERM "$pid" 2>/dev/null || true
	if ! wait_for "$timeout" "pid $pid to exit after SIGTERM" proc_gone "$pid"; then
		kill -KILL "$pid" 2>/dev/null || true
		wait_for 5 "pid $pid to exit after SIGKILL" proc_gone "$pid" || true
	fi
}

# http_ok URL: true if URL answers with HTTP 200 within 2 s.
http_ok() {
	local code
	code=$(curl -s -o /dev/null -m 2 -w '%{http_code}' "$1") || return 1
	[[ $code == 200 ]]
}

# containerd2_version prints the pinned containerd 2.x release (without the
# leading v), from hack/containerd/VERSION2: the one place to change it.
containerd2_version() {
	local v
	v=$(<"$(dirname "${BASH_SOURCE[0]}")/containerd/VERSION2")
	v=${v//[[:space:]]/}
	printf '%s\n' "${v#v}"
}

# containerd2_bin prints the directory hack/install-containerd2.sh builds the
# pinned containerd 2.x into (containerd, containerd-shim-runc-v2, ctr). It
# lies outside the repository and beside nothing of Debian's containerd.
containerd2_bin() { printf '%s\n' "$MKL_STATE/containerd-$(containerd2_version)/bin"; }

# runc2_version prints the pinned runc of the containerd 2.x flavor (without
# the leading v), from hack/containerd/RUNC2.
runc2_version() {
	local v
	v=$(<"$(dirname "${BASH_SOURCE[0]}")/containerd/RUNC2")
	v=${v//[[:space:]]/}
	printf '%s\n' "${v#v}"
}

# runc2_bin prints the directory hack/install-runc2.sh builds that runc
# into, beside nothing of Debian's runc (1.1, containerd 1.6's).
runc2_bin() { printf '%s\n' "$MKL_STATE/runc-$(runc2_version)/bin"; }

# containerd_flavor VALUE: the containerd a CONTAINERD value selects, as its
# canonical name: "1.6" for the system's (Debian's) containerd (values "",
# 1, 1.6, system), or the pinned 2.x's major.minor (values 2, 2.x, that
# major.minor or the full pinned version). Anything else is an error that
# names the accepted values.
containerd_flavor() {
	local v2 minor
	v2=$(containerd2_version)
	minor=${v2%.*}
	case ${1:-} in
	"" | 1 | 1.6 | system) echo 1.6 ;;
	2 | 2.x | "$minor" | "$v2" | "v$v2") echo "$minor" ;;
	*) die "CONTAINERD=$1: use 1.6 (the system containerd) or 2 / $minor (containerd $v2, pinned in hack/containerd/VERSION2)" ;;
	esac
}

# containerd_answers SOCKET: true if a containerd serves its API on SOCKET.
# CTR (default ctr from PATH) is the ctr to ask with.
containerd_answers() {
	[[ -S $1 ]] && timeout 5 "${CTR:-ctr}" --address "$1" version >/dev/null 2>&1
}

# cri_plugin_ok SOCKET: true if that containerd loaded its CRI plugin (the
# CRI gRPC service, io.containerd.grpc.v1 cri, in 1.x and 2.x alike).
cri_plugin_ok() {
	timeout 5 "${CTR:-ctr}" --address "$1" plugins ls 2>/dev/null |
		awk '$1 == "io.containerd.grpc.v1" && $2 == "cri" { found = ($4 == "ok") } END { exit !found }'
}

# render TEMPLATE KEY=VALUE...: print TEMPLATE with every @KEY@ replaced.
render() {
	local tmpl=$1 expr=() kv
	shift
	for kv in "$@"; do
		expr+=(-e "s|@${kv%%=*}@|${kv#*=}|g")
	done
	sed "${expr[@]}" "$tmpl"
}

# mirror_upstreams prints "UPSTREAM SERVER" for each registry whose pulls
# try the local registry first (hack/containerd/mirror.toml), where
# hack/images pushes the stand-ins of the documentation examples' images.
mirror_upstreams() {
	printf '%s\n' "docker.io https://registry-1.docker.io" "registry.k8s.io https://registry.k8s.io" "gcr.io https://gcr.io"
}

# install_file SRC DST MODE: copy SRC to DST atomically unless DST already has
# the same content. Prints "changed" or "unchanged".
install_file() {
	local src=$1 dst=$2 mode=$3
	if [[ -f $dst ]] && cmp -s "$src" "$dst"; then
		echo unchanged
		return
	fi
	mkdir -p "$(dirname "$dst")"
	local tmp
	tmp=$(mktemp "$dst.XXXXXX")
	cp "$src" "$tmp"
	chmod "$mode" "$tmp"
	mv -f "$tmp" "$dst"
	echo changed
}

# vm_host_tools installs (apt-get, once) what the cgroup v2 guest needs on
# the host: qemu to boot it, debootstrap and e2fsprogs to build its image.
# Both hack/vm/image.sh (run early by prebuild.sh, in the background) and
# hack/vm/run.sh call it, so that a fresh machine's background build does
# not fail for want of debootstrap and leave the image to the foreground.
# The dpkg lock is waited for: install-deps.sh may hold it.
vm_host_tools() {
	local tool missing=()
	for tool in qemu-system-x86_64:qemu-system-x86 qemu-img:qemu-utils debootstrap:debootstrap mkfs.ext4:e2fsprogs; do
		command -v "${tool%%:*}" >/dev/null || missing+=("${tool#*:}")
	done
	((${#missing[@]})) || return 0
	step "installing ${missing[*]} (apt-get)"
	apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null || warn "apt-get update failed; trying the install with the lists there are"
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q "${missing[@]}" >/dev/null ||
		die "apt-get install ${missing[*]} failed; install them by hand: apt-get install -y ${missing[*]}"
}
