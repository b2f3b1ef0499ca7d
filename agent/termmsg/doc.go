// Package termmsg reads containers' termination messages (kubelet-facts
// §6.6), as the kubelet's kuberuntime does, and bounds what a pod's status
// keeps of them, as its status manager does. Issue #30 moved it out of the
// engine.
//
// It owns:
//   - the kubelet's rule (Read): the last 4096 bytes of the host file
//     mounted at the container's terminationMessagePath; with
//     FallbackToLogsOnError, a non-zero exit and an empty or missing file,
//     the last 80 lines (at most 2 KiB) of the container's CRI log;
//   - the bound of a pod's messages together (Limit, 12 KiB shared by its
//     containers) and the join with the runtime's own message (Join);
//   - the cache of each exited container instance's message (Cache), so
//     the files are read once.
//
// The files are the pod's to write, and to replace: this package is a
// node boundary. The message file is opened beneath the root of the mount
// that covers it, without following a symlink, regular files only, without
// blocking (agent/safepath), and only its tail is read; the log is read
// from its end, bounded whatever the container printed.
//
// Everything comes in as explicit values: the annotations' path and
// policy, the exit code, the runtime's mounts and log path, the pods
// directory. The engine (package agent, agent/termination.go) creates the
// message file before the container, asks the runtime for the container's
// status and calls Read.
//
// It must not import the engine (package agent), agent/daemon, the CRI
// client (cri, gRPC), cni, cgroups, probes or cmd; of the repository it
// uses agent/safepath (the reads beneath a root) and agent/api (the CRI log
// parser `minikubelet logs` uses, fuzzed there). CRI message types and
// k8s.io/api are fine. hack/verify-imports.sh enforces it, for its tests
// too.
package termmsg
