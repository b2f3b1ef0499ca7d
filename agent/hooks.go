package agent

// Lifecycle hooks (postStart, preStop) as the kubelet runs them
// (kubelet-facts §7.2, §7.3): one handler runner for exec, httpGet and sleep,
// the postStart call in startContainer and the preStop call in
// killContainer (container.go).

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/cri"
)

// lifecycleUserAgent is the kubelet's User-Agent for hook requests,
// kube-lifecycle/<major>.<minor> of the Kubernetes version matched.
const lifecycleUserAgent = "kube-lifecycle/1.36"

// maxHookRedirects bounds the redirects a hook request follows (net/http's
// and the kubelet's limit).
const maxHookRedirects = 10

// hookHTTPClient is shared by all httpGet hooks. Like the kubelet's it skips
// certificate checks (pods serve self-signed certificates), keeps no idle
// connections (hooks are rare and every pod is another host) and does not
// follow redirects to another host: the redirect itself is the answer. It
// uses no proxy: pod IPs are on the node's own bridge.
// Requests are bounded by the caller's context only.
var hookHTTPClient = &http.Client{
	Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // as the kubelet
		DisableKeepAlives: true,
	},
	CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= maxHookRedirects {
			return http.ErrUseLastResponse
		}
		if req.URL.Hostname() != via[0].URL.Hostname() {
			return http.ErrUseLastResponse
		}
		return nil
	},
}

// runLifecycleHandler runs one lifecycle handler of container c (running as
// containerID, in a pod whose IP is podIP) and reports whether it failed. On
// failure the returned string is the user-facing message, in the kubelet's
// words, for the FailedPostStartHook / FailedPreStopHook event; the error
// carries the cause. Nothing here bounds the handler in time: exec has no
// timeout, as in the kubelet, so ctx must.
//
//   - exec: ExecSync; an error or a non-zero exit fails, with the output in
//     the message.
//   - httpGet: GET to host (or podIP), the port (a number or the name of one
//     of c's ports) and path; HTTP status codes are ignored, only transport
//     errors fail. An HTTPS request answered in plain HTTP is retried once
//     over HTTP without the Authorization header (Warning
//     LifecycleHTTPFallback).
//   - sleep: waits the seconds on the agent's clock; fails when ctx ends
//     first.
//   - tcpSocket: deprecated for hooks and never run by the kubelet: fails.
func (a *Agent) runLifecycleHandler(ctx context.Context, pw *podWorker, c *v1.Container, containerID, podIP string, h *v1.LifecycleHandler) (string, error) {
	pod := pw.pod()
	podRef := fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
	switch {
	case h.Exec != nil:
		// The CRI answers ExecSync with the whole output in one message
		// (containerd caps it at 16 MiB): what is kept of it is cut at
		// once, so the rest is garbage before anything else runs.
		output, err := a.execHook(ctx, containerID, h.Exec.Command)
		if err == nil {
			return "", nil
		}
		return hookMessage("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: %s, message: %q",
			h.Exec.Command, c.Name, podRef, execErrorText(err), output), err
	case h.HTTPGet != nil:
		if err := a.runHTTPHook(ctx, pw, c, podIP, h.HTTPGet); err != nil {
			return hookMessage("HTTP lifecycle hook (%s) for Container %q in Pod %q failed - error: %v",
				h.HTTPGet.Path, c.Name, podRef, err), err
		}
		return "", nil
	case h.Sleep != nil:
		if err := a.sleepHook(ctx, h.Sleep.Seconds); err != nil {
			return fmt.Sprintf("Sleep lifecycle hook (%d) for Container %q in Pod %q failed - error: %v",
				h.Sleep.Seconds, c.Name, podRef, err), err
		}
		return "", nil
	case h.TCPSocket != nil:
		err := errors.New("tcpSocket is not supported for lifecycle hooks")
		return fmt.Sprintf("Cannot run handler: %v", err), err
	}
	err := errors.New("lifecycle handler has no action")
	return fmt.Sprintf("Cannot run handler: %v", err), err
}

