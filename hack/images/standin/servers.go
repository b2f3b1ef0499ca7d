package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/peer"
)

// logf prints one timestamped line to stdout (the container log).
func logf(format string, args ...any) {
	fmt.Printf("%s %s\n", time.Now().UTC().Format("2006/01/02 15:04:05"), fmt.Sprintf(format, args...))
}

// stopSignals returns a channel that receives SIGTERM and SIGINT.
func stopSignals() chan os.Signal {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
	return ch
}

// serveHTTP serves h on addr until SIGTERM or SIGINT, then exits 0.
func serveHTTP(name, addr string, h http.Handler) int {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		return 1
	}
	logf("%s: listening on %s", name, ln.Addr())
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	errs := make(chan error, 1)
	go func() { errs <- srv.Serve(ln) }()
	select {
	case err := <-errs:
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		return 1
	case sig := <-stopSignals():
		logf("%s: %v received, exiting", name, sig)
		return 0
	}
}

// logRequests logs every request in a combined-log-like line.
func logRequests(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(rec, r)
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		fmt.Printf("%s - - [%s] \"%s %s %s\" %d %d \"-\" \"%s\"\n", host, time.Now().UTC().Format("02/Jan/2006:15:04:05 -0700"),
			r.Method, r.URL.RequestURI(), r.Proto, rec.status, rec.n, r.UserAgent())
	})
}

// statusRecorder remembers the status and size of a response for the log.
type statusRecorder struct {
	http.ResponseWriter
	status int
	n      int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	n, err := r.ResponseWriter.Write(b)
	r.n += n
	return n, err
}

// ---- nginx ----

const (
	nginxRoot    = "/usr/share/nginx/html"
	nginxPidFile = "/run/nginx.pid"
)

// nginxMain serves nginxRoot like nginx's default server (index.html for
// directories, 403 for a directory without one, 404 otherwise), or with
// -s sends a signal to the running one through its pid file. SIGQUIT is a
// graceful and SIGTERM/SIGINT a fast shutdown; SIGHUP reloads (a no-op).
func nginxMain(args []string) int {
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "-v", "-V":
			fmt.Fprintln(os.Stderr, "nginx version: nginx (minikubelet stand-in)")
			return 0
		case "-s":
			if i+1 == len(args) {
				fmt.Fprintln(os.Stderr, `nginx: option "-s" requires parameter`)
				return 1
			}
			return nginxSignal(args[i+1])
		}
	}
	_ = os.WriteFile(nginxPidFile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644)
	ln, err := net.Listen("tcp", ":80")
	if err != nil {
		fmt.Fprintf(os.Stderr, "nginx: [emerg] bind() to 0.0.0.0:80 failed (%v)\n", err)
		return 1
	}
	fmt.Fprintln(os.Stderr, "nginx: start worker processes (minikubelet stand-in, root "+nginxRoot+")")
	srv := &http.Server{Handler: logRequests(http.HandlerFunc(nginxServe)), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGHUP)
	for sig := range sigs {
		switch sig {
		case syscall.SIGHUP:
			fmt.Fprintln(os.Stderr, "nginx: signal 1 (SIGHUP) received, reconfiguring")
			continue
		case syscall.SIGQUIT:
			fmt.Fprintln(os.Stderr, "nginx: signal 3 (SIGQUIT) received, shutting down gracefully")
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = srv.Shutdown(ctx)
			cancel()
		default:
			fmt.Fprintf(os.Stderr, "nginx: signal %d (%v) received, exiting\n", sig.(syscall.Signal), sig)
		}
		_ = os.Remove(nginxPidFile)
		return 0
	}
	return 0
}

