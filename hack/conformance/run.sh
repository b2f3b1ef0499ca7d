#!/usr/bin/env bash
# run.sh: run Kubernetes' own [NodeConformance] (SUITE=nodeconformance, the
# default) or [Conformance] (SUITE=conformance) e2e suite against one node of
# a private cluster on this machine, and report the result (make
# conformance). As root.
#
#   1. build (cached per machine): etcd and kube-apiserver
#      (hack/cluster/build.sh); e2e.test, kube-controller-manager,
#      kube-scheduler, kubelet, ginkgo, agnhost, nnp (build.sh here);
#      minikubelet from this tree (or MINIKUBELET_BIN);
#   2. the e2e images e2e.test --list-images names, built locally
#      (hack/images --e2e) and pushed to the local registry under the paths
#      the private containerd's mirrors of registry.k8s.io, docker.io and
#      gcr.io look at;
#   3. a private containerd (hack/start-containerd.sh WORK/ctd); a dummy
#      interface with the node's address (NODE_CIDR), the only non-loopback
#      address the node and the tests use (an empty bridge where the
#      kernel lacks the dummy driver); the pod network (POD_CIDR, bridge
#      mkcbr0, no masquerading) kept off every other network
#      (hack/isolate-pod-network.sh);
#   4. the control plane: etcd and kube-apiserver as hack/cluster/start.sh
#      starts them (certificates, the apiserver's kubelet client certificate,
#      --kubelet-preferred-address-types=InternalIP), listening on the
#      node's address (ADVERTISE_ADDRESS), the `kubernetes` Service's
#      endpoint, so pods reach it through kube-proxy; kube-controller-manager
#      (service-account key, root CA) and kube-scheduler;
#   5. the node NODE: minikubelet (serve --kubeconfig --node-ip
#      --cluster-dns, as docs/cluster.md joins it: no --pod-security, the
#      hostPath guard on) or the kubelet (the anchor: same containerd,
#      images and control plane; cgroupfs on the cgroup v1 hierarchy under
#      /mkl-conf; clusterDNS);
#   5b. the cluster's add-ons as kubeadm installs them (hack/cluster/addons.sh:
#      the kube-proxy DaemonSet in iptables mode and the CoreDNS Deployment
#      with the kube-dns Service at SERVICE_CIDR's 10th address, the node's
#      cluster DNS), applied and Ready on the node before the suite starts.
#      kube-proxy's rules are the machine's: one such cluster at a time
#      (flock /tmp/mkl-kube-proxy.lock, as the e2e test
#      TestCluster_SystemPodsKubeProxyAndCoreDNS takes it); stop.sh runs
#      kube-proxy --cleanup;
#   6. ginkgo -p --procs PROCS e2e.test with the focus [NodeConformance] (or
#      FOCUS) minus [Serial], [Disruptive], [Flaky], [Slow], [Feature:...];
#      with SUITE=conformance the focus [Conformance] minus [Disruptive]
#      and [Flaky], in two passes as ginkgo's conformance runs do: the
#      parallel one without [Serial], then the [Serial] specs one at a time;
#   7. the JUnit XML e2e.test writes is summarized (hack/conformance/report):
#      "N passed, M failed, K skipped", every failing spec with its first
#      error line; with a full run (no FOCUS) the result is kept in
#      docs/conformance/NODE.tsv (SUITE=conformance:
#      docs/conformance/full/NODE.tsv) and docs/conformance.md's table for
#      the suite is regenerated.
#
# Then everything started here is stopped again (KEEP=1 leaves it running;
# hack/conformance/stop.sh WORK cleans up later).
#
# With SPECS=FILE (make test-conformance: hack/conformance/ci-specs.txt) the
# suite runs exactly the specs FILE names, one per line, and the run fails
# unless each of them ran and passed (hack/conformance/report --expect);
# with TESTLOG_DIR set (make test) the outcome also goes to
# TESTLOG_DIR/conformance-NODE.json for make test's skip summary.
#
# Env: NODE (minikubelet or kubelet; default minikubelet), SUITE
# (nodeconformance or conformance; default nodeconformance), FOCUS (a regexp
# narrowing the focus), SPECS (a list of exact spec names instead), SKIP
# (added to the skip), PROCS (default 8), WORK (default /var/tmp/mkl-conf;
# short: it holds containerd's socket; not under /tmp: the node's files are
# there, and the hostPath guard refuses the specs' hostPaths of /tmp that
# would contain them), CONTAINERD
# (1.6 or 2, as hack/start-containerd.sh), MINIKUBELET_BIN, REGISTRY
# (default 127.0.0.1:5000), POD_CIDR (default 10.231.0.0/16), NODE_CIDR
# (default 10.232.0.1/24), KUBELET_PORT (default 10450), TIMEOUT (ginkgo's,
# default 2h), UPDATE_DOCS (default: 1 without FOCUS), BRIDGE (the pod
# bridge, default mkcbr0), NODE_IF (the node address's interface, default
# mkcnode0), MEASURED (what the docs name as measured, default the commit),
# SERVICE_CIDR (default 10.96.0.0/16). Two runs side by side need their own
# WORK, POD_CIDR, NODE_CIDR, BRIDGE, NODE_IF and SERVICE_CIDR, and wait for
# each other's kube-proxy (the lock above).
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=steps.sh
source "$(dirname "${BASH_SOURCE[0]}")/steps.sh"
require_root

