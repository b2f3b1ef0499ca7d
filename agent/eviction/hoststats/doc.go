// Package hoststats is the eviction manager's stats provider on the real
// host (eviction.StatsProvider, issues #21 and #30): the node's signals
// (memory from the cgroups and /proc/meminfo, the node and image
// filesystems, PIDs) and the pods' usage (working sets and writable
// layers from the runtime's container stats, processes from the pods'
// cgroups, and what they write outside their writable layers: pod and log
// directories walked in the background, the runtime's per-sandbox files,
// the unlinked files their processes hold open).
//
// It is kept apart from agent/eviction so that the rules and the manager
// stay free of the host: the manager sees this package only through
// eviction.StatsProvider (and eviction.CycleStats), never imports it.
//
// It sees the engine through Engine (whether a pod still runs, where its
// files are, its cgroup) and the runtime through three CRI calls
// (ContainerStatsLister, ContainerStatuser, ImageFsInfoer); the engine
// (package agent) builds it (agent.NewEvictionStats) and fills Engine
// with its own methods (EngineFuncs). The manager configures its walks
// (ConfigureWalks, eviction.WalkConfigurer) when it is built.
//
// It must not import the engine (package agent), the CRI client (cri, or
// grpc: it uses the CRI message types only), the daemon, agent/api,
// agent/cluster, agent/kubeletserver, agent/gc, agent/source, agent/stats,
// cmd or test; of the repository it uses agent/eviction (the types it
// fills), agent/volume (the walks), agent/node (meminfo), agent/podspec
// (the containers' labels), agent/safepath and the cgroups leaf.
// hack/verify-imports.sh enforces it, for its tests too.
package hoststats
