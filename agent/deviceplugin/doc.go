// Package deviceplugin is minikubelet's side of the kubelet's device plugin
// API (k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1), as the kubelet's
// devicemanager does it (ideas, not code):
//
//	plugin ──Register──► <root-dir>/device-plugins/kubelet.sock (root only: 0700 dir, 0600 socket)
//	   ▲                      │ version, resource name, endpoint checked
//	   │                      ▼
//	   └──── dial <dir>/<endpoint> ── GetDevicePluginOptions (fails: plugin not used)
//	                           └──── ListAndWatch stream: devices and health per resource
//
// It owns:
//   - the Registration server and the plugins' endpoints (manager.go,
//     endpoint.go): one endpoint per resource, a new registration of the
//     resource replaces the old one; when a plugin's ListAndWatch ends
//     (an error, the plugin stopped) every device of the resource is
//     unhealthy and nothing is retried (the plugin registers again), and
//     5 minutes later the resource is dropped (capacity 0), as the
//     kubelet's endpointStopGracePeriod;
//   - the node's extended resources (Resources): capacity is every device,
//     allocatable the healthy ones;
//   - the devices of pods (allocate.go): admission picks healthy devices no
//     other pod holds (Admit, the kubelet's allocation handler with its
//     UnexpectedAdmissionError), the container's creation asks the plugin
//     (GetPreferredAllocation when offered, Allocate, PreStartContainer)
//     and adds its answer to the CRI config (ApplyContainer); a pod's
//     devices go back when it finished or its teardown ended;
//   - the checkpoint (checkpoint.go): the pods' devices and the plugins'
//     answers, and the registered resources, in one JSON file written
//     atomically, so that a restart neither gives a device twice nor
//     forgets one.
//
// Where it differs from the kubelet, on purpose:
//   - no topology manager, no NUMA affinity: devices are picked in ID order
//     (or as the plugin prefers);
//   - the plugin's RPCs are never made under the engine's lock: admission
//     only reserves device IDs, and the pod's worker asks
//     GetPreferredAllocation and Allocate before its container's first
//     creation. A failing Allocate is a container's
//     CreateContainerConfigError (retried) instead of a rejected pod;
//   - the endpoint must be a socket directly in the plugin directory, never
//     a symlink (the kubelet joins any name to the directory);
//   - no plugin watcher (pluginregistration v1) and no pod resources API;
//   - the checkpoint is minikubelet's own file, not the kubelet's
//     kubelet_internal_checkpoint.
//
// It must not import the engine (package agent), agent/daemon or cmd: the
// engine reaches it through agent/config.Devices and serve wires it.
// hack/verify-imports.sh enforces it, for its tests too.
package deviceplugin