NODE=${NODE:-minikubelet}
[[ $NODE == minikubelet || $NODE == kubelet ]] || die "NODE=$NODE: use minikubelet or kubelet"
SUITE=${SUITE:-nodeconformance}
[[ $SUITE == nodeconformance || $SUITE == conformance ]] || die "SUITE=$SUITE: use nodeconformance or conformance"
FOCUS=${FOCUS:-}
SPECS=${SPECS:-}
[[ -z $SPECS || -z $FOCUS ]] || die "SPECS and FOCUS exclude each other"
[[ -z $SPECS ]] || SPECS=$(realpath "$SPECS")
SKIP=${SKIP:-}
PROCS=${PROCS:-8}
WORK=$(realpath -m "${WORK:-/var/tmp/mkl-conf}")
REGISTRY=${REGISTRY:-127.0.0.1:5000}
POD_CIDR=${POD_CIDR:-10.231.0.0/16}
NODE_CIDR=${NODE_CIDR:-10.232.0.1/24}
NODE_IP=${NODE_CIDR%/*}
SERVICE_CIDR=${SERVICE_CIDR:-10.96.0.0/16}
# The kube-dns Service's ClusterIP: the 10th address, as kubeadm picks it.
DNS_IP=$(SERVICE_CIDR=$SERVICE_CIDR awk 'BEGIN { split(ENVIRON["SERVICE_CIDR"], a, "[./]"); printf "%d.%d.%d.%d", a[1], a[2], a[3], a[4] + 10 }')
KUBELET_PORT=${KUBELET_PORT:-10450}
TIMEOUT=${TIMEOUT:-2h}
NODE_NAME=mkl-conf-node
BRIDGE=${BRIDGE:-mkcbr0}
DUMMY=${NODE_IF:-mkcnode0}
if [[ -z $FOCUS && -z $SPECS ]]; then UPDATE_DOCS=${UPDATE_DOCS:-1}; else UPDATE_DOCS=${UPDATE_DOCS:-0}; fi
REPO=$(repo_root)
HACK=$REPO/hack
export PATH=$PATH:/usr/local/go/bin
[[ $WORK != / ]] || die "refusing to use / as WORK"

total=$SECONDS
trap '[[ -z $STEP ]] || step "FAILED in the step $STEP"' EXIT

# --- 1. build ---------------------------------------------------------------
build_all() {
	# Twice: its version check (etcd --version | head -1 under pipefail)
	# can die of SIGPIPE.
	"$HACK/cluster/build.sh" >"$WORK/build-cluster.log" 2>&1 ||
		"$HACK/cluster/build.sh" >"$WORK/build-cluster.log" 2>&1 || {
		cat "$WORK/build-cluster.log" >&2
		die "hack/cluster/build.sh failed"
	}
	grep -v '^/' "$WORK/build-cluster.log" || true
	CLUSTER_BIN=$(tail -n 1 "$WORK/build-cluster.log")
	# The kubelet only when it is the node.
	local want=(e2e.test kube-controller-manager kube-scheduler ginkgo agnhost nnp)
	[[ $NODE != kubelet ]] || want+=(kubelet)
	# The Aggregator spec's image (10 minutes the first time): only for the
	# whole [Conformance] suite, not make test's list.
	[[ $SUITE != conformance || -n ${SPECS:-} ]] || want+=(sample-apiserver)
	"$CONFORMANCE_DIR/build.sh" "${want[@]}" | tee "$WORK/build-conformance.log"
	BIN=$(tail -n 1 "$WORK/build-conformance.log")
	# kube-proxy and CoreDNS: built (cached) and their images pushed, to the
	# registry started here (the images step starts it too, too late for this).
	"$HACK/start-registry.sh" "$REGISTRY"
	REGISTRY=$REGISTRY "$HACK/cluster/addons.sh" images >"$WORK/build-addons.log" 2>&1 || {
		cat "$WORK/build-addons.log" >&2
		die "hack/cluster/addons.sh images failed"
	}
	grep -v '^/' "$WORK/build-addons.log" | tail -n 3 || true
	if [[ $NODE == minikubelet ]]; then
		if [[ -n ${MINIKUBELET_BIN:-} ]]; then
			step "minikubelet: using $MINIKUBELET_BIN ($("$MINIKUBELET_BIN" version 2>/dev/null | head -1 || true))"
		else
			(cd "$REPO" && CGO_ENABLED=0 go build -o "$WORK/minikubelet" ./cmd/minikubelet) || die "building minikubelet failed"
			MINIKUBELET_BIN=$WORK/minikubelet
			step "minikubelet: built from $REPO at $(git -C "$REPO" rev-parse --short HEAD)$(git -C "$REPO" diff --quiet HEAD -- . ':!docs' || echo '+dirty')"
		fi
	fi
}
mkdir -p "$WORK"
chmod 0711 "$WORK"
timed "build" build_all

# --- 2. images ----------------------------------------------------------------
timed "images" images

# --- 3. containerd and networks ------------------------------------------------
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

# kube-proxy's iptables rules are global to the machine: one cluster with
# kube-proxy at a time (the lock the e2e test of the add-ons takes too).
# Fd 9 holds it until this script ends; the processes started below close
# it, or a containerd shim could keep it.
exec 9>/tmp/mkl-kube-proxy.lock
if ! flock -n 9; then
	step "waiting for /tmp/mkl-kube-proxy.lock (another cluster with kube-proxy runs on this machine)"
	flock 9
fi
[[ $(cat /proc/sys/net/bridge/bridge-nf-call-iptables 2>/dev/null) == 1 ]] ||
	die "net.bridge.bridge-nf-call-iptables is not 1: modprobe br_netfilter && sysctl -w net.bridge.bridge-nf-call-iptables=1 (kubeadm's preflight requires it; kube-proxy's Services with backends on the client's bridge need it)"

timed "containerd and networks" setup_node_env

# --- 4. control plane -----------------------------------------------------------
CP=$WORK/cp
PKI=$CP/pki
# start_bg NAME CMD...: run CMD detached, output to CP/NAME.log, pid to CP/NAME.pid.
start_bg() {
	local name=$1
	shift
	setsid "$@" >>"$CP/$name.log" 2>&1 </dev/null 9>&- &
	echo $! >"$CP/$name.pid"
}
readyz() { [[ $(curl -s -m 5 --cacert "$PKI/ca.crt" "https://$NODE_IP:$APISERVER_PORT/readyz") == ok ]]; }
healthz_port() { [[ $(curl -sk -m 5 "https://127.0.0.1:$1/healthz") == ok ]]; }
pick_port() {
	local p
	for ((i = 0; i < 200; i++)); do
		p=$((20000 + RANDOM % 12000))
		[[ -n $(ss -Htln "sport = :$p") ]] || {
			echo "$p"
			return
		}
	done
	die "no free port"
}

control_plane() {
	# Certificates (the apiserver's kubelet client certificate among them),
	# etcd and kube-apiserver (--kubelet-preferred-address-types=InternalIP,
	# --allow-privileged) as the cluster-mode tests start them.
	local start=$SECONDS
	# On the node's address: pods reach it there through the `kubernetes`
	# Service (kube-proxy), as on a kubeadm cluster.
	SERVICE_CIDR=$SERVICE_CIDR ADVERTISE_ADDRESS=$NODE_IP "$HACK/cluster/start.sh" "$CP" "$NODE_NAME" >/dev/null 9>&-
	# shellcheck source=/dev/null
	source "$CP/ports"
	readyz || die "kube-apiserver is not ready (log: $CP/kube-apiserver.log)"
	step "etcd and kube-apiserver: ready on $NODE_IP:$APISERVER_PORT (Services $SERVICE_CIDR) in $(elapsed $((SECONDS - start)))"

	local kcm_port sched_port
	kcm_port=$(pick_port)
	start_bg kube-controller-manager "$BIN/kube-controller-manager" \
		--kubeconfig "$CP/admin.kubeconfig" --authentication-kubeconfig "$CP/admin.kubeconfig" \
		--authorization-kubeconfig "$CP/admin.kubeconfig" \
		--bind-address 127.0.0.1 --secure-port "$kcm_port" --leader-elect=false \
		--service-account-private-key-file "$PKI/sa.key" --root-ca-file "$PKI/ca.crt" \
		--cluster-signing-cert-file "$PKI/ca.crt" --cluster-signing-key-file "$PKI/ca.key" \
		--use-service-account-credentials=false --controllers '*' --v 1
	sched_port=$(pick_port)
	# kube-controller-manager may not listen yet: never hand both one port.
	while [[ $sched_port == "$kcm_port" ]]; do sched_port=$(pick_port); done
	start_bg kube-scheduler "$BIN/kube-scheduler" \
		--kubeconfig "$CP/admin.kubeconfig" --authentication-kubeconfig "$CP/admin.kubeconfig" \
		--authorization-kubeconfig "$CP/admin.kubeconfig" \
		--bind-address 127.0.0.1 --secure-port "$sched_port" --leader-elect=false --v 1
	wait_for 300 "kube-controller-manager /healthz" healthz_port "$kcm_port" || die "kube-controller-manager is not healthy (log: $CP/kube-controller-manager.log)"
	wait_for 300 "kube-scheduler /healthz" healthz_port "$sched_port" || die "kube-scheduler is not healthy (log: $CP/kube-scheduler.log)"
	step "kube-controller-manager (127.0.0.1:$kcm_port) and kube-scheduler (127.0.0.1:$sched_port): healthy"
}
timed "control plane" control_plane
KUBECONFIG_ADMIN=$CP/admin.kubeconfig

# --- 5. the node ---------------------------------------------------------------
node_ready() {
	local out
	out=$(curl -s -m 5 --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" \
		"https://$NODE_IP:$APISERVER_PORT/api/v1/nodes/$NODE_NAME") || return 1
	python3 -c 'import json,sys; n=json.load(sys.stdin); sys.exit(0 if any(c["type"]=="Ready" and c["status"]=="True" for c in n["status"]["conditions"]) else 1)' <<<"$out"
}

start_kubelet() {
	local root=$WORK/kubelet cg
	mkdir -p "$root" "$WORK/pod-logs"
	# The kubelet's cgroup root, in every v1 hierarchy (its cgroupfs driver
	# wants it to exist): pods go under /mkl-conf/kubepods, apart from any
	# other node agent's /kubepods.
	for cg in /sys/fs/cgroup/*/; do
		[[ $cg == */unified/ ]] || mkdir -p "$cg/mkl-conf"
	done
	cat >"$WORK/ctd/net.d/10-mkl-conf.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "mkl-conf",
  "plugins": [
    {"type": "bridge", "bridge": "$BRIDGE", "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "$POD_CIDR"}]], "routes": [{"dst": "0.0.0.0/0"}],
              "dataDir": "$WORK/cni-data"}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
	cat >"$WORK/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://$SOCK
cgroupDriver: cgroupfs
cgroupRoot: /mkl-conf
failCgroupV1: false
failSwapOn: false
address: $NODE_IP
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 0
podLogsDir: $WORK/pod-logs
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: $PKI/ca.crt}
authorization: {mode: AlwaysAllow}
clusterDomain: cluster.local
clusterDNS: [$DNS_IP]
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1%}
kubeAPIQPS: 50
kubeAPIBurst: 100
volumePluginDir: $root/volume-plugins
EOF
	# The kubelet sets vm.overcommit_memory, kernel.panic and
	# kernel.panic_on_oops at start (protectKernelDefaults: false); stop.sh
	# puts the machine's values back.
	[[ -f $WORK/sysctls ]] || sysctl -n vm.overcommit_memory kernel.panic kernel.panic_on_oops vm.panic_on_oom |
		paste -d' ' <(printf '%s\n' vm.overcommit_memory kernel.panic kernel.panic_on_oops vm.panic_on_oom) - >"$WORK/sysctls"
	start_bg kubelet "$BIN/kubelet" --config "$WORK/kubelet.yaml" --kubeconfig "$CP/node-$NODE_NAME.kubeconfig" \
		--root-dir "$root" --cert-dir "$root/pki" --hostname-override "$NODE_NAME" --node-ip "$NODE_IP" --v 2
}

