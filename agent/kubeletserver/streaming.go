package kubeletserver

import (
	"context"
	"fmt"
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

// streamOptions are the stream flags of an exec or attach request.
type streamOptions struct {
	Stdin, Stdout, Stderr, TTY bool
	Command                    []string
}

// parseStreamOptions reads the query as the kubelet does ("1" or "true"
// set a flag; command repeats): at least one stream, and no stderr with a
// TTY (a terminal has one output stream).
func parseStreamOptions(q url.Values, exec bool) (streamOptions, error) {
	flag := func(k string) bool { v := q.Get(k); return v == "1" || strings.EqualFold(v, "true") }
	o := streamOptions{Stdin: flag("input") || flag("stdin"), Stdout: flag("output") || flag("stdout"),
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

// containerID is the runtime ID of the container's current instance.
func (s *Server) containerID(ns, name, container string) (string, error) {
	pod, err := s.deps.Pods.GetPod(ns, name)
	if err != nil {
		return "", err
	}
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

func (s *Server) exec(w http.ResponseWriter, r *http.Request) {
	o, err := parseStreamOptions(r.URL.Query(), true)
	if err != nil {
		writeError(w, err)
		return
	}
	id, err := s.containerID(r.PathValue("ns"), r.PathValue("pod"), r.PathValue("container"))
	if err != nil {
		writeError(w, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), criTimeout)
	resp, err := s.deps.Runtime.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: id, Cmd: o.Command,
		Tty: o.TTY, Stdin: o.Stdin, Stdout: o.Stdout, Stderr: o.Stderr})
	cancel()
	if err != nil {
		writeError(w, fmt.Errorf("exec in container %s: %w", id, err))
		return
	}
	s.proxyStream(w, r, resp.GetUrl())
}

func (s *Server) attach(w http.ResponseWriter, r *http.Request) {
	o, err := parseStreamOptions(r.URL.Query(), false)
	if err != nil {
		writeError(w, err)
		return
	}
	id, err := s.containerID(r.PathValue("ns"), r.PathValue("pod"), r.PathValue("container"))
	if err != nil {
		writeError(w, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), criTimeout)
	resp, err := s.deps.Runtime.Attach(ctx, &runtimeapi.AttachRequest{ContainerId: id,
		Tty: o.TTY, Stdin: o.Stdin, Stdout: o.Stdout, Stderr: o.Stderr})
	cancel()
	if err != nil {
		writeError(w, fmt.Errorf("attach to container %s: %w", id, err))
		return
	}
	s.proxyStream(w, r, resp.GetUrl())
}

func (s *Server) portForward(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("ns"), r.PathValue("pod")
	pod, err := s.deps.Pods.GetPod(ns, name)
	if err != nil {
		writeError(w, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), criTimeout)
	defer cancel()
	sbs, err := s.deps.Runtime.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{
		State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
		LabelSelector: map[string]string{"io.kubernetes.pod.uid": string(pod.UID)},
	})
	if err != nil {
		writeError(w, fmt.Errorf("list the sandboxes of pod %s/%s: %w", ns, name, err))
		return
	}
	if len(sbs) == 0 {
		writeError(w, apierrors.NewBadRequest(fmt.Sprintf("pod %s/%s has no ready sandbox", ns, name)))
		return
	}
	// Ports come in the stream headers (SPDY); WebSocket clients name
	// them in the query.
	var ports []int32
	for _, p := range r.URL.Query()["port"] {
		var n int32
		if _, err := fmt.Sscan(p, &n); err != nil || n <= 0 {
			writeError(w, apierrors.NewBadRequest(fmt.Sprintf("port %q is not a port number", p)))
			return
		}
		ports = append(ports, n)
	}
	resp, err := s.deps.Runtime.PortForward(ctx, &runtimeapi.PortForwardRequest{PodSandboxId: sbs[0].Id, Port: ports})
	if err != nil {
		writeError(w, fmt.Errorf("port-forward to pod %s/%s: %w", ns, name, err))
		return
	}
	cancel()
	s.proxyStream(w, r, resp.GetUrl())
}

// proxyStream relays the client's upgrade request (SPDY or WebSocket) to
// the runtime's streaming server and then the upgraded connection's bytes
// both ways, as the kubelet's proxyStream does: the runtime's server
// speaks the streaming protocols.
func (s *Server) proxyStream(w http.ResponseWriter, r *http.Request, raw string) {
	u, err := url.Parse(raw)
	if err != nil {
		writeError(w, fmt.Errorf("the runtime's streaming URL %q: %w", raw, err))
		return
	}
	h := proxy.NewUpgradeAwareHandler(u, nil /*transport*/, false /*wrapTransport*/, true /*upgradeRequired*/, responder{s})
	h.ServeHTTP(w, r)
}

// responder answers proxy errors (before the upgrade) with a 500.
type responder struct{ s *Server }

func (r responder) Error(w http.ResponseWriter, req *http.Request, err error) {
	r.s.logger.Warn("Stream proxy failed", "path", req.URL.Path, "err", err)
	http.Error(w, err.Error(), http.StatusInternalServerError)
}
