#!/usr/bin/env bash
# e2e.sh: run the end-to-end suite against real components: install the
# dependencies, start the local registry, build and push the images, isolate
# the e2e pod CIDR, run the privileged tests once, then `go test
# ./test/e2e/...` with MINIKUBELET_E2E=1 against each selected containerd
# (the control plane for the cluster-mode cases is built first, cached, and
# only when a selected test needs it). Each step says what it does and how
# long it took; every go test run goes through hack/gotest.sh, which keeps
# its JSON for the skip summary that ends make test.
# The suite's TestMain starts and stops its own private containerd with
# hack/start-containerd.sh and hack/stop-containerd.sh, which read CONTAINERD.
# Env: CONTAINERD (unset: the system's 1.6 and the pinned 2.x; or one or
# more of 1.6, 2, 2.x's major.minor, space-separated), REGISTRY (default
# 127.0.0.1:5000), E2E_POD_CIDR (default 10.89.0.0/16), E2E_FLAGS (extra go
# test arguments, e.g. -run or -v), E2E_CONCURRENT (0: the suites against
# two containerds one after the other; default 1, at the same time),
# E2E_PARALLEL (go test -parallel).
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_root

HACK=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export REGISTRY=${REGISTRY:-127.0.0.1:5000}
export E2E_POD_CIDR=${E2E_POD_CIDR:-10.89.0.0/16}
export PATH=$PATH:/usr/local/go/bin

# Which containerds, validated before anything is installed.
flavors=()
for want in ${CONTAINERD:-1.6 2}; do
	flavor=$(containerd_flavor "$want")
	[[ " ${flavors[*]} " == *" $flavor "* ]] || flavors+=("$flavor")
done
step "containerd under test: ${flavors[*]}"

