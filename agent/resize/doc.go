// Package resize holds the pure parts of in-place pod resize
// (InPlacePodVerticalScaling, GA in v1.35), as the kubelet's allocation
// manager and kuberuntime do it (ideas, not code); issue #30 moved them out
// of the engine:
//
//	API spec (desired) ──SetPods: fits the node?──► allocated ──syncPod──► actuated
//	                         │ no: PodResizePending            (CRI UpdateContainerResources,
//	                         │ (Deferred, or Infeasible)        pod cgroup; or a restart)
//
// The three views of a pod's cpu and memory:
//   - desired: the cpu and memory requests and limits of the pod's spec as
//     the source hands it over (cluster mode: the pods/resize subresource);
//   - allocated: what the node admitted. The engine's worker syncs the pod
//     with these resources (State.View), so a resize that does not fit is
//     never applied, and admission counts them for the other pods;
//   - actuated: what the running containers were created or updated with.
//
// Allocated and actuated live in a checkpoint in the pod's directory
// (<root>/pods/<uid>/resources.json; the kubelet's allocated_pods_state and
// actuated_pods_state), so a restarted daemon neither forgets an admitted
// resize nor takes a resize that arrived while it was down for an applied
// one. The checkpoint goes with the pod's directory.
//
// Resizable are the app containers and native sidecars; other init
// containers are not (they ran to completion; the kubelet's
// InPlacePodVerticalScalingInitContainers beta is not implemented).
//
// It owns:
//   - the resources (resources.go): a pod's resizable cpu and memory per
//     container, their semantic comparison, the allocated view of a spec;
//   - the checkpoint (checkpoint.go): load and save in a directory the
//     caller passes in, each save through a temporary file of its own;
//   - the admission of a resize against the node (admit.go: node.Info and
//     node.Admit), Deferred or Infeasible;
//   - the plan of a sync's resize (plan.go): which running containers are
//     updated in place (memory before cpu, decreases before increases) and
//     which are restarted, the refusal of a memory limit below usage, and
//     the ordered writes of the update in place (Steps: the pod cgroup
//     before the containers when it grows, after them when it shrinks);
//   - a pod's resize state (state.go): allocation, actuation, the
//     PodResizePending and PodResizeInProgress conditions, the events and
//     their messages, the status's allocatedResources and resources;
//   - the Tracker (tracker.go): a pod's State under a lock of its own, with
//     its checkpoint's saves (ordered, a failure logged) and its events
//     handed to the recorder the engine gives it; it admits a changed spec
//     (Handle) and answers the sync and the status.
//
// The engine (package agent, agent/resize.go) keeps the glue: each pod
// worker holds a Tracker; the engine decides when to call it (a changed
// spec, a pod gone, a sync), calls the runtime's UpdateContainerResources
// and writes the pod cgroup in the order Steps gives, and translates the
// pod cgroup's values (cgroups) and the container's (agent/podspec).
//
// It must not import the engine (package agent), the CRI client (cri,
// gRPC), cgroups or another runtime leaf (cni, probes), agent/daemon,
// agent/api, agent/cluster, agent/kubeletserver, agent/volume,
// agent/source, agent/eviction, agent/stats, agent/gc or cmd; of the
// repository it uses agent/node (admission), agent/podspec (the pod's
// requests), agent/manifest (which init containers are sidecars) and
// agent/safepath (reading the checkpoint). hack/verify-imports.sh enforces
// it, for its tests too.
package resize
