#!/usr/bin/env bash
# node.sh: run the kubelet's own node-conformance suite, e2e_node.test in
# conformance mode ("Validate node setup"), against NODE=minikubelet or the
# kubelet (the anchor) on this machine (make node-conformance). As root.
#
# In conformance mode (--conformance=true) e2e_node.test starts its own
# embedded etcd, a kube-apiserver on https://127.0.0.1:6443 (token
# authentication from ./known_tokens.csv, no anonymous requests, AlwaysAllow, no ServiceAccount
# admission) and the namespace controller, but no kubelet: it tests the
# node agent already running. So, in order:
#
#   1. build (cached, hack/conformance/build.sh): e2e_node.test (from the
#      module hack/e2enode), e2e.test (only for --list-images), ginkgo,
#      agnhost, nnp, and the kubelet for NODE=kubelet; minikubelet from this
#      tree (or MINIKUBELET_BIN);
#   2. the e2e images, pushed to the local registry REGISTRY under the paths
#      the private containerd's mirrors of registry.k8s.io, docker.io and
#      gcr.io look at (as hack/conformance/run.sh), below
#      registry.k8s.io/mkl-e2e-node-test-images (KUBE_TEST_REPO_LIST);
#   3. a private containerd, the node's address NODE_CIDR on NODE_IF and the
#      isolated pod network POD_CIDR on BRIDGE (as run.sh);
#   4. the node's kubeconfig: https://127.0.0.1:6443 with a fresh bearer
#      token T, the token the suite's API server will know;
#   5. ginkgo -p --procs PROCS e2e_node.test -- --conformance=true
#      --bearer-token=T --prepull-images=false ... in WORK/report-NODE (its
#      known_tokens.csv goes to the working directory). Meanwhile a
#      background step waits for :6443 to answer and then starts the node,
#      which the suite's BeforeSuite wants Ready within 2 minutes, with what
#      the suite gives its own kubelet (test/e2e_node/services/kubelet.go):
#      the kubelet server on every address with anonymous requests allowed
#      (the API server's node proxy reaches it without a client
#      certificate: /configz, logs, exec), the read-only port 10255 (specs
#      read localhost:10255/metrics), a staticPodPath, root dir
#      /var/lib/kubelet and pod logs in /var/log/pods (specs look there);
#   6. the JUnit XML is summarized (hack/conformance/report); a full run (no
#      FOCUS) is kept in docs/conformance/e2e_node_all/NODE.tsv and
#      regenerates the e2e_node_all section of docs/conformance.md; with
#      SPECS and UPDATE_DOCS=1, docs/conformance/e2e_node/ and its section.
#
# System validation runs chrooted to /rootfs: a symlink to / is made if
# /rootfs is missing (and removed again). Fixed ports: 127.0.0.1:6443,
# 10255 and 127.0.0.1:10248 must be free, and pods go to the cgroup root's
# /kubepods, so one run at a time.
#
# Left out (SKIP adds to it), besides [Serial], [Disruptive], [Flaky],
# [Slow], [Alpha] and [Feature:...] (the conformance image skips the first
# three; the others need feature gates or hardware):
#   - the Summary API spec: the kubelet reports PSI (KubeletPSI, GA) that a
#     cgroup v1 host (this one) has no per-cgroup files for, so it fails on
#     the kubelet too;
#   - for NODE=minikubelet, the ContainerMetrics /metrics/cadvisor spec:
#     minikubelet serves no cAdvisor metrics, and the suite's parser never
#     returns on the 404 (see below);
#   - AppArmor: nothing to skip; without AppArmor (this host) only the two
#     "when running without AppArmor should reject a pod" specs exist;
#   - specs that restart the node agent through systemd: all [Serial] (this
#     machine has no systemd).
#
# Env: NODE (minikubelet or kubelet; default minikubelet), FOCUS (a regexp
# narrowing the focus), SPECS (a list of exact spec names instead, e.g.
# hack/conformance/e2e-node-specs.txt: e2e_node's own specs), FEATURE (a feature
# gate's name: its [Feature:NAME] specs instead of [NodeConformance]), SKIP, PROCS (default 8), WORK (default
# /var/tmp/mkl-enode: not under /tmp, which specs mount as a hostPath the guard refuses while the node's own files are there, as run.sh), CONTAINERD, MINIKUBELET_BIN, REGISTRY (default
# 127.0.0.1:5000), POD_CIDR (default 10.237.0.0/16), NODE_CIDR (default
# 10.238.0.1/24), KUBELET_PORT (default 10452), TIMEOUT (default 2h),
# UPDATE_DOCS (default: 1 without FOCUS), BRIDGE (default mkebr0), NODE_IF
# (default mkenode0), EXPECT=1 (with SPECS: fail unless each ran and
# passed), MEASURED (what the docs name as measured: the
# minikubelet commit, or a note after the kubelet's version), KEEP=1 (leave everything running).
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=steps.sh
source "$(dirname "${BASH_SOURCE[0]}")/steps.sh"
require_root

