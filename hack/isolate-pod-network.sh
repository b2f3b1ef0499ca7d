#!/usr/bin/env bash
# isolate-pod-network.sh CIDR: keep pods in CIDR off every network but their
# own: insert (once) an iptables FORWARD rule that rejects traffic from CIDR
# to any address outside CIDR. REJECT rather than DROP, so that a DNS lookup
# or connection attempt fails at once instead of timing out.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_root

(($# == 1)) || die "usage: $0 CIDR (e.g. 10.89.0.0/16)"
CIDR=$1
[[ $CIDR =~ ^[0-9]{1,3}(\.[0-9]{1,3}){3}/[0-9]{1,2}$ ]] || die "not an IPv4 CIDR: $CIDR"
command -v iptables >/dev/null || die "iptables missing; run hack/install-deps.sh first"

rule=(FORWARD -s "$CIDR" ! -d "$CIDR" -m comment --comment "minikubelet: isolate pod network $CIDR" -j REJECT --reject-with icmp-port-unreachable)
if iptables -w -C "${rule[@]}" 2>/dev/null; then
	step "iptables: FORWARD already rejects $CIDR -> outside $CIDR"
else
	iptables -w -I "${rule[@]}"
	step "iptables: inserted FORWARD rule rejecting $CIDR -> outside $CIDR"
fi