start_minikubelet() {
	# The eviction and image GC thresholds are the kubelet's config's above
	# (evictionHard, imageGC*), so both nodes see the same host disk alike.
	mkdir -p "$WORK/mkl-root" "$WORK/pod-logs" "$WORK/manifests"
	local server=()
	# The kubelet server (logs, exec, attach, port-forward), where this
	# minikubelet has one: on the node's address, trusting the test CA's
	# client certificates (the apiserver's kubelet client).
	local usage
	usage=$("$MINIKUBELET_BIN" serve --help 2>&1 || true)
	# As docs/cluster.md joins a node: cluster pods are not held to the
	# node's Pod Security level (the API server's Pod Security Admission
	# decides; kube-proxy runs privileged without a flag), and the hostPath
	# guard keeps them off the node's own state: no --pod-security here.
	# WORK is not under /tmp, which the specs' hostPaths name.
	if [[ $usage == *-client-ca-file* ]]; then
		server=(--address "$NODE_IP" --port "$KUBELET_PORT" --client-ca-file "$PKI/ca.crt")
	else
		warn "this minikubelet has no kubelet server (no --client-ca-file): logs, exec, attach and port-forward will fail"
	fi
	start_bg minikubelet "$MINIKUBELET_BIN" serve "${server[@]}" --kubeconfig "$CP/node-$NODE_NAME.kubeconfig" \
		--node-name "$NODE_NAME" --node-ip "$NODE_IP" --runtime-endpoint "unix://$SOCK" \
		--root-dir "$WORK/mkl-root" --pod-log-dir "$WORK/pod-logs" --manifest-dir "$WORK/manifests" \
		--socket "$WORK/minikubelet.sock" --pod-cidr "$POD_CIDR" --cni-conf-dir "$WORK/ctd/net.d" \
		--cni-bridge "$BRIDGE" --cni-data-dir "$WORK/cni-data" --pod-masquerade=false \
		--cluster-dns "$DNS_IP" --log-level info \
		--eviction-hard 'memory.available<100Mi,nodefs.available<1%,imagefs.available<1%,nodefs.inodesFree<1%' \
		--image-gc-high-threshold 100 --image-gc-low-threshold 99
}

