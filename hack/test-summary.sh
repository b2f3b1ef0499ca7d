#!/usr/bin/env bash
# test-summary.sh: the end of make test (also when it failed): the skipped
# tests grouped by reason and the closing "N passed, N failed, N skipped"
# line, from the JSON logs hack/gotest.sh kept in $TESTLOG_DIR.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
root=$(repo_root)
TESTLOG_DIR=${TESTLOG_DIR:-$root/bin/testlogs}
shopt -s nullglob
logs=("$TESTLOG_DIR"/*.json)
(cd "$root" && go build -o bin/testsum ./hack/testsum)
printf '\n'
step "test summary of ${#logs[@]} go test run(s) in $TESTLOG_DIR"
"$root/bin/testsum" -summary "${logs[@]}"