// nginxSignal is `nginx -s quit|stop|reload|reopen`.
func nginxSignal(what string) int {
	sigs := map[string]syscall.Signal{"quit": syscall.SIGQUIT, "stop": syscall.SIGTERM, "reload": syscall.SIGHUP, "reopen": syscall.SIGUSR1}
	sig, ok := sigs[what]
	if !ok {
		fmt.Fprintf(os.Stderr, "nginx: invalid option: \"-s %s\"\n", what)
		return 1
	}
	b, err := os.ReadFile(nginxPidFile)
	if err != nil {
		fmt.Fprintf(os.Stderr, "nginx: [error] open() %q failed (%v)\n", nginxPidFile, err)
		return 1
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		fmt.Fprintf(os.Stderr, "nginx: [error] invalid PID number %q in %q\n", strings.TrimSpace(string(b)), nginxPidFile)
		return 1
	}
	if err := syscall.Kill(pid, sig); err != nil {
		fmt.Fprintf(os.Stderr, "nginx: [error] kill(%d, %d) failed (%v)\n", pid, sig, err)
		return 1
	}
	return 0
}

func nginxServe(w http.ResponseWriter, r *http.Request) {
	p := path.Clean("/" + r.URL.Path)
	full := filepath.Join(nginxRoot, filepath.FromSlash(p))
	fi, err := os.Stat(full)
	if err == nil && fi.IsDir() {
		full = filepath.Join(full, "index.html")
		if fi, err = os.Stat(full); err != nil {
			nginxError(w, http.StatusForbidden, "403 Forbidden")
			return
		}
	}
	if err != nil || !fi.Mode().IsRegular() {
		nginxError(w, http.StatusNotFound, "404 Not Found")
		return
	}
	b, err := os.ReadFile(full)
	if err != nil {
		nginxError(w, http.StatusForbidden, "403 Forbidden")
		return
	}
	w.Header().Set("Server", "nginx")
	if strings.HasSuffix(full, ".html") {
		w.Header().Set("Content-Type", "text/html")
	}
	_, _ = w.Write(b)
}

func nginxError(w http.ResponseWriter, code int, title string) {
	w.Header().Set("Server", "nginx")
	w.Header().Set("Content-Type", "text/html")
	w.WriteHeader(code)
	fmt.Fprintf(w, "<html>\r\n<head><title>%s</title></head>\r\n<body>\r\n<center><h1>%s</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n", title, title)
}

// ---- redis ----

// redisMain answers the Redis protocol on :6379 with an in-memory map.
func redisMain(args []string) int {
	ln, err := net.Listen("tcp", ":6379")
	if err != nil {
		fmt.Fprintf(os.Stderr, "redis-server: %v\n", err)
		return 1
	}
	logf("1:M * Ready to accept connections tcp (minikubelet stand-in, args %q)", args)
	var mu sync.Mutex
	data := map[string]string{}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go redisConn(c, &mu, data)
		}
	}()
	sig := <-stopSignals()
	logf("1:signal-handler Received %v scheduling shutdown...", sig)
	logf("1:M * Redis is now ready to exit, bye bye...")
	return 0
}

// redisConn serves one client: RESP arrays of bulk strings or inline
// commands.
func redisConn(c net.Conn, mu *sync.Mutex, data map[string]string) {
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		argv, err := readRESP(r)
		if err != nil {
			return
		}
		if len(argv) == 0 {
			continue
		}
		var reply string
		switch strings.ToUpper(argv[0]) {
		case "PING":
			reply = "+PONG\r\n"
			if len(argv) > 1 {
				reply = bulk(argv[1])
			}
		case "ECHO":
			reply = "-ERR wrong number of arguments for 'echo' command\r\n"
			if len(argv) == 2 {
				reply = bulk(argv[1])
			}
		case "SET":
			reply = "-ERR wrong number of arguments for 'set' command\r\n"
			if len(argv) >= 3 {
				mu.Lock()
				data[argv[1]] = argv[2]
				mu.Unlock()
				reply = "+OK\r\n"
			}
		case "GET":
			reply = "-ERR wrong number of arguments for 'get' command\r\n"
			if len(argv) == 2 {
				mu.Lock()
				v, ok := data[argv[1]]
				mu.Unlock()
				reply = "$-1\r\n"
				if ok {
					reply = bulk(v)
				}
			}
		case "QUIT":
			_, _ = io.WriteString(c, "+OK\r\n")
			return
		default:
			reply = fmt.Sprintf("-ERR unknown command '%s'\r\n", argv[0])
		}
		if _, err := io.WriteString(c, reply); err != nil {
			return
		}
	}
}