// maxHookOutput bounds what is kept of an exec hook's output (stdout, then
// stderr): the kubelet's bound on a hook's or probe's HTTP body
// (maxRespBodyLength, 10 KiB), as probes cut their output. The kubelet
// quotes an exec hook's whole output in its message; here a hook printing
// megabytes must not make every status, log line and event carry them.
const maxHookOutput = 10 * 1024

// maxHookMessage bounds a hook failure's message (the container's waiting
// message, the log): the quoted output (up to 4 bytes per byte kept) is cut
// again with the rest of the message. Its event is cut further
// (maxEventMessageBytes).
const maxHookMessage = 12 * 1024

// execHook runs an exec hook's command without a timeout (kubelet-facts
// §7.3: ctx bounds it) and returns at most maxHookOutput bytes of its
// output, cut on a character boundary.
func (a *Agent) execHook(ctx context.Context, containerID string, cmd []string) (string, error) {
	out, size, err := a.execBounded(ctx, containerID, cmd)
	if size > bigExecAnswer {
		releaseBigAnswer()
	}
	return out, err
}

// execBounded runs cmd through ExecSync and returns what is kept of its
// output and the size of the whole: nothing of the answer is referenced
// once it returns.
func (a *Agent) execBounded(ctx context.Context, containerID string, cmd []string) (string, int, error) {
	stdout, stderr, err := a.runtime.ExecSync(ctx, containerID, cmd, 0)
	return boundedOutput(stdout, stderr, maxHookOutput), len(stdout) + len(stderr), err
}

// bigExecAnswer is the output size past which an exec hook's answer is
// handed back to the OS at once (releaseBigAnswer).
const bigExecAnswer = 1 << 20

// lastRelease is when releaseBigAnswer last ran (Unix ns, wall clock).
var lastRelease atomic.Int64

// releaseBigAnswer returns the memory of a big ExecSync answer, now
// garbage, to the OS: a hook printing 8 MB costs the gRPC buffer and the
// decoded copy, 16 MB the Go heap would otherwise keep for minutes (an RSS
// growth of 30 MB per such hook was measured). At most once a second: a
// full collection of the daemon's small heap takes milliseconds.
func releaseBigAnswer() {
	now := time.Now().UnixNano()
	last := lastRelease.Load()
	if now-last < int64(time.Second) || !lastRelease.CompareAndSwap(last, now) {
		return
	}
	debug.FreeOSMemory()
}

// boundedOutput joins stdout and stderr into a fresh string of at most
// limit bytes, cut on a character boundary: it holds no reference to
// either slice.
func boundedOutput(stdout, stderr []byte, limit int) string {
	var b strings.Builder
	b.Grow(min(len(stdout)+len(stderr), limit+utf8.UTFMax))
	for _, p := range [][]byte{stdout, stderr} {
		if room := limit + utf8.UTFMax - b.Len(); len(p) > room {
			p = p[:max(room, 0)]
		}
		b.Write(p)
	}
	return clipUTF8(b.String(), limit)
}

// hookMessage formats a hook failure's message, cut to maxHookMessage
// bytes on a character boundary.
func hookMessage(format string, args ...any) string {
	return truncateMessage(fmt.Sprintf(format, args...), maxHookMessage)
}

// execErrorText renders an ExecSync failure: the exit code for a command
// that ran, the runtime's message otherwise.
func execErrorText(err error) string {
	var ee *cri.ExitError
	if errors.As(err, &ee) {
		return ee.Error()
	}
	return cri.Message(err)
}

// sleepHook waits seconds on the agent's clock, or fails when ctx ends
// first (the container is being killed under it).
func (a *Agent) sleepHook(ctx context.Context, seconds int64) error {
	if seconds <= 0 {
		return nil
	}
	t := a.clock.NewTimer(time.Duration(seconds) * time.Second)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		return fmt.Errorf("container terminated before sleep hook finished: %w", context.Cause(ctx))
	}
}

