package kubeletserver

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"
)

// DefaultPort is the kubelet server's port (the kubelet's --port).
const DefaultPort = 10250

// defaultIdleTimeout closes a kept-alive connection with no request for
// that long. The kubelet's server leaves idle connections for its 4 h
// read timeout; here a caller cannot hold descriptors of the root daemon
// by opening connections and leaving them (streams and followed logs are
// requests in progress, not idle).
const defaultIdleTimeout = 2 * time.Minute

// Config says where the server listens and whom it trusts.
type Config struct {
	// Address is the IP address to listen on ("" or 0.0.0.0: all).
	Address string
	// Port is the TCP port (0 picks one: see Server.Addr).
	Port int
	// TLSCertFile and TLSKeyFile are the serving certificate and key; when
	// both are empty a self-signed pair is created (once) in CertDir.
	TLSCertFile, TLSKeyFile string
	// CertDir holds the self-signed pair (kubelet.crt, kubelet.key).
	CertDir string
	// GetCertificate, when set, gives the serving certificate at each
	// handshake instead of the files or the self-signed pair (the
	// certificate the CSR API issued: serverTLSBootstrap).
	GetCertificate func(*tls.ClientHelloInfo) (*tls.Certificate, error)
	// ClientCAFile is the PEM bundle client certificates must chain to;
	// "" accepts no client certificate (bearer tokens only).
	ClientCAFile string
	// NodeName is the node the SubjectAccessReviews name, and a SAN of the
	// self-signed certificate.
	NodeName string
	// NodeIPs are further SANs of the self-signed certificate.
	NodeIPs []net.IP
	// TokenAudiences are the audiences a bearer token must be for (the
	// TokenReview's spec.audiences). Empty: the API server's own
	// (--api-audiences, by default its service account issuer), which is
	// what the kubelet asks for: it leaves APIAudiences unset.
	TokenAudiences []string
	// AnonymousAuth lets requests without credentials in as
	// system:anonymous (group system:unauthenticated), which the
	// authorizer then decides about (--anonymous-auth; default off).
	AnonymousAuth bool
	// AuthorizationMode is AuthorizationWebhook (a SubjectAccessReview
	// per request; "" means it) or AuthorizationAlwaysAllow (every
	// authenticated request is allowed, anonymous ones too with
	// AnonymousAuth).
	AuthorizationMode string
}

// The kubelet's authorization modes (--authorization-mode).
const (
	AuthorizationWebhook     = "Webhook"
	AuthorizationAlwaysAllow = "AlwaysAllow"
)

// Pods is what the server needs of the daemon's pods, under the names the
// API server knows them by (daemon.ClusterView).
type Pods interface {
	// ListPods returns the pods of a namespace ("" = all), with status.
	ListPods(namespace string) []*v1.Pod
	// GetPod returns one pod; a NotFound StatusError when there is none.
	GetPod(namespace, name string) (*v1.Pod, error)
}

// Metrics writes the daemon's Prometheus text exposition.
type Metrics interface {
	WriteMetrics(w io.Writer) error
}

// Deps are the server's collaborators; Metrics may be nil (no /metrics).
type Deps struct {
	Pods     Pods
	Logs     Logs
	Runtime  Runtime
	Metrics  Metrics
	Reviewer Reviewer
	Logger   *slog.Logger
	// ContainerStats and NodeUsage feed /metrics/resource, which is served
	// only with ContainerStats set (NodeUsage may be nil: no node series).
	ContainerStats ContainerStats
	NodeUsage      NodeUsage
	// Summary feeds /stats/summary (nil: not served).
	Summary Summary
	// Clock times the review caches (nil: the real clock).
	Clock clock.PassiveClock
	// Configz is the configuration in effect, served as /configz under
	// the key "kubeletconfig" (nil: not served).
	Configz func() any
}

// Server is the kubelet server.
type Server struct {
	cfg     Config
	deps    Deps
	authn   *authenticator
	logger  *slog.Logger
	handler http.Handler
	tls     *tls.Config
	// decisions caches SubjectAccessReview answers (allowed 5 min,
	// denied 30 s, as the kubelet).
	decisions *ttlCache[decision]
	// ln is the listener once Listen succeeded.
	ln net.Listener
	// idleTimeout closes kept-alive connections idle that long
	// (defaultIdleTimeout; tests shorten it).
	idleTimeout time.Duration
}

