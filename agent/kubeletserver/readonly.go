package kubeletserver

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
)

// DefaultReadOnlyPort is the kubelet's read-only port when one is asked for
// (--read-only-port 10255; the default is 0, off).
const DefaultReadOnlyPort = 10255

// DefaultHealthzPort and DefaultHealthzBindAddress are the kubelet's
// healthz endpoint (--healthz-port, --healthz-bind-address), which
// `kubeadm join` polls (http://127.0.0.1:10248/healthz).
const (
	DefaultHealthzPort        = 10248
	DefaultHealthzBindAddress = "127.0.0.1"
)

// debugPaths are the kubelet server's endpoints that the read-only port
// refuses with 405 "Debug endpoints are disabled." (the kubelet's
// InstallDebuggingDisabledHandlers): running commands, streams, logs,
// profiles. /configz is not among them: it is not served there at all.
var debugPaths = []string{"/run/", "/exec/", "/attach/", "/portForward/", "/containerLogs/",
	"/runningpods/", "/debug/pprof/", "/logs/"}

// ReadOnlyHandler is the read-only port's handler: without authentication,
// only what the kubelet serves there (readOnlyRoutes): /healthz, /pods,
// /stats/summary, /metrics, /metrics/probes, /metrics/resource. The
// kubelet server's other endpoints answer 405 (debugPaths) or 404.
func (s *Server) ReadOnlyHandler() http.Handler {
	mux := http.NewServeMux()
	s.readOnlyRoutes(mux)
	disabled := func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "Debug endpoints are disabled.", http.StatusMethodNotAllowed)
	}
	for _, p := range debugPaths {
		mux.HandleFunc(p, disabled)
	}
	return mux
}

// ServeReadOnly serves ReadOnlyHandler over plain HTTP on ln until ctx
// ends.
func (s *Server) ServeReadOnly(ctx context.Context, ln net.Listener) error {
	s.logger.Info("Serving the kubelet's read-only API without authentication", "address", ln.Addr().String())
	return s.serve(ctx, ln, s.ReadOnlyHandler(), nil)
}

// HealthzHandler answers /healthz with "ok", as the kubelet's healthz
// endpoint (its ping check only).
func HealthzHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", healthz)
	return mux
}

// ServeHealthz serves HealthzHandler over plain HTTP on ln until ctx ends.
func (s *Server) ServeHealthz(ctx context.Context, ln net.Listener) error {
	s.logger.Info("Serving healthz", "address", ln.Addr().String())
	return s.serve(ctx, ln, HealthzHandler(), nil)
}

// ListenPlain binds address:port for the read-only or healthz endpoint.
func ListenPlain(address string, port int) (net.Listener, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(address, strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("kubelet server: %w", err)
	}
	return ln, nil
}
