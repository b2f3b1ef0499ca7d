// Package daemon is the long-running node agent of `minikubelet serve`,
// above the engine (issue #30): it merges the pod sources by name (the
// manifest directory, the local API's store, the cluster's source;
// daemon.go), hands the merged set and the ConfigMaps and Secrets by scope
// to the engine, collects orphans once every source answered, rotates
// logs, and is the local API's backend (api.go, update.go, watch.go,
// describe.go) and the kubelet server's view of the cluster's pods
// (cluster_view.go).
//
// It asks the engine (package agent) through its exported methods
// (agent/daemon_seam.go: FindPod, ListPods, CollectOrphans, ...); the
// engine never imports it, nor does any other package of agent/: cmd
// wires it. It imports no runtime leaf (cgroups, cni), no cluster client
// and no kubelet server (hack/verify-imports.sh).
package daemon
