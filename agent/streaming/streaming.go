// Package streaming serves exec, attach and port-forward sessions the way
// the kubelet does: it asks the CRI for a session URL on the runtime's
// streaming server and proxies the client's upgraded connection (SPDY or
// WebSocket) to it with apimachinery's UpgradeAwareHandler. The runtime's
// streaming server speaks the protocols; nothing here parses them.
//
// Both the kubelet server (agent/kubeletserver, for the API server) and
// the local API (agent/api, for kubectl on the node) serve through it. It
// is a leaf: it imports nothing of this repository (hack/verify-imports.sh).
package streaming

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/proxy"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Runtime is what the streaming endpoints need of the CRI: the sandbox of
// a pod, and a session URL on the runtime's streaming server (cri.Client
// and cri-api's fake satisfy it).
type Runtime interface {
	ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error)
	Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error)
	Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error)
	PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error)
}

// criTimeout bounds the CRI call that prepares a session (the session
// itself lasts as long as the client keeps it).
const criTimeout = 30 * time.Second

// Options are the stream flags of an exec or attach request.
type Options struct {
	Stdin, Stdout, Stderr, TTY bool
	Command                    []string
}

// ParseOptions reads the query as the kubelet does ("1" or "true" set a
// flag; command repeats; the API server's names stdin/stdout/stderr and
// the kubelet's input/output/error both count): at least one stream, a
// command for exec, and no stderr with a TTY (a terminal has one output
// stream).
func ParseOptions(q url.Values, exec bool) (Options, error) {
	flag := func(k string) bool { v := q.Get(k); return v == "1" || strings.EqualFold(v, "true") }
	o := Options{Stdin: flag("input") || flag("stdin"), Stdout: flag("output") || flag("stdout"),
		Stderr: flag("error") || flag("stderr"), TTY: flag("tty"), Command: q["command"]}
	if !o.Stdin && !o.Stdout && !o.Stderr {
		return o, apierrors.NewBadRequest("you must specify at least 1 of stdin, stdout, stderr")
	}
	if exec && len(o.Command) == 0 {
		return o, apierrors.NewBadRequest("you must specify at least one command for the container")
	}
	if o.TTY && o.Stderr {
		o.Stderr = false
	}
	return o, nil
}

// ContainerID is the runtime ID of the container's running instance (a
// container, init container or ephemeral container of pod).
func ContainerID(pod *v1.Pod, container string) (string, error) {
	for _, list := range [][]v1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses, pod.Status.EphemeralContainerStatuses} {
		for _, cs := range list {
			if cs.Name != container {
				continue
			}
			if cs.State.Running == nil || cs.ContainerID == "" {
				return "", apierrors.NewBadRequest(fmt.Sprintf("container %s is not running", container))
			}
			_, id, _ := strings.Cut(cs.ContainerID, "://")
			return id, nil
		}
	}
	return "", apierrors.NewNotFound(v1.Resource("containers"), container)
}

// Proxy serves sessions on a Runtime.
type Proxy struct {
	Runtime Runtime
	// WriteError answers an error met before the upgrade, in the
	// server's own format (a StatusError carries the HTTP code).
	WriteError func(w http.ResponseWriter, r *http.Request, err error)
	Logger     *slog.Logger
}

// Exec runs the query's command in the container of pod and proxies the
// session.
func (p *Proxy) Exec(w http.ResponseWriter, r *http.Request, pod *v1.Pod, container string) {
	o, err := ParseOptions(r.URL.Query(), true)
	if err != nil {
		p.WriteError(w, r, err)
		return
	}
	id, err := ContainerID(pod, container)
	if err != nil {
		p.WriteError(w, r, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), criTimeout)
	resp, err := p.Runtime.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: id, Cmd: o.Command,
		Tty: o.TTY, Stdin: o.Stdin, Stdout: o.Stdout, Stderr: o.Stderr})
	cancel()
	if err != nil {
		p.WriteError(w, r, fmt.Errorf("exec in container %s: %w", id, err))
		return
	}
	p.proxy(w, r, resp.GetUrl())
}

// Attach attaches to the container of pod and proxies the session.
func (p *Proxy) Attach(w http.ResponseWriter, r *http.Request, pod *v1.Pod, container string) {
	o, err := ParseOptions(r.URL.Query(), false)
	if err != nil {
		p.WriteError(w, r, err)
		return
	}
	id, err := ContainerID(pod, container)
	if err != nil {
		p.WriteError(w, r, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), criTimeout)
	resp, err := p.Runtime.Attach(ctx, &runtimeapi.AttachRequest{ContainerId: id,
		Tty: o.TTY, Stdin: o.Stdin, Stdout: o.Stdout, Stderr: o.Stderr})
	cancel()
	if err != nil {
		p.WriteError(w, r, fmt.Errorf("attach to container %s: %w", id, err))
		return
	}
	p.proxy(w, r, resp.GetUrl())
}

// PortForward forwards to the ports of pod's ready sandbox (SPDY clients
// name them in the stream headers, WebSocket clients in the query).
func (p *Proxy) PortForward(w http.ResponseWriter, r *http.Request, pod *v1.Pod) {
	ctx, cancel := context.WithTimeout(r.Context(), criTimeout)
	defer cancel()
	sbs, err := p.Runtime.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{
		State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
		LabelSelector: map[string]string{"io.kubernetes.pod.uid": string(pod.UID)},
	})
	if err != nil {
		p.WriteError(w, r, fmt.Errorf("list the sandboxes of pod %s/%s: %w", pod.Namespace, pod.Name, err))
		return
	}
	if len(sbs) == 0 {
		p.WriteError(w, r, apierrors.NewBadRequest(fmt.Sprintf("pod %s/%s has no ready sandbox", pod.Namespace, pod.Name)))
		return
	}
	var ports []int32
	for _, s := range r.URL.Query()["port"] {
		var n int32
		if _, err := fmt.Sscan(s, &n); err != nil || n <= 0 {
			p.WriteError(w, r, apierrors.NewBadRequest(fmt.Sprintf("port %q is not a port number", s)))
			return
		}
		ports = append(ports, n)
	}
	resp, err := p.Runtime.PortForward(ctx, &runtimeapi.PortForwardRequest{PodSandboxId: sbs[0].Id, Port: ports})
	if err != nil {
		p.WriteError(w, r, fmt.Errorf("port-forward to pod %s/%s: %w", pod.Namespace, pod.Name, err))
		return
	}
	cancel()
	p.proxy(w, r, resp.GetUrl())
}

// proxy relays the client's upgrade request to the runtime's streaming
// server and then the upgraded connection's bytes both ways, as the
// kubelet's proxyStream does.
func (p *Proxy) proxy(w http.ResponseWriter, r *http.Request, raw string) {
	u, err := url.Parse(raw)
	if err != nil {
		p.WriteError(w, r, fmt.Errorf("the runtime's streaming URL %q: %w", raw, err))
		return
	}
	h := proxy.NewUpgradeAwareHandler(u, nil /*transport*/, false /*wrapTransport*/, true /*upgradeRequired*/, responder{p.logger()})
	h.ServeHTTP(w, r)
}

func (p *Proxy) logger() *slog.Logger {
	if p.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return p.Logger
}

// responder answers proxy errors (a request that does not upgrade, a
// streaming server that does not answer) with a 500, as the kubelet does.
type responder struct{ logger *slog.Logger }

func (r responder) Error(w http.ResponseWriter, req *http.Request, err error) {
	r.logger.Warn("Stream proxy failed", "path", req.URL.Path, "err", err)
	http.Error(w, err.Error(), http.StatusInternalServerError)
}