node() {
	if [[ $NODE == kubelet ]]; then start_kubelet; else start_minikubelet; fi
	wait_for 300 "node $NODE_NAME to be Ready" node_ready || die "$NODE did not make node $NODE_NAME Ready (log: $CP/$NODE.log)"
	step "$NODE: node $NODE_NAME Ready at $NODE_IP"
}
timed "node ($NODE)" node

# --- 5b. the add-ons ---------------------------------------------------------------
kubectl_admin() { "$CLUSTER_BIN/kubectl" --kubeconfig "$KUBECONFIG_ADMIN" "$@"; }
addons() {
	POD_CIDR=$POD_CIDR NODE_IP=$NODE_IP DNS_IP=$DNS_IP APISERVER="https://$NODE_IP:$APISERVER_PORT" \
		"$HACK/cluster/addons.sh" render "$WORK/addons.yaml"
	# From here on stop.sh removes kube-proxy's chains (kube-proxy --cleanup).
	echo "$BIN/kube-proxy" >"$WORK/kube-proxy"
	kubectl_admin apply -f "$WORK/addons.yaml" >"$CP/addons-apply.log" 2>&1 || {
		cat "$CP/addons-apply.log" >&2
		die "kubectl apply -f $WORK/addons.yaml failed"
	}
	kubectl_admin -n kube-system rollout status daemonset/kube-proxy --timeout 300s &&
		kubectl_admin -n kube-system rollout status deployment/coredns --timeout 300s || {
		kubectl_admin -n kube-system get pods -o wide >&2 || true
		die "the add-ons did not become Ready on $NODE_NAME (kubectl -n kube-system describe pods; logs in $CP)"
	}
	kubectl_admin -n kube-system get pods -o wide | sed 's/^/    /'
}
timed "add-ons (kube-proxy, CoreDNS; cluster DNS $DNS_IP)" addons