// New checks the configuration, loads (or creates) the serving certificate
// and the client CA, and builds the handler; Listen and Serve start it.
func New(cfg Config, deps Deps) (*Server, error) {
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.NodeName == "" {
		return nil, errors.New("kubelet server: no node name")
	}
	if (cfg.TLSCertFile == "") != (cfg.TLSKeyFile == "") {
		return nil, errors.New("kubelet server: give both --tls-cert-file and --tls-private-key-file, or neither")
	}
	switch cfg.AuthorizationMode {
	case "":
		cfg.AuthorizationMode = AuthorizationWebhook
	case AuthorizationWebhook, AuthorizationAlwaysAllow:
	default:
		return nil, fmt.Errorf("kubelet server: --authorization-mode %q: use %s or %s", cfg.AuthorizationMode, AuthorizationWebhook, AuthorizationAlwaysAllow)
	}
	if deps.Clock == nil {
		deps.Clock = clock.RealClock{}
	}
	s := &Server{cfg: cfg, deps: deps, logger: deps.Logger.With("component", "kubelet-server"),
		decisions: newTTLCache[decision](deps.Clock), idleTimeout: defaultIdleTimeout}
	s.authn = &authenticator{anonymous: cfg.AnonymousAuth, reviewer: deps.Reviewer, audiences: slices.Clone(cfg.TokenAudiences),
		tokens: newTTLCache[*User](deps.Clock), refused: newTTLCache[struct{}](deps.Clock)}
	if cfg.ClientCAFile != "" {
		pem, err := os.ReadFile(cfg.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("kubelet server: client CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("kubelet server: client CA %s holds no PEM certificate", cfg.ClientCAFile)
		}
		s.authn.clientCAs = pool
	}
	getCert := cfg.GetCertificate
	if getCert == nil {
		certFile, keyFile := cfg.TLSCertFile, cfg.TLSKeyFile
		if certFile == "" {
			var err error
			if certFile, keyFile, err = selfSigned(cfg.CertDir, cfg.NodeName, cfg.NodeIPs, time.Now()); err != nil {
				return nil, fmt.Errorf("kubelet server: self-signed certificate: %w", err)
			}
		}
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("kubelet server: serving certificate: %w", err)
		}
		getCert = func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &pair, nil }
	}
	s.tls = &tls.Config{
		GetCertificate: getCert,
		// Asked for, verified by the authenticator: a certificate of
		// another CA is then a 401 like a missing one, not a failed
		// handshake, and a token may still authenticate the request.
		ClientAuth: tls.RequestClientCert,
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"http/1.1"},
	}
	s.handler = s.withAuth(s.routes())
	return s, nil
}

// Handler is the server's handler, authentication and authorization
// included (for tests: serve it on an httptest TLS server).
func (s *Server) Handler() http.Handler { return s.handler }

// Listen binds the address and port.
func (s *Server) Listen() error {
	addr := net.JoinHostPort(s.cfg.Address, strconv.Itoa(s.cfg.Port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("kubelet server: %w", err)
	}
	s.ln = ln
	return nil
}

// Addr is the bound address (after Listen).
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve serves HTTPS on the listener until ctx ends.
func (s *Server) Serve(ctx context.Context) error {
	s.logger.Info("Serving the kubelet API", "address", s.ln.Addr().String())
	return s.serve(ctx, s.ln, s.handler, s.tls)
}

// serve serves handler on ln until ctx ends: HTTPS with tlsConfig, plain
// HTTP without.
func (s *Server) serve(ctx context.Context, ln net.Listener, handler http.Handler, tlsConfig *tls.Config) error {
	srv := &http.Server{
		Handler:           handler,
		TLSConfig:         tlsConfig,
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       s.idleTimeout,
		ErrorLog:          slog.NewLogLogger(s.logger.Handler(), slog.LevelDebug),
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	stop := context.AfterFunc(ctx, func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		_ = srv.Close() // streams (exec, follow) do not end on Shutdown
	})
	defer stop()
	var err error
	if tlsConfig != nil {
		err = srv.ServeTLS(ln, "", "")
	} else {
		err = srv.Serve(ln)
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// routes are the endpoints, without authentication.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	s.readOnlyRoutes(mux)
	mux.HandleFunc("GET /runningpods/", s.runningPods)
	if s.deps.Configz != nil {
		mux.HandleFunc("GET /configz", s.configz)
	}
	mux.HandleFunc("GET /containerLogs/{ns}/{pod}/{container}", s.containerLogs)
	for _, p := range []string{"/exec/{ns}/{pod}/{container}", "/exec/{ns}/{pod}/{uid}/{container}"} {
		mux.HandleFunc(p, s.exec)
	}
	for _, p := range []string{"/attach/{ns}/{pod}/{container}", "/attach/{ns}/{pod}/{uid}/{container}"} {
		mux.HandleFunc(p, s.attach)
	}
	for _, p := range []string{"/portForward/{ns}/{pod}", "/portForward/{ns}/{pod}/{uid}"} {
		mux.HandleFunc(p, s.portForward)
	}
	return mux
}

// readOnlyRoutes are the endpoints the kubelet serves without
// authentication on its read-only port (its InstallAuthNotRequiredHandlers):
// /healthz, /pods, /stats/summary and the /metrics family. The kubelet
// server serves them too, behind authentication.
func (s *Server) readOnlyRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /healthz", healthz)
	mux.HandleFunc("GET /pods", s.pods)
	if s.deps.Metrics != nil {
		mux.HandleFunc("GET /metrics", s.metrics)
		mux.HandleFunc("GET /metrics/probes", s.probeMetrics)
	}
	if s.deps.Summary != nil {
		mux.HandleFunc("GET /stats/summary", s.statsSummary)
	}
	if s.deps.ContainerStats != nil {
		mux.HandleFunc("GET /metrics/resource", s.resourceMetrics)
	}
}

// healthz answers "ok": the process serves (the kubelet's ping check).
func healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, "ok")
}