NODE=${NODE:-minikubelet}
[[ $NODE == minikubelet || $NODE == kubelet ]] || die "NODE=$NODE: use minikubelet or kubelet"
FOCUS=${FOCUS:-}
SPECS=${SPECS:-}
[[ -z $SPECS || -z $FOCUS ]] || die "SPECS and FOCUS exclude each other"
[[ -z $SPECS ]] || SPECS=$(realpath "$SPECS")
SKIP=${SKIP:-}
FEATURE=${FEATURE:-}
PROCS=${PROCS:-8}
WORK=$(realpath -m "${WORK:-/var/tmp/mkl-enode}")
REGISTRY=${REGISTRY:-127.0.0.1:5000}
POD_CIDR=${POD_CIDR:-10.237.0.0/16}
NODE_CIDR=${NODE_CIDR:-10.238.0.1/24}
NODE_IP=${NODE_CIDR%/*}
KUBELET_PORT=${KUBELET_PORT:-10452}
TIMEOUT=${TIMEOUT:-2h}
NODE_NAME=mkl-enode-node
BRIDGE=${BRIDGE:-mkebr0}
DUMMY=${NODE_IF:-mkenode0}
if [[ -z $FOCUS && -z $SPECS && -z $FEATURE ]]; then UPDATE_DOCS=${UPDATE_DOCS:-1}; else UPDATE_DOCS=${UPDATE_DOCS:-0}; fi
REPO=$(repo_root)
HACK=$REPO/hack
# What the suite assumes (test/e2e_node/services/kubelet.go, util.go).
ROOT_DIR=/var/lib/kubelet
POD_LOGS=/var/log/pods
READ_ONLY_PORT=10255
export PATH=$PATH:/usr/local/go/bin
[[ $WORK != / ]] || die "refusing to use / as WORK"
for port in 6443 "$READ_ONLY_PORT" "$KUBELET_PORT"; do
	busy=$(ss -Htlnp "sport = :$port" | head -1)
	[[ -z $busy ]] || die "port $port is in use ($busy): e2e_node's API server (127.0.0.1:6443) and the read-only port are fixed; stop the other run first"
done

ip -4 -o addr show | awk -v ip="$NODE_IP" -v me="$DUMMY" 'index($4, ip "/") == 1 && $2 != me { bad = $2 } END { exit bad != "" }' ||
	die "$NODE_IP is already an address of another interface (a make conformance or make test-conformance run?): set NODE_CIDR, POD_CIDR, KUBELET_PORT"

total=$SECONDS
trap '[[ -z $STEP ]] || step "FAILED in the step $STEP"' EXIT

# --- 1. build -------------------------------------------------------------------
build_all() {
	local want=(e2e_node.test e2e.test ginkgo agnhost nnp)
	[[ $NODE != kubelet ]] || want+=(kubelet)
	"$CONFORMANCE_DIR/build.sh" "${want[@]}" | tee "$WORK/build-conformance.log"
	BIN=$(tail -n 1 "$WORK/build-conformance.log")
	if [[ $NODE == minikubelet ]]; then
		if [[ -n ${MINIKUBELET_BIN:-} ]]; then
			step "minikubelet: using $MINIKUBELET_BIN"
		else
			(cd "$REPO" && CGO_ENABLED=0 nice -n 10 go build -o "$WORK/minikubelet" ./cmd/minikubelet) || die "building minikubelet failed"
			MINIKUBELET_BIN=$WORK/minikubelet
			step "minikubelet: built from $REPO at $(git -C "$REPO" rev-parse --short HEAD)$(git -C "$REPO" diff --quiet HEAD -- . ':!docs' || echo '+dirty')"
		fi
	fi
}
mkdir -p "$WORK"
chmod 0711 "$WORK"
timed "build" build_all

# --- 2. images --------------------------------------------------------------------
# The suite's e2e images under a path of their own (KUBE_TEST_REPO_LIST,
# which e2e.test --list-images and e2e_node.test both read): hack/images
# builds this tree's variant (busybox with nmeter) there, and a make
# conformance of another tree pushing its own under e2e-test-images cannot
# swap it during the run.
echo "promoterE2eRegistry: registry.k8s.io/mkl-e2e-node-test-images" >"$WORK/repo-list.yaml"
export KUBE_TEST_REPO_LIST=$WORK/repo-list.yaml
timed "images" images

# --- 3. containerd and networks -----------------------------------------------------
CP=$WORK/cp
cleanup() {
	local rc=$?
	[[ -z $STEP ]] || step "FAILED in the step $STEP"
	if [[ ${KEEP:-0} == 1 ]]; then
		step "KEEP=1: leaving everything running; stop it with hack/conformance/stop.sh $WORK"
	else
		"$CONFORMANCE_DIR/stop.sh" "$WORK" || true
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
timed "containerd and networks" setup_node_env

# --- 4. the node's configuration ----------------------------------------------------
configure_node() {
	mkdir -p "$CP" "$WORK/manifests" "$ROOT_DIR" "$POD_LOGS"
	TOKEN=$(head -c 24 /dev/urandom | base64 | tr -d '+/=' | cut -c1-24)
	# The kubeconfig the suite writes for its own kubelet
	# (services/kubelet.go writeKubeconfig): the token, no CA.
	(
		umask 077
		cat >"$WORK/node.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: local, cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}}]
users: [{name: node, user: {token: "$TOKEN"}}]
contexts: [{name: local, context: {cluster: local, user: node}}]
current-context: local
EOF
	)
	if [[ ! -e /rootfs ]]; then
		ln -s / /rootfs
		echo /rootfs >"$WORK/rootfs-link"
		step "made /rootfs -> / (system validation chroots there)"
	fi
	echo "$ROOT_DIR" >"$WORK/node-root"
	cat >"$WORK/ctd/net.d/10-mkl-enode.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "mkl-enode",
  "plugins": [
    {"type": "bridge", "bridge": "$BRIDGE", "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "$POD_CIDR"}]], "routes": [{"dst": "0.0.0.0/0"}],
              "dataDir": "$WORK/cni-data"}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
	step "node: $NODE, kubelet server 0.0.0.0:$KUBELET_PORT (anonymous, AlwaysAllow), read-only :$READ_ONLY_PORT, InternalIP $NODE_IP, root $ROOT_DIR, static pods $WORK/manifests"
}
timed "node configuration" configure_node

start_bg() {
	local name=$1
	shift
	setsid "$@" >>"$CP/$name.log" 2>&1 </dev/null &
	echo $! >"$CP/$name.pid"
}

start_kubelet() {
	# As run.sh's, plus what the suite sets on its own kubelet
	# (services/kubelet.go): anonymous AlwaysAllow, the read-only port,
	# staticPodPath, healthz on 127.0.0.1:10248 (the device plugin specs
	# wait on it), the cgroup root / (the cgroup manager specs look for
	# /kubepods/pod<uid>, where minikubelet puts its pods too).
	cat >"$WORK/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://$SOCK
cgroupDriver: cgroupfs
cgroupRoot: /
failCgroupV1: false
failSwapOn: false
address: 0.0.0.0
port: $KUBELET_PORT
readOnlyPort: $READ_ONLY_PORT
healthzBindAddress: 127.0.0.1
healthzPort: 10248
podLogsDir: $POD_LOGS
staticPodPath: $WORK/manifests
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
clusterDomain: cluster.local
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1%}
kubeAPIQPS: 50
kubeAPIBurst: 100
volumePluginDir: $WORK/volume-plugins
EOF
	[[ -f $WORK/sysctls ]] || sysctl -n vm.overcommit_memory kernel.panic kernel.panic_on_oops vm.panic_on_oom |
		paste -d' ' <(printf '%s\n' vm.overcommit_memory kernel.panic kernel.panic_on_oops vm.panic_on_oom) - >"$WORK/sysctls"
	start_bg kubelet "$BIN/kubelet" --config "$WORK/kubelet.yaml" --kubeconfig "$WORK/node.kubeconfig" \
		--root-dir "$ROOT_DIR" --cert-dir "$WORK/kubelet-pki" --hostname-override "$NODE_NAME" --node-ip "$NODE_IP" --v 2
}

start_minikubelet() {
	start_bg minikubelet "$MINIKUBELET_BIN" serve --kubeconfig "$WORK/node.kubeconfig" \
		--address 0.0.0.0 --port "$KUBELET_PORT" --anonymous-auth --authorization-mode AlwaysAllow \
		--read-only-port "$READ_ONLY_PORT" --healthz-bind-address 127.0.0.1 --healthz-port 10248 \
		--node-name "$NODE_NAME" --node-ip "$NODE_IP" --runtime-endpoint "unix://$SOCK" \
		--root-dir "$ROOT_DIR" --pod-log-dir "$POD_LOGS" --manifest-dir "$WORK/manifests" \
		--socket "$WORK/minikubelet.sock" --run-dir "$WORK/run" --pod-cidr "$POD_CIDR" --cni-conf-dir "$WORK/ctd/net.d" \
		--cni-bridge "$BRIDGE" --cni-data-dir "$WORK/cni-data" --pod-masquerade=false \
		--pod-security=privileged --log-level info \
		--eviction-hard 'memory.available<100Mi,nodefs.available<1%,imagefs.available<1%,nodefs.inodesFree<1%' \
		--image-gc-high-threshold 100 --image-gc-low-threshold 99
}

# start_node_when_api_up: in the background while the suite starts its
# services: the node starts once :6443 answers (the suite's BeforeSuite
# then waits 2 minutes for it to be Ready).
apiserver_up() { [[ $(curl -sk -m 5 -H "Authorization: Bearer $TOKEN" https://127.0.0.1:6443/healthz) == ok ]]; }
start_node_when_api_up() {
	local start=$SECONDS
	wait_for 900 "the suite's kube-apiserver on 127.0.0.1:6443" apiserver_up || {
		warn "the suite's API server did not answer within 15 minutes; not starting $NODE"
		return 1
	}
	step "the suite's kube-apiserver answered after $(duration $((SECONDS - start))); starting $NODE"
	if [[ $NODE == kubelet ]]; then start_kubelet; else start_minikubelet; fi
	step "$NODE started (pid $(<"$CP/$NODE.pid"), log $CP/$NODE.log)"
}

# --- 5. the suite ---------------------------------------------------------------------
focus='\[NodeConformance\]'
skip='\[Serial\]|\[Disruptive\]|\[Flaky\]|\[Slow\]|\[Alpha\]|\[Feature:'
if [[ -n $FEATURE ]]; then
	# One feature's own specs (e.g. FEATURE=EnvFiles: the FileKeyRef specs,
	# tagged [Feature:EnvFiles] and not [NodeConformance]) in place of the
	# conformance ones; the other features stay skipped.
	focus="\\[Feature:$FEATURE\\]"
	skip='\[Serial\]|\[Disruptive\]|\[Flaky\]|\[Slow\]|\[Alpha\]'
fi
# PSI: see the header.
skip+='|Summary API when querying /stats/summary should report resource usage through the stats api'
# /metrics/cadvisor: minikubelet does not serve it (its stats come from the
# CRI, as the kubelet's with PodAndContainerStatsFromCRI, where the spec
# skips itself), and on its 404 the suite's metrics parser
# (component-base testutil.ParseMetrics) never returns: the spec would hang
# the whole run. The kubelet runs it (and fails it here: its cAdvisor reads
# /run/containerd/containerd.sock, not this private containerd).
[[ $NODE != minikubelet ]] || skip+='|ContainerMetrics \[LinuxOnly\] when querying /metrics/cadvisor'
[[ -z $SKIP ]] || skip+="|$SKIP"
REPORT=$WORK/report-$NODE
rm -rf "$REPORT"
mkdir -p "$REPORT"
suite() {
	local args=(--focus "$focus" --skip "$skip") what="focus $focus${FOCUS:+ and $FOCUS}"
	if [[ -n $FOCUS ]]; then
		args=(--focus "(?:$focus.*(?:$FOCUS))|(?:(?:$FOCUS).*$focus)" --skip "$skip")
	fi
	if [[ -n $SPECS ]]; then
		local list
		list=$(cd "$REPO" && go run ./hack/conformance/report --focus-for "$SPECS") && [[ -n $list ]] ||
			die "hack/conformance/report --focus-for $SPECS failed"
		args=(--focus "$list" --skip "$skip")
		what="the $(grep -cv -e '^[[:space:]]*#' -e '^[[:space:]]*$' "$SPECS") specs of $SPECS"
	fi
	start_node_when_api_up >"$WORK/node-start.log" 2>&1 &
	local starter=$!
	step "ginkgo -p --procs $PROCS: $what, skip $skip (log: $REPORT/ginkgo.log)"
	set +e
	(cd "$REPORT" && nice -n 10 "$BIN/ginkgo" -p --procs "$PROCS" --timeout "$TIMEOUT" --no-color "${args[@]}" \
		"$BIN/e2e_node.test" -- \
		--conformance=true --start-services=true --stop-services=true --bearer-token="$TOKEN" --dns-domain=cluster.local \
		--prepull-images=false --container-runtime-endpoint "unix://$SOCK" --image-service-endpoint "unix://$SOCK" \
		--report-dir "$REPORT" --dump-logs-on-failure=false \
		>"$REPORT/ginkgo.log" 2>&1)
	SUITE_RC=$?
	set -e
	# The suite ended (or gave up) before the API server answered.
	kill "$starter" 2>/dev/null || true
	wait "$starter" 2>/dev/null || true
	cat "$WORK/node-start.log"
	tail -n 5 "$REPORT/ginkgo.log"
}
timed "suite" suite

# --- 6. report ------------------------------------------------------------------------
junit=$(find "$REPORT" -name 'junit*.xml' | head -1)
[[ -n $junit ]] || die "no JUnit XML in $REPORT (ginkgo exit $SUITE_RC; log $REPORT/ginkgo.log)"
report_args=(--junit "$junit" --node "$NODE")
# EXPECT=1 (make test-node-conformance): fail unless every spec of SPECS ran
# and passed; its outcomes go to make test's skip summary.
[[ -z ${EXPECT:-} || -z $SPECS ]] || report_args+=(--expect "$SPECS")
[[ -z ${TESTLOG_DIR:-} ]] || report_args+=(--testlog "$TESTLOG_DIR/node-conformance-$NODE.json")
if [[ $UPDATE_DOCS == 1 ]]; then
	what=kubelet
	[[ $NODE == kubelet ]] && what="kubelet $("$BIN/kubelet" --version | awk '{print $2}')${MEASURED:+, $MEASURED}"
	[[ $NODE == minikubelet ]] && what="minikubelet ${MEASURED:-$(git -C "$REPO" rev-parse --short HEAD)}"
	# SPECS (e2e_node's own specs) and the whole run have sections of their own.
	section=e2e_node_all
	[[ -z $SPECS ]] || section=e2e_node
	mkdir -p "$REPO/docs/conformance/$section"
	report_args+=(--results "$REPO/docs/conformance/$section" --doc "$REPO/docs/conformance.md" --section "$section"
		--what "$what" --duration "$(elapsed $((SECONDS - total)))")
fi
rc=0
(cd "$REPO" && go run ./hack/conformance/report "${report_args[@]}") || rc=$?
step "total: $(duration $((SECONDS - total)))"
exit "$rc"
