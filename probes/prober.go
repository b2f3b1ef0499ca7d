package probes

import (
	"context"
	"errors"
)

// maxProbeRetries is how often a probe that errors (the prober could not
// check) is tried within one period before the run is discarded (kubelet
// prober.go maxProbeRetries).
const maxProbeRetries = 3

// runner runs one probe run of a worker. The Manager declares it so that the
// steady-state benchmark can drive the same workers with the previous
// handlers (probes/steady_bench_test.go); *prober is the only other
// implementation.
type runner interface {
	// run probes w's container once. podIP is the pod's current IP, the
	// default target of network probes. Runs of one worker never overlap
	// (a worker's goroutine runs each, see worker.probeOnce).
	run(ctx context.Context, w *worker, podIP string) (Result, string, error)
}

// prober runs one probe of any handler type. Safe for concurrent use; the
// per-worker state it keeps (prepared targets) lives in the worker.
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

var _ runner = (*prober)(nil)

// run dispatches w's probe to its handler. Network targets (URL, request
// bytes, address) are built once per pod IP and kept in the worker, so a
// steady probe allocates only what the exchange itself needs.
func (pr *prober) run(ctx context.Context, w *worker, podIP string) (Result, string, error) {
	timeout := w.timing.timeout
	switch h := &w.probe.ProbeHandler; {
	case h.Exec != nil:
		if pr.exec == nil {
			return Unknown, "", errors.New("exec probes are not available: no Execer configured")
		}
		if w.execCmd == nil {
			// The spec is a private copy: its env never changes.
			w.execCmd = expandCommand(h.Exec.Command, w.container.Env)
		}
		return Exec(ctx, pr.exec, pr.classify, w.containerID, w.execCmd, timeout)
	case h.HTTPGet != nil:
		t := w.targetFor(podIP, func() (target, error) {
			req, err := NewHTTPGetRequest(h.HTTPGet, w.container, podIP, pr.userAgent)
			if err != nil {
				return target{}, err
			}
			return target{http: pr.http.prepare(req)}, nil
		})
		if t.err != nil {
			return Unknown, "", t.err
		}
		return pr.http.probe(ctx, t.http, timeout)
	case h.TCPSocket != nil:
		t := w.targetFor(podIP, func() (target, error) {
			host, err := probeHost(h.TCPSocket.Host, podIP)
			if err != nil {
				return target{}, err
			}
			port, err := ResolvePort(h.TCPSocket.Port, w.container)
			if err != nil {
				return target{}, err
			}
			return target{tcp: tcpTargetOf(host, port)}, nil
		})
		if t.err != nil {
			return Unknown, "", t.err
		}
		return t.tcp.probe(ctx, timeout)
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

// target is where a worker's network probe goes, prepared for one pod IP.
type target struct {
	// podIP is the pod IP it was built for; ok is false before the first
	// build.
	podIP string
	ok    bool
	// http is an httpGet probe's prepared request.
	http *httpTarget
	// tcp is a tcpSocket probe's address.
	tcp tcpTarget
	// err is why the target cannot be built (no pod IP, unknown port
	// name): the run errors. It depends only on the spec and the pod IP,
	// so it is kept too.
	err error
}

// targetFor returns the worker's target for podIP, building it with build
// when there is none yet or the pod IP changed. Only the worker's current
// run calls it.
func (w *worker) targetFor(podIP string, build func() (target, error)) *target {
	if !w.target.ok || w.target.podIP != podIP {
		t, err := build()
		t.podIP, t.ok, t.err = podIP, true, err
		w.target = t
	}
	return &w.target
}
