#!/usr/bin/env bash
# Enforces the import direction of STYLE.md: cmd → agent → {cri, cni,
# cgroups, probes}; the leaves import neither agent nor each other, and only
# agent and probes may import k8s.io/api. Inside agent/ (issue #18):
# manifest → nothing of the repository but its own subpackages; source →
# volume → manifest, both below the engine (agent); nothing under agent/
# imports cmd or test. podspec (the pod → CRI config translation) is pure:
# agent/manifest only, no CRI client, no os.
# For the packages of agent/ split out in #18 (manifest, volume, source) test
# files count too: their tests may not import what they may not.
#
# Usage: hack/verify-imports.sh [MODULE_ROOT]   (default: this repository;
# hack/verifyimports feeds it throw-away modules with a forbidden import).
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"
mod=$(go list -m)
fail=0
# One go list for the whole module (a go list per rule and per package
# took 27 s here, and hack/verifyimports runs this script a hundred times):
# a line per package, "path<TAB>imports<TAB>test imports", the imports
# space-separated. -e: an import that makes a cycle still counts (go list
# fails on it otherwise).
graph=$(go list -e -f '{{.ImportPath}}{{"\t"}}{{join .Imports " "}}{{"\t"}}{{join .TestImports " "}} {{join .XTestImports " "}}' ./...)
# imports of the packages matching a pattern (pkg/... or, with only=1, pkg
# alone); with tests=1, their tests' imports too.
imports() {
  awk -F'\t' -v pat="$1" -v tests="${tests:-0}" '
    function want(p) { return pat ~ /\/\.\.\.$/ ? (p == substr(pat, 1, length(pat) - 4) || index(p, substr(pat, 1, length(pat) - 3)) == 1) : p == pat }
    want($1) { n = split($2 (tests == 1 ? " " $3 : ""), a, " "); for (i = 1; i <= n; i++) print a[i] }
  ' <<<"$graph" | sort -u
}
check() { # package, forbidden import regexp, reason[, allowed import regexp]
  local pkg=$1 re=$2 why=$3 allow=${4:-} bad
  [ -d "${pkg#"$mod"/}" ] || return 0
  # only=1: the package alone, not the packages under it.
  local pat="$pkg/..."
  [ "${only:-0}" = 1 ] && pat=$pkg
  bad=$(imports "$pat" | grep -E "$re" || true)
  if [ -n "$allow" ] && [ -n "$bad" ]; then
    bad=$(grep -vE "$allow" <<<"$bad" || true)
  fi
  if [ -n "$bad" ]; then
    echo "import rule broken: $pkg must not import ($why):"; echo "$bad" | sed 's/^/  /'; fail=1
  fi
}
check "$mod/cri" "^$mod/(agent|cni|cgroups|probes)(/|$)|^k8s.io/api/" "a leaf: no agent, no other leaf, no k8s.io/api"
check "$mod/cni" "^$mod/(agent|cri|cgroups|probes)(/|$)|^k8s.io/api/" "a leaf: no agent, no other leaf, no k8s.io/api"
check "$mod/cgroups" "^$mod/(agent|cri|cni|probes)(/|$)|^k8s.io/api/" "a leaf: no agent, no other leaf, no k8s.io/api"
check "$mod/probes" "^$mod/(agent|cri|cni|cgroups)(/|$)" "a leaf: no agent, no other leaf"
check "$mod/agent" "^$mod/(cmd|test)(/|$)" "agent and everything under it is below cmd and test"
check "$mod/agent/safepath" "^$mod/" "a leaf of agent: imports nothing of this repository"
# The one writer of the agent's own files (keys, certificates, kubeconfigs,
# checkpoints): a leaf, which the packages below the engine may use.
check "$mod/agent/atomicfile" "^$mod/" "a leaf of agent: imports nothing of this repository"
# The user namespace ID ranges (spec.hostUsers: false) sit below the engine,
# which asks them: of the repository only agent/safepath. Its tests too.
tests=1 check "$mod/agent/userns" "^$mod/" "user namespace ranges: below the engine, agent/safepath only" "^$mod/agent/(safepath|userns)(/|$)"
check "$mod/agent/kubeletserver" "^$mod/(cmd|test|agent|cri|cni|cgroups|probes)(/|$)" "the kubelet server declares what it needs of the daemon and the runtime as interfaces; cmd wires them" "^$mod/agent/(streaming|atomicfile)$"
# The CRI streaming proxy, shared by the kubelet server and the local API.
check "$mod/agent/streaming" "^$mod/" "a leaf of agent: imports nothing of this repository"
while IFS=$'\t' read -r p imps _; do
  [[ $p == "$mod/test/"* ]] && continue
  if tr ' ' '\n' <<<"$imps" | grep -qE "^$mod/test(/|$)"; then
    echo "import rule broken: $p imports test/ (only test/ may)"; fail=1
  fi
