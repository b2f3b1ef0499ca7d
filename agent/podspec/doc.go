// Package podspec is the pure half of the engine's translation: it turns a
// v1.Pod plus explicit inputs into the CRI's PodSandboxConfig and
// ContainerConfig (the kubelet's kuberuntime config half,
// kuberuntime_sandbox.go and kuberuntime_container.go's generate*Config).
//
// It owns:
//   - the sandbox config: metadata, log directory, port mappings, hostname
//     and FQDN, DNS (cluster DNS, dnsPolicy, dnsConfig, resolver limits),
//     namespaces, the sandbox security context, sysctls;
//   - the container config: security context (effective context, seccomp,
//     masked paths, runAsNonRoot against the image's user), resources and
//     oom_score_adj, QoS class, the environment (envFrom, valueFrom,
//     service links, $(VAR) expansion) and the expansion of command and
//     args, volume mounts and propagation, the /etc/hosts content;
//   - the CRI labels and annotations (identity, hash, restart count, grace
//     period, ports, preStop handler, QoS), and the container they describe
//     when the spec no longer names it (ContainerFromAnnotations).
//
// Everything the translation needs of the node, the runtime or the disk
// comes in as a value or a function (SandboxInputs, EnvInputs,
// ContainerInputs): the node's resolv.conf content, the cluster DNS, the
// agent's ID, the node's addresses and allocatable resources, the pod's
// ConfigMaps, Secrets and service link variables, the image reference and
// user, the prepared volume paths and the subPath pinning.
// The engine (package agent) gathers them and calls this package; the
// tests are tables, pod in, config out, with no fake runtime.
//
// It must never import: the engine (agent) or anything above it
// (agent/api, agent/cluster, agent/kubeletserver, cmd), a CRI client
// (cri, google.golang.org/grpc), cgroups, cni, probes, the volume
// preparation (agent/volume, agent/safepath) or test/. It reads no file
// and no clock: hack/verify-imports.sh enforces the imports. Of this
// repository it imports agent/manifest only (API rules, sysctl names,
// resolver limits).
package podspec
