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
//   - the node's addresses (hostips.go): the configured ones, else the
//     host's own, read once (unit tests configure theirs);
//   - the agents' identities (identity.go): the daemon's and a foreground
//     run's IDs, how they read, whose an object is by its labels and a
//     pod directory by its owner file (written and read here), the
//     notices about other minikubelets' pods;
//   - the admit chain (admission.go): OS label and field, pod count and
//     resources against allocatable, node selector and affinity, node
//     name, host ports, with the kubelet's reasons and messages, and the
//     status of a rejected pod;
//   - the security admit handlers, each a pod and explicit inputs in, a
//     reason and message out: the Pod Security Standards' levels and
//     checks for local pods (podsecurity.go, which hack/psadiff compares
//     with k8s.io/pod-security-admission), AppArmor against whether the
//     host enforces it (apparmor.go), sysctls against the safe set and
//     --allowed-unsafe-sysctls (sysctl.go), and projected service account
//     tokens against cluster mode and the pod's source (token.go); and
//     AdmitSecurity, which asks the first three in the engine's order,
//     with the Strict supplementalGroupsPolicy before sysctls (security.go).
//
// The engine (package agent) asks it: Admit and AdmitOS at SetPods, the
// security handlers at admission, its Config.Node is an Info. What needs
// the engine's state stays there and is passed in: whether a pod is the
// cluster's (and so left to the API server's Pod Security Admission),
// whether there is a token source, the configured level. Pressure
// conditions are the eviction manager's (agent/eviction), which the engine
// asks too.
//
// It must not import the engine (package agent), agent/daemon, the CRI
// client or any runtime leaf (cri, cni, cgroups, probes), agent/api,
// agent/cluster, agent/volume, agent/source, agent/stats or cmd; of the
// repository it uses agent/eviction (the thresholds kept from
// allocatable), agent/manifest, agent/podspec and agent/safepath (the pod
// directory's owner file). hack/verify-imports.sh enforces it, for its
// tests too.
package node
