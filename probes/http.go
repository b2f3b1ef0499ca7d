package probes

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	v1 "k8s.io/api/core/v1"
)

// DefaultUserAgent is sent by HTTP and gRPC probes unless the probe sets its
// own User-Agent header. The version matches the kubelet minikubelet follows
// (agent/hooks.go sends kube-lifecycle/1.36).
const DefaultUserAgent = "kube-probe/1.36"

// maxRedirects is how many same-host redirects a probe follows.
const maxRedirects = 10

// max1xxResponses is how many informational (1xx) answers may precede the
// real one, as in net/http's Transport.
const max1xxResponses = 5

// HTTPProber runs httpGet probes the way the kubelet's HTTP client does:
// keep-alives off (each probe opens its own connection, sends
// "Connection: close" and closes it), no proxy, no compression, TLS without
// verification, same-host redirects followed (at most 10).
//
// It speaks HTTP/1.1 on that connection itself, with net/http's request
// writer (once per target) and response parser, instead of going through an
// http.Transport: for a connection used once, a Transport's three
// goroutines, two fresh 4 KiB buffers and channel hand-offs were most of a
// probe's CPU time (BenchmarkManager_Steady in steady_bench_test.go).
// Safe for concurrent use.
type HTTPProber struct {
	// tlsConfig skips verification (kubelet pkg/probe/http); each https
	// target gets a copy naming its server.
	tlsConfig *tls.Config
}

// NewHTTPProber returns a prober with the kubelet's transport settings.
func NewHTTPProber() *HTTPProber {
	return &HTTPProber{
		tlsConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // probes never verify certificates, as the kubelet
	}
}

// Probe sends req, following redirects only to the same host name, and
// classifies the answer: 200–299 Success; 300–399 Warning (a redirect to
// another host, or a 3xx returned as final answer; Warning counts as
// Success); anything else Failure with "HTTP probe failed with statuscode:
// <n>". A connection error or timeout is a Failure carrying the error text
// (net/http's client's text, `Get "<url>": …`). The output of a success is
// the body, read up to 10 KiB. timeout bounds the whole exchange, redirects
// and body included.
func (p *HTTPProber) Probe(ctx context.Context, req *http.Request, timeout time.Duration) (Result, string, error) {
	return p.probe(ctx, p.prepare(req), timeout)
}

// httpTarget is an httpGet request prepared to be sent many times: a worker
// builds it once per pod IP.
type httpTarget struct {
	// req is the request (URL, Host, headers): the base of redirects.
	req *http.Request
	// url is req.URL as failure messages quote it.
	url string
	// addr is the server to connect to.
	addr tcpTarget
	// tls is the configuration of an https target, nil for http.
	tls *tls.Config
	// wire is the request as written on the connection.
	wire []byte
	// err is why the request cannot be sent (an unsupported scheme, an
	// invalid header): every run fails with it, as net/http's would.
	err error
}

// prepare checks req as net/http's Transport would and encodes it once.
func (p *HTTPProber) prepare(req *http.Request) *httpTarget {
	t := &httpTarget{req: req, url: req.URL.String()}
	port := req.URL.Port()
	switch req.URL.Scheme {
	case "http":
		if port == "" {
			port = "80"
		}
	case "https":
		if port == "" {
			port = "443"
		}
		t.tls = p.tlsConfig.Clone()
		t.tls.ServerName = req.URL.Hostname()
	default:
		t.err = fmt.Errorf("unsupported protocol scheme %q", req.URL.Scheme)
		return t
	}
	if req.URL.Host == "" {
		t.err = errors.New("http: no Host in request URL")
		return t
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		t.err = fmt.Errorf("invalid port %q", port)
		return t
	}
	t.addr = tcpTargetOf(req.URL.Hostname(), n)
	for k, vv := range req.Header {
		if !validHeaderName(k) {
			t.err = fmt.Errorf("net/http: invalid header field name %q", k)
			return t
		}
		for _, v := range vv {
			if !validHeaderValue(v) {
				// Don't include the value in the error, because it
				// may be sensitive (net/http does the same).
				t.err = fmt.Errorf("net/http: invalid header field value for %q", k)
				return t
			}
		}
	}
	w := *req
	w.Header = req.Header.Clone()
	if w.Header == nil {
		w.Header = http.Header{}
	}
	if !hasToken(w.Header["Connection"], "close") {
		w.Header.Add("Connection", "close")
	}
	var b bytes.Buffer
	if err := w.Write(&b); err != nil {
		t.err = err
		return t
	}
	t.wire = b.Bytes()
	return t
}

