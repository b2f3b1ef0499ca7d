# shellcheck shell=bash
# Steps shared by hack/conformance/run.sh (e2e.test against a node of a
# private cluster) and hack/conformance/node.sh (e2e_node.test in
# conformance mode). Source it after lib.sh; the functions read the
# caller's globals (WORK, REPO, HACK, BIN, REGISTRY, NODE_CIDR, POD_CIDR,
# DUMMY, total) and set SOCK (setup_node_env).

# timed NAME CMD...: as hack/lib.sh's timed (a line before, one with the
# duration after), but CMD runs under set -e: a failing step ends the run,
# and the EXIT trap says which step failed after how long.
STEP=
timed() {
	local what=$1 start=$SECONDS
	shift
	STEP="$what (started $(date -u +%T), after $(duration $((SECONDS - total))) of the run)"
	step "$what ..."
	"$@"
	STEP=
	step "$what: done in $(duration $((SECONDS - start)))"
}

# agnhost_extra DIR: fill DIR with what the real agnhost image's Dockerfile
# (k8s.io/kubernetes test/images/agnhost, on Alpine) adds and the specs use,
# for hack/images to layer on top of the agnhost program: the porter TLS
# pair /localhost.crt and /localhost.key (netexec --tls-cert-file for the
# https lifecycle hooks), curl (the exec hooks and the Networking Granular
# Checks' /dial), /bin/bash (the probe specs' scripts) and an nc with -u
# (netcat-openbsd as /usr/bin/nc; busybox's has no UDP), each with the
# shared libraries ldd names, from this Debian host; and dash as /bin/sh:
# Debian's busybox-static is built with the standalone shell, whose sh runs
# its own applet for a name like nc before looking at PATH, while the real
# image's sh (Alpine's busybox) finds /usr/bin/nc in PATH as dash does.
# For the DNS specs ([Conformance], test/e2e/network/dns_common.go: their
# probes run `dig +notcp|+tcp +noall +answer +search NAME` and `getent
# hosts NAME` in agnhost and in the glibc-dns-testing image, which hack/images
# builds from the same tree): dig (bind9-dnsutils) and glibc's getent, with
# an nsswitch.conf that reads /etc/hosts, then DNS. The real image's other
# tools (iperf, socat, coredns) no spec run here needs.
agnhost_extra() {
	local d=$1 kdir pair src dst lib
	rm -rf "$d"
	mkdir -p "$d"
	kdir=$(cd "$CLUSTER_MOD" && go list -m -f '{{.Dir}}' k8s.io/kubernetes) || die "cannot find the k8s.io/kubernetes module (go list -m in $CLUSTER_MOD)"
	install -m 0644 "$kdir/test/images/agnhost/porter/localhost.crt" "$d/localhost.crt"
	install -m 0644 "$kdir/test/images/agnhost/porter/localhost.key" "$d/localhost.key"
	for pair in /usr/bin/curl:usr/bin/curl /bin/bash:bin/bash /usr/bin/nc.openbsd:usr/bin/nc /bin/dash:bin/sh \
		/usr/bin/dig:usr/bin/dig /usr/bin/getent:usr/bin/getent; do
		src=${pair%%:*} dst=${pair#*:}
		[[ -x $src ]] || die "$src missing: apt-get install curl bash netcat-openbsd dash bind9-dnsutils libc-bin (hack/install-deps.sh installs them; dash is Debian's /bin/sh)"
		install_with_libs "$src" "$d" "$dst"
	done
	mkdir -p "$d/etc"
	printf 'passwd: files\ngroup: files\nhosts: files dns\n' >"$d/etc/nsswitch.conf"
	step "agnhost extras: $(find "$d" -type f | wc -l) files ($(du -sh "$d" | cut -f1)) in $d"
}
# install_with_libs SRC DIR DST: SRC as DIR/DST, with the shared libraries
# ldd names ("libX.so => /lib/.../libX.so (0x...)" and
# "/lib64/ld-linux-x86-64.so.2 (0x...)") at their paths below DIR.
install_with_libs() {
	local src=$1 d=$2 dst=$3 lib
	install -D -m 0755 "$src" "$d/$dst"
	for lib in $(ldd "$src" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'); do
		[[ -e $d$lib ]] || install -D -m 0755 "$(realpath "$lib")" "$d$lib"
	done
}
images() {
	"$HACK/start-registry.sh" "$REGISTRY"
	"$BIN/e2e.test" --list-images >"$WORK/e2e-images.txt"
	# The sandbox image of the private containerd and the suite's images.
	(cd "$REPO" && go run ./hack/images --registry "$REGISTRY") >"$WORK/images.log" 2>&1 ||
		die "hack/images failed (log: $WORK/images.log)"
	agnhost_extra "$WORK/agnhost-extra"
	# The busybox image is upstream BusyBox, as the real one (build-busybox.sh says why).
	"$CONFORMANCE_DIR/build-busybox.sh" | tee "$WORK/build-busybox.log"
	# The etcd image carries the control plane's etcd; nautilus and kitten
	# their files from the k8s.io/kubernetes source e2e.test was built from.
	local more=() src
	[[ -z ${CLUSTER_BIN:-} || ! -x $CLUSTER_BIN/etcd ]] || more+=(--e2e-etcd "$CLUSTER_BIN/etcd")
	if src=$(cd "$CLUSTER_MOD" && go list -m -f '{{.Dir}}' k8s.io/kubernetes 2>/dev/null) && [[ -d $src/test/images ]]; then
		more+=(--e2e-kube-src "$src")
	else
		warn "no k8s.io/kubernetes source in the module cache: the nautilus and kitten images are skipped (kubectl's Update Demo specs fail)"
	fi
	(cd "$REPO" && go run ./hack/images --registry "$REGISTRY" --e2e "$WORK/e2e-images.txt" --e2e-bin "$BIN" \
		--e2e-agnhost-extra "$WORK/agnhost-extra" --e2e-busybox "$(tail -n 1 "$WORK/build-busybox.log")" "${more[@]}") |
		tee -a "$WORK/images.log" | grep -E 'pushed|skipped|e2e:' || true
	[[ ${PIPESTATUS[0]} == 0 ]] || die "hack/images --e2e failed (log: $WORK/images.log)"
}
setup_node_env() {
	SOCK=$(CONTAINERD=${CONTAINERD:-} "$HACK/start-containerd.sh" "$WORK/ctd" 9>&- | tail -n 1)
	# A bridge without ports: this kernel may lack the dummy driver, and an
	# empty bridge holds a local address as well.
	if ! ip link show "$DUMMY" >/dev/null 2>&1; then
		ip link add "$DUMMY" type dummy 2>/dev/null || ip link add "$DUMMY" type bridge
	fi
	ip addr replace "$NODE_CIDR" dev "$DUMMY"
	ip link set "$DUMMY" up
	echo "$DUMMY $NODE_CIDR" >"$WORK/dummy"
	step "node address $NODE_CIDR on the interface $DUMMY"
	"$HACK/isolate-pod-network.sh" "$POD_CIDR"
	echo "$POD_CIDR" >"$WORK/isolated"
}
