// Command testserver is the HTTP server in the image
// <registry>/minikubelet/testserver, used by the demo and the end-to-end
// tests. Its behaviour is chosen with flags (or the environment variable named
// in each flag's help) so that tests can script health, readiness and crashes:
//
//	/          "hello from <hostname>" plus POD_NAME / POD_IP when set
//	/healthz   200, or 500 once --fail-after has passed, or what /set chose
//	/env       the process environment, sorted, one VAR=value per line
//	/set       ?healthz=CODE (0 = back to automatic) and/or
//	           ?grpc=SERVING|NOT_SERVING|UNKNOWN|SERVICE_UNKNOWN
//
// --listen-delay postpones opening every port (readiness tests),
// --tcp-port adds a plain TCP listener that greets and closes (tcpSocket
// probes), --grpc-port serves grpc.health.v1 (grpc probes), and
// --exit-after with --exit-code makes the process exit on schedule. Every
// request is logged to stdout. SIGTERM and SIGINT exit 0 after
// --shutdown-delay, since as PID 1 the process would otherwise ignore them.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// config is the parsed command line.
type config struct {
	port          int
	tcpPort       int
	grpcPort      int
	listenDelay   time.Duration
	failAfter     time.Duration
	exitAfter     time.Duration
	exitCode      int
	shutdownDelay time.Duration
}

// server holds the switchable state behind the HTTP handlers.
type server struct {
	hostname string
	podName  string
	podIP    string
	// start is when the process started; --fail-after counts from it.
	start     time.Time
	failAfter time.Duration
	// now is the clock, replaced in tests.
	now func() time.Time
	// health is the grpc.health.v1 implementation whose status /set flips.
	health *health.Server
	// logOut receives one line per request.
	logOut io.Writer

	// mu guards healthzOverride.
	mu sync.Mutex
	// healthzOverride is the status /healthz answers when non-zero.
	healthzOverride int
}

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testserver:", err)
		os.Exit(2)
	}
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "testserver:", err)
		os.Exit(1)
	}
}

// parseFlags reads the flags; each default comes from the environment.
func parseFlags(args []string, getenv func(string) string) (config, error) {
	var cfg config
	var envErr error
	envInt := func(name string, def int) int {
		if v := getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				envErr = fmt.Errorf("env %s=%q: %w", name, v, err)
			}
			return n
		}
		return def
	}
	envDur := func(name string) time.Duration {
		if v := getenv(name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				envErr = fmt.Errorf("env %s=%q: %w", name, v, err)
			}
			return d
		}
		return 0
	}
	fs := flag.NewFlagSet("testserver", flag.ContinueOnError)
	fs.IntVar(&cfg.port, "port", envInt("PORT", 8080), "HTTP port (env PORT)")
	fs.IntVar(&cfg.tcpPort, "tcp-port", envInt("TCP_PORT", 0), "plain TCP port that greets and closes, 0 = off (env TCP_PORT)")
	fs.IntVar(&cfg.grpcPort, "grpc-port", envInt("GRPC_PORT", 0), "grpc.health.v1 port, 0 = off (env GRPC_PORT)")
	fs.DurationVar(&cfg.listenDelay, "listen-delay", envDur("LISTEN_DELAY"), "wait this long before opening any port (env LISTEN_DELAY)")
	fs.DurationVar(&cfg.failAfter, "fail-after", envDur("FAIL_AFTER"), "/healthz answers 500 this long after start, 0 = never (env FAIL_AFTER)")
	fs.DurationVar(&cfg.exitAfter, "exit-after", envDur("EXIT_AFTER"), "exit with --exit-code this long after start, 0 = never (env EXIT_AFTER)")
	fs.IntVar(&cfg.exitCode, "exit-code", envInt("EXIT_CODE", 1), "exit code for --exit-after (env EXIT_CODE)")
	fs.DurationVar(&cfg.shutdownDelay, "shutdown-delay", envDur("SHUTDOWN_DELAY"), "wait this long after SIGTERM before exiting (env SHUTDOWN_DELAY)")
	if envErr != nil {
		return config{}, envErr
	}
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	return cfg, nil
}

// newServer returns the server state for the handlers.
func newServer(cfg config, now func() time.Time, logOut io.Writer) *server {
	hostname, _ := os.Hostname()
	return &server{
		hostname:  hostname,
		podName:   os.Getenv("POD_NAME"),
		podIP:     os.Getenv("POD_IP"),
		start:     now(),
		failAfter: cfg.failAfter,
		now:       now,
		health:    health.NewServer(),
		logOut:    logOut,
	}
}

