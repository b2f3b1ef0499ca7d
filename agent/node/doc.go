// Package node holds the node's facts and the admission of pods against
// them (issue #30), beside the engine as the kubelet's nodestatus and
// lifecycle admit handlers sit beside the kubelet.
//
// It owns:
//   - the node's description (node.go): name, labels (the well-known ones
//     and --node-labels), capacity read from the host (CPUs, MemTotal, the
//     root dir's filesystem) and allocatable (capacity minus
//     --kube-reserved, --system-reserved and the hard nodefs.available
//     eviction threshold), and the parsing of those flags;
//   - the one reader of /proc/meminfo (meminfo.go), through a path or
//     function the caller injects (Host, MeminfoFile), so that unit tests
//     never read the host;
//   - the agents' identities (identity.go): the daemon's and a foreground
//     run's IDs, how they read, the notices about other minikubelets' pods;
//   - the admit chain (admission.go): OS label and field, pod count and
//     resources against allocatable, node selector and affinity, node
//     name, host ports, with the kubelet's reasons and messages, and the
//     status of a rejected pod.
//
// The engine (package agent) asks it: Admit and AdmitOS at SetPods, its
// Config.Node is an Info. Pressure conditions are the eviction manager's
// (agent/eviction), which the engine asks too; the admission handlers that
// need the engine's state (pod security, sysctls, service account tokens)
// stay in the engine.
//
// It must not import the engine (package agent), agent/daemon, the CRI
// client or any runtime leaf (cri, cni, cgroups, probes), agent/api,
// agent/cluster, agent/volume, agent/source, agent/stats or cmd; of the
// repository it uses agent/eviction (the thresholds kept from
// allocatable), agent/manifest and agent/podspec. hack/verify-imports.sh
// enforces it, for its tests too.
package node
