// Package podcgroup holds the pod and QoS-tier cgroups, as the kubelet's
// pod container manager and QoS container manager (pkg/kubelet/cm) do
// it; issue #30 moved them out of the engine:
//
//	kubepods                 node allocatable: CPU shares, memory, pids (EnsureNode)
//	├── pod<uid>             Guaranteed pods
//	├── burstable            shares from the Burstable pods' CPU requests (UpdateBurstableTier)
//	│   └── pod<uid>
//	└── besteffort           the minimum shares
//	    └── pod<uid>
//
// It owns the pure translation of a pod into its cgroup's name and values
// (qos.go: Name, Resources, the node's and the tiers' values) and a small
// Manager over a cgroups driver and the node's config that creates,
// updates and removes them (manager.go). The engine (package agent,
// agent/cgroups.go) builds a Manager per use from its driver and config,
// keeps the burstable tier's last shares in a BurstableTier, and does
// what needs its own state: the pod dir that marks a pod cgroup as its
// own, and the sum of the Burstable pods' requests from the runtime's
// sandboxes.
//
// It must not import the engine (package agent), agent/daemon, the CRI
// client (cri, gRPC), cni or probes, or cmd; of the repository it uses the
// cgroups leaf (the driver) and agent/podspec (QoS class, requests and CPU
// conversions), and may use agent/manifest. hack/verify-imports.sh
// enforces it, for its tests too.
package podcgroup
