// Package gc is the node's garbage collector, as the kubelet's: it removes
// what a node that runs for months would otherwise accumulate (issue #21).
//
//   - ImageManager (images.go) is the kubelet's image GC manager
//     (pkg/kubelet/images/image_gc_manager.go): it remembers when each image
//     was first detected and last used, and removes unused images, least
//     recently used first, when the image filesystem is fuller than the high
//     threshold, down to the low one; and images unused for longer than a
//     maximum age. It runs every ImageGCPeriod, on demand (Trigger), and at
//     once when a 10 s check finds the image filesystem over the high
//     threshold (where the kubelet's eviction manager would reclaim).
//   - ContainerGC (containers.go) is the kubelet's container GC
//     (pkg/kubelet/kuberuntime/kuberuntime_gc.go) for pods that are gone:
//     their dead containers, with their log files, their dead sandboxes,
//     then their pod log directory. Under disk pressure (DeleteAllUnused,
//     through Reclaimer, the eviction manager's reclaim) also those of
//     terminated pods that are not deleted, but their log directory. Dead
//     instances of live pods are the pod worker's (agent.pruneContainers):
//     one goroutine owns a pod's mutations.
//
// What it owns: the image records (detected and last-used times), which are
// in memory only and rebuilt at start from what runs. What it must not do:
// import package agent (agent and cmd wire it; the agent tells it which
// objects are its own and which pods are gone through ContainerGCConfig),
// touch a container or sandbox of a live pod (one neither gone nor
// terminated), or touch another agent's
// objects. It declares the narrow CRI interfaces it uses (ImageService,
// ContainerLister, RuntimeService), with cri-api's signatures, so cri's
// client and cri-api's and critest's fakes satisfy them.
package gc