func bulk(s string) string { return fmt.Sprintf("$%d\r\n%s\r\n", len(s), s) }

// readRESP reads one command.
func readRESP(r *bufio.Reader) ([]string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	line = strings.TrimRight(line, "\r\n")
	if !strings.HasPrefix(line, "*") {
		return strings.Fields(line), nil
	}
	n, err := strconv.Atoi(line[1:])
	if err != nil || n > 1024 {
		return nil, fmt.Errorf("bad array header %q", line)
	}
	argv := make([]string, 0, n)
	for i := 0; i < n; i++ {
		h, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		h = strings.TrimRight(h, "\r\n")
		if !strings.HasPrefix(h, "$") {
			return nil, fmt.Errorf("bad bulk header %q", h)
		}
		size, err := strconv.Atoi(h[1:])
		if err != nil || size < 0 || size > 1<<20 {
			return nil, fmt.Errorf("bad bulk size %q", h)
		}
		b := make([]byte, size+2)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, err
		}
		argv = append(argv, string(b[:size]))
	}
	return argv, nil
}

// ---- etcd ----

// etcdMain serves grpc.health.v1 (SERVING) on the port of
// --listen-client-urls and logs every health check; other flags are
// accepted and ignored. --data-dir is created.
func etcdMain(args []string) int {
	listen := "http://127.0.0.1:2379"
	for i := 0; i < len(args); i++ {
		a := strings.TrimLeft(args[i], "-")
		k, v, hasValue := strings.Cut(a, "=")
		if !hasValue && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			v = args[i+1]
			i++
		}
		switch k {
		case "listen-client-urls":
			listen = strings.Split(v, ",")[0]
		case "data-dir":
			if err := os.MkdirAll(v, 0o700); err != nil {
				fmt.Fprintf(os.Stderr, "etcd: create data dir: %v\n", err)
				return 1
			}
		}
	}
	u, err := url.Parse(listen)
	if err != nil {
		fmt.Fprintf(os.Stderr, "etcd: bad --listen-client-urls %q: %v\n", listen, err)
		return 1
	}
	ln, err := net.Listen("tcp", u.Host)
	if err != nil {
		fmt.Fprintf(os.Stderr, "etcd: %v\n", err)
		return 1
	}
	logf(`{"level":"info","msg":"serving client traffic insecurely (grpc.health.v1 only: minikubelet stand-in)","address":%q}`, ln.Addr().String())
	gs := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		from := "?"
		if p, ok := peer.FromContext(ctx); ok {
			from = p.Addr.String()
		}
		logf(`{"level":"debug","msg":"grpc request","method":%q,"remote":%q}`, info.FullMethod, from)
		return h(ctx, req)
	}))
	healthpb.RegisterHealthServer(gs, health.NewServer())
	errs := make(chan error, 1)
	go func() { errs <- gs.Serve(ln) }()
	select {
	case err := <-errs:
		fmt.Fprintf(os.Stderr, "etcd: %v\n", err)
		return 1
	case sig := <-stopSignals():
		logf(`{"level":"info","msg":"received signal; shutting down","signal":%q}`, sig.String())
		gs.Stop()
		return 0
	}
}

// ---- agnhost ----

