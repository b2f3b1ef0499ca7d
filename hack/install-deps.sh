#!/usr/bin/env bash
# install-deps.sh: install what minikubelet needs on a Debian 12 machine.
#
#   1. Debian packages: containerd runc docker-registry busybox-static
#      iproute2 iptables curl netcat-openbsd bind9-dnsutils (dig, for the
#      conformance harness's DNS specs; apt-get update only when one
#      is missing).
#   2. The CNI plugins bridge, host-local, loopback and portmap, built with
#      `go build` from the github.com/containernetworking/plugins version
#      pinned in go.mod (hack/tools.go keeps the pin) into /opt/cni/bin.
#
# Idempotent: a second run checks and prints "already ..." for each step.
# Run as root from anywhere; Go must already be installed.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_root

PACKAGES=(containerd runc docker-registry busybox-static iproute2 iptables curl netcat-openbsd bind9-dnsutils)
CNI_BIN_DIR=${CNI_BIN_DIR:-/opt/cni/bin}
CNI_MODULE=github.com/containernetworking/plugins
CNI_PLUGINS=(main/bridge ipam/host-local main/loopback meta/portmap)
STAMP=$CNI_BIN_DIR/.minikubelet-plugins.version

# Step 1: Debian packages.
missing=()
for pkg in "${PACKAGES[@]}"; do
	if [[ $(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null) != installed ]]; then
		missing+=("$pkg")
	fi
done
if ((${#missing[@]} == 0)); then
	step "apt packages: already installed (${PACKAGES[*]})"
else
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	step "apt packages: installed ${missing[*]}"
fi

# Step 2: CNI plugins from the pinned module version.
if ! command -v go >/dev/null 2>&1; then
	[[ -x /usr/local/go/bin/go ]] || die "go is not installed (need the version in go.mod); see https://go.dev/doc/install"
	export PATH=$PATH:/usr/local/go/bin
fi
cd "$(repo_root)"
version=$(go list -m -f '{{.Version}}' "$CNI_MODULE")
want="$CNI_MODULE $version $(go env GOVERSION) ${CNI_PLUGINS[*]}"
have=$(cat "$STAMP" 2>/dev/null || true)
all_present=true
for p in "${CNI_PLUGINS[@]}"; do
	[[ -x $CNI_BIN_DIR/${p#*/} ]] || all_present=false
done
if [[ $have == "$want" ]] && $all_present; then
	step "CNI plugins: already installed in $CNI_BIN_DIR ($CNI_MODULE $version)"
else
	mkdir -p "$CNI_BIN_DIR"
	for p in "${CNI_PLUGINS[@]}"; do
		name=${p#*/}
		tmp=$(mktemp "$CNI_BIN_DIR/.$name.XXXXXX")
		# Build to a temp file in the same directory so the mv is atomic: a
		# containerd that execs the plugin meanwhile sees old or new, never half.
		if ! CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X $CNI_MODULE/pkg/utils/buildversion.BuildVersion=$version" -o "$tmp" "$CNI_MODULE/plugins/$p"; then
			rm -f "$tmp"
			die "build CNI plugin $name failed"
		fi
		chmod 0755 "$tmp"
		mv -f "$tmp" "$CNI_BIN_DIR/$name"
	done
	printf '%s\n' "$want" >"$STAMP.tmp"
	mv -f "$STAMP.tmp" "$STAMP"
	step "CNI plugins: built ${CNI_PLUGINS[*]##*/} ($CNI_MODULE $version) into $CNI_BIN_DIR"
fi
