// Package config holds the engine's configuration: the node settings the
// agent runs with (Config) and their defaults (Config.WithDefaults), as
// the kubelet's pkg/kubelet/apis/config sits apart from the kubelet
// (issue #30).
//
// It owns the fields, their meaning and their defaults, nothing else: cmd
// fills a Config from its flags, the engine (package agent, which keeps
// agent.Config as an alias of this type) applies the defaults once in New
// and reads the fields. Checks that need the host or the engine's state
// (a test Config that would reach this machine's state, the unsafe
// sysctls' patterns) stay with their callers.
//
// It must not import the engine (package agent) or anything above it
// (agent/daemon, agent/api, agent/cluster, agent/kubeletserver, cmd,
// test), the CRI client (cri, gRPC), cgroups or probes. Of the repository
// it imports only the packages its fields' types come from: agent/node
// (the node's Info, the Pod Security level, the daemon's agent ID),
// agent/userns (the ID pool) and cni (the pod network's Config, the one
// runtime leaf it needs: the type and its WithDefaults, never the
// installer's calls). None of them imports it back.
// hack/verify-imports.sh enforces it, for its tests too.
package config
