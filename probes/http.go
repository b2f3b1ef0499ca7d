package probes

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
)

// DefaultUserAgent is sent by HTTP and gRPC probes unless the probe sets its
// own User-Agent header. The version matches the kubelet minikubelet follows
// (agent/hooks.go sends kube-lifecycle/1.36).
const DefaultUserAgent = "kube-probe/1.36"

// maxRedirects is how many same-host redirects a probe follows.
const maxRedirects = 10

// HTTPProber runs httpGet probes. It holds one transport shared by every
// probe: keep-alives are off, so each probe still opens (and closes) its own
// connection, and nothing stays open between probes. Safe for concurrent
// use.
type HTTPProber struct {
	// transport: TLS without verification, no proxy, no compression, no
	// keep-alives, dialer with SO_LINGER=1s (kubelet pkg/probe/http).
	transport *http.Transport
}

// NewHTTPProber returns a prober with the kubelet's transport settings.
func NewHTTPProber() *HTTPProber {
	return &HTTPProber{transport: &http.Transport{
		Proxy:              nil,
		TLSClientConfig:    &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // probes never verify certificates, as the kubelet
		DisableKeepAlives:  true,
		DisableCompression: true,
		DialContext:        lingerDial,
	}}
}

// Probe sends req, following redirects only to the same host name, and
// classifies the answer: 200–299 Success; 300–399 Warning (a redirect to
// another host, or a 3xx returned as final answer; Warning counts as
// Success); anything else Failure with "HTTP probe failed with statuscode:
// <n>". A connection error or timeout is a Failure carrying the error text.
// The output of a success is the body, read up to 10 KiB. timeout bounds
// the whole exchange, redirects and body included.
func (p *HTTPProber) Probe(ctx context.Context, req *http.Request, timeout time.Duration) (Result, string, error) {
	client := &http.Client{
		Transport:     p.transport,
		Timeout:       timeout,
		CheckRedirect: sameHostRedirects,
	}
	res, err := client.Do(req.WithContext(ctx))
	if err != nil {
		return Failure, err.Error(), nil
	}
	defer func() { _ = res.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(res.Body, maxOutput))
	if err != nil {
		// The status is in, the body broke off (timeout, reset): the
		// kubelet calls that a failure, not a prober error.
		return Failure, fmt.Sprintf("read HTTP probe response: %v", err), nil
	}
	switch code := res.StatusCode; {
	case code >= http.StatusOK && code < http.StatusMultipleChoices:
		return Success, string(body), nil
	case code >= http.StatusMultipleChoices && code < http.StatusBadRequest:
		return Warning, fmt.Sprintf("Probe terminated redirects, Response body: %s", body), nil
	default:
		return Failure, fmt.Sprintf("HTTP probe failed with statuscode: %d", code), nil
	}
}

// sameHostRedirects follows a redirect only to the host name of the first
// request (any port), at most maxRedirects times. A redirect elsewhere ends
// the exchange with the 3xx response itself (kubelet
// followNonLocalRedirects=false).
func sameHostRedirects(req *http.Request, via []*http.Request) error {
	if req.URL.Hostname() != via[0].URL.Hostname() {
		return http.ErrUseLastResponse
	}
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	return nil
}

// NewHTTPGetRequest builds the GET request of an httpGet probe: scheme
// (default http), host (action.Host, else podIP), port (a number or the name
// of one of the container's ports), path (which may carry a query); the
// probe's headers, User-Agent userAgent unless set, Accept "*/*" unless set
// (set to an empty value it is not sent), and a Host header becoming the
// request's Host. An error means the probe cannot be built (unknown port
// name, no pod IP): the prober could not check.
func NewHTTPGetRequest(action *v1.HTTPGetAction, container *v1.Container, podIP, userAgent string) (*http.Request, error) {
	scheme := strings.ToLower(string(action.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	host, err := probeHost(action.Host, podIP)
	if err != nil {
		return nil, err
	}
	port, err := ResolvePort(action.Port, container)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(action.Path)
	if err != nil {
		// Not a valid URL reference: take it as a literal path.
		u = &url.URL{Path: action.Path}
	}
	u.Scheme = scheme
	u.Host = net.JoinHostPort(host, strconv.Itoa(port))
	if u.Path == "" && u.Opaque == "" {
		u.Path = "/"
	}
	req, err := http.NewRequest(http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("build probe request: %w", err)
	}
	h := make(http.Header, len(action.HTTPHeaders)+2)
	for _, hd := range action.HTTPHeaders {
		h.Add(hd.Name, hd.Value)
	}
	if _, ok := h["User-Agent"]; !ok {
		h.Set("User-Agent", userAgent)
	}
	if _, ok := h["Accept"]; !ok {
		h.Set("Accept", "*/*")
	} else if h.Get("Accept") == "" {
		h.Del("Accept")
	}
	if host := h.Get("Host"); host != "" {
		req.Host = host
	}
	// net/http ignores a Host entry in the header map; keep it out.
	h.Del("Host")
	req.Header = h
	return req, nil
}

// probeHost is the probe's own host if set, else the pod IP. An empty result
// would make net/http dial the node's loopback, so it is an error.
func probeHost(host, podIP string) (string, error) {
	if host != "" {
		return host, nil
	}
	if podIP == "" {
		return "", errors.New("pod has no IP address yet")
	}
	return podIP, nil
}

// lingerDial dials TCP and sets SO_LINGER to 1 s so that closed probe
// connections are reset instead of lingering in TIME_WAIT (kubelet
// pkg/probe/dialer_others.go). TCP keep-alive stays off: a probe's
// connection lives milliseconds, and enabling it costs four setsockopt
// calls per probe.
func lingerDial(ctx context.Context, network, addr string) (net.Conn, error) {
	d := net.Dialer{KeepAlive: -1}
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(1)
	}
	return conn, nil
}
