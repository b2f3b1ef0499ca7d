// Package eviction is the pure half of the kubelet's eviction manager
// (pkg/kubelet/eviction, issue #21): eviction signals and thresholds (the
// --eviction-hard and --eviction-soft syntax and the kubelet's default hard
// thresholds), which thresholds an observation of the node meets (soft ones
// only after their grace period), and the order in which pods are evicted
// under memory or disk pressure, with the kubelet's reason and message,
// and which local storage limit (emptyDir sizeLimit, ephemeral-storage
// limits) a pod exceeds (local.go), checked with or without pressure.
//
// It owns no state beyond the first-observed times of soft thresholds
// (Tracker) and does no I/O: the agent observes the node (meminfo,
// statfs, pod cgroups) and evicts the pods this package picks. It must not
// import package agent.
//
// The agent's eviction manager (agent/eviction_manager.go) wires it: it
// observes every 10 s, reclaims dead containers and unused images before
// evicting for disk pressure, evicts one pod per cycle and marks it
// Failed/Evicted (issue #21).
package eviction
