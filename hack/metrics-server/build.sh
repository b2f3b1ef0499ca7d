#!/usr/bin/env bash
# build.sh: build metrics-server (what `kubectl top` reads through the
# aggregated metrics.k8s.io API) from the Go module proxy at the version that
# hack/metrics-server/go.mod pins, into
# /var/lib/minikubelet/metrics-server-<version>/bin (METRICS_SERVER_BIN
# overrides). Prints that directory as the last line of stdout.
#
# Its own module, not hack/cluster's: metrics-server pins its own k8s.io
# libraries, and a change here must not invalidate the control plane's cache.
# Idempotent like hack/cluster/build.sh: a stamp (version, Go version, a hash
# of go.mod and go.sum) says what the directory holds; a build goes to a
# temporary directory, under a lock, under `nice -n 19`.
set -euo pipefail
# shellcheck source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

export PATH=$PATH:/usr/local/go/bin
command -v go >/dev/null || die "go missing; install Go 1.26+ into /usr/local/go (see README)"

MOD=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
VERSION=$(awk '$1 == "sigs.k8s.io/metrics-server" && $2 ~ /^v/ { print $2; exit }' "$MOD/go.mod")
[[ -n $VERSION ]] || die "sigs.k8s.io/metrics-server is not required by $MOD/go.mod"
BIN=${METRICS_SERVER_BIN:-$MKL_STATE/metrics-server-$VERSION/bin}
DEST=$(dirname "$BIN")
SUM=$(cat "$MOD/go.mod" "$MOD/go.sum" | sha256sum | cut -c1-16)
STAMP="metrics-server $VERSION $(go env GOVERSION) mod=$SUM"

built() { [[ -f $DEST/stamp && $(<"$DEST/stamp") == "$STAMP" && -x $BIN/metrics-server ]]; }

if built; then
	step "metrics-server $VERSION: already built ($BIN)"
	echo "$BIN"
	exit 0
fi
mkdir -p "$(dirname "$DEST")"
build_lock "$DEST.lock" "metrics-server" 30
if built; then
	step "metrics-server $VERSION: built meanwhile by another run ($BIN)"
	echo "$BIN"
	exit 0
fi

tmp=$(mktemp -d "$(dirname "$DEST")/.metrics-server-build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cd "$MOD"
start=$SECONDS
step "building metrics-server $VERSION with $(go env GOVERSION) under nice -n 19 (minutes on 2 cores; a line a minute meanwhile)"
CGO_ENABLED=0 nice -n 19 go build -trimpath -ldflags "-s -w" -o "$tmp/bin/metrics-server" sigs.k8s.io/metrics-server/cmd/metrics-server &
pid=$! rc=0
heartbeat "building metrics-server" "$pid" &
hb=$!
wait "$pid" || rc=$?
kill "$hb" 2>/dev/null || true
((rc == 0)) || die "building metrics-server failed; check that the Go module proxy is reachable (go env GOPROXY) and retry"
"$tmp/bin/metrics-server" --help >/dev/null 2>&1 || die "the built metrics-server does not run"
step "built metrics-server in $(duration $((SECONDS - start)))"
printf '%s\n' "$STAMP" >"$tmp/stamp"
chmod 0755 "$tmp"
old=
if [[ -e $DEST ]]; then
	old=$(mktemp -u "$(dirname "$DEST")/.metrics-server-old.XXXXXX")
	mv "$DEST" "$old"
fi
mv "$tmp" "$DEST"
trap - EXIT
[[ -z $old ]] || rm -rf "$old"
step "metrics-server $VERSION: installed into $BIN"
echo "$BIN"
