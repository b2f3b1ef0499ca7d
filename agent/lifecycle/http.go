package lifecycle

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
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

// HTTPGet sends the hook's GET for container c (in a pod whose IP is
// podIP) and discards the answer, whatever its status code: only
// transport errors fail. An HTTPS request answered in plain HTTP is
// retried once over HTTP without the Authorization header; fallback is
// called with the request's redacted URL before the retry (the engine's
// Warning LifecycleHTTPFallback event).
func HTTPGet(ctx context.Context, c *v1.Container, podIP string, g *v1.HTTPGetAction, fallback func(redactedURL string)) error {
	req, err := newHookRequest(ctx, c, podIP, g)
	if err != nil {
		return err
	}
	resp, err := hookHTTPClient.Do(req)
	if err != nil && req.URL.Scheme == "https" && isHTTPResponseToHTTPS(err) {
		// The kubelet's compatibility fall-back: the server speaks plain
		// HTTP on the port. The credentials meant for TLS are not sent in
		// clear.
		fallback(req.URL.Redacted())
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
