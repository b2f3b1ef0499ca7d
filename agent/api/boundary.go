package api

// This file is the API's boundary: who may send what, on which listener.
//
//   - Both listeners: a request with a body, and every POST, PUT and PATCH,
//     must say it is JSON or YAML (Content-Type); anything else is a 415.
//     A body-less upgrade request (kubectl exec, attach, port-forward) is
//     exempt.
//     A browser can send only text/plain, form and multipart bodies without
//     asking the server first (a CORS preflight, which this server never
//     grants), so a web page cannot forge a write (CSRF).
//   - The unix socket (0600, root): no other check; a request carrying an
//     Origin header (a browser, through some proxy) is refused.
//   - TCP (--api-address): TLS, and a client certificate signed by the
//     node's API CA (pki.go) with the group system:masters; the Host header
//     must name this server (the listen address, localhost, 127.0.0.1,
//     [::1] or a name of the serving certificate, with the port) and an
//     Origin header must be this server's https origin. DNS rebinding then
//     gets a 403, and without the admin certificate nothing gets further
//     than a 401; nor with an admin certificate admin.serials does not
//     list (one replaced by `minikubelet kubeconfig --rotate`).

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// acceptedMediaTypes are the request body types the API takes. Handlers
// narrow further (a pod creation takes JSON or YAML; no route takes a
// patch yet, the patch types are let through so that such a route answers
// for itself).
var acceptedMediaTypes = map[string]bool{
	"application/json":                       true,
	"application/yaml":                       true,
	"application/x-yaml":                     true,
	"text/yaml":                              true,
	"application/merge-patch+json":           true,
	"application/strategic-merge-patch+json": true,
	"application/json-patch+json":            true,
	"application/apply-patch+yaml":           true,
	// client-go's typed clients' bodies (protobuf.go); not a type a
	// browser can send without a preflight.
	protobufMediaType: true,
}

// checkMediaType refuses, with a 415, a request that carries or may carry
// a body (POST, PUT, PATCH, or any request with a body) without a JSON or
// YAML Content-Type. Routes check it once the method is known to be
// served (a wrong method stays a 405).
func checkMediaType(r *http.Request) error {
	switch {
	case isBodylessUpgrade(r):
		// kubectl exec/attach/port-forward: a POST that upgrades to a
		// stream, with no body and no Content-Type. A browser can upgrade
		// only through a WebSocket, which carries an Origin (refused).
		return nil
	case r.Method == http.MethodPost, r.Method == http.MethodPut, r.Method == http.MethodPatch:
	case r.ContentLength != 0:
	default:
		return nil
	}
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return unsupportedMediaType(fmt.Sprintf("%s %s needs a Content-Type: send the body as application/json or application/yaml", r.Method, r.URL.Path))
	}
	if mt, _, err := mime.ParseMediaType(ct); err != nil || !acceptedMediaTypes[mt] {
		return unsupportedMediaType(fmt.Sprintf("the body of the request was in an unknown format %q: accepted media types are application/json and application/yaml", ct))
	}
	return nil
}

// isBodylessUpgrade reports whether r asks for a protocol upgrade and
// carries no body.
func isBodylessUpgrade(r *http.Request) bool {
	if r.ContentLength != 0 || r.Header.Get("Upgrade") == "" {
		return false
	}
	for _, v := range r.Header.Values("Connection") {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), "upgrade") {
				return true
			}
		}
	}
	return false
}

// requireMediaType is checkMediaType before handlers outside the routes
// (the profiles).
func requireMediaType(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := checkMediaType(r); err != nil {
			writeJSON(w, http.StatusUnsupportedMediaType, toStatus(err))
			return
		}
		next(w, r)
	}
}

// unsupportedMediaType is a 415 Status error.
func unsupportedMediaType(msg string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType,
		Reason: metav1.StatusReasonUnsupportedMediaType, Message: msg,
	}}
}

// rejectBrowsers refuses requests carrying an Origin header: on the unix
// socket nothing legitimate sends one.
func rejectBrowsers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" {
			writeStatus(w, http.StatusForbidden, metav1.StatusReasonForbidden,
				fmt.Sprintf("requests from web pages (Origin %q) are not served", o))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// writeStatus writes a failure Status.
func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, msg string) {
	writeJSON(w, code, metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Code: int32(code), Reason: reason, Message: msg,
	})
}

// errNotLoopback marks a listen address refused by CheckListenAddress.
var errNotLoopback = errors.New("not a loopback address")

// CheckListenAddress checks a TCP listen address (host:port): the host must
// be given, and be a loopback IP or "localhost" unless allowRemote. The
// API gives root on this node to whoever holds its admin certificate;
// listening beyond the machine is a choice to make explicitly.
func CheckListenAddress(addr string, allowRemote bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--api-address %q: %w", addr, err)
	}
	if host == "" {
		if allowRemote {
			return fmt.Errorf("--api-address %q: give the IP to listen on (0.0.0.0 for every IPv4 address)", addr)
		}
		return fmt.Errorf("--api-address %q: give the IP to listen on, e.g. 127.0.0.1", addr)
	}
	if allowRemote || isLoopbackHost(host) {
		return nil
	}
	return fmt.Errorf("--api-address %q is %w: the API gives root on this node to whoever holds its admin certificate; listen on 127.0.0.1 or [::1] (reach it from elsewhere through an SSH tunnel), or pass --api-allow-remote to listen on %s", addr, errNotLoopback, host)
}

