// Package kubeletserver is the kubelet server of a cluster-mode node: the
// HTTPS endpoint (10250 by default) through which the API server reaches the
// node for `kubectl logs`, `exec`, `attach` and `port-forward`, and the node
// proxy (/pods, /runningpods/, /healthz, /metrics, /metrics/probes,
// /metrics/resource, which metrics-server scrapes for `kubectl top`, and
// /stats/summary, the Summary API).
//
// Every caller is a cluster client, so the pods it can name or list are the
// cluster's: what cmd wires as Pods and Logs (daemon.ClusterView) and as
// Summary (agent/stats over that view) has the cluster's pods and the
// static pods under their mirror pods' names, never the pods the node runs
// for itself through its local API; /metrics/resource keeps the runtime's
// containers of the pods Pods lists only, and /metrics and /metrics/probes
// the probe counts of those pods only (by pod_uid), under Pods' names.
//
// It owns:
//   - the listener and its TLS: the serving certificate from files, or a
//     self-signed one it creates under its certificate directory;
//   - authentication: a client certificate signed by the client CA, or a
//     bearer token the API server vouches for (TokenReview); requests
//     without credentials are refused with 401, or with AnonymousAuth are
//     system:anonymous;
//   - authorization: a SubjectAccessReview per request (Webhook, the
//     default; AlwaysAllow asks nothing), with the kubelet's mapping of
//     path and method to the nodes/<subresource> resource and verb, its
//     fine-grained subresources (pods, healthz, configz) falling back to
//     proxy (attributes in auth.go); the API server's answers
//     are cached as the kubelet caches them (cache.go: tokens 2 minutes,
//     allowed 5 minutes, denied 30 seconds);
//   - the endpoints: the log endpoint's parameters (the reading itself is
//     the daemon's, behind Logs), and the streaming endpoints, which ask the
//     runtime (CRI Exec, Attach, PortForward) for a session on its own
//     streaming server and proxy the client's upgraded connection there
//     (SPDY or WebSocket: the runtime's server speaks the protocols, this
//     package only relays bytes, as the kubelet does).
//
// It must not import cmd, test or the agent package: what it needs of the
// daemon (pods, log paths, metrics, the stats summary) and of the runtime
// (the streaming and stats calls) it declares as the interfaces Pods, Logs,
// Metrics, Summary, Runtime, ContainerStats and NodeUsage, which the
// daemon's cluster view, agent/api's log reader, agent/stats,
// cri.Instrumented and /proc satisfy in cmd's wiring.
//
//   - /configz, the configuration in effect as cmd gives it (Configz);
//   - the read-only port's handler (readonly.go: the kubelet's
//     unauthenticated endpoints only, plain HTTP) and the healthz
//     endpoint's (/healthz, which kubeadm join polls).
//
// Not served: /metrics/cadvisor, /checkpoint and /logs (the node's own
// logs).
package kubeletserver
