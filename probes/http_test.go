package probes_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/minikubelet/minikubelet/probes"
)

// hostPort splits a test server's address.
func hostPort(t *testing.T, rawURL string) (string, int) {
	t.Helper()
	u, err := url.Parse(rawURL)
	require.NoError(t, err)
	port, err := strconv.Atoi(u.Port())
	require.NoError(t, err)
	return u.Hostname(), port
}

// httpGet probes srv at path with the given headers through a fresh prober.
func httpGet(t *testing.T, srvURL, path string, headers []v1.HTTPHeader, timeout time.Duration) (probes.Result, string, error) {
	t.Helper()
	host, port := hostPort(t, srvURL)
	scheme := v1.URISchemeHTTP
	if strings.HasPrefix(srvURL, "https") {
		scheme = v1.URISchemeHTTPS
	}
	action := &v1.HTTPGetAction{Path: path, Port: intstr.FromInt32(int32(port)), Scheme: scheme, HTTPHeaders: headers}
	req, err := probes.NewHTTPGetRequest(action, &v1.Container{Name: "app"}, host, probes.DefaultUserAgent)
	require.NoError(t, err)
	return probes.NewHTTPProber().Probe(context.Background(), req, timeout)
}

func TestHTTPProber_StatusCodes(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/"))
		w.WriteHeader(code)
		fmt.Fprintf(w, "body %d", code)
	}))
	defer srv.Close()

	tests := []struct {
		name    string
		code    int
		want    probes.Result
		wantOut string
	}{
		{name: "200", code: 200, want: probes.Success, wantOut: "body 200"},
		{name: "204", code: 204, want: probes.Success, wantOut: ""},
		{name: "399 counts as a success with a warning", code: 399, want: probes.Warning, wantOut: "Probe terminated redirects, Response body: body 399"},
		{name: "400", code: 400, want: probes.Failure, wantOut: "HTTP probe failed with statuscode: 400"},
		{name: "500", code: 500, want: probes.Failure, wantOut: "HTTP probe failed with statuscode: 500"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, out, err := httpGet(t, srv.URL, "/"+strconv.Itoa(tt.code), nil, time.Second)
			require.NoError(t, err)
			assert.Equal(t, tt.want, res)
			assert.Equal(t, tt.wantOut, out)
		})
	}
}

func TestHTTPProber_Redirects(t *testing.T) {
	var otherHits sync.Map
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherHits.Store(r.URL.Path, true)
		fmt.Fprint(w, "other")
	}))
	defer other.Close()
	_, otherPort := hostPort(t, other.URL)

	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/same":
			http.Redirect(w, r, "/final", http.StatusFound)
		case "/same-host-other-port":
			http.Redirect(w, r, fmt.Sprintf("http://127.0.0.1:%d/x", otherPort), http.StatusMovedPermanently)
		case "/other-host":
			// Same machine, different host name: must not be followed.
			http.Redirect(w, r, fmt.Sprintf("http://localhost:%d/not-followed", otherPort), http.StatusFound)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		case "/final":
			fmt.Fprint(w, "final")
		}
	}))
	defer srv.Close()

	res, out, err := httpGet(t, srv.URL, "/same", nil, time.Second)
	require.NoError(t, err)
	assert.Equal(t, probes.Success, res)
	assert.Equal(t, "final", out)

	res, out, err = httpGet(t, srv.URL, "/same-host-other-port", nil, time.Second)
	require.NoError(t, err)
	assert.Equal(t, probes.Success, res, "the host name decides, not the port")
	assert.Equal(t, "other", out)

	res, out, err = httpGet(t, srv.URL, "/other-host", nil, time.Second)
	require.NoError(t, err)
	assert.Equal(t, probes.Warning, res)
	assert.Contains(t, out, "Probe terminated redirects")
	_, hit := otherHits.Load("/not-followed")
	assert.False(t, hit, "redirect to another host was followed")

	res, out, err = httpGet(t, srv.URL, "/loop", nil, time.Second)
	require.NoError(t, err)
	assert.Equal(t, probes.Failure, res)
	assert.Contains(t, out, "stopped after 10 redirects")
}

