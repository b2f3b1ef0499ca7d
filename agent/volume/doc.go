// Package volume prepares a pod's files on the host, below the engine: the
// mounts (tmpfs for memory emptyDirs and secret-bearing volumes, the
// pinned bind mounts of subPaths, shared mount propagation: tmpfs*.go,
// sharedmount*.go), the one atomic writer every configMap, secret,
// downwardAPI and projected volume goes through (atomic_writer.go),
// hostPath resolution (hostpath.go), the subPath checks (subpath.go), the
// size of a memory emptyDir (emptydir.go) and the service account token
// cache (token.go; TokenSource is declared here, its consumer). Manager
// (manager.go) is the engine's door: it takes the node's Config and the
// engine's parts (Deps) and applies the hostPath guard (hostpath_guard.go). agent/volume/volumetest has
// a fake VolumeMounter with a call record.
//
// It must not import agent (the engine) or agent/source; it may import
// agent/manifest and agent/safepath (hack/verify-imports.sh). The engine
// declares nothing for it: everything here takes plain values.
//
// Not here yet (#18): the parts that are methods of agent.Agent because
// they read its configuration, its config data store, its token cache or
// its pod workers stay in the engine for now: volume setup and teardown
// per pod (agent/volumes.go), the payloads of each volume type
// (agent/projection.go), the token files and who may have them
// (agent/token.go), the config data store (agent/configdata.go) and the pinning of subPaths
// (agent/subpath.go). Moving them means a volume manager that takes those
// as narrow interfaces, declared here.
//
// The API's store (agent/source) keeps a writer of its own: it promises
// durability (fsync of the file and of its directory, commits grouped),
// not a consistent view for a reader in a container.
package volume