func run(cfg config) error {
	logger := log.New(os.Stdout, "", log.LstdFlags|log.Lmicroseconds)
	s := newServer(cfg, time.Now, os.Stdout)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	if cfg.exitAfter > 0 {
		time.AfterFunc(cfg.exitAfter, func() {
			logger.Printf("exiting with code %d after %v (--exit-after)", cfg.exitCode, cfg.exitAfter)
			os.Exit(cfg.exitCode)
		})
	}
	if cfg.listenDelay > 0 {
		logger.Printf("waiting %v before listening (--listen-delay)", cfg.listenDelay)
		select {
		case <-time.After(cfg.listenDelay):
		case <-ctx.Done():
			return nil
		}
	}

	httpLn, err := net.Listen("tcp", fmt.Sprintf(":%d", cfg.port))
	if err != nil {
		return fmt.Errorf("listen http: %w", err)
	}
	httpSrv := &http.Server{Handler: s.handler(), ReadHeaderTimeout: 10 * time.Second}
	errs := make(chan error, 3)
	go func() { errs <- httpSrv.Serve(httpLn) }()
	logger.Printf("listening for HTTP on %s", httpLn.Addr())

	if cfg.tcpPort != 0 {
		tcpLn, err := net.Listen("tcp", fmt.Sprintf(":%d", cfg.tcpPort))
		if err != nil {
			return fmt.Errorf("listen tcp: %w", err)
		}
		defer tcpLn.Close()
		go s.serveTCP(tcpLn)
		logger.Printf("listening for TCP on %s", tcpLn.Addr())
	}
	if cfg.grpcPort != 0 {
		grpcLn, err := net.Listen("tcp", fmt.Sprintf(":%d", cfg.grpcPort))
		if err != nil {
			return fmt.Errorf("listen grpc: %w", err)
		}
		gs := grpc.NewServer()
		healthpb.RegisterHealthServer(gs, s.health)
		defer gs.Stop()
		go func() { errs <- gs.Serve(grpcLn) }()
		logger.Printf("listening for gRPC health on %s", grpcLn.Addr())
	}

	select {
	case err := <-errs:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	logger.Printf("received termination signal, exiting after %v", cfg.shutdownDelay)
	time.Sleep(cfg.shutdownDelay)
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := httpSrv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// serveTCP greets each connection with one line and closes it.
func (s *server) serveTCP(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		fmt.Fprintf(s.logOut, "%s TCP connection from %s\n", s.now().Format(time.RFC3339Nano), c.RemoteAddr())
		fmt.Fprintf(c, "hello from %s\n", s.hostname)
		c.Close()
	}
}

// handler returns the HTTP routes, each wrapped in request logging.
func (s *server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/{$}", s.hello)
	mux.HandleFunc("/healthz", s.healthz)
	mux.HandleFunc("/env", s.env)
	mux.HandleFunc("/set", s.set)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		mux.ServeHTTP(rec, r)
		fmt.Fprintf(s.logOut, "%s %s %s %d from %s\n", s.now().Format(time.RFC3339Nano), r.Method, r.URL.RequestURI(), rec.status, r.RemoteAddr)
	})
}

func (s *server) hello(w http.ResponseWriter, _ *http.Request) {
	fmt.Fprintf(w, "hello from %s\n", s.hostname)
	if s.podName != "" {
		fmt.Fprintf(w, "pod: %s\n", s.podName)
	}
	if s.podIP != "" {
		fmt.Fprintf(w, "ip: %s\n", s.podIP)
	}
}

// healthzStatus is the status /healthz answers right now.
func (s *server) healthzStatus() int {
	s.mu.Lock()
	override := s.healthzOverride
	s.mu.Unlock()
	switch {
	case override != 0:
		return override
	case s.failAfter > 0 && s.now().Sub(s.start) >= s.failAfter:
		return http.StatusInternalServerError
	default:
		return http.StatusOK
	}
}

func (s *server) healthz(w http.ResponseWriter, _ *http.Request) {
	code := s.healthzStatus()
	w.WriteHeader(code)
	if code >= 200 && code < 400 {
		fmt.Fprintln(w, "ok")
		return
	}
	fmt.Fprintln(w, "unhealthy")
}

func (s *server) env(w http.ResponseWriter, _ *http.Request) {
	vars := os.Environ()
	sort.Strings(vars)
	fmt.Fprintln(w, strings.Join(vars, "\n"))
}

// set switches /healthz and the gRPC health status at runtime.
func (s *server) set(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if v := q.Get("healthz"); v != "" {
		code, err := strconv.Atoi(v)
		if err != nil || (code != 0 && (code < 100 || code > 599)) {
			http.Error(w, fmt.Sprintf("bad healthz %q: want an HTTP status or 0", v), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.healthzOverride = code
		s.mu.Unlock()
	}
	if v := q.Get("grpc"); v != "" {
		st, ok := healthpb.HealthCheckResponse_ServingStatus_value[v]
		if !ok {
			http.Error(w, fmt.Sprintf("bad grpc status %q: want SERVING or NOT_SERVING", v), http.StatusBadRequest)
			return
		}
		s.health.SetServingStatus("", healthpb.HealthCheckResponse_ServingStatus(st))
	}
	fmt.Fprintln(w, "ok")
}

// statusRecorder remembers the status code a handler wrote, for the log.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}