// withAuth authenticates each request (401 when nobody is), then asks the
// API server whether that user may do it (403 when not).
func (s *Server) withAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, err := s.authn.authenticate(r)
		if err != nil {
			if !errors.Is(err, errUnauthenticated) {
				s.logger.Warn("Authentication failed", "err", err, "path", r.URL.Path)
			}
			// Nobody it knows: the connection is not kept for them.
			w.Header().Set("Connection", "close")
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		a := requestAttributes(r)
		allowed, reason, err := s.authorize(r.Context(), u, a)
		subs := strings.Join(a.Subresources, ",")
		if err != nil {
			s.logger.Warn("Authorization failed", "err", err, "user", u.Name, "path", r.URL.Path)
			http.Error(w, fmt.Sprintf("Authorization error (user=%s, verb=%s, resource=nodes, subresource=%s)", u.Name, a.Verb, subs), http.StatusInternalServerError)
			return
		}
		if !allowed {
			msg := fmt.Sprintf("Forbidden (user=%s, verb=%s, resource=nodes, subresource=%s)", u.Name, a.Verb, subs)
			if reason != "" {
				msg += ": " + reason
			}
			http.Error(w, msg, http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// authorize decides whether u may do a: with AuthorizationAlwaysAllow
// always; else a SubjectAccessReview to the API server per subresource of
// a, in order, until one allows it. Without a reviewer nothing is allowed.
func (s *Server) authorize(ctx context.Context, u *User, a attributes) (bool, string, error) {
	if s.cfg.AuthorizationMode == AuthorizationAlwaysAllow {
		return true, "", nil
	}
	if s.deps.Reviewer == nil {
		return false, "no authorizer", nil
	}
	var reason string
	for _, sub := range a.Subresources {
		d, err := s.review(ctx, accessReview(u, s.cfg.NodeName, a.Verb, sub))
		if err != nil {
			return false, "", err
		}
		if d.allowed {
			return true, "", nil
		}
		reason = d.reason
	}
	return false, reason, nil
}

// review answers one SubjectAccessReview, from the cache when it can.
func (s *Server) review(ctx context.Context, sar *authzv1.SubjectAccessReview) (decision, error) {
	key := reviewKey(sar)
	if d, ok := s.decisions.get(key); ok {
		return d, nil
	}
	res, err := s.deps.Reviewer.ReviewAccess(ctx, sar)
	if err != nil {
		return decision{}, fmt.Errorf("subject access review: %w", err)
	}
	d := decision{allowed: res.Status.Allowed && !res.Status.Denied, reason: res.Status.Reason}
	ttl := allowedCacheTTL
	if !d.allowed {
		ttl = deniedCacheTTL
	}
	s.decisions.put(key, d, ttl)
	return d, nil
}

// configz serves the configuration in effect as the kubelet's /configz
// does (component-base/configz): a JSON object of its one registered
// configuration, "kubeletconfig".
func (s *Server) configz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, map[string]any{"kubeletconfig": s.deps.Configz()})
}

// pods serves the node's pods as a v1.PodList.
func (s *Server) pods(w http.ResponseWriter, _ *http.Request) {
	list := &v1.PodList{}
	list.APIVersion, list.Kind = "v1", "PodList"
	for _, p := range s.deps.Pods.ListPods("") {
		list.Items = append(list.Items, *p)
	}
	writeJSON(w, list)
}

// runningPods serves the pods with at least one running container, as a
// v1.PodList (the kubelet's /runningpods/).
func (s *Server) runningPods(w http.ResponseWriter, _ *http.Request) {
	list := &v1.PodList{}
	list.APIVersion, list.Kind = "v1", "PodList"
	for _, p := range s.deps.Pods.ListPods("") {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Running != nil {
				list.Items = append(list.Items, *p)
				break
			}
		}
	}
	writeJSON(w, list)
}

// metrics serves /metrics: the daemon's metrics, those of a pod only for
// the pods the cluster sees (clusterSeries).
func (s *Server) metrics(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	var all bytes.Buffer
	if err := s.deps.Metrics.WriteMetrics(&all); err != nil {
		s.logger.Warn("Writing metrics failed", "err", err)
	}
	_, _ = w.Write(s.clusterSeries(all.Bytes()))
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// writeError answers with err's HTTP status (a StatusError's code, 500
// otherwise) and message, as plain text: the API server passes it on.
func writeError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	var se apierrors.APIStatus
	if errors.As(err, &se) && se.Status().Code != 0 {
		code = int(se.Status().Code)
	}
	http.Error(w, err.Error(), code)
}
