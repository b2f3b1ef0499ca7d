// Package podstatus holds the pure parts of a pod's status, as the
// kubelet's status helpers do them (getPhase, the kubelet-owned
// conditions, podutil.ContainerShouldRestart); issue #30 moved them out of
// the engine.
//
// It owns:
//   - the status of a pod no sync has observed yet (initial.go): Pending,
//     every container waiting;
//   - the pod's phase from its container statuses (phase.go), with native
//     sidecars and the containers' own restartPolicy and rules;
//   - the kubelet-owned conditions (conditions.go): PodReadyToStartContainers,
//     Initialized, ContainersReady, Ready with the readiness gates, and
//     PodScheduled, each keeping its lastTransitionTime while its status
//     does not change;
//   - whether a stopped app container is started again
//     (restart_rules.go: its restartPolicy and restartPolicyRules, else
//     the pod's).
//   - how long a pod may still run before its activeDeadlineSeconds
//     passes (deadline.go; the engine fails the pod then).
//
// What it needs of the runtime comes in as plain values: the container
// statuses the engine built, and whether the pod's sandbox is ready. The
// engine (package agent, status.go) observes the runtime, builds the
// container statuses (with the prober's results and the resize's
// resources) and calls this package; the plan asks it which containers
// restart.
//
// It must not import the engine (package agent), agent/daemon, a CRI
// client (cri, gRPC) or any other runtime leaf, and reads no file (no os):
// of the repository it uses agent/manifest (which init containers are
// sidecars) and may use agent/podspec, nothing else.
// hack/verify-imports.sh enforces it, for its tests too.
package podstatus
