// Package source is step 2 of the data path: the desired state on the
// node. It owns the static manifest directory (DirSource, dir.go), the
// pods, ConfigMaps and Secrets accepted through the local API and kept on
// disk (PodStore, store.go, store_config.go, with the Secrets on a tmpfs
// of their own: secretdir*.go), and the naming rules between sources (the
// config.source and source-file annotations and the source names,
// names.go). Each source sends its complete set as a SourceUpdate. It also
// holds the engine's ConfigMaps and Secrets by scope, the scope being
// the pods' source (ConfigStore, configdata.go, issue #30): the engine
// keeps one and the pods' env, volumes and pull secrets read it.
//
// It must not import agent (the engine), agent/api or agent/cluster, nor
// the runtime (cri, cni, cgroups, probes): it decodes with agent/manifest,
// and mounts the tmpfs of the store's Secrets with agent/volume, which
// never imports it back (hack/verify-imports.sh). The daemon declares the Source interface it
// consumes (agent/daemon/daemon.go), as house style rule 1 asks.
//
// Where the code said otherwise than issue #18's sketch: the merge of the
// sources by name stays in the daemon (agent/daemon/daemon.go: applyLocked,
// mergedLocked, mergeByName). It is the daemon's state, under the
// daemon's lock, interleaved with the hand-over to the pod workers and
// with the report of name clashes as pod events; moving it would move
// the daemon. The cluster's source (agent/cluster) stays where it is: it
// needs the API server client.
//
// The store writes with its own durable writer (temporary file, fsync,
// rename, directory fsync, commits grouped): unlike the volume writer
// (agent/volume.AtomicWriter) its promise is that an accepted pod survives
// a crash.
package source