func TestHTTPProber_Headers(t *testing.T) {
	type seen struct {
		host   string
		header http.Header
		uri    string
	}
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- seen{host: r.Host, header: r.Header.Clone(), uri: r.RequestURI}
	}))
	defer srv.Close()

	t.Run("defaults", func(t *testing.T) {
		res, _, err := httpGet(t, srv.URL, "/healthz?full=1", nil, time.Second)
		require.NoError(t, err)
		assert.Equal(t, probes.Success, res)
		s := <-got
		assert.Equal(t, "kube-probe/1.36", s.header.Get("User-Agent"))
		assert.Equal(t, []string{"*/*"}, s.header.Values("Accept"))
		assert.Equal(t, "close", s.header.Get("Connection"), "keep-alives must be off")
		assert.Empty(t, s.header.Get("Accept-Encoding"), "compression must be off")
		assert.Equal(t, "/healthz?full=1", s.uri)
	})
	t.Run("custom headers, user agent and host", func(t *testing.T) {
		_, _, err := httpGet(t, srv.URL, "/", []v1.HTTPHeader{
			{Name: "X-Custom", Value: "a"},
			{Name: "x-custom", Value: "b"},
			{Name: "User-Agent", Value: "mine/1"},
			{Name: "Accept", Value: "application/json"},
			{Name: "Host", Value: "example.test"},
		}, time.Second)
		require.NoError(t, err)
		s := <-got
		assert.Equal(t, []string{"a", "b"}, s.header.Values("X-Custom"))
		assert.Equal(t, "mine/1", s.header.Get("User-Agent"))
		assert.Equal(t, "application/json", s.header.Get("Accept"))
		assert.Equal(t, "example.test", s.host)
	})
	t.Run("empty Accept removes it", func(t *testing.T) {
		_, _, err := httpGet(t, srv.URL, "/", []v1.HTTPHeader{{Name: "Accept", Value: ""}}, time.Second)
		require.NoError(t, err)
		s := <-got
		assert.Empty(t, s.header.Values("Accept"))
	})
}

func TestHTTPProber_FreshConnectionPerProbe(t *testing.T) {
	var mu sync.Mutex
	states := map[http.ConnState]int{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		mu.Lock()
		states[s]++
		mu.Unlock()
	}
	srv.Start()
	for range 3 {
		res, _, err := httpGet(t, srv.URL, "/", nil, time.Second)
		require.NoError(t, err)
		require.Equal(t, probes.Success, res)
	}
	srv.Close() // waits for connections, runs ConnState hooks
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, 3, states[http.StateNew], "one connection per probe")
	assert.Equal(t, 3, states[http.StateClosed], "every probe connection closed")
}

func TestHTTPProber_Timeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)

	start := time.Now()
	res, out, err := httpGet(t, srv.URL, "/", nil, 100*time.Millisecond)
	require.NoError(t, err)
	assert.Equal(t, probes.Failure, res)
	assert.Contains(t, out, "Client.Timeout exceeded")
	assert.Less(t, time.Since(start), 5*time.Second)
}

func TestHTTPProber_HTTPSWithoutVerification(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "tls ok")
	}))
	defer srv.Close()
	res, out, err := httpGet(t, srv.URL, "/", nil, time.Second)
	require.NoError(t, err)
	assert.Equal(t, probes.Success, res)
	assert.Equal(t, "tls ok", out)
}

func TestHTTPProber_BodyLimit(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, strings.Repeat("y", 64*1024))
	}))
	defer srv.Close()
	res, out, err := httpGet(t, srv.URL, "/", nil, time.Second)
	require.NoError(t, err)
	assert.Equal(t, probes.Success, res)
	assert.Len(t, out, 10*1024)
}

func TestHTTPProber_ConnectionRefused(t *testing.T) {
	port := closedPort(t)
	res, out, err := httpGet(t, "http://127.0.0.1:"+strconv.Itoa(port), "/", nil, time.Second)
	require.NoError(t, err, "a refused connection is unhealthy, not a prober error")
	assert.Equal(t, probes.Failure, res)
	assert.Contains(t, out, "connection refused")
}

func TestNewHTTPGetRequest(t *testing.T) {
	c := &v1.Container{Name: "app", Ports: []v1.ContainerPort{{Name: "http", ContainerPort: 8080}}}
	tests := []struct {
		name    string
		action  v1.HTTPGetAction
		podIP   string
		wantURL string
		wantErr string
	}{
		{name: "named port on pod IP", action: v1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")},
			podIP: "10.88.0.5", wantURL: "http://10.88.0.5:8080/healthz"},
		{name: "numeric port, https, host", action: v1.HTTPGetAction{Path: "/a?b=c", Port: intstr.FromInt32(9443), Scheme: v1.URISchemeHTTPS, Host: "127.0.0.1"},
			podIP: "10.88.0.5", wantURL: "https://127.0.0.1:9443/a?b=c"},
		{name: "number written as a string", action: v1.HTTPGetAction{Port: intstr.FromString("81")},
			podIP: "10.88.0.5", wantURL: "http://10.88.0.5:81/"},
		{name: "IPv6 pod IP", action: v1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(80)},
			podIP: "fd00::5", wantURL: "http://[fd00::5]:80/"},
		{name: "unknown port name", action: v1.HTTPGetAction{Port: intstr.FromString("metrics")},
			podIP: "10.88.0.5", wantErr: `no port named "metrics"`},
		{name: "port out of range", action: v1.HTTPGetAction{Port: intstr.FromInt32(70000)},
			podIP: "10.88.0.5", wantErr: "invalid port number 70000"},
		{name: "no pod IP", action: v1.HTTPGetAction{Port: intstr.FromInt32(80)}, wantErr: "no IP address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := probes.NewHTTPGetRequest(&tt.action, c, tt.podIP, probes.DefaultUserAgent)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantURL, req.URL.String())
			assert.Equal(t, http.MethodGet, req.Method)
		})
	}
}

