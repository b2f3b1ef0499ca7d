// Package volume prepares a pod's files on the host, below the engine.
// Manager (manager.go) is the engine's door to it: agent.Agent builds one
// over its configuration (Config: root dir, pod log dir, protected paths,
// --pod-security=privileged, the node's allocatable) and narrow interfaces of
// what it needs of the engine (Deps: ConfigData for the ConfigMaps and
// Secrets in a pod's scope, DownwardAPI for fieldRef and resourceFieldRef
// values, a VolumeMounter, the TokenCache, a logger). Through it the engine
// calls:
//
//   - per-pod setup and teardown (volumes.go): emptyDir directories and
//     memory tmpfs, hostPath type checks, API data volumes; UnmountPod
//     before the engine removes the pod's directory;
//   - the payload of each API data volume (projection.go): configMap,
//     secret, downwardAPI and projected, written through the one atomic
//     writer (atomic_writer.go), secrets on a tmpfs, refreshed on every
//     sync, mounts of them made read-only;
//   - the service account token files (token_files.go) from the token
//     cache (token.go; TokenSource is declared here, its consumer);
//   - the files of clusterTrustBundle sources (trustbundle.go, over
//     ClusterTrustBundles) and of podCertificate sources (podcert.go: the
//     pod's key, its PodCertificateRequest through a PodCertificateIssuer,
//     refresh), both for cluster pods only (AdmitClusterProjections);
//   - the hostPath guard's policy (hostpath_guard.go) over the hostPath
//     resolution (hostpath.go);
//   - the pinned subPath mounts (subpath_pin.go) over the subPath checks
//     (subpath.go), and their cleanup after a killed agent;
//   - the fsGroup ownership of volumes (fsgroup.go);
//   - the pod's /etc/hosts (etchosts.go): the node's file read bounded,
//     the pod's written in place (agent/podspec makes its content);
//   - the disk usage of a pod's files for the eviction manager
//     (usage*.go: DiskUsage, a walk by file descriptors that never follows
//     a pod-written name).
//
// Below those: the mounts (tmpfs for memory emptyDirs and secret-bearing
// volumes, the pinned bind mounts of subPaths, shared mount propagation:
// tmpfs*.go, sharedmount*.go) and the size of a memory emptyDir
// (emptydir.go). agent/volume/volumetest has a fake VolumeMounter with a
// call record.
//
// It must not import agent (the engine), agent/source, agent/api or
// agent/cluster; it may import agent/manifest and agent/safepath
// (hack/verify-imports.sh). What it needs of the engine it declares here
// as interfaces (ConfigData, DownwardAPI, TokenSource, ClusterTrustBundles,
// PodCertificateIssuer, VolumeMounter).
//
// Elsewhere: the config data store (agent/source/configdata.go: which
// source sees which ConfigMaps and Secrets); in the engine, who may have
// service account tokens (agent/token.go, admission), and the removal of
// the pod's directories with its log directory (agent/volume_manager.go,
// cleanupPodDirs).
//
// The API's store (agent/source) keeps a writer of its own: it promises
// durability (fsync of the file and of its directory, commits grouped),
// not a consistent view for a reader in a container.
package volume
