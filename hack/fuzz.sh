#!/usr/bin/env bash
# Runs every Go fuzz target of the module for a bounded time each
# (FUZZTIME, default 20s; FUZZ_PARALLEL workers, default 2) and fails on the
# first crash, printing the reproducer. The seed corpus (f.Add and
# testdata/fuzz/<Target>) always runs first, as with plain `go test`.
# A crasher found here belongs in testdata/fuzz/<Target> as a regression
# seed once the bug is fixed (go test writes it there already).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/go/bin
FUZZTIME=${FUZZTIME:-20s}
FUZZ_PARALLEL=${FUZZ_PARALLEL:-2}

# package<TAB>target for every `func FuzzXxx(f *testing.F)` in a _test.go file.
targets=$(grep -rlE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]+\(f \*testing\.F\)' . |
  while read -r file; do
    pkg=./$(dirname "${file#./}")
    grep -oE '^func Fuzz[A-Za-z0-9_]+' "$file" | sed "s|^func |$pkg\t|"
  done | sort -u)
if [ -z "$targets" ]; then
  echo "fuzz.sh: no fuzz targets found" >&2
  exit 1
fi
# Targets that must exist (issue #16: what pods and the runtime control):
# probe HTTP answers, CRI labels/annotations read at adoption, the stored
# pod files, API requests (routing, query parameters), CRI log files.
# Discovery above runs them; this fails when one is renamed or dropped.
required="FuzzHTTPProbeResponse FuzzAdoptionAnnotations FuzzPodStoreLoad FuzzServerRequest FuzzReadLog FuzzParseCRILogLine"
for r in $required; do
  if ! grep -qP "\t$r\$" <<<"$targets"; then
    echo "fuzz.sh: required fuzz target $r not found" >&2
    exit 1
  fi
done

# bare_deadline: the run failed with nothing but "context deadline exceeded"
# and wrote no reproducer. That is a race in Go 1.26's fuzzing coordinator at
# the end of a -fuzztime window (go.dev/issue/75804, fixed in Go 1.27): the
# coordinator's parent context expires before its child is cancelled and the
# expected stop is reported as a failure. It says nothing about the target,
# so the target is fuzzed again (at most twice); a crash, a reproducer or any
# other error still fails at once.
bare_deadline() {
  ! grep -qE 'testdata/fuzz/|panic:|^\s+\S+_test\.go:[0-9]+:' "$1" &&
    grep -qE '^--- FAIL: Fuzz' "$1" &&
    [ "$(grep -A1 -E '^--- FAIL: Fuzz' "$1" | tail -1 | sed 's/^[[:space:]]*//')" = "context deadline exceeded" ]
}

fail=0
while IFS=$'\t' read -r pkg target; do
  echo "=== fuzz $pkg $target for $FUZZTIME"
  log=$(mktemp)
  ok=0
  for attempt in 1 2 3; do
    if go test "$pkg" -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" -parallel "$FUZZ_PARALLEL" >"$log" 2>&1; then
      ok=1
      break
    fi
    if [ "$attempt" -lt 3 ] && bare_deadline "$log"; then
      grep -E '^fuzz: elapsed: .*execs' "$log" | tail -1
      echo "--- $target: Go's fuzzing coordinator reported a bare 'context deadline exceeded' with no reproducer (go.dev/issue/75804); fuzzing it again ($((attempt + 1))/3)"
      continue
    fi
    break
  done
  if [ "$ok" = 1 ]; then
    grep -E '^(fuzz: elapsed: .*(execs|PASS)|ok )' "$log" | tail -2
  else
    cat "$log"
    repro=$(grep -oE 'testdata/fuzz/[^ ]+' "$log" | head -1 || true)
    if [ -n "$repro" ]; then
      echo "--- FAIL: $target crashed; reproducer: ${pkg#./}/$repro"
      echo "    re-run: go test $pkg -run '^$target/$(basename "$repro")\$'"
    else
      echo "--- FAIL: $target (no reproducer written: see the output above)"
    fi
    fail=1
  fi
  rm -f "$log"
done <<<"$targets"
exit "$fail"
