// Package ipamrepair releases the pod network's leaked IPs at start: the
// host-local reservations of sandboxes the runtime no longer knows, which a
// crash of containerd or a failed CNI DEL left behind (issue #30 moved it
// out of the engine).
//
// It owns the judgement of a reservation (leaked, live, or too young to
// tell: a RunPodSandbox may be in flight) and the two policies of it
// (DaemonIPRepair, ForegroundIPRepair). The host-local store itself is the
// cni leaf's (ListHostLocal, ReleaseHostLocal); what it needs of the
// runtime, the list of sandboxes, it declares as Sandboxes, which
// cri.Runtime and cri-api's fakes satisfy. The engine (package agent)
// passes its runtime, pod network, clock, logger and metric in
// (Agent.RepairIPLeaks), and cmd calls that once, before any sandbox is
// created.
//
// It must not import the engine (package agent), agent/daemon, the CRI
// client (cri, gRPC), cgroups, probes or cmd; of the repository it uses
// the cni leaf only. hack/verify-imports.sh enforces it, for its tests
// too.
package ipamrepair