// failure is the message of a run that got no answer: net/http's client's
// text, with its wording for a timeout.
func (t *httpTarget) failure(err error) string {
	if isTimeout(err) {
		err = errors.New("context deadline exceeded (Client.Timeout exceeded while awaiting headers)")
	}
	return clipOutput((&url.Error{Op: "Get", URL: t.url, Err: err}).Error())
}

// clipOutput cuts a message to maxOutput bytes, on a character boundary:
// net/http's errors quote what the server sent.
func clipOutput(s string) string {
	if len(s) <= maxOutput {
		return s
	}
	s = s[:maxOutput]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// probe runs the exchange with t, and with the targets of same-host
// redirects, within timeout.
func (p *HTTPProber) probe(ctx context.Context, t *httpTarget, timeout time.Duration) (Result, string, error) {
	deadline := time.Now().Add(timeout)
	first := t
	stripBodyHeaders := false
	for hops := 1; ; hops++ {
		if t.err != nil {
			return Failure, t.failure(t.err), nil
		}
		a, err := t.exchange(ctx, deadline)
		if err != nil {
			return Failure, t.failure(err), nil
		}
		follow, strip := redirectBehavior(a.code)
		if !follow || a.location == "" {
			return a.classify()
		}
		stripBodyHeaders = stripBodyHeaders || strip
		u, err := t.req.URL.Parse(a.location)
		if err != nil {
			return Failure, t.failure(fmt.Errorf("failed to parse Location header %q: %v", a.location, err)), nil
		}
		if u.Hostname() != first.req.URL.Hostname() {
			// kubelet followNonLocalRedirects=false: the 3xx is the
			// answer.
			return a.classify()
		}
		if hops >= maxRedirects {
			return Failure, clipOutput((&url.Error{Op: "Get", URL: a.location,
				Err: fmt.Errorf("stopped after %d redirects", maxRedirects)}).Error()), nil
		}
		t = p.prepare(redirectRequest(first.req, t.req, u, a.location, stripBodyHeaders))
	}
}

// classify maps the final answer to a result (kubelet pkg/probe/http). (The
// body of a redirect that is followed is not needed, so a broken one does
// not count.)
func (a *httpAnswer) classify() (Result, string, error) {
	if a.bodyErr != nil {
		// The status is in, the body broke off (timeout, reset): the
		// kubelet calls that a failure, not a prober error.
		err := a.bodyErr
		if isTimeout(err) {
			err = errors.New("context deadline exceeded (Client.Timeout or context cancellation while reading body)")
		}
		return Failure, fmt.Sprintf("read HTTP probe response: %v", err), nil
	}
	switch code := a.code; {
	case code >= http.StatusOK && code < http.StatusMultipleChoices:
		return Success, a.body, nil
	case code >= http.StatusMultipleChoices && code < http.StatusBadRequest:
		return Warning, "Probe terminated redirects, Response body: " + a.body, nil
	default:
		return Failure, "HTTP probe failed with statuscode: " + strconv.Itoa(code), nil
	}
}

// redirectBehavior says whether net/http's client follows an answer with
// this code (a GET without body: 301, 302, 303, 307, 308) and whether the
// next request drops the body's headers (301, 302, 303).
func redirectBehavior(code int) (follow, stripBodyHeaders bool) {
	switch code {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther:
		return true, true
	case http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true, false
	}
	return false, false
}

// redirectRequest builds the next hop as net/http's client does: a GET of u
// with the first request's headers (minus the body's after a 301–303), a
// Referer naming the previous URL unless that would leak https to http, and
// a custom Host kept only when the Location is relative.
func redirectRequest(first, prev *http.Request, u *url.URL, loc string, stripBodyHeaders bool) *http.Request {
	host := ""
	if prev.Host != "" && prev.Host != prev.URL.Host {
		if lu, _ := url.Parse(loc); lu != nil && !lu.IsAbs() {
			host = prev.Host
		}
	}
	h := make(http.Header, len(first.Header)+1)
	for k, vv := range first.Header {
		switch http.CanonicalHeaderKey(k) {
		case "Content-Encoding", "Content-Language", "Content-Location", "Content-Type":
			if stripBodyHeaders {
				continue
			}
		}
		h[k] = vv
	}
	if !(prev.URL.Scheme == "https" && u.Scheme == "http") {
		if ref := h.Get("Referer"); ref == "" {
			pu := *prev.URL
			pu.User = nil
			h.Set("Referer", pu.String())
		}
	}
	return &http.Request{Method: http.MethodGet, URL: u, Header: h, Host: host,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}
}

// httpAnswer is what one exchange got back.
type httpAnswer struct {
	// code is the status code; location the Location header.
	code     int
	location string
	// body is the start of the body (up to maxOutput bytes).
	body string
	// bodyErr is set when the body broke off after the status line.
	bodyErr error
}

// Buffers of the exchanges, shared by every worker: a probe holds them only
// for its exchange. They are small because the runs of a slot hold theirs
// at the same time; a health check's status line and headers fit in 1 KiB
// (longer ones are read in pieces).
var (
	readerPool = sync.Pool{New: func() any {
		r := &answerReader{}
		r.br = bufio.NewReaderSize(&r.lim, 1024)
		return r
	}}
	bodyPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}
)

