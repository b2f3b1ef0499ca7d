#!/usr/bin/env bash
# start-registry.sh [ADDR]: serve a local image registry on ADDR
# (default 127.0.0.1:5000) with Debian's docker-registry, unless something
# already answers GET /v2/ there.
#
# Storage: /var/lib/minikubelet/registry (filesystem driver, delete enabled).
# Config and log: /var/lib/minikubelet/registry-ADDR.{yml,log};
# pid file: /run/minikubelet/registry-ADDR.pid.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_root

ADDR=${1:-127.0.0.1:5000}
REGISTRY_BIN=/usr/bin/docker-registry
name=registry-${ADDR//[^A-Za-z0-9.]/_}
conf=$MKL_STATE/$name.yml
log=$MKL_STATE/$name.log
pidfile=$MKL_RUN/$name.pid
url=http://$ADDR/v2/

if http_ok "$url"; then
	if pid=$(pidfile_alive "$pidfile"); then
		step "registry: already serving on $ADDR (pid $pid)"
	else
		step "registry: already serving on $ADDR (not started by this script; using it as is)"
	fi
	exit 0
fi

[[ -x $REGISTRY_BIN ]] || die "$REGISTRY_BIN missing; run hack/install-deps.sh first"
mkdir -p "$MKL_STATE/registry" "$MKL_RUN"

cat >"$conf.tmp" <<EOF
# Written by hack/start-registry.sh; rewritten on every start.
version: 0.1
log:
  level: info
storage:
  filesystem:
    rootdirectory: $MKL_STATE/registry
  delete:
    enabled: true
  cache:
    blobdescriptor: inmemory
http:
  addr: $ADDR
EOF
mv -f "$conf.tmp" "$conf"

# A pid file whose process is alive but not answering yet means a previous
# run is still starting: wait for it instead of starting a second one.
if pid=$(pidfile_alive "$pidfile"); then
	what="waited for starting registry (pid $pid)"
else
	# setsid detaches it from this shell's session so it outlives the script.
	# It must not inherit any descriptor above 2 either: under
	# `flock /work/e2e.lock make ...` one of them holds that lock, and a
	# registry started there would hold it until it exits, blocking every
	# later e2e run on the machine.
	(
		for fd in $(ls "/proc/$BASHPID/fd"); do
			((fd <= 2)) || eval "exec $fd>&-"
		done
		exec setsid "$REGISTRY_BIN" serve "$conf" </dev/null >>"$log" 2>&1
	) &
	pid=$!
	echo "$pid" >"$pidfile"
	what="started docker-registry (pid $pid, log $log)"
fi

if ! wait_for 30 "registry on $url" http_ok "$url"; then
	tail -n 20 "$log" >&2 || true
	die "registry did not answer on $url (log: $log)"
fi
step "registry: $what; serving on $ADDR"
