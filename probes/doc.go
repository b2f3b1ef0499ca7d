// Package probes will run startup, liveness and readiness probes (exec,
// httpGet, tcpSocket, grpc) from the agent, one worker per (pod, container,
// probe kind).
//
// TODO(minikubelet): implement with the probes issue (#5). Until then pods
// with probes are refused at validation (agent/support.go).
package probes