// runHTTPHook sends the hook's GET and discards the answer, whatever its
// status code.
func (a *Agent) runHTTPHook(ctx context.Context, pw *podWorker, c *v1.Container, podIP string, g *v1.HTTPGetAction) error {
	req, err := newHookRequest(ctx, c, podIP, g)
	if err != nil {
		return err
	}
	resp, err := hookHTTPClient.Do(req)
	if err != nil && req.URL.Scheme == "https" && isHTTPResponseToHTTPS(err) {
		// The kubelet's compatibility fall-back: the server speaks plain
		// HTTP on the port. The credentials meant for TLS are not sent in
		// clear.
		pw.containerEvent(c.Name, v1.EventTypeWarning, "LifecycleHTTPFallback",
			"Lifecycle hook of container %q: %s got an HTTP response to HTTPS, retrying over HTTP", c.Name, req.URL.Redacted())
		req = req.Clone(ctx)
		req.URL.Scheme = "http"
		req.Header.Del("Authorization")
		resp, err = hookHTTPClient.Do(req)
	}
	if err != nil {
		return err
	}
	// Read a little of the body so the server is not cut off mid-write,
	// then drop the rest with the connection.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 10*1024))
	return resp.Body.Close()
}

// isHTTPResponseToHTTPS reports net/http's error for a TLS handshake that
// got a plain HTTP answer (it is not a typed error).
func isHTTPResponseToHTTPS(err error) bool {
	return strings.Contains(err.Error(), "server gave HTTP response to HTTPS client")
}