// isLoopbackHost reports whether host is localhost or a loopback IP.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// TLSConfig is the TCP listener's TLS: the serving certificate, TLS 1.2 or
// later, and client certificates verified against the CA when given (a
// request without one is answered 401 by the handler, as the API server
// does; a certificate of another CA fails the handshake).
func TLSConfig(p *PKI) *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{p.Serving},
		ClientAuth:   tls.VerifyClientCertIfGiven,
		ClientCAs:    p.CertPool(),
		NextProtos:   []string{"h2", "http/1.1"},
	}
}

// ServeTLS serves the API on the TCP listener l with TLS and client
// certificate authentication from src (a *PKI, or a *Renewer whose newest
// certificates each handshake takes), until ctx ends (like Serve).
func (s *Server) ServeTLS(ctx context.Context, l net.Listener, src PKISource) error {
	_, port, err := net.SplitHostPort(l.Addr().String())
	if err != nil {
		return fmt.Errorf("serve API on %s: %w", l.Addr(), err)
	}
	p := src.Current()
	var changed func()
	if r, ok := src.(*Renewer); ok {
		changed = r.Poke // a rotation: rewrite the daemon's kubeconfig
	}
	g := newTCPGuard(p, port, l.Addr())
	g.admins = newAdminList(p.Dir, changed)
	return s.serve(ctx, tls.NewListener(l, listenerTLS(src)), g.wrap(s.handler))
}

// tcpGuard checks the TCP listener's requests before the API sees them.
type tcpGuard struct {
	// port is the listener's port, which Host and Origin must carry.
	port string
	// hosts are the lower-case names and IPs a Host header may name.
	hosts map[string]bool
	// admins are the admin certificates accepted (admin.serials).
	admins *adminList
}

// newTCPGuard allows the serving certificate's names and IPs, the
// listener's IP, localhost and the loopback IPs, on port.
func newTCPGuard(p *PKI, port string, addr net.Addr) *tcpGuard {
	g := &tcpGuard{port: port, hosts: map[string]bool{"localhost": true, "127.0.0.1": true, "::1": true}}
	// Never 0.0.0.0 or ::, which browsers send to localhost.
	if h, _, err := net.SplitHostPort(p.Address); err == nil && h != "" && !isUnspecified(h) {
		g.hosts[canonicalHost(h)] = true
	}
	if ta, ok := addr.(*net.TCPAddr); ok && !ta.IP.IsUnspecified() {
		g.hosts[ta.IP.String()] = true
	}
	if leaf := p.Serving.Leaf; leaf != nil {
		for _, n := range leaf.DNSNames {
			g.hosts[strings.ToLower(n)] = true
		}
		for _, ip := range leaf.IPAddresses {
			g.hosts[ip.String()] = true
		}
	}
	return g
}

// isUnspecified reports whether h is 0.0.0.0 or ::.
func isUnspecified(h string) bool {
	ip := net.ParseIP(h)
	return ip != nil && ip.IsUnspecified()
}

// canonicalHost lower-cases a name and writes an IP in its canonical form.
func canonicalHost(h string) string {
	if ip := net.ParseIP(h); ip != nil {
		return ip.String()
	}
	return strings.ToLower(h)
}

// allows reports whether hostport (a Host header or an origin's host) names
// this server; without a port it means https' 443.
func (g *tcpGuard) allows(hostport string) bool {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]"), "443"
	}
	return port == g.port && g.hosts[canonicalHost(host)]
}

// wrap checks, in order: Host, Origin, the client certificate (401), its
// group (403).
func (g *tcpGuard) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.allows(r.Host) {
			writeStatus(w, http.StatusForbidden, metav1.StatusReasonForbidden,
				fmt.Sprintf("the Host %q is not this server: use the address in the admin kubeconfig (localhost or 127.0.0.1 with port %s)", r.Host, g.port))
			return
		}
		if o := r.Header.Get("Origin"); o != "" {
			u, err := url.Parse(o)
			if err != nil || u.Scheme != "https" || u.Path != "" || !g.allows(u.Host) {
				writeStatus(w, http.StatusForbidden, metav1.StatusReasonForbidden,
					fmt.Sprintf("requests from web pages of another origin (%q) are not served", o))
				return
			}
		}
		if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
			writeStatus(w, http.StatusUnauthorized, metav1.StatusReasonUnauthorized,
				"a client certificate of this node's API CA is required: use the admin kubeconfig (/etc/minikubelet/admin.kubeconfig, or `minikubelet kubeconfig`)")
			return
		}
		leaf := r.TLS.VerifiedChains[0][0]
		if !isAdmin(leaf) {
			writeStatus(w, http.StatusForbidden, metav1.StatusReasonForbidden,
				fmt.Sprintf("user %q (groups %q) may not use this API: only %s is admitted", leaf.Subject.CommonName, leaf.Subject.Organization, AdminGroup))
			return
		}
		// Checked per request, not per handshake: a kept-alive connection
		// of a rotated certificate is refused at its next request.
		if !g.admins.accepts(leaf.SerialNumber) {
			writeStatus(w, http.StatusUnauthorized, metav1.StatusReasonUnauthorized,
				"this admin certificate was replaced (minikubelet kubeconfig --rotate): use the current admin kubeconfig (/etc/minikubelet/admin.kubeconfig, or `minikubelet kubeconfig`)")
			return
		}
		next.ServeHTTP(w, r)
	})
}