// answerReader reads one answer: br reads the connection through lim,
// which bounds the status line and headers (a pod could otherwise send one
// endless line, held whole until the deadline) and is lifted for the body.
type answerReader struct {
	lim io.LimitedReader
	br  *bufio.Reader
}

// maxResponseHeaderBytes bounds an answer's status line and headers, 1xx
// answers included: net/http's server default for requests. (The kubelet's
// Transport allows 10 MiB; a health check's head is a few hundred bytes.)
const maxResponseHeaderBytes = http.DefaultMaxHeaderBytes

// maxPooledBody is the largest body buffer put back into bodyPool: a rare
// large answer does not make every pooled buffer 10 KiB.
const maxPooledBody = 1024

// aLongTimeAgo is a deadline that ends any blocked I/O at once.
var aLongTimeAgo = time.Unix(1, 0)

// exchange sends t's request on a new connection and reads the answer, all
// by deadline; a cancelled ctx (the worker stopped) ends it at once.
func (t *httpTarget) exchange(ctx context.Context, deadline time.Time) (httpAnswer, error) {
	var a httpAnswer
	conn, err := t.addr.dial(ctx, deadline)
	if err != nil {
		return a, err
	}
	defer func() { _ = conn.Close() }()
	_ = conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(aLongTimeAgo) })
	defer stop()
	rw := conn
	if t.tls != nil {
		tc := tls.Client(conn, t.tls)
		if err := tc.Handshake(); err != nil {
			return a, err
		}
		rw = tc
	}
	if _, err := rw.Write(t.wire); err != nil {
		return a, err
	}

	ar := readerPool.Get().(*answerReader)
	ar.lim.R, ar.lim.N = rw, maxResponseHeaderBytes
	ar.br.Reset(&ar.lim)
	br := ar.br
	defer func() {
		ar.lim.R = nil
		readerPool.Put(ar)
	}()
	var res *http.Response
	for n := 0; ; n++ {
		res, err = http.ReadResponse(br, t.req)
		if err != nil {
			if ar.lim.N <= 0 {
				// net/http's Transport's words.
				err = fmt.Errorf("net/http: server response headers exceeded %d bytes; aborted", maxResponseHeaderBytes)
			}
			return a, err
		}
		if res.StatusCode < 100 || res.StatusCode > 199 || res.StatusCode == http.StatusSwitchingProtocols {
			break
		}
		if n >= max1xxResponses {
			return a, errors.New("net/http: too many 1xx informational responses")
		}
	}
	ar.lim.N = math.MaxInt64 // the body is bounded by maxOutput below
	a.code = res.StatusCode
	a.location = res.Header.Get("Location")
	buf := bodyPool.Get().(*bytes.Buffer)
	buf.Reset()
	defer func() {
		if buf.Cap() <= maxPooledBody {
			bodyPool.Put(buf)
		}
	}()
	if _, err := buf.ReadFrom(&io.LimitedReader{R: res.Body, N: maxOutput}); err != nil {
		a.bodyErr = err
		return a, nil
	}
	if buf.Len() > 0 {
		a.body = buf.String()
	}
	return a, nil
}

// isTimeout reports a deadline that ran out (dial, read or write).
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// hasToken reports whether a comma-separated header value list holds token
// (case-insensitive), as "Connection: keep-alive, close" holds "close".
func hasToken(values []string, token string) bool {
	for _, v := range values {
		for f := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(f), token) {
				return true
			}
		}
	}
	return false
}

// validHeaderName reports whether name is an HTTP token (RFC 7230 3.2.6).
func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// validHeaderValue reports whether v holds no control character other than
// a tab (net/http refuses to send those).
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
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
