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

fail=0
while IFS=$'\t' read -r pkg target; do
  echo "=== fuzz $pkg $target for $FUZZTIME"
  log=$(mktemp)
  if go test "$pkg" -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" -parallel "$FUZZ_PARALLEL" >"$log" 2>&1; then
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
