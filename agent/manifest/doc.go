// Package manifest is step 1 of the data path: it turns the bytes of a
// manifest (a file of the manifest directory, the file given to
// `minikubelet run`, a body sent to the API) into Pods, ConfigMaps and
// Secrets, as the API server would accept them.
//
// What it owns:
//   - decoding, strictly: unknown and duplicate fields are errors that name
//     their field path or line (decode.go, decodeerr/), and the stored form
//     of a pod (encode.go);
//   - the API server's defaults, including the deterministic UID of a pod
//     given without one (defaults.go, configdata.go);
//   - validation with the API server's messages (validate.go,
//     datasupport.go, security.go, dns.go, nodeaffinity.go, configdata.go);
//   - the support table of what minikubelet honours, refuses or ignores,
//     and the completeness guard that fails a test when k8s.io/api grows a
//     field the table does not list (support.go, datasupport.go,
//     security.go; docs/pod-spec.md is generated from it).
//
// It is pure: no CRI, no network, no clock, and no filesystem beyond
// reading the one file ReadManifestFile and LoadManifestFile are given. It
// must not import agent (the engine), agent/source, agent/volume,
// agent/api, agent/cluster, nor cri, cni, cgroups or probes: everything
// else consumes it, so it sits at the bottom (hack/verify-imports.sh).
//
// The validation of a few fields lives here although their use is the
// engine's: spec.securityContext and sysctls (security.go; agent/podspec
// turns them into CRI config, agent/node admits them), the resolver
// configuration (dns.go), node selectors and affinity (nodeaffinity.go;
// agent/node/admission.go evaluates them). A pod is refused as a whole
// before anything runs, so every rule the API server checks is here.
package manifest
