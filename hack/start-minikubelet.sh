#!/usr/bin/env bash
# start-minikubelet.sh [FLAGS...]: start the minikubelet daemon in the
# background on a machine without systemd (like the development VMs), unless
# it already answers on its socket. Logs go to /var/log/minikubelet.log, the
# pid to /run/minikubelet/minikubelet.pid. Extra flags go to `serve`; a
# config file at /etc/minikubelet/config.yaml is used when present.
# If the daemon exits while starting (a flag it refuses, a port already in
# use), the script says so at once with the daemon's own error.
# Stop it with hack/demo-down.sh, or: kill "$(cat /run/minikubelet/minikubelet.pid)"
# (pods keep running and are adopted at the next start).
#
# Env (defaults in brackets), for a second daemon or a test beside the real one:
#   MINIKUBELET_BIN      the binary [bin/minikubelet of this checkout]
#   MINIKUBELET_SOCKET   its --socket [/run/minikubelet/minikubelet.sock]
#   MINIKUBELET_PIDFILE  [/run/minikubelet/minikubelet.pid]
#   MINIKUBELET_LOG      [/var/log/minikubelet.log]
#   MINIKUBELET_CONFIG   the --config file used when it exists [/etc/minikubelet/config.yaml]
#   MINIKUBELET_START_TIMEOUT  seconds to wait for /healthz [60]
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_root

BIN=${MINIKUBELET_BIN:-$(repo_root)/bin/minikubelet}
SOCKET=${MINIKUBELET_SOCKET:-/run/minikubelet/minikubelet.sock}
PIDFILE=${MINIKUBELET_PIDFILE:-/run/minikubelet/minikubelet.pid}
LOG=${MINIKUBELET_LOG:-/var/log/minikubelet.log}
CONFIG=${MINIKUBELET_CONFIG:-/etc/minikubelet/config.yaml}
TIMEOUT=${MINIKUBELET_START_TIMEOUT:-60}
[[ -x $BIN ]] || die "$BIN missing: run 'make build' first"

healthy() { curl -sf --unix-socket "$SOCKET" http://localhost/healthz -o /dev/null; }

if pid=$(pidfile_alive "$PIDFILE") && healthy; then
	step "minikubelet: already running (pid $pid)"
	exit 0
fi
mkdir -p "$(dirname "$SOCKET")" "$(dirname "$PIDFILE")" "$(dirname "$LOG")"
args=(serve --socket "$SOCKET")
[[ -f $CONFIG ]] && args+=(--config "$CONFIG")
# serve's default --manifest-dir; the systemd unit creates it the same way.
[[ " $* " == *" --manifest-dir"* ]] || mkdir -p /etc/minikubelet/manifests
# This start's lines begin at the log's current end.
offset=$(($(stat -c %s "$LOG" 2>/dev/null || echo 0) + 1))
setsid "$BIN" "${args[@]}" "$@" </dev/null >>"$LOG" 2>&1 &
pid=$!
echo "$pid" >"$PIDFILE"

# Up when /healthz answers; failed as soon as the process is gone.
deadline=$((SECONDS + TIMEOUT))
until healthy; do
	if ! pid_alive "$pid"; then
		rc=0
		wait "$pid" || rc=$?
		rm -f "$PIDFILE"
		out=$(tail -c +"$offset" "$LOG" 2>/dev/null || true)
		printf '%s\n' "$out" | tail -n 30 | sed 's/^/    /' >&2
		# main prints the error that ended it as "minikubelet: ...".
		err=$(printf '%s\n' "$out" | grep '^minikubelet: ' | tail -n 1 || true)
		[[ -n $err ]] || err=$(printf '%s\n' "$out" | grep -v '^[[:space:]]*$' | tail -n 1 || true)
		die "minikubelet exited while starting (exit $rc): ${err:-no output; see $LOG} (log: $LOG)"
	fi
	if ((SECONDS >= deadline)); then
		tail -c +"$offset" "$LOG" | tail -n 30 >&2 || true
		die "minikubelet (pid $pid) did not answer on $SOCKET within ${TIMEOUT}s; it is still running (log: $LOG; stop it: kill $pid)"
	fi
	sleep 0.1
done
step "minikubelet: started (pid $pid, socket $SOCKET, log $LOG)"
