// Package probes runs startup, liveness and readiness probes (exec, httpGet,
// tcpSocket, grpc) from the agent with the kubelet's semantics
// (kubelet-facts §4).
//
// The package has two layers:
//
//   - Handlers (Exec, HTTPProber.Probe, TCP, GRPC) run one check and return
//     (Result, output, error). A refused connection, a 500 or a non-zero
//     exit is a Failure with a message; error means the prober itself could
//     not check (house style rule 14).
//   - Manager keeps one worker per (pod UID, container, probe kind) for
//     running containers; between runs a worker has no goroutine, one
//     scheduler wakes them as they come due (schedule.go). Workers count
//     thresholds, keep the
//     cached result per container ID and publish only changes on
//     Manager.Updates. The agent reads Started/Ready/Result when it builds a
//     pod status and kills containers whose liveness or startup result is
//     Failure.
//
// The package never imports cri or agent: exec goes through the Execer
// interface declared here, whose single method has cri.Runtime's ExecSync
// signature, and the agent tells the package how to read its ExecSync errors
// through Config.ClassifyExecError.
package probes
