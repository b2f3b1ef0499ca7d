#!/usr/bin/env bash
# stop.sh DIR [kube-apiserver|etcd|all]: stop the control plane that
# hack/cluster/start.sh DIR started (default all: the apiserver first, then
# etcd). DIR itself (certificates, kubeconfigs, etcd data) is kept, so
# start.sh DIR brings the same cluster back; remove DIR to forget it.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

(($# >= 1 && $# <= 2)) || die "usage: $0 DIR [kube-apiserver|etcd|all]"
DIR=$(realpath -m "$1")
WHAT=${2:-all}
case $WHAT in
kube-apiserver) names=(kube-apiserver) ;;
etcd) names=(etcd) ;;
all) names=(kube-apiserver etcd) ;;
*) die "unknown component '$WHAT': use kube-apiserver, etcd or all" ;;
esac

for n in "${names[@]}"; do
	if pid=$(pidfile_alive "$DIR/$n.pid"); then
		# Both shut down cleanly on SIGTERM within a few seconds.
		kill_wait "$pid" 30
		step "$n: stopped (pid $pid)"
	else
		step "$n: not running"
	fi
	rm -f "$DIR/$n.pid"
done
