#!/usr/bin/env bash
# start.sh DIR [NODE...]: start a private Kubernetes control plane on loopback
# for the cluster-mode tests (etcd and kube-apiserver as built by
# hack/cluster/build.sh; no controller-manager, no scheduler), keeping
# everything under DIR:
#
#   DIR/ports                    ETCD_PORT, ETCD_PEER_PORT, APISERVER_PORT
#                                (chosen free once, then kept, so a restarted
#                                apiserver serves at the same address)
#   DIR/pki/                     ca.{crt,key}; apiserver.{crt,key} (serving,
#                                SANs 127.0.0.1, localhost, kubernetes.default…);
#                                admin.{crt,key} (O=system:masters);
#                                apiserver-kubelet-client.{crt,key} (the
#                                apiserver's identity at the nodes' kubelet
#                                servers, O=system:masters; nodes trust
#                                ca.crt as --client-ca-file);
#                                node-NAME.{crt,key} (CN=system:node:NAME,
#                                O=system:nodes); sa.{key,pub} (service-account
#                                token signing, so TokenRequest works);
#                                front-proxy-ca.{crt,key} and
#                                front-proxy-client.{crt,key} (the aggregator's
#                                identity at aggregated API servers)
#   DIR/admin.kubeconfig         cluster-admin credentials
#   DIR/node-NAME.kubeconfig     one per NODE (default: minikubelet-node), the
#                                identity the Node authorizer and NodeRestriction
#                                expect of a kubelet
#   DIR/etcd/                    etcd's data dir
#   DIR/{etcd,kube-apiserver}.{log,pid}
#
# The apiserver runs with --authorization-mode=Node,RBAC, the NodeRestriction
# and ServiceAccount admission plugins, bootstrap tokens
# (--enable-bootstrap-token-auth: a token Secret in kube-system, as kubeadm
# makes, authenticates TLS bootstrapping), and the API aggregation layer
# (--requestheader-*, --proxy-client-*; --enable-aggregator-routing, since
# no kube-proxy makes Service IPs reachable: the aggregator dials the
# endpoints of an APIService's Service itself); what the missing controller-manager
# would do is done here once: the `default` ServiceAccount and the
# `kube-root-ca.crt` ConfigMap in the default namespace (a test that uses
# another namespace creates those itself).
#
# Idempotent: a running etcd or apiserver is left alone, a stopped one is
# started (hack/cluster/stop.sh DIR kube-apiserver, then start.sh DIR, is an
# apiserver outage); a NODE without credentials gets them. Waits until
# /readyz answers ok, then prints DIR/admin.kubeconfig as the last line.
# Env: READY_TIMEOUT (seconds, default 180), CLUSTER_BIN (default: the
# pinned build), SERVICE_CIDR (default 10.96.0.0/16), ADVERTISE_ADDRESS
# (default none: loopback only). With ADVERTISE_ADDRESS, an address of this
# machine (the test node's own dummy interface), the apiserver listens on
# it instead of 127.0.0.1, the kubeconfigs name it, and it is the
# `kubernetes` Service's endpoint (--endpoint-reconciler-type lease, as
# kubeadm's clusters have it): what pods need to reach the API server
# through kube-proxy (the CoreDNS add-on, hack/cluster/addons).
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

