#!/usr/bin/env bash
# start-minikubelet.sh [FLAGS...]: start the minikubelet daemon in the
# background on a machine without systemd (like the development VMs), unless
# it already answers on its socket. Logs go to /var/log/minikubelet.log, the
# pid to /run/minikubelet/minikubelet.pid. Extra flags go to `serve`; a
# config file at /etc/minikubelet/config.yaml is used when present.
# Stop it with: kill "$(cat /run/minikubelet/minikubelet.pid)" (pods keep
# running and are adopted at the next start).
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_root

BIN=${MINIKUBELET_BIN:-$(repo_root)/bin/minikubelet}
SOCKET=${MINIKUBELET_SOCKET:-/run/minikubelet/minikubelet.sock}
PIDFILE=/run/minikubelet/minikubelet.pid
LOG=/var/log/minikubelet.log
[[ -x $BIN ]] || die "$BIN missing: run 'make build' first"

if pid=$(pidfile_alive "$PIDFILE") && curl -sf --unix-socket "$SOCKET" http://localhost/healthz >/dev/null; then
	step "minikubelet: already running (pid $pid)"
	exit 0
fi
mkdir -p /run/minikubelet /etc/minikubelet/manifests
args=(serve --socket "$SOCKET")
[[ -f /etc/minikubelet/config.yaml ]] && args+=(--config /etc/minikubelet/config.yaml)
setsid "$BIN" "${args[@]}" "$@" </dev/null >>"$LOG" 2>&1 &
echo $! >"$PIDFILE"
if ! wait_for 60 "minikubelet on $SOCKET" curl -sf --unix-socket "$SOCKET" http://localhost/healthz -o /dev/null; then
	tail -n 30 "$LOG" >&2 || true
	die "minikubelet did not come up (log: $LOG)"
fi
step "minikubelet: started (pid $(cat "$PIDFILE"), socket $SOCKET, log $LOG)"
