#!/usr/bin/env bash
# addons.sh: the cluster's own system pods, kube-proxy and CoreDNS, as
# kubeadm installs them (addons/*.yaml), for a cluster whose node runs on
# this machine.
#
#   addons.sh images
#       builds kube-proxy (k8s.io/kubernetes at hack/cluster/go.mod's
#       version, module hack/kubeproxy) and CoreDNS (hack/coredns) with
#       hack/conformance/build.sh (cached per machine: stamps, its lock),
#       and pushes registry.k8s.io/kube-proxy:<kube> and
#       registry.k8s.io/coredns/coredns:<coredns> to REGISTRY (default
#       127.0.0.1:5000, where the private containerd's mirror of
#       registry.k8s.io looks) with hack/images --system. The kube-proxy
#       image gets this machine's iptables (iptables -V: nf_tables or
#       legacy) with its shared libraries and xtables extensions. Prints
#       the build directory as the last line.
#   addons.sh render OUT
#       writes the manifests, filled in, to OUT. Env: POD_CIDR (the pod
#       network: kube-proxy's clusterCIDR), NODE_IP (the node's address:
#       NodePorts, health and metrics listen there only), DNS_IP (the
#       kube-dns Service's ClusterIP: the node's --cluster-dns), APISERVER
#       (the URL kube-proxy, on the host network, reaches the apiserver at),
#       CLUSTER_DOMAIN (default cluster.local), UPSTREAM_DNS (an address
#       on this machine CoreDNS forwards other names to; default none:
#       no forward, see addons/coredns.yaml).
#
# Apply with `kubectl apply -f OUT`; the DaemonSet needs
# kube-controller-manager, both need kube-scheduler. iptables mode changes
# the machine's iptables: after the cluster is gone,
# `<build dir>/kube-proxy --cleanup` removes kube-proxy's chains.
set -euo pipefail
# shellcheck source=../conformance/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../conformance/lib.sh"
export PATH=$PATH:/usr/local/go/bin
REPO=$(repo_root)

corednsVersion() {
	local v
	# "require github.com/coredns/coredns v1.15.0" or a line of a require block.
	v=$(awk '$1 == "require" { $1 = "" ; $0 = $0 } $1 == "github.com/coredns/coredns" && $2 ~ /^v/ { print $2; exit }' "$REPO/hack/coredns/go.mod")
	[[ -n $v ]] || die "hack/coredns/go.mod requires no github.com/coredns/coredns"
	printf '%s\n' "$v"
}

# iptables_tree DIR: the host's iptables in the mode it uses, as the
# kube-proxy image needs it: iptables, ip6tables and their -save and
# -restore as links to the xtables multi-binary, the xtables extensions,
# each binary's shared libraries (from ldd), /etc/protocols.
iptables_tree() {
	local d=$1 mode multi x lib f
	rm -rf "$d"
	mkdir -p "$d/usr/sbin" "$d/etc"
	command -v iptables >/dev/null || die "iptables missing: apt-get install iptables (hack/install-deps.sh)"
	mode=$(iptables -V)
	case $mode in
	*nf_tables*) multi=xtables-nft-multi ;;
	*legacy*) multi=xtables-legacy-multi ;;
	*) die "iptables -V says '$mode': neither nf_tables nor legacy" ;;
	esac
	multi=$(command -v "$multi") || die "$multi missing (iptables -V: $mode)"
	install -m 0755 "$multi" "$d/usr/sbin/${multi##*/}"
	for x in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore; do
		ln -s "${multi##*/}" "$d/usr/sbin/$x"
	done
	x=$(dirname "$(realpath "$(ldd "$multi" | awk '/libxtables/ { print $3 }')")")/xtables
	[[ -d $x ]] || die "no xtables extension directory at $x"
	mkdir -p "$d$x"
	cp -a "$x/." "$d$x/"
	for f in "$multi" "$x"/*.so; do
		# "libX.so => /lib/.../libX.so (0x...)" and "/lib64/ld-linux-x86-64.so.2 (0x...)".
		for lib in $(ldd "$f" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'); do
			[[ -e $d$lib ]] || install -D -m 0755 "$(realpath "$lib")" "$d$lib"
		done
	done
	install -m 0644 /etc/protocols "$d/etc/protocols"
	step "iptables for the kube-proxy image: $mode, $(find "$d" -type f | wc -l) files ($(du -sh "$d" | cut -f1))"
}

images() {
	local bin tree start=$SECONDS
	bin=$("$CONFORMANCE_DIR/build.sh" kube-proxy coredns | tail -n 1)
	tree=$(mktemp -d /tmp/mkl-iptables.XXXXXX)
	trap 'rm -rf "$tree"' RETURN
	iptables_tree "$tree/root"
	(cd "$REPO" && nice -n 19 go run ./hack/images --registry "${REGISTRY:-127.0.0.1:5000}" --system "$bin" \
		--system-iptables "$tree/root" --kube-version "$(cluster_kube_version)" --coredns-version "$(corednsVersion)") >&2 ||
		die "hack/images --system failed"
	step "add-on images: ready in $(elapsed $((SECONDS - start)))"
	echo "$bin"
}

render() {
	local out=$1 v forward=
	for v in POD_CIDR NODE_IP DNS_IP APISERVER; do
		[[ -n ${!v:-} ]] || die "render: set $v (see $0's header)"
	done
	if [[ -n ${UPSTREAM_DNS:-} ]]; then
		[[ -n $(ip -o addr show to "$UPSTREAM_DNS/32") ]] ||
			die "UPSTREAM_DNS=$UPSTREAM_DNS is no address of this machine: pods must not leave it"
		forward="forward . $UPSTREAM_DNS"
	fi
	{
		cat "$CLUSTER_MOD/addons/kube-proxy.yaml"
		echo ---
		cat "$CLUSTER_MOD/addons/coredns.yaml"
	} | sed -e "s|@POD_CIDR@|$POD_CIDR|g" -e "s|@NODE_IP@|$NODE_IP|g" -e "s|@DNS_IP@|$DNS_IP|g" \
		-e "s|@APISERVER@|$APISERVER|g" -e "s|@CLUSTER_DOMAIN@|${CLUSTER_DOMAIN:-cluster.local}|g" \
		-e "s|@FORWARD@|$forward|" -e "s|@KUBE_VERSION@|$(cluster_kube_version)|g" \
		-e "s|@COREDNS_VERSION@|$(corednsVersion)|g" >"$out.tmp"
	! grep -n '@[A-Z_]*@' "$out.tmp" || die "render: placeholders left in $out"
	mv "$out.tmp" "$out"
	step "add-on manifests: $out"
}

case ${1:-} in
images) images ;;
render)
	(($# == 2)) || die "usage: $0 render OUT"
	render "$2"
	;;
*) die "usage: $0 images | render OUT" ;;
esac