(($# >= 1)) || die "usage: $0 DIR [NODE...]"
DIR=$(realpath -m "$1")
shift
NODES=("$@")
((${#NODES[@]})) || NODES=(minikubelet-node)
READY_TIMEOUT=${READY_TIMEOUT:-180}
SERVICE_CIDR=${SERVICE_CIDR:-10.96.0.0/16}
[[ $DIR != / ]] || die "refusing to use / as DIR"

BIN=$(cluster_bin)
for b in etcd kube-apiserver; do
	[[ -x $BIN/$b ]] || die "$BIN/$b missing: build the control plane first (hack/cluster/build.sh, a few minutes once)"
done
command -v openssl >/dev/null || die "openssl missing: apt-get install openssl"
command -v curl >/dev/null || die "curl missing: apt-get install curl"

mkdir -p "$DIR/pki"
chmod 0700 "$DIR"
PKI=$DIR/pki

# port_free PORT: true if nothing listens on 127.0.0.1:PORT (TCP).
port_free() { [[ -z $(ss -Htln "sport = :$1") ]]; }

# pick_port VAR: sets VAR to a free port below the ephemeral range
# (32768+), so that outgoing connections never take it between this
# choice and the bind, and never to one picked before. It runs in this
# shell, not in $(...): a subshell's PICKED would be lost, and etcd and
# kube-apiserver once drew the same port.
pick_port() {
	local p i
	for ((i = 0; i < 200; i++)); do
		p=$((20000 + RANDOM % 12000))
		if port_free "$p" && [[ " ${PICKED:-} " != *" $p "* ]]; then
			PICKED="${PICKED:-} $p"
			printf -v "$1" '%s' "$p"
			return
		fi
	done
	die "no free TCP port found in 20000-31999"
}

if [[ ! -f $DIR/ports ]]; then
	pick_port ETCD_PORT
	pick_port ETCD_PEER_PORT
	pick_port APISERVER_PORT
	printf 'ETCD_PORT=%s\nETCD_PEER_PORT=%s\nAPISERVER_PORT=%s\n' \
		"$ETCD_PORT" "$ETCD_PEER_PORT" "$APISERVER_PORT" >"$DIR/ports.tmp"
	mv "$DIR/ports.tmp" "$DIR/ports"
fi
# shellcheck source=/dev/null
source "$DIR/ports"
ADVERTISE_ADDRESS=${ADVERTISE_ADDRESS:-}
API_ADDR=127.0.0.1
if [[ -n $ADVERTISE_ADDRESS ]]; then
	[[ $ADVERTISE_ADDRESS =~ ^[0-9]{1,3}(\.[0-9]{1,3}){3}$ ]] || die "ADVERTISE_ADDRESS=$ADVERTISE_ADDRESS: not an IPv4 address"
	[[ -n $(ip -4 -o addr show to "$ADVERTISE_ADDRESS/32") ]] || die "ADVERTISE_ADDRESS=$ADVERTISE_ADDRESS is no address of this machine: add it to an interface first (ip addr add)"
	API_ADDR=$ADVERTISE_ADDRESS
fi
SERVER=https://$API_ADDR:$APISERVER_PORT

# --- certificates ---------------------------------------------------------
# ECDSA P-256 keys: generated in milliseconds, accepted everywhere here.
newkey() { openssl ecparam -name prime256v1 -genkey -noout -out "$1" 2>/dev/null && chmod 0600 "$1"; }

if [[ ! -f $PKI/ca.crt ]]; then
	newkey "$PKI/ca.key"
	openssl req -x509 -new -key "$PKI/ca.key" -subj "/CN=minikubelet-test-ca" -days 3650 \
		-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
		-out "$PKI/ca.crt" 2>/dev/null || die "creating the CA failed"
	step "created a CA ($PKI/ca.crt)"
fi

# The front-proxy CA: the apiserver's aggregator proxies requests for an
# aggregated API (metrics.k8s.io from metrics-server, for `kubectl top`) with
# a client certificate of this CA and the user in X-Remote-* headers. A CA of
# its own, as kubeadm does: the extension server trusts those headers from
# any certificate it signed, so no node or user certificate may chain to it.
if [[ ! -f $PKI/front-proxy-ca.crt ]]; then
	newkey "$PKI/front-proxy-ca.key"
	openssl req -x509 -new -key "$PKI/front-proxy-ca.key" -subj "/CN=minikubelet-test-front-proxy-ca" -days 3650 \
		-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
		-out "$PKI/front-proxy-ca.crt" 2>/dev/null || die "creating the front-proxy CA failed"
fi

# sign NAME SUBJECT EXTKEYUSAGE [SAN]: PKI/NAME.{key,crt} signed by the CA
# (SIGN_CA names another one under PKI, e.g. front-proxy-ca).
sign() {
	local name=$1 subj=$2 eku=$3 san=${4:-} ext ca=${SIGN_CA:-ca}
	[[ -f $PKI/$name.crt ]] && return 0
	newkey "$PKI/$name.key"
	ext=$(mktemp)
	{
		echo "basicConstraints=critical,CA:FALSE"
		echo "keyUsage=critical,digitalSignature,keyEncipherment"
		echo "extendedKeyUsage=$eku"
		[[ -z $san ]] || echo "subjectAltName=$san"
	} >"$ext"
	openssl req -new -key "$PKI/$name.key" -subj "$subj" 2>/dev/null |
		openssl x509 -req -CA "$PKI/$ca.crt" -CAkey "$PKI/$ca.key" -CAcreateserial -days 3650 \
			-extfile "$ext" -out "$PKI/$name.crt.tmp" 2>/dev/null || {
		rm -f "$ext"
		die "signing the $name certificate failed"
	}
	rm -f "$ext"
	mv "$PKI/$name.crt.tmp" "$PKI/$name.crt"
}

# The first address of the service range is the `kubernetes` service's.
svc_ip=$(SERVICE_CIDR=$SERVICE_CIDR awk 'BEGIN { split(ENVIRON["SERVICE_CIDR"], a, "[./]"); printf "%d.%d.%d.%d", a[1], a[2], a[3], a[4] + 1 }')
sign apiserver "/CN=kube-apiserver" serverAuth \
	"IP:127.0.0.1,IP:$svc_ip${ADVERTISE_ADDRESS:+,IP:$ADVERTISE_ADDRESS},DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
sign admin "/O=system:masters/CN=minikubelet-test-admin" clientAuth
# The apiserver's client certificate towards the nodes' kubelet servers
# (logs, exec, attach, port-forward, node proxy); the node asks the
# apiserver (SubjectAccessReview) whether it may, and system:masters may.
sign apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" clientAuth
SIGN_CA=front-proxy-ca sign front-proxy-client "/CN=front-proxy-client" clientAuth
for n in "${NODES[@]}"; do
	[[ $n =~ ^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$ ]] || die "node name '$n' is not a valid DNS-1123 subdomain (lower-case letters, digits, '-' and '.')"
	sign "node-$n" "/O=system:nodes/CN=system:node:$n" clientAuth
done
if [[ ! -f $PKI/sa.key ]]; then
	newkey "$PKI/sa.key"
	openssl ec -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null || die "deriving the service-account public key failed"
fi

# kubeconfig FILE USER CERTNAME: a kubeconfig with embedded credentials.
kubeconfig() {
	local file=$1 user=$2 cert=$3
	[[ -f $file ]] && return 0
	cat >"$file.tmp" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: minikubelet-test
  cluster:
    server: $SERVER
    certificate-authority-data: $(base64 -w0 "$PKI/ca.crt")
users:
- name: $user
  user:
    client-certificate-data: $(base64 -w0 "$PKI/$cert.crt")
    client-key-data: $(base64 -w0 "$PKI/$cert.key")
contexts:
- name: $user
  context:
    cluster: minikubelet-test
    user: $user
current-context: $user
EOF
	chmod 0600 "$file.tmp"
	mv "$file.tmp" "$file"
}
kubeconfig "$DIR/admin.kubeconfig" admin admin
for n in "${NODES[@]}"; do
	kubeconfig "$DIR/node-$n.kubeconfig" "system:node:$n" "node-$n"
done

# --- etcd -----------------------------------------------------------------
# start_bg NAME CMD...: run CMD detached (its own session, so a test's
# process group signal does not reach it), output to DIR/NAME.log.
start_bg() {
	local name=$1
	shift
	setsid "$@" >>"$DIR/$name.log" 2>&1 </dev/null &
	echo $! >"$DIR/$name.pid"
}

start_at=$SECONDS
if pid=$(pidfile_alive "$DIR/etcd.pid"); then
	step "etcd: already running (pid $pid, 127.0.0.1:$ETCD_PORT)"
else
	port_free "$ETCD_PORT" || die "127.0.0.1:$ETCD_PORT (etcd) is taken by another process; remove $DIR/ports to choose new ports"
	# --unsafe-no-fsync: a throw-away test store; fsync on a shared VM disk
	# costs seconds per write burst and buys nothing here.
	start_bg etcd "$BIN/etcd" --name minikubelet-test --data-dir "$DIR/etcd" \
		--listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
		--listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
		--initial-cluster "minikubelet-test=http://127.0.0.1:$ETCD_PEER_PORT" \
		--unsafe-no-fsync --log-level warn
	etcd_ok() { pidfile_alive "$DIR/etcd.pid" >/dev/null && http_ok "http://127.0.0.1:$ETCD_PORT/health"; }
	if ! wait_for 60 "etcd to answer on 127.0.0.1:$ETCD_PORT" etcd_ok; then
		tail -n 20 "$DIR/etcd.log" >&2 || true
		die "etcd did not become healthy within 60s (log: $DIR/etcd.log)"
	fi
	step "etcd: started (pid $(<"$DIR/etcd.pid"), 127.0.0.1:$ETCD_PORT) in $((SECONDS - start_at))s"
fi

# --- kube-apiserver -------------------------------------------------------
readyz() {
	local out
	out=$(curl -s -m 5 --cacert "$PKI/ca.crt" "$SERVER/readyz") || return 1
	[[ $out == ok ]]
}

api_at=$SECONDS
if pid=$(pidfile_alive "$DIR/kube-apiserver.pid"); then
	step "kube-apiserver: already running (pid $pid, $SERVER)"
else
	port_free "$APISERVER_PORT" || die "127.0.0.1:$APISERVER_PORT (kube-apiserver) is taken by another process; remove $DIR/ports to choose new ports"
	# --endpoint-reconciler-type=none on loopback: the `kubernetes`
	# Endpoints would hold 127.0.0.1, which Endpoints validation refuses.
	reconciler=none
	[[ -z $ADVERTISE_ADDRESS ]] || reconciler=lease
	start_bg kube-apiserver "$BIN/kube-apiserver" \
		--bind-address "$API_ADDR" --advertise-address "$API_ADDR" --secure-port "$APISERVER_PORT" \
		--cert-dir "$PKI" --tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" \
		--client-ca-file "$PKI/ca.crt" \
		--kubelet-client-certificate "$PKI/apiserver-kubelet-client.crt" --kubelet-client-key "$PKI/apiserver-kubelet-client.key" \
		--kubelet-preferred-address-types InternalIP \
		--etcd-servers "http://127.0.0.1:$ETCD_PORT" \
		--service-cluster-ip-range "$SERVICE_CIDR" \
		--authorization-mode Node,RBAC --enable-bootstrap-token-auth \
		--enable-admission-plugins NodeRestriction,ServiceAccount \
		--service-account-issuer https://kubernetes.default.svc.cluster.local \
		--service-account-key-file "$PKI/sa.pub" --service-account-signing-key-file "$PKI/sa.key" \
		--requestheader-client-ca-file "$PKI/front-proxy-ca.crt" --requestheader-allowed-names front-proxy-client \
		--requestheader-username-headers X-Remote-User --requestheader-group-headers X-Remote-Group \
		--requestheader-extra-headers-prefix X-Remote-Extra- \
		--proxy-client-cert-file "$PKI/front-proxy-client.crt" --proxy-client-key-file "$PKI/front-proxy-client.key" \
		--enable-aggregator-routing=true \
		--allow-privileged=true --endpoint-reconciler-type "$reconciler" --profiling=false \
		--v 1
	if ! wait_for "$READY_TIMEOUT" "kube-apiserver /readyz at $SERVER" readyz; then
		tail -n 30 "$DIR/kube-apiserver.log" >&2 || true
		die "kube-apiserver did not answer /readyz within ${READY_TIMEOUT}s (log: $DIR/kube-apiserver.log)"
	fi
	step "kube-apiserver: ready (pid $(<"$DIR/kube-apiserver.pid"), $SERVER) in $((SECONDS - api_at))s"
fi

# --- what the controller-manager would have created -----------------------
# apply PATH JSON: POST JSON to PATH as admin; an existing object is fine.
apply() {
	local code
	code=$(curl -s -o "$DIR/.apply.out" -w '%{http_code}' -m 10 --cacert "$PKI/ca.crt" \
		--cert "$PKI/admin.crt" --key "$PKI/admin.key" -H 'Content-Type: application/json' \
		-X POST --data "$2" "$SERVER$1") || die "POST $1 failed (is the apiserver still up? log: $DIR/kube-apiserver.log)"
	[[ $code == 201 || $code == 409 ]] || die "POST $1: HTTP $code: $(cat "$DIR/.apply.out")"
	rm -f "$DIR/.apply.out"
}
apply /api/v1/namespaces/default/serviceaccounts '{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"default"}}'
ca_json=$(awk 'BEGIN { ORS = "\\n" } { print }' "$PKI/ca.crt")
apply /api/v1/namespaces/default/configmaps "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"kube-root-ca.crt\"},\"data\":{\"ca.crt\":\"$ca_json\"}}"

step "control plane ready at $SERVER: admin $DIR/admin.kubeconfig, node(s): ${NODES[*]} ($DIR/node-NAME.kubeconfig)"
echo "$DIR/admin.kubeconfig"