# --- 6. the suite ---------------------------------------------------------------
# The skip of both passes; the parallel pass skips [Serial] as well.
if [[ $SUITE == conformance ]]; then
	focus='\[Conformance\]'
	skip='\[Disruptive\]|\[Flaky\]'
else
	focus='\[NodeConformance\]'
	skip='\[Disruptive\]|\[Flaky\]|\[Slow\]|\[Feature:'
fi
[[ -z $SKIP ]] || skip+="|$SKIP"
REPORT=$WORK/report-$NODE
rm -rf "$REPORT"
mkdir -p "$REPORT"
# both A B: a regexp that needs both (in either order: RE2 has no lookahead).
both() { printf '(?:(?:%s).*(?:%s))|(?:(?:%s).*(?:%s))' "$1" "$2" "$2" "$1"; }
# pass NAME PROCS FOCUS SKIP: one ginkgo run of e2e.test, its JUnit XML and
# log in REPORT/NAME.
SUITE_RC=0
pass() {
	local name=$1 procs=$2 f=$3 sk=$4 dir=$REPORT/$1 start=$SECONDS rc par=() shown=$3
	[[ -n $f ]] || die "pass $name: empty focus"
	mkdir -p "$dir"
	((procs < 2)) || par=(-p --procs "$procs")
	((${#shown} < 300)) || shown="${shown:0:300}… (${#f} characters)"
	step "ginkgo ${par[*]:-(one process)} [$name]: focus $shown, skip $sk (log: $dir/ginkgo.log)"
	set +e
	(cd "$dir" && "$BIN/ginkgo" "${par[@]}" --timeout "$TIMEOUT" --no-color --focus "$f" --skip "$sk" \
		"$BIN/e2e.test" -- \
		--provider skeleton --kubeconfig "$KUBECONFIG_ADMIN" --report-dir "$dir" \
		--e2e-output-dir "$dir" --dump-logs-on-failure=false --kubectl-path "$CLUSTER_BIN/kubectl" \
		--node-os-distro debian --minStartupPods 0 \
		>"$dir/ginkgo.log" 2>&1)
	rc=$?
	set -e
	((rc == 0)) || SUITE_RC=$rc
	tail -n 5 "$dir/ginkgo.log"
	step "[$name]: ginkgo exit $rc after $(duration $((SECONDS - start)))"
}
# focus_for LIST: the ginkgo focus that selects exactly the specs LIST names.
focus_for() {
	local f
	f=$(cd "$REPO" && go run ./hack/conformance/report --focus-for "$1") && [[ -n $f ]] ||
		die "hack/conformance/report --focus-for $1 failed"
	printf '%s\n' "$f"
}
suite() {
	# As the conformance image runs it: everything but [Serial] in
	# parallel, then the [Serial] specs one at a time (the
	# [NodeConformance] suite leaves them out; a SPECS list may name some).
	local f=$focus
	[[ -z $FOCUS ]] || f=$(both "$focus" "$FOCUS")
	if [[ -n $SPECS ]]; then
		step "the $(grep -cv -e '^[[:space:]]*#' -e '^[[:space:]]*$' "$SPECS") specs of $SPECS"
		# Assigned first: a failure in $(...) as an argument would not stop
		# the run, and an empty focus runs everything.
		f=$(focus_for "$SPECS")
		pass parallel "$PROCS" "$f" "$skip|\[Serial\]"
		# The list's exact names end in $: its [Serial] ones get a focus
		# of their own.
		grep -v '^[[:space:]]*#' "$SPECS" | grep -F '[Serial]' >"$REPORT/serial-specs.txt" || return 0
		f=$(focus_for "$REPORT/serial-specs.txt")
		pass serial 1 "$f" "$skip"
		return
	fi
	pass parallel "$PROCS" "$f" "$skip|\[Serial\]"
	[[ $SUITE != conformance ]] || pass serial 1 "$(both "$f" '\[Serial\]')" "$skip"
}
timed "suite" suite

# --- 7. report ------------------------------------------------------------------
junit=$(find "$REPORT" -name 'junit*.xml' | sort | paste -sd, -)
[[ -n $junit ]] || die "no JUnit XML in $REPORT (ginkgo exit $SUITE_RC; logs $REPORT/*/ginkgo.log)"
report_args=(--junit "$junit" --node "$NODE")
[[ -z $SPECS ]] || report_args+=(--expect "$SPECS")
[[ -z ${TESTLOG_DIR:-} ]] || report_args+=(--testlog "$TESTLOG_DIR/conformance-$NODE.json")
if [[ $UPDATE_DOCS == 1 ]]; then
	what=kubelet
	[[ $NODE == kubelet ]] && what="kubelet $("$BIN/kubelet" --version | awk '{print $2}')"
	[[ $NODE == minikubelet ]] && what="minikubelet ${MEASURED:-$(git -C "$REPO" rev-parse --short HEAD)}"
	results=$REPO/docs/conformance
	[[ $SUITE != conformance ]] || results+=/full
	report_args+=(--results "$results" --doc "$REPO/docs/conformance.md" --section "$SUITE"
		--what "$what" --duration "$(elapsed $((SECONDS - total)))")
fi
rc=0
(cd "$REPO" && go run ./hack/conformance/report "${report_args[@]}") || rc=$?
step "total: $(duration $((SECONDS - total)))"
exit "$rc"
