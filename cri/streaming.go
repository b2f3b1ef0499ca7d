package cri

import (
	"context"
	"errors"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The streaming calls: the runtime prepares an exec, attach or port-forward
// session and answers with a URL on its own streaming server, to which the
// kubelet server proxies the client's upgraded connection. Signatures are
// cri-api's RuntimeService's, so its fake satisfies an interface of them.

// Exec asks the runtime for an exec session's streaming URL.
func (c *Client) Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	var resp *runtimeapi.ExecResponse
	err := call(ctx, "Exec", c.opts.Timeout, func(ctx context.Context) (err error) {
		resp, err = c.rt.Exec(ctx, req)
		return err
	})
	return resp, err
}

// Attach asks the runtime for an attach session's streaming URL.
func (c *Client) Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	var resp *runtimeapi.AttachResponse
	err := call(ctx, "Attach", c.opts.Timeout, func(ctx context.Context) (err error) {
		resp, err = c.rt.Attach(ctx, req)
		return err
	})
	return resp, err
}

// PortForward asks the runtime for a port-forward session's streaming URL.
func (c *Client) PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	var resp *runtimeapi.PortForwardResponse
	err := call(ctx, "PortForward", c.opts.Timeout, func(ctx context.Context) (err error) {
		resp, err = c.rt.PortForward(ctx, req)
		return err
	})
	return resp, err
}

// Streamer is the streaming calls of a runtime (Client has them, and so
// does cri-api's fake).
type Streamer interface {
	Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error)
	Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error)
	PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error)
}

var _ Streamer = (*Client)(nil)

// errNoStreaming and errNoStats are returned by Instrumented's streaming
// and stats calls when the wrapped Runtime has none.
var (
	errNoStreaming = errors.New("the runtime client has no streaming calls (Exec, Attach, PortForward)")
	errNoStats     = errors.New("the runtime client has no ListContainerStats")
	// errNoSandboxStats: the wrapped Runtime has no ListPodSandboxStats.
	errNoSandboxStats = errors.New("the runtime client has no ListPodSandboxStats")
)

// Exec implements Streamer when the wrapped Runtime does.
func (x *Instrumented) Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	s, ok := x.rt.(Streamer)
	if !ok {
		return nil, errNoStreaming
	}
	start := time.Now()
	resp, err := s.Exec(ctx, req)
	x.record(ctx, "Exec", start, err, "containerID", req.GetContainerId(), "cmd", req.GetCmd(), "tty", req.GetTty())
	return resp, err
}

// Attach implements Streamer when the wrapped Runtime does.
func (x *Instrumented) Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	s, ok := x.rt.(Streamer)
	if !ok {
		return nil, errNoStreaming
	}
	start := time.Now()
	resp, err := s.Attach(ctx, req)
	x.record(ctx, "Attach", start, err, "containerID", req.GetContainerId(), "tty", req.GetTty())
	return resp, err
}

// PortForward implements Streamer when the wrapped Runtime does.
func (x *Instrumented) PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	s, ok := x.rt.(Streamer)
	if !ok {
		return nil, errNoStreaming
	}
	start := time.Now()
	resp, err := s.PortForward(ctx, req)
	x.record(ctx, "PortForward", start, err, "sandboxID", req.GetPodSandboxId(), "ports", req.GetPort())
	return resp, err
}
