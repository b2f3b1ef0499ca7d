package probes

import (
	"context"
	"errors"
	"time"

	v1 "k8s.io/api/core/v1"
)

// maxProbeRetries is how often a probe that errors (the prober could not
// check) is tried within one period before the run is discarded (kubelet
// prober.go maxProbeRetries).
const maxProbeRetries = 3

// prober runs one probe of any handler type. Safe for concurrent use.
type prober struct {
	// exec runs exec probes; nil makes them error.
	exec Execer
	// classify reads exec errors; never nil.
	classify ExecErrorClassifier
	// http runs httpGet probes.
	http *HTTPProber
	// userAgent for httpGet and grpc probes.
	userAgent string
}

// run dispatches p to its handler. container is the container's spec (for
// named ports and the exec environment), containerID the running instance,
// podIP the default target of network probes.
func (pr *prober) run(ctx context.Context, p *v1.Probe, container *v1.Container, containerID, podIP string, timeout time.Duration) (Result, string, error) {
	switch h := &p.ProbeHandler; {
	case h.Exec != nil:
		if pr.exec == nil {
			return Unknown, "", errors.New("exec probes are not available: no Execer configured")
		}
		cmd := expandCommand(h.Exec.Command, container.Env)
		return Exec(ctx, pr.exec, pr.classify, containerID, cmd, timeout)
	case h.HTTPGet != nil:
		req, err := NewHTTPGetRequest(h.HTTPGet, container, podIP, pr.userAgent)
		if err != nil {
			return Unknown, "", err
		}
		return pr.http.Probe(ctx, req, timeout)
	case h.TCPSocket != nil:
		host, err := probeHost(h.TCPSocket.Host, podIP)
		if err != nil {
			return Unknown, "", err
		}
		port, err := ResolvePort(h.TCPSocket.Port, container)
		if err != nil {
			return Unknown, "", err
		}
		return TCP(ctx, host, port, timeout)
	case h.GRPC != nil:
		host, err := probeHost("", podIP)
		if err != nil {
			return Unknown, "", err
		}
		service := ""
		if h.GRPC.Service != nil {
			service = *h.GRPC.Service
		}
		return GRPC(ctx, host, int(h.GRPC.Port), service, timeout, pr.userAgent)
	}
	return Unknown, "", errors.New("probe has no handler")
}
