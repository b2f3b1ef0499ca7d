#!/usr/bin/env bash
# start-registry-auth.sh ADDR USER PASS [DIR]: serve a second local image
# registry on ADDR (e.g. 127.0.0.1:5001) with Debian's docker-registry and
# htpasswd basic auth: only USER with PASS may pull or push. The tests use it
# to check pulls with and without credentials (imagePullSecrets).
#
# DIR (default /var/lib/minikubelet/registry-auth-ADDR) holds the config, the
# htpasswd file, the storage and the log. The pid file is
# /run/minikubelet/registry-auth-ADDR.pid; a registry this script started
# before on ADDR is stopped first, so the credentials are always the given
# ones. Stop it with hack/stop-registry-auth.sh ADDR. The registry starts
# empty: push images to it with credentials (the e2e test does).
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_root

[[ $# -ge 3 && $# -le 4 ]] || die "usage: $0 ADDR USER PASS [DIR]"
ADDR=$1 USER_NAME=$2 PASS=$3
REGISTRY_BIN=/usr/bin/docker-registry
name=registry-auth-${ADDR//[^A-Za-z0-9.]/_}
DIR=${4:-$MKL_STATE/$name}
pidfile=$MKL_RUN/$name.pid
url=http://$ADDR/v2/

[[ -x $REGISTRY_BIN ]] || die "$REGISTRY_BIN missing; run hack/install-deps.sh first"
command -v go >/dev/null || die "go missing (the htpasswd line is made by hack/htpasswd)"
mkdir -p "$DIR/storage" "$MKL_RUN"

if pid=$(pidfile_alive "$pidfile"); then
	kill_wait "$pid" 10
	step "registry-auth: stopped the previous registry on $ADDR (pid $pid)"
fi
# Anything else answering on ADDR is not ours: refuse rather than test
# against a registry with unknown credentials.
if curl -s -o /dev/null --max-time 2 "$url"; then
	die "something already serves $url (not started by this script)"
fi

# bcrypt is the only htpasswd hash docker-registry accepts.
(cd "$(repo_root)" && go run ./hack/htpasswd "$USER_NAME" "$PASS") >"$DIR/htpasswd.tmp"
mv -f "$DIR/htpasswd.tmp" "$DIR/htpasswd"

cat >"$DIR/config.yml" <<CONF
# Written by hack/start-registry-auth.sh; rewritten on every start.
version: 0.1
log:
  level: info
storage:
  filesystem:
    rootdirectory: $DIR/storage
  delete:
    enabled: true
http:
  addr: $ADDR
auth:
  htpasswd:
    realm: minikubelet-registry-auth
    path: $DIR/htpasswd
CONF

setsid "$REGISTRY_BIN" serve "$DIR/config.yml" </dev/null >>"$DIR/registry.log" 2>&1 &
pid=$!
echo "$pid" >"$pidfile"

# /v2/ answers 401 without credentials once the registry is up.
answers_401() { [[ $(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$url") == 401 ]]; }
if ! wait_for 30 "registry on $url" answers_401; then
	tail -n 20 "$DIR/registry.log" >&2 || true
	die "registry did not answer on $url (log: $DIR/registry.log)"
fi
step "registry-auth: started docker-registry (pid $pid, log $DIR/registry.log); serving on $ADDR for user $USER_NAME"