// closedPort returns a loopback port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	return port
}

// captureRequest serves one connection on a loopback port: it reads one
// request, answers 200 and closes. The request arrives on the channel.
func captureRequest(t *testing.T) (port int, got <-chan *http.Request) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	ch := make(chan *http.Request, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil {
			return
		}
		ch <- req
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
	}()
	return l.Addr().(*net.TCPAddr).Port, ch
}

// The prober writes the request itself: it must be what net/http's client
// with the kubelet's transport settings sends, header for header.
func TestHTTPProber_SameRequestAsNetHTTP(t *testing.T) {
	headers := []v1.HTTPHeader{
		{Name: "X-Custom", Value: "a"},
		{Name: "x-custom", Value: "b"},
		{Name: "Authorization", Value: "Bearer t"},
		{Name: "Host", Value: "example.test"},
		{Name: "Accept", Value: "text/plain"},
	}
	send := func(viaNetHTTP bool) *http.Request {
		port, got := captureRequest(t)
		action := &v1.HTTPGetAction{Path: "/healthz?x=1", Port: intstr.FromInt32(int32(port)), HTTPHeaders: headers}
		req, err := probes.NewHTTPGetRequest(action, &v1.Container{Name: "app"}, "127.0.0.1", probes.DefaultUserAgent)
		require.NoError(t, err)
		if viaNetHTTP {
			client := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true, DisableCompression: true}}
			res, err := client.Do(req)
			require.NoError(t, err)
			_ = res.Body.Close()
		} else {
			res, out, err := probes.NewHTTPProber().Probe(context.Background(), req, time.Second)
			require.NoError(t, err)
			require.Equal(t, probes.Success, res, out)
			assert.Equal(t, "ok", out)
		}
		select {
		case r := <-got:
			return r
		case <-time.After(5 * time.Second):
			t.Fatal("no request arrived")
			return nil
		}
	}
	want, got := send(true), send(false)
	assert.Equal(t, want.Method, got.Method)
	assert.Equal(t, want.RequestURI, got.RequestURI)
	assert.Equal(t, want.Proto, got.Proto)
	assert.Equal(t, want.Host, got.Host)
	assert.Equal(t, want.Header, got.Header)
	assert.Equal(t, "close", got.Header.Get("Connection"))
}

// Same-host redirects are followed as net/http's client follows them: the
// original headers go along (minus the body's after a 302), a Referer names
// the previous URL, and a custom Host survives a relative Location only.
func TestHTTPProber_RedirectRequests(t *testing.T) {
	type seen struct {
		path, host, referer, contentType, custom string
	}
	got := make(chan seen, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- seen{r.URL.Path, r.Host, r.Header.Get("Referer"), r.Header.Get("Content-Type"), r.Header.Get("X-Custom")}
		switch r.URL.Path {
		case "/302":
			http.Redirect(w, r, "/307", http.StatusFound)
		case "/307":
			http.Redirect(w, r, "/done", http.StatusTemporaryRedirect)
		case "/abs":
			http.Redirect(w, r, "http://"+r.Context().Value(http.LocalAddrContextKey).(net.Addr).String()+"/done", http.StatusFound)
		case "/keep-307":
			http.Redirect(w, r, "/done", http.StatusTemporaryRedirect)
		default:
			fmt.Fprint(w, "done")
		}
	}))
	defer srv.Close()
	hdrs := []v1.HTTPHeader{{Name: "X-Custom", Value: "c"}, {Name: "Content-Type", Value: "text/plain"}, {Name: "Host", Value: "example.test"}}

	res, out, err := httpGet(t, srv.URL, "/302", hdrs, time.Second)
	require.NoError(t, err)
	require.Equal(t, probes.Success, res, out)
	assert.Equal(t, "done", out)
	first, second, third := <-got, <-got, <-got
	assert.Equal(t, seen{"/302", "example.test", "", "text/plain", "c"}, first)
	assert.Equal(t, seen{"/307", "example.test", "http://" + srv.Listener.Addr().String() + "/302", "", "c"}, second,
		"after a 302: body headers dropped, Referer set, custom Host kept for a relative Location")
	assert.Equal(t, seen{"/done", "example.test", "http://" + srv.Listener.Addr().String() + "/307", "", "c"}, third,
		"once dropped, body headers stay dropped")

	_, _, err = httpGet(t, srv.URL, "/keep-307", hdrs, time.Second)
	require.NoError(t, err)
	<-got
	assert.Equal(t, "text/plain", (<-got).contentType, "a 307 keeps the body headers")

	_, _, err = httpGet(t, srv.URL, "/abs", hdrs, time.Second)
	require.NoError(t, err)
	<-got
	assert.Equal(t, srv.Listener.Addr().String(), (<-got).host, "an absolute Location drops the custom Host")
}