done <<<"$graph"
# The garbage collector sits below agent, which wires it.
check "$mod/agent/gc" "^$mod/agent(/|$)|^$mod/(cmd|test|cni|cgroups|probes)(/|$)|^k8s.io/api/" "below agent: the agent wires it; CRI only, no k8s.io/api"
# The eviction manager and its rules sit below the engine (issue #30): the
# engine builds the manager, runs its loop and implements its narrow
# interfaces (the pods, the stats provider, the reclaimer); the manager
# never imports the engine, a runtime leaf or the CRI client, the daemon,
# the node package, or the host's stats provider (its subpackage
# hoststats, which it sees as its StatsProvider). Of the repository it
# uses agent/podspec (QoS) and agent/source (which pods are static:
# critical). Its tests too.
tests=1 only=1 check "$mod/agent/eviction" "^$mod/agent$|^$mod/agent/(daemon|node|api|cluster|kubeletserver|gc|volume|stats|eviction/hoststats)(/|$)|^$mod/(cmd|test|cri|cni|cgroups|probes)(/|$)|^google.golang.org/grpc(/|$)" "below the engine: the engine implements its interfaces; no engine, no CRI client, no daemon, no host stats"
# The eviction manager's stats provider on the real host (issue #30):
# below the engine, which builds it and implements its Engine interface;
# it reads cgroups, /proc and the pods' files (agent/volume's walks) and
# asks the runtime through three CRI calls it declares as interfaces (CRI
# message types only: no CRI client, no grpc). Never the engine, the
# daemon, the API, the cluster client or the kubelet server. Its tests too.
tests=1 check "$mod/agent/eviction/hoststats" "^$mod/agent$|^$mod/agent/(daemon|api|cluster|kubeletserver|certificate|gc|source|stats|streaming)(/|$)|^$mod/(cmd|test|cri|cni|probes)(/|$)|^google.golang.org/grpc(/|$)" "the host's stats for eviction: below the engine, which implements its Engine; no engine, no CRI client, no daemon"
# The manifest package is pure and at the bottom of agent/: decode,
# defaults, validation, the support table. Everything consumes it.
tests=1 check "$mod/agent/manifest" "^$mod/" "pure: decode, defaults, validation; nothing of the repository but its own subpackages" "^$mod/agent/manifest(/|$)"
# The translation of a pod into CRI configs is pure (issue #30): of the
# repository only agent/manifest; no CRI client, no runtime leaf, no engine,
# no volume preparation; no filesystem or syscalls (what it needs of the
# host is passed in). Its tests too.
tests=1 check "$mod/agent/podspec" "^$mod/|^google.golang.org/grpc(/|$)|^os$|^os/|^io/ioutil$|^syscall$|^golang.org/x/sys/" "pure translation: v1.Pod + explicit inputs → CRI configs; agent/manifest only, no CRI client, no filesystem" "^$mod/agent/(manifest|podspec)(/|$)"
# The pure parts of in-place resize (issue #30): the resources, the
# checkpoint (in a directory passed in), the admission of a resize, the
# plan, the conditions and events. The engine actuates (CRI
# UpdateContainerResources, the pod cgroup): of the repository only
# agent/node (admission), agent/podspec (the pod's requests),
# agent/manifest and agent/safepath; no engine, no CRI client, no cgroups.
# Its tests too.
tests=1 check "$mod/agent/resize" "^$mod/|^google.golang.org/grpc(/|$)" "the pure parts of in-place resize: no engine, no CRI client, no cgroups; agent/node, agent/podspec, agent/manifest and agent/safepath only" "^$mod/agent/(resize|node|podspec|manifest|safepath)(/|$)"
# Container log rotation (issue #30) sits below the engine, which tells it
# which containers are its own: of the repository only cri (its errors;
# its tests cri/critest); no engine, no other runtime leaf, no k8s.io/api.
# Its tests too.
tests=1 check "$mod/agent/logrotate" "^$mod/|^k8s.io/api/" "below the engine: the engine wires it; cri only, no k8s.io/api" "^$mod/(agent/logrotate|cri)(/|$)"
# Node facts and admission (issue #30): capacity, identity, the admit
# chain, the one reader of /proc/meminfo. Below the engine: never the
# engine, the daemon, a runtime leaf or the CRI client. Its tests too.
tests=1 check "$mod/agent/node" "^$mod/agent$|^$mod/agent/(daemon|api|cluster|kubeletserver|gc|volume|source|stats)(/|$)|^$mod/(cmd|test|cri|cni|cgroups|probes)(/|$)|^google.golang.org/grpc(/|$)" "node facts and admission: below the engine, which asks it; no engine, no daemon, no CRI client"
# The engine never imports the daemon, which sits above it (issue #30);
# nor do its tests.
tests=1 only=1 check "$mod/agent" "^$mod/agent/daemon(/|$)" "the engine: the daemon sits above it"
# The daemon (agent/daemon: the sources merged by name, the local API's
# backend, the cluster view) sits above the engine and below cmd: no
# package of agent/ imports it (the kubelet server and the stats summary
# declare what they need of it as interfaces; cmd wires them). It asks the
# engine, never a runtime leaf (cgroups, cni), and knows nothing of the
# cluster client or the kubelet server.
while IFS=$'\t' read -r p imps timps; do
  [[ $p == "$mod/agent" || $p == "$mod/agent/"* ]] || continue
  [[ $p == "$mod/agent/daemon" || $p == "$mod/agent/daemon/"* ]] && continue
  if tr ' ' '\n' <<<"$imps $timps" | grep -qE "^$mod/agent/daemon(/|$)"; then
    echo "import rule broken: $p must not import $mod/agent/daemon (the daemon sits above agent/; only cmd and test wire it)"; fail=1
  fi