// newHookRequest builds the hook's GET request the way the kubelet builds
// probe requests: scheme://host:port/path, the user's headers (a Host header
// sets the request's host), and default User-Agent and Accept headers.
func newHookRequest(ctx context.Context, c *v1.Container, podIP string, g *v1.HTTPGetAction) (*http.Request, error) {
	host := g.Host
	if host == "" {
		host = podIP
	}
	if host == "" {
		// A host-network pod reports no IP of its own: the node's address
		// is the pod's, and loopback reaches it.
		host = "127.0.0.1"
	}
	port, err := resolvePort(g.Port, c)
	if err != nil {
		return nil, err
	}
	scheme := strings.ToLower(string(g.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	path := g.Path
	if path == "" {
		path = "/"
	}
	u, err := url.Parse(path)
	if err != nil {
		u = &url.URL{Path: path}
	}
	u.Scheme = scheme
	u.Host = net.JoinHostPort(host, strconv.Itoa(port))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	for _, hdr := range g.HTTPHeaders {
		if strings.EqualFold(hdr.Name, "Host") {
			req.Host = hdr.Value
			continue
		}
		req.Header.Add(hdr.Name, hdr.Value)
	}
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header.Set("User-Agent", lifecycleUserAgent)
	}
	if _, ok := req.Header["Accept"]; !ok {
		req.Header.Set("Accept", "*/*")
	}
	return req, nil
}

// resolvePort turns a hook or probe port into a number: an int, a numeric
// string, or the name of one of the container's ports.
func resolvePort(p intstr.IntOrString, c *v1.Container) (int, error) {
	if p.Type == intstr.Int {
		if p.IntVal <= 0 || p.IntVal > 65535 {
			return 0, fmt.Errorf("invalid port number %d", p.IntVal)
		}
		return int(p.IntVal), nil
	}
	if n, err := strconv.Atoi(p.StrVal); err == nil {
		return n, nil
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	return 0, fmt.Errorf("couldn't find port %q in container %q", p.StrVal, c.Name)
}

// containerFromAnnotations rebuilds the parts of a container spec that
// killing it needs (name, ports, preStop handler) from its CRI annotations,
// for a container the current spec does not describe. Malformed
// annotations read as absent, as the kubelet does.
func containerFromAnnotations(name string, annotations map[string]string) *v1.Container {
	c := &v1.Container{Name: name}
	if s := annotations[annotationContainerPorts]; s != "" {
		// Into a fresh slice: a failed decode can leave part of one.
		var ports []v1.ContainerPort
		if err := json.Unmarshal([]byte(s), &ports); err == nil {
			c.Ports = ports
		}
	}
	if s := annotations[annotationPreStopHandler]; s != "" {
		h := &v1.LifecycleHandler{}
		if err := json.Unmarshal([]byte(s), h); err == nil {
			c.Lifecycle = &v1.Lifecycle{PreStop: h}
		}
	}
	return c
}

// specContainer finds the named container (init or app) in the pod's spec.
func specContainer(pod *v1.Pod, name string) *v1.Container {
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// preStopTarget returns the spec to run the named container's preStop hook
// with and the hook itself, or a nil hook when there is none. The newest
// desired spec wins, as in the kubelet; a container the spec no longer
// names is described by its own annotations (one ContainerStatus call).
func (a *Agent) preStopTarget(ctx context.Context, pw *podWorker, id, name string) (*v1.Container, *v1.LifecycleHandler) {
	c := specContainer(pw.pod(), name)
	if c == nil {
		resp, err := a.runtime.ContainerStatus(ctx, id, false)
		if err != nil {
			pw.logger.Warn("Read container annotations for preStop failed", "containerID", id, "err", err)
			return nil, nil
		}
		c = containerFromAnnotations(name, resp.GetStatus().GetAnnotations())
	}
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil {
		return c, nil
	}
	return c, c.Lifecycle.PreStop
}

// runPreStopHook runs the preStop hook within grace seconds (grace > 0) and
// returns the whole seconds it took, to be subtracted from the grace
// period. A failed hook is reported (Warning FailedPreStopHook) and
// termination goes on. A hook still running when the grace period ends is
// cancelled; the kubelet leaves it to die with the container instead.
func (a *Agent) runPreStopHook(ctx context.Context, pw *podWorker, c *v1.Container, id string, h *v1.LifecycleHandler, grace int64) int64 {
	start := a.clock.Now()
	// A kill once begun completes even when a termination request cancels
	// the sync that began it; the agent's stop ends it (killContext).
	hctx, cancel := pw.killContext(ctx)
	defer cancel()
	podIP := ""
	if h.HTTPGet != nil && h.HTTPGet.Host == "" {
		podIP = a.containerPodIP(hctx, id)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if msg, err := a.runLifecycleHandler(hctx, pw, c, id, podIP, h); err != nil && !pw.agentStopping() {
			pw.containerEvent(c.Name, v1.EventTypeWarning, "FailedPreStopHook", "%s", msg)
		}
	}()
	// The hook may take the grace period, or less once a later deletion
	// shortens it (killDeadline): then it ends at the new deadline.
	end := start.Add(time.Duration(grace) * time.Second)
	for {
		by, ok, cut := pw.killDeadline()
		if ok && by.Before(end) {
			end = by
		}
		t := a.clock.NewTimer(end.Sub(a.clock.Now()))
		select {
		case <-done:
			t.Stop()
			return int64(a.clock.Since(start) / time.Second)
		case <-t.C():
			pw.logger.Info("PreStop hook not completed in grace period", "container", c.Name, "containerID", id, "gracePeriod", grace)
			return grace
		case <-cut:
			t.Stop()
		case <-hctx.Done():
			// The agent stops: the kill is abandoned, the next start
			// kills the pod again.
			t.Stop()
			return int64(a.clock.Since(start) / time.Second)
		}
	}
}

// containerPodIP is the IP of the sandbox a container runs in ("" when
// unknown or on the host network). Only httpGet preStop hooks without a
// host need it, so it is looked up then, not on every kill.
func (a *Agent) containerPodIP(ctx context.Context, id string) string {
	ctrs, err := a.runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{Id: id})
	if err != nil || len(ctrs) == 0 {
		return ""
	}
	resp, err := a.runtime.PodSandboxStatus(ctx, ctrs[0].PodSandboxId, false)
	if err != nil {
		return ""
	}
	return resp.GetStatus().GetNetwork().GetIp()
}
