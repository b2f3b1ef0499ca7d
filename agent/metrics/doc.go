// Package metrics holds the daemon's Prometheus metrics (issue #30 moved
// them out of the engine): the collectors, kubelet-named where the kubelet
// has one (pkg/kubelet/metrics), and the registry served at /metrics.
//
// It owns the metric names, help texts, labels and buckets (docs and the
// e2e tests read them, so they change only on purpose), the text
// exposition (Write), and the per-pod series' end (ForgetPod). The engine
// (package agent) builds one Metrics per agent, passing its running pods
// count in as a function, and updates the exported collectors where the
// events happen; GC and eviction register their own collectors in
// Registry.
//
// It must not import the engine (package agent), agent/daemon, the CRI
// (cri, cri-api, gRPC) or any other package of this repository.
// hack/verify-imports.sh enforces it, for its tests too.
package metrics