# needs_control_plane: true when a selected test needs etcd and
# kube-apiserver: the cluster-mode cases of the e2e suite (TestCluster_*),
# the control-plane harness's own tests and agent/cluster's. A -run in
# E2E_FLAGS selects by its first element (matched as an extended regexp,
# which covers what -run patterns use); without -run, all are selected.
cluster_tests() {
	grep -hoE '^func Test[A-Za-z0-9_]+' "$HACK"/../test/e2e/cluster_*_test.go "$HACK"/../test/controlplane/*_test.go "$HACK"/../agent/cluster/*_test.go | sed 's/^func //'
}
# metrics_server_tests: the cases that run metrics-server (`kubectl top`).
metrics_server_tests() {
	grep -hoE '^func Test[A-Za-z0-9_]+' "$HACK"/../test/e2e/cluster_top_test.go | sed 's/^func //'
}
# node_wide_tests: the tests another suite running at the same time would
# break, which then run alone against each containerd after both suites:
# every agent writes /kubepods/burstable's cpu.shares from the Burstable
# pods of its own runtime, and the other suite's agents use another one.
node_wide_tests() { echo TestQoS_BurstableTierFollowsPods; }
node_wide=$(node_wide_tests | paste -sd '|')
needs_control_plane() { selects cluster_tests; }
needs_metrics_server() { selects metrics_server_tests; }
# selects LIST: true when a -run in E2E_FLAGS (or its absence) selects one of
# the tests the function LIST prints.
selects() {
	local list=$1 run="" prev="" a name names
	# The list first: its globs must expand (before set -f, which a
	# process substitution would inherit).
	names=$("$list")
	local -
	set -f # a -run pattern is no glob
	# shellcheck disable=SC2086 # E2E_FLAGS holds several arguments
	for a in ${E2E_FLAGS:-}; do
		case $a in
		-run=* | --run=* | -test.run=*) run=${a#*=} ;;
		*) [[ $prev != -run && $prev != --run && $prev != -test.run ]] || run=$a ;;
		esac
		prev=$a
	done
	[[ -n $run ]] || return 0
	run=${run%%/*}
	while read -r name; do
		[[ $name == TestMain ]] && continue
		[[ $name =~ $run ]] && return 0
	done <<<"$names"
	return 1
}

timed "dependencies (hack/install-deps.sh)" "$HACK/install-deps.sh"
for flavor in "${flavors[@]}"; do
	[[ $flavor == 1.6 ]] || timed "containerd $(containerd2_version) (hack/install-containerd2.sh)" "$HACK/install-containerd2.sh"
	[[ $flavor == 1.6 ]] || timed "runc $(runc2_version) (hack/install-runc2.sh)" "$HACK/install-runc2.sh"
done
cluster=0
if needs_control_plane; then
	cluster=1
	# The control plane the cluster-mode cases run against: built once per
	# machine from the Go module proxy (about 15 minutes on a fresh 2-core
	# machine, a line a minute meanwhile), cached.
	timed "control plane: etcd and kube-apiserver (hack/cluster/build.sh)" "$HACK/cluster/build.sh"
else
	step "control plane: not built, no selected test needs it (E2E_FLAGS=${E2E_FLAGS:-})"
fi
if needs_metrics_server; then
	# metrics-server for the `kubectl top` cases: its own module
	# (hack/metrics-server), built once per machine and cached like the
	# control plane.
	timed "metrics-server (hack/metrics-server/build.sh)" "$HACK/metrics-server/build.sh"
else
	step "metrics-server: not built, no selected test needs it (E2E_FLAGS=${E2E_FLAGS:-})"
fi
timed "registry on $REGISTRY (hack/start-registry.sh)" "$HACK/start-registry.sh" "$REGISTRY"
timed "test images (hack/images)" bash -c 'cd "$1/.." && go run ./hack/images --registry "$2"' _ "$HACK" "$REGISTRY"
timed "pod network isolation for $E2E_POD_CIDR" "$HACK/isolate-pod-network.sh" "$E2E_POD_CIDR"

cd "$HACK/.."
failed=()
timed "privileged tests (real CNI plugins in a netns, real cgroup files, real subPath bind mounts, removal that stops at mount points, disk usage that skips bind mounts)" \
	env MINIKUBELET_PRIVILEGED=1 hack/gotest.sh privileged -count=1 -run 'Privileged|RealPlugins' ./cni/... ./cgroups/... ./agent/ ./agent/safepath/ ./agent/volume/ || failed+=(privileged)
if ((cluster)); then
	# shellcheck disable=SC2086
	timed "control plane harness tests (etcd + kube-apiserver on loopback)" \
		env MINIKUBELET_E2E=1 hack/gotest.sh controlplane -count=1 -timeout 10m ${E2E_FLAGS:-} ./test/controlplane/... ./agent/cluster/... || failed+=(controlplane)
fi

# The suites against each containerd run at the same time (E2E_CONCURRENT=0
# runs them one after the other): each has its own containerd, bridge, /24
# (test/e2e's pickNetwork locks it) and node name (e2e-node-<N>: pod UIDs,
# hence pod cgroups in the shared /kubepods, differ), and the few tests that
# touch what the machine shares (kube-proxy's iptables chains) take a
# machine-wide flock; each runs -parallel 3 then (E2E_PARALLEL), 4 when
# alone. Most of a suite's time is waiting (containers starting, grace
# periods, probes), so together they take about 30 minutes on a 2-core
# machine where one after the other took about 42 (docs/testing.md).
concurrent=${E2E_CONCURRENT:-1}
((${#flavors[@]} > 1)) || concurrent=0
parallel=${E2E_PARALLEL:-$(((concurrent)) && echo 3 || echo 4)}
# A suite's go test timeout. At 40m the containerd 1.6 suite beside the
# other timed out once with three tests still running (CI, 2026-12-02: it
# had taken 34-36 min before); a timeout says nothing of what was slow, a
# test's own bound does.
suite_timeout=${E2E_TIMEOUT:-50m}

describe_flavor() {
	if [[ $1 == 1.6 ]]; then
		echo "containerd $(containerd --version | awk '{print $3}') (system)"
	else
		echo "containerd $(containerd2_version) ($(containerd2_bin))"
	fi
}

# run_suite FLAVOR [SKIP [RUN]]: the e2e suite against one containerd,
# without the tests SKIP matches (TestSoak: make test's test-soak part,
# hack/soak.sh, runs it alone); RUN, when given, comes after E2E_FLAGS.
run_suite() {
	local flavor=$1 skip=${2:-^TestSoak\$} run=() what start=$SECONDS
	[[ -z ${3:-} ]] || run=(-run "$3")
	what=$(describe_flavor "$flavor")
	step "==== e2e suite against $what: CONTAINERD=$flavor go test -count=1 -parallel $parallel -timeout $suite_timeout -skip '$skip' ${E2E_FLAGS:-} ${run[*]} ./test/e2e/... ===="
	# E2E_FLAGS is split on spaces on purpose: it holds several go test arguments.
	# shellcheck disable=SC2086
	if CONTAINERD=$flavor MINIKUBELET_E2E=1 hack/gotest.sh "e2e-containerd-$flavor" -count=1 -parallel "$parallel" -timeout "$suite_timeout" -skip "$skip" ${E2E_FLAGS:-} "${run[@]}" ./test/e2e/...; then
		step "==== e2e suite against $what: passed in $(duration $((SECONDS - start))) ===="
	else
		step "==== e2e suite against $what: FAILED after $(duration $((SECONDS - start))) ===="
		return 1
	fi
}

# progress: every 2 minutes, how many tests of each running suite ended.
progress() {
	local start=$SECONDS flavor log line
	while sleep 120; do
		line=""
		for flavor in "${flavors[@]}"; do
			log=$TESTLOG_DIR/e2e-containerd-$flavor.json
			line+=" containerd $flavor: $(grep -c '"Action":"pass","Package":"[^"]*","Test":"[^"/]*"' "$log" 2>/dev/null || true) passed, $(grep -c '"Action":"fail","Package":"[^"]*","Test":"[^"/]*"' "$log" 2>/dev/null || true) failed;"
		done
		step "e2e suites running for $(duration $((SECONDS - start))):$line"
	done
}

export TESTLOG_DIR=${TESTLOG_DIR:-$HACK/../bin/testlogs}
mkdir -p "$TESTLOG_DIR"
if ((concurrent)); then
	for flavor in "${flavors[@]}"; do rm -f "$TESTLOG_DIR/e2e-containerd-$flavor.json"; done
	step "the e2e suites against containerd ${flavors[*]} at the same time (E2E_CONCURRENT=1); each line says its containerd"
	progress &
	progress_pid=$!
	pids=()
	for flavor in "${flavors[@]}"; do
		(
			set -o pipefail
			run_suite "$flavor" "^(TestSoak|$node_wide)\$" 2>&1 | sed -u "s/^/[containerd $flavor] /"
		) &
		pids+=($!)
	done
	for i in "${!pids[@]}"; do
		wait "${pids[$i]}" || failed+=("containerd-${flavors[$i]}")
	done
	kill "$progress_pid" 2>/dev/null || true
	wait "$progress_pid" 2>/dev/null || true
	if selects node_wide_tests; then
		alone="^($node_wide)\$"
		step "the tests another suite would break, alone against each containerd: $alone"
		for flavor in "${flavors[@]}"; do
			run_suite "$flavor" '^TestSoak$' "$alone" || failed+=("containerd-$flavor-alone")
		done
	fi
else
	for flavor in "${flavors[@]}"; do
		printf '\n'
		run_suite "$flavor" || failed+=("containerd-$flavor")
	done
fi
if ((${#failed[@]})); then
	die "failed: ${failed[*]}; rerun the e2e suite against one containerd with CONTAINERD=${flavors[0]} make test-e2e (E2E_FLAGS='-run TestName -v' narrows it)"
fi
step "the e2e suite passed against containerd ${flavors[*]}"
