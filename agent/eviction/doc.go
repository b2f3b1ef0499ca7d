// Package eviction is the kubelet's eviction manager (pkg/kubelet/eviction,
// issues #21 and #30): the rules and the manager that applies them.
//
// It owns:
//   - the rules, pure: eviction signals and thresholds (the --eviction-hard
//     and --eviction-soft syntax and the kubelet's default hard
//     thresholds), which thresholds an observation of the node meets (soft
//     ones only after their grace period; Tracker), the order in which pods
//     are evicted under memory, disk or PID pressure with the kubelet's
//     reason and message (ranking.go), and which local storage limit
//     (emptyDir sizeLimit, ephemeral-storage limits) a pod exceeds
//     (local.go), and an evicted pod's status (EvictedStatus, status.go);
//   - the manager (manager.go, manager_local.go, config.go): its loop (observe every
//     Period, reclaim node-level resources for disk, evict one pod per
//     cycle, wait for its cleanup), the pressure conditions and their
//     transition period, the eviction records and metrics, and the answer
//     to the engine's one question at admission (Manager.Admit);
//   - the trimming of an evicted pod's termination-message files
//     (trim.go);
//   - the pure parts of the engine's side (pods.go): which of the pods it
//     runs may be ranked, given each one's state (Evictable), and the
//     decision it keeps on an evicted pod's worker (Decision).
//
// It sees the engine through narrow interfaces the engine implements:
// Pods (the pods it may rank, a way to evict one, whether an evicted one
// was cleaned up; the engine passes its own methods as PodsFuncs),
// StatsProvider (the node's signals and the pods' usage: its subpackage
// agent/eviction/hoststats reads the host, the pods' cgroups and the
// runtime, and configures its walks through WalkConfigurer; this package
// never imports it) and Reclaimer (agent/gc). The engine (package agent)
// builds the manager (EnableEviction), runs its loop, kills the pods it
// evicts and asks it at admission and for the Node status (Admit,
// NodePressure). A nil Manager (eviction not enabled) runs no loop, admits
// every pod and reports no pressure, so that the engine calls it as is.
//
// It must not import the engine (package agent), the CRI client or any
// runtime leaf (cri, cni, cgroups, probes), agent/eviction/hoststats (the
// host's measurements), agent/daemon, agent/node,
// agent/api, agent/cluster or cmd; of the repository it uses agent/podspec
// (a pod's QoS class and resources) and agent/source (which pods are
// static). hack/verify-imports.sh enforces it, for its tests too.
package eviction
