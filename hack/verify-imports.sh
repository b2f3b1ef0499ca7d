#!/usr/bin/env bash
# Enforces the import direction of STYLE.md: cmd → agent → {cri, cni,
# cgroups, probes}; the leaves import neither agent nor each other, and only
# agent and probes may import k8s.io/api.
set -euo pipefail
cd "$(dirname "$0")/.."
mod=$(go list -m)
fail=0
check() { # package, forbidden import regexp, reason[, allowed exceptions regexp]
  local pkg=$1 re=$2 why=$3 allow=${4:-^$} bad
  [ -d "${pkg#"$mod"/}" ] || return 0
  bad=$(go list -f '{{join .Imports "\n"}}' "$pkg/..." 2>/dev/null | grep -E "$re" | grep -vE "$allow" | sort -u || true)
  if [ -n "$bad" ]; then
    echo "import rule broken: $pkg must not import ($why):"; echo "$bad" | sed 's/^/  /'; fail=1
  fi
}
check "$mod/cri" "^$mod/(agent|cni|cgroups|probes)(/|$)|^k8s.io/api/" "a leaf: no agent, no other leaf, no k8s.io/api"
check "$mod/cni" "^$mod/(agent|cri|cgroups|probes)(/|$)|^k8s.io/api/" "a leaf: no agent, no other leaf, no k8s.io/api"
check "$mod/cgroups" "^$mod/(agent|cri|cni|probes)(/|$)|^k8s.io/api/" "a leaf: no agent, no other leaf, no k8s.io/api"
check "$mod/probes" "^$mod/(agent|cri|cni|cgroups)(/|$)" "a leaf: no agent, no other leaf"
check "$mod/agent" "^$mod/(cmd|test)(/|$)" "agent is below cmd and test"
check "$mod/agent/safepath" "^$mod/" "a leaf of agent: imports nothing of this repository"
check "$mod/agent/kubeletserver" "^$mod/(cmd|test|agent|cri|cni|cgroups|probes)(/|$)" "the kubelet server declares what it needs of the daemon and the runtime as interfaces; cmd wires them" "^$mod/agent/streaming$"
# The CRI streaming proxy, shared by the kubelet server and the local API.
check "$mod/agent/streaming" "^$mod/" "a leaf of agent: imports nothing of this repository"
for p in $(go list ./... | grep -v "^$mod/test/"); do
  if go list -f '{{join .Imports "\n"}}' "$p" | grep -qE "^$mod/test(/|$)"; then
    echo "import rule broken: $p imports test/ (only test/ may)"; fail=1
  fi
done
# The garbage collector and the eviction rules sit below agent, which
# wires them.
check "$mod/agent/gc" "^$mod/agent(/|$)|^$mod/(cmd|test|cni|cgroups|probes)(/|$)|^k8s.io/api/" "below agent: the agent wires it; CRI only, no k8s.io/api"
check "$mod/agent/eviction" "^$mod/" "pure: thresholds and ranking only, nothing of the repo"
[ "$fail" = 0 ] && echo "imports OK"
exit "$fail"