// agnhostMain runs one of the agnhost subcommands the examples use.
func agnhostMain(args []string) int {
	if len(args) == 0 {
		fmt.Println("agnhost (minikubelet stand-in): subcommands liveness, netexec, pause, serve-hostname")
		return 0
	}
	hostname, _ := os.Hostname()
	switch args[0] {
	case "liveness":
		// As agnhost's liveness: /healthz answers 200 for the first 10
		// seconds, then 500. Requests are logged with their headers.
		start := time.Now()
		mux := http.NewServeMux()
		mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
			d := time.Since(start)
			var hs []string
			for k, v := range r.Header {
				hs = append(hs, k+"="+strings.Join(v, ","))
			}
			logf("healthz after %.1fs, headers %s", d.Seconds(), strings.Join(hs, " "))
			if d.Seconds() > 10 {
				w.WriteHeader(http.StatusInternalServerError)
				fmt.Fprintf(w, "error: %v", d.Seconds())
				return
			}
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte("ok"))
		})
		mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://0.0.0.0/", http.StatusMovedPermanently)
		})
		return serveHTTP("agnhost liveness", ":8080", mux)
	case "netexec":
		fs := flag.NewFlagSet("netexec", flag.ContinueOnError)
		port := fs.Int("http-port", 8080, "HTTP port")
		_ = fs.Int("udp-port", 8081, "UDP port (ignored)")
		if fs.Parse(args[1:]) != nil {
			return 2
		}
		mux := http.NewServeMux()
		mux.HandleFunc("/hostname", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, hostname) })
		mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, r.URL.Query().Get("msg")) })
		mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "ok") })
		mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "NOW: "+time.Now().String()) })
		return serveHTTP("agnhost netexec", fmt.Sprintf(":%d", *port), logRequests(mux))
	case "serve-hostname":
		fs := flag.NewFlagSet("serve-hostname", flag.ContinueOnError)
		port := fs.Int("port", 9376, "HTTP port")
		if fs.Parse(args[1:]) != nil {
			return 2
		}
		return serveHTTP("agnhost serve-hostname", fmt.Sprintf(":%d", *port), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprint(w, hostname)
		}))
	case "pause":
		logf("Paused")
		sig := <-stopSignals()
		logf("Shutting down after receiving signal: %v.", sig)
		return 0
	}
	fmt.Fprintf(os.Stderr, "Error: unknown command %q for \"agnhost\" (minikubelet stand-in)\n", args[0])
	return 1
}

// ---- small HTTP servers ----

// httpEchoMain is hashicorp/http-echo: -text on every path of -listen.
func httpEchoMain(args []string) int {
	fs := flag.NewFlagSet("http-echo", flag.ContinueOnError)
	text := fs.String("text", "", "text to echo")
	listen := fs.String("listen", ":5678", "address and port to listen")
	status := fs.Int("status-code", 200, "status code to return")
	if err := fs.Parse(args); err != nil {
		return 127
	}
	if *text == "" {
		fmt.Fprintln(os.Stderr, "Missing -text option!")
		return 127
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, `{"status":"ok"}`) })
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-App-Name", "http-echo")
		w.WriteHeader(*status)
		fmt.Fprintln(w, *text)
	})
	return serveHTTP("http-echo", *listen, logRequests(mux))
}

// helloAppMain is gcr.io/google-samples/hello-app:2.0.
func helloAppMain([]string) int {
	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	hostname, _ := os.Hostname()
	return serveHTTP("hello-app", ":"+port, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		logf("Serving request: %s", r.URL.Path)
		fmt.Fprintf(w, "Hello, world!\nVersion: 2.0.0\nHostname: %s\n", hostname)
	}))
}

// nodeHelloMain is gcr.io/google-samples/node-hello's `node server.js`.
func nodeHelloMain([]string) int {
	return serveHTTP("node-hello", ":8080", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		logf("Received request for URL: %s", r.URL.Path)
		fmt.Fprint(w, "Hello Kubernetes!")
	}))
}

// goproxyMain stands in for registry.k8s.io/goproxy, an HTTP proxy on
// :8080. Offline there is nowhere to proxy to: it answers every request
// itself, which is all a tcpSocket probe needs.
func goproxyMain([]string) int {
	return serveHTTP("goproxy", ":8080", logRequests(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodConnect || r.URL.IsAbs() {
			http.Error(w, "goproxy stand-in: no upstream (offline)", http.StatusBadGateway)
			return
		}
		fmt.Fprintln(w, "goproxy (minikubelet stand-in)")
	})))
}

// testWebserverMain is registry.k8s.io/test-webserver: the root file
// system over HTTP on :80.
func testWebserverMain([]string) int {
	return serveHTTP("test-webserver", ":80", logRequests(http.FileServer(http.Dir("/"))))
}
