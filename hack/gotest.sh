#!/usr/bin/env bash
# gotest.sh NAME [--stream] GO_TEST_ARGS...: run `go test -json GO_TEST_ARGS`
# and print what a plain `go test` prints (hack/testsum), keeping the JSON
# in $TESTLOG_DIR/NAME.json for the skip summary at the end of make test
# (hack/testsum -summary). --stream prints every test's output as it comes
# (for suites that report progress, like go test -v; -v among the
# arguments does the same). Exits non-zero when
# go test or any test failed.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
root=$(repo_root)
name=$1
shift
stream=()
if [[ ${1:-} == --stream ]]; then
	stream=(-stream)
	shift
fi
# -v among the arguments (E2E_FLAGS='-run X -v') asks for every test's
# output, as go test -v prints it.
for a in "$@"; do
	[[ $a != -v && $a != -test.v && $a != -v=true ]] || stream=(-stream)
done
export TESTLOG_DIR=${TESTLOG_DIR:-$root/bin/testlogs}
mkdir -p "$TESTLOG_DIR"
testsum=$root/bin/testsum
# Built once per change of its source (go build's cache makes it quick).
(cd "$root" && go build -o "$testsum" ./hack/testsum)
set +e
go test -json "$@" 2>&1 | "$testsum" "${stream[@]}" -log "$TESTLOG_DIR/$name.json"
rc=("${PIPESTATUS[@]}")
set -e
((rc[0] == 0 && rc[1] == 0))
