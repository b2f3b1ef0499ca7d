// Package lifecycle holds the parts of lifecycle hooks (postStart,
// preStop; kubelet-facts §7.2, §7.3) that need no runtime, as the
// kubelet's lifecycle handler runner (pkg/kubelet/lifecycle) does them.
// Issue #30 moved them out of the engine.
//
// It owns:
//   - the httpGet handler (HTTPGet): the request built the way the kubelet
//     builds probe requests (scheme, host or the pod's IP, the port by
//     number or by the name of one of the container's ports, the user's
//     headers, the kubelet's User-Agent), the shared client that checks no
//     certificate and follows no redirect to another host, and the
//     fall-back from HTTPS to HTTP without the Authorization header;
//   - the sleep handler (Sleep) on a clock passed in;
//   - the rendering of an exec handler's failure (ExecErrorText) and the
//     release of a big exec answer's memory (ReleaseBigAnswer);
//   - the order of a whole pod's kill (TerminationOrder, order.go): every
//     kill begins at once, native sidecars wait for the app containers and
//     the sidecars after them, within their grace period;
//   - the bounds on what a hook's failure carries (output.go): the exec
//     output kept (BoundedOutput, MaxHookOutput) and the message
//     (HookMessage, MaxHookMessage), cut on a character boundary with
//     agent/podevents' cuts.
//
// The engine (package agent, agent/hooks.go) keeps the runner itself
// (runLifecycleHandler: the messages and events), the exec handler (CRI
// ExecSync, its output bounded as every message the engine publishes),
// and the preStop hook within the grace period.
//
// It must not import the engine (package agent), agent/daemon, cni,
// cgroups, probes, cmd or test; of the repository it uses cri for its
// errors only (ExitError, Message), never a runtime connection, and
// agent/podevents (the message cuts). k8s.io/api is fine.
// hack/verify-imports.sh enforces it, for its tests too.
package lifecycle
