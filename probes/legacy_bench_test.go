package probes

// The probe handlers as they were before the steady-state work (commit
// 7895451): the baseline BenchmarkManager_Steady measures in the same run.
// Only the benchmark uses them.

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"
)

// legacyProber runs httpGet and tcpSocket probes the old way: the request
// rebuilt for every run, net/http's client over a Transport without
// keep-alives, the TCP address joined and resolved for every run.
type legacyProber struct {
	// transport is the old shared Transport.
	transport *http.Transport
	// userAgent of httpGet probes.
	userAgent string
}

var _ runner = (*legacyProber)(nil)

func newLegacyProber() *legacyProber {
	return &legacyProber{
		transport: &http.Transport{
			Proxy:              nil,
			TLSClientConfig:    &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // as the kubelet
			DisableKeepAlives:  true,
			DisableCompression: true,
			DialContext:        lingerDial,
		},
		userAgent: DefaultUserAgent,
	}
}

// run is the old prober.run for httpGet and tcpSocket probes.
func (lp *legacyProber) run(ctx context.Context, w *worker, podIP string) (Result, string, error) {
	switch h := &w.probe.ProbeHandler; {
	case h.HTTPGet != nil:
		req, err := NewHTTPGetRequest(h.HTTPGet, w.container, podIP, lp.userAgent)
		if err != nil {
			return Unknown, "", err
		}
		return lp.httpProbe(ctx, req, w.timing.timeout)
	case h.TCPSocket != nil:
		host, err := probeHost(h.TCPSocket.Host, podIP)
		if err != nil {
			return Unknown, "", err
		}
		port, err := ResolvePort(h.TCPSocket.Port, w.container)
		if err != nil {
			return Unknown, "", err
		}
		return legacyTCP(ctx, host, port, w.timing.timeout)
	}
	return Unknown, "", errors.New("legacy prober: only httpGet and tcpSocket")
}

// httpProbe is the old HTTPProber.Probe.
func (lp *legacyProber) httpProbe(ctx context.Context, req *http.Request, timeout time.Duration) (Result, string, error) {
	client := &http.Client{
		Transport: lp.transport,
		Timeout:   timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if req.URL.Hostname() != via[0].URL.Hostname() {
				return http.ErrUseLastResponse
			}
			if len(via) >= maxRedirects {
				return fmt.Errorf("stopped after %d redirects", maxRedirects)
			}
			return nil
		},
	}
	res, err := client.Do(req.WithContext(ctx))
	if err != nil {
		return Failure, err.Error(), nil
	}
	defer func() { _ = res.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(res.Body, maxOutput))
	if err != nil {
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

// legacyTCP is the old TCP.
func legacyTCP(ctx context.Context, host string, port int, timeout time.Duration) (Result, string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := lingerDial(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return Failure, err.Error(), nil
	}
	_ = conn.Close()
	return Success, "", nil
}