done <<<"$graph"
check "$mod/agent/daemon" "^$mod/agent/(cluster|kubeletserver|certificate)(/|$)|^$mod/(cni|cgroups)(/|$)|^k8s.io/client-go(/|$)" "above the engine, below cmd: it asks the engine; no runtime leaf, no cluster client, no kubelet server"
# The volume preparation sits below the engine and beside the sources.
tests=1 check "$mod/agent/volume" "^$mod/agent$|^$mod/agent/(source|api|cluster|kubeletserver|gc|eviction)(/|$)|^$mod/(cmd|test|cni|cgroups|probes)(/|$)" "below the engine: never agent or agent/source"
# The desired state sits below the engine; it may use agent/volume's mounts
# and writer (the store's Secrets live on a tmpfs), never the reverse.
tests=1 check "$mod/agent/source" "^$mod/agent$|^$mod/agent/(api|cluster|kubeletserver|gc|eviction)(/|$)|^$mod/(cmd|test|cri|cni|cgroups|probes)(/|$)" "desired state: below the engine, no runtime (agent/volume is allowed: the tmpfs of the store's Secrets)"
# Termination messages (issue #30): the pod's file and the container's log
# read beneath their roots, the pod's share of them, the cache. Below the
# engine, which asks the runtime and passes the paths in: of the repository
# only agent/safepath and agent/api (the CRI log parser); no engine, no
# daemon, no CRI client, no runtime leaf. Its tests too.
tests=1 check "$mod/agent/termmsg" "^$mod/|^google.golang.org/grpc(/|$)" "termination messages: file reading below the engine; agent/safepath and agent/api only, no CRI client" "^$mod/agent/(termmsg|safepath|api)$"
# The lifecycle hooks' parts that need no runtime (issue #30): the httpGet
# and sleep handlers, an exec failure's text, the bounds on a hook's output
# and message. The engine runs exec through the runtime: of the repository
# only cri (its errors) and agent/podevents (the message cuts); no engine,
# no daemon, no runtime leaf. Its tests too.
tests=1 check "$mod/agent/lifecycle" "^$mod/|^google.golang.org/grpc(/|$)" "lifecycle hooks below the engine: cri's errors and agent/podevents' message cuts only, no engine, no daemon, no runtime leaf" "^$mod/(agent/(lifecycle|podevents)|cri)$"
# The pure parts of a pod's status (issue #30): phase, the kubelet-owned
# conditions, the container restart rules. The engine builds the container
# statuses and passes what it saw of the runtime as plain values: of the
# repository only agent/manifest and agent/podspec; no engine, no daemon,
# no CRI client or gRPC, no runtime leaf, no filesystem. Its tests too.
tests=1 check "$mod/agent/podstatus" "^$mod/|^google.golang.org/grpc(/|$)|^os$|^os/|^io/ioutil$|^syscall$" "the pure parts of a pod's status: agent/manifest and agent/podspec only, no engine, no CRI client, no filesystem" "^$mod/agent/(podstatus|manifest|podspec)(/|$)"
# The image manager (issue #30): pulls with their policy, events and
# back-off, pull credentials, the image volume rules. Below the engine,
# which builds a Manager from its image service, Secrets and back-off. Of
# the repository only cri (a pull's error message; the image service it
# declares as an interface), agent/reason (the pulls' reasons),
# agent/manifest and agent/podspec; never the engine, the daemon or another
# runtime leaf. Its tests too.
tests=1 check "$mod/agent/images" "^$mod/" "the image manager: below the engine; cri, agent/reason, agent/manifest and agent/podspec only" "^$mod/(cri|agent/(images|manifest|podspec|reason))$"
# The pod and QoS-tier cgroups (issue #30), the kubelet's pod container
# manager: below the engine, which builds a Manager from its cgroups
# driver and config. Of the repository the cgroups leaf, agent/podspec
# (QoS) and agent/manifest; no engine, no daemon, no CRI client, no cni or
# probes. Its tests too.
tests=1 check "$mod/agent/podcgroup" "^$mod/|^google.golang.org/grpc(/|$)" "the pod and QoS-tier cgroups: below the engine; the cgroups leaf, agent/podspec and agent/manifest only" "^$mod/(agent/(podcgroup|podspec|manifest)|cgroups)(/|$)"
# The repair of leaked host-local IPs at start (issue #30): below the
# engine, which passes its runtime (as the narrow Sandboxes interface, CRI
# message types only), pod network, clock and metric in. Of the repository
# only the cni leaf; no engine, no daemon, no CRI client or gRPC, no other
# runtime leaf. Its tests too (cri-api's fakes, not cri/critest).
tests=1 check "$mod/agent/ipamrepair" "^$mod/|^google.golang.org/grpc(/|$)" "leaked IP repair: below the engine; the cni leaf only, no engine, no CRI client" "^$mod/(agent/ipamrepair|cni)$"
# The daemon's Prometheus metrics (issue #30): the collectors and their
# registry; the engine updates them and passes its running pods count in.
# Nothing of the repository, no CRI. Its tests too.
tests=1 check "$mod/agent/metrics" "^$mod/|^google.golang.org/grpc(/|$)|^k8s.io/cri-api(/|$)" "the Prometheus metrics: below the engine, nothing of the repository"
# The engine's configuration (issue #30), apart from the engine as the
# kubelet's apis/config: the fields and their defaults. Of the repository
# only the packages its fields' types come from: agent/node, agent/userns
# and cni (the pod network's Config); never the engine, the daemon, the
# CRI client, cgroups or probes. Its tests too.
tests=1 check "$mod/agent/config" "^$mod/|^google.golang.org/grpc(/|$)" "the engine's configuration: below the engine; agent/node, agent/userns and cni (its fields' types) only" "^$mod/(agent/(config|node|userns)|cni)$"
# A pod's events and steps as values, the Observer and its fan-out, the
# message bounds (issue #30): pure, below everything that records or
# observes events (the engine, the daemon, the cluster's writers, cmd). Of
# the repository agent/manifest at most; never the engine, the daemon, the
# CRI client or gRPC, or a runtime leaf. Its tests too.
tests=1 check "$mod/agent/podevents" "^$mod/|^google.golang.org/grpc(/|$)" "a pod's events and steps as values: agent/manifest at most; no engine, no daemon, no CRI client, no runtime leaf" "^$mod/agent/(podevents|manifest)(/|$)"
# A container's waiting reason carried with its message (issue #30): below
# every package that decides a reason (the engine, agent/images); nothing
# of the repository. Its tests too.
tests=1 check "$mod/agent/reason" "^$mod/" "the waiting reason's error: below everything that reports one; nothing of the repository" "^$mod/agent/reason$"
# The back-off's counting and the runtime state's fingerprints (issue #27
# made room in the engine with them): pure, below the engine; nothing of
# the repository (the fingerprints the CRI's message types only). Their
# tests too.
tests=1 check "$mod/agent/backoff" "^$mod/" "the kubelet's per-key back-off: below the engine; nothing of the repository" "^$mod/agent/backoff$"
tests=1 check "$mod/agent/fingerprint" "^$mod/|^google.golang.org/grpc(/|$)" "the runtime state's fingerprints: below the engine; nothing of the repository, no gRPC" "^$mod/agent/fingerprint$"
# The count of pods being stopped that a teardown's removal waits on: pure,
# below the engine; nothing of the repository. Its tests too.
tests=1 check "$mod/agent/stopgate" "^$mod/" "the count of pods being stopped: below the engine; nothing of the repository" "^$mod/agent/stopgate$"
# The device plugins' manager (issue #26): below the engine, which reaches
# it through agent/config.Devices; serve wires it. Of the repository only
# agent/safepath (the checkpoint's bounded read) and agent/atomicfile (its
# write); never the engine, the
# daemon, cmd or the CRI client. Its tests too.
tests=1 check "$mod/agent/deviceplugin" "^$mod/" "the device plugins' manager: below the engine; agent/safepath and agent/atomicfile only" "^$mod/agent/(deviceplugin|safepath|atomicfile)$"
# The stats summary reads cgroups and /proc below agent; the kubelet server
# and the eviction work read it through its Provider interface.
check "$mod/agent/stats" "^$mod/agent(/|$)|^$mod/(cmd|test|cni|cri|probes)(/|$)" "below agent: the stats summary reads cgroups and declares what it needs of the runtime and the daemon as interfaces"
# TLS bootstrapping and certificate rotation: client-go's REST and TLS
# helpers only; the CSR client is an interface (agent/cluster implements
# it, cmd wires them); never client-go's full clientset (issue #8).
check "$mod/agent/certificate" "^$mod/|^k8s.io/client-go/(kubernetes|util/certificate)(/|$)" "below agent: declares its CSR client as an interface, links no clientset" "^$mod/agent/atomicfile$"
[ "$fail" = 0 ] && echo "imports OK"
exit "$fail"
