#!/usr/bin/env bash
# stop-registry-auth.sh ADDR: stop the registry hack/start-registry-auth.sh
# started on ADDR (its pid file says which process). Its DIR is left as is.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_root

[[ $# -eq 1 ]] || die "usage: $0 ADDR"
name=registry-auth-${1//[^A-Za-z0-9.]/_}
pidfile=$MKL_RUN/$name.pid
if pid=$(pidfile_alive "$pidfile"); then
	kill_wait "$pid" 10
	step "registry-auth: stopped the registry on $1 (pid $pid)"
else
	step "registry-auth: no registry of ours runs on $1"
fi
rm -f "$pidfile"