// Informational answers before the real one are skipped; a chunked body is
// read.
func TestHTTPProber_InformationalAndChunked(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</style.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, "chunk one, ")
		w.(http.Flusher).Flush()
		fmt.Fprint(w, "chunk two")
	}))
	defer srv.Close()
	res, out, err := httpGet(t, srv.URL, "/", nil, time.Second)
	require.NoError(t, err)
	assert.Equal(t, probes.Success, res)
	assert.Equal(t, "chunk one, chunk two", out)
}

func TestHTTPProber_RequestErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	host, port := hostPort(t, srv.URL)
	tests := []struct {
		name    string
		action  v1.HTTPGetAction
		wantOut string
	}{
		{name: "invalid header name", action: v1.HTTPGetAction{HTTPHeaders: []v1.HTTPHeader{{Name: "X Bad", Value: "v"}}},
			wantOut: `net/http: invalid header field name "X Bad"`},
		{name: "invalid header value", action: v1.HTTPGetAction{HTTPHeaders: []v1.HTTPHeader{{Name: "X-Bad", Value: "a\nb"}}},
			wantOut: `net/http: invalid header field value for "X-Bad"`},
		{name: "unsupported scheme", action: v1.HTTPGetAction{Scheme: "FTP"},
			wantOut: `unsupported protocol scheme "ftp"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.action.Port = intstr.FromInt32(int32(port))
			req, err := probes.NewHTTPGetRequest(&tt.action, &v1.Container{Name: "app"}, host, probes.DefaultUserAgent)
			require.NoError(t, err)
			res, out, err := probes.NewHTTPProber().Probe(context.Background(), req, time.Second)
			require.NoError(t, err, "the request could be built: a Failure, as with net/http")
			assert.Equal(t, probes.Failure, res)
			assert.Contains(t, out, tt.wantOut)
			assert.True(t, strings.HasPrefix(out, `Get "`), "net/http's form: %s", out)
		})
	}
}

func TestHTTPProber_ServerClosesWithoutAnswer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	res, out, err := httpGet(t, "http://"+l.Addr().String(), "/", nil, time.Second)
	require.NoError(t, err)
	assert.Equal(t, probes.Failure, res)
	assert.Contains(t, out, `Get "http://`+l.Addr().String()+`/": `)
}

// A stopped worker cancels its context: an exchange in flight ends at once,
// not at its timeout.
func TestHTTPProber_CancelEndsExchange(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	host, port := hostPort(t, srv.URL)
	req, err := probes.NewHTTPGetRequest(&v1.HTTPGetAction{Port: intstr.FromInt32(int32(port))}, &v1.Container{Name: "app"}, host, probes.DefaultUserAgent)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	res, _, err := probes.NewHTTPProber().Probe(ctx, req, time.Minute)
	require.NoError(t, err)
	assert.Equal(t, probes.Failure, res)
	assert.Less(t, time.Since(start), 10*time.Second, "the exchange waited for its timeout")
}

// A body that breaks off after the status line is a Failure (kubelet: the
// body could not be read), not a success with a short body.
func TestHTTPProber_BodyBrokenOff(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		_, _ = http.ReadRequest(bufio.NewReader(c))
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort")
		_ = c.Close()
	}()
	res, out, err := httpGet(t, "http://"+l.Addr().String(), "/", nil, time.Second)
	require.NoError(t, err)
	assert.Equal(t, probes.Failure, res)
	assert.Equal(t, "read HTTP probe response: unexpected EOF", out)
}
