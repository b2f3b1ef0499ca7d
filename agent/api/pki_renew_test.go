package api

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"
)

// renewHarness is ServeTLS on a loopback port with a Renewer on a fake
// clock; both sides of each TLS handshake check validity at the fake time.
type renewHarness struct {
	t          *testing.T
	clk        *clocktesting.FakeClock
	r          *Renewer
	addr       string
	kubeconfig string
}

func newRenewHarness(t *testing.T) *renewHarness {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Now())
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dir := t.TempDir()
	p, err := EnsurePKI(filepath.Join(dir, "pki"), l.Addr().String(), nil, clk.Now())
	require.NoError(t, err)
	h := &renewHarness{t: t, clk: clk, addr: l.Addr().String(), kubeconfig: filepath.Join(dir, "admin.kubeconfig")}
	require.NoError(t, WriteKubeconfig(h.kubeconfig, p))
	h.r = NewRenewer(p, nil, h.kubeconfig, clk, nil)
	s := NewServer(boundaryBackend{t: t}, slog.New(slog.NewTextHandler(io.Discard, nil)), Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.ServeTLS(ctx, l, h.r) }()
	ran := make(chan struct{})
	go func() { h.r.Run(ctx); close(ran) }()
	t.Cleanup(func() {
		cancel()
		<-ran
		require.NoError(t, <-done)
	})
	return h
}

// get sends GET /version with cert, trusting the CA of the newest PKI,
// and returns the status and the serving certificate the server showed.
func (h *renewHarness) get(cert tls.Certificate) (int, *x509.Certificate) {
	h.t.Helper()
	var served *x509.Certificate
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DisableKeepAlives: true,
		TLSClientConfig: &tls.Config{RootCAs: h.r.Current().CertPool(), Certificates: []tls.Certificate{cert},
			MinVersion: tls.VersionTLS12, Time: h.clk.Now,
			VerifyConnection: func(cs tls.ConnectionState) error { served = cs.PeerCertificates[0]; return nil }},
	}}
	resp, err := c.Get("https://" + h.addr + "/version")
	require.NoError(h.t, err)
	resp.Body.Close()
	return resp.StatusCode, served
}

// advance moves the fake clock to at and waits for the renewal it wakes.
func (h *renewHarness) advance(at time.Time) {
	h.t.Helper()
	require.Eventually(h.t, h.clk.HasWaiters, 10*time.Second, time.Millisecond, "the renewer waits")
	// Drain a signal of an earlier attempt.
	select {
	case <-h.r.renewed:
	default:
	}
	h.clk.SetTime(at)
	select {
	case <-h.r.renewed:
	case <-time.After(10 * time.Second):
		h.t.Fatal("no renewal after the clock passed its time")
	}
}

// TestRenewer_RenewsTheServingCertificateWhileRunning lets a year pass on
// the fake clock: before 70 % of its life the serving certificate stays;
// past 90 % the listener serves a new one (no restart), which clients
// verify, while the admin certificate, renewed too (30 days), keeps
// working.
func TestRenewer_RenewsTheServingCertificateWhileRunning(t *testing.T) {
	h := newRenewHarness(t)
	start := h.clk.Now()
	first := h.r.Current()
	code, served := h.get(adminCert(t, first))
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, first.Serving.Leaf.SerialNumber, served.SerialNumber)

	// Day 20 of the admin certificate's 30 (67 %): nothing is due.
	require.Eventually(t, h.clk.HasWaiters, 10*time.Second, time.Millisecond)
	h.clk.SetTime(start.Add(20 * 24 * time.Hour))
	h.r.Poke()
	<-h.r.renewed
	assert.Equal(t, first.AdminCertPEM, h.r.Current().AdminCertPEM, "the admin certificate is not due at 67 %")

	// Renew through the year: each admin certificate past 90 % of its
	// life, and the serving one past 90 % of its year.
	seen := map[string]bool{first.Admin.SerialNumber.Text(16): true}
	end := start.Add(time.Duration(float64(servingValidity) * 0.91))
	for now := start; now.Before(end); {
		now = now.Add(27*24*time.Hour + time.Hour)
		if now.After(end) {
			now = end
		}
		h.advance(now)
		seen[h.r.Current().Admin.SerialNumber.Text(16)] = true
		code, _ := h.get(adminCert(t, h.r.Current()))
		require.Equal(t, http.StatusOK, code, "at %s", now.Sub(start))
	}
	cur := h.r.Current()
	assert.NotEqual(t, first.Serving.Leaf.SerialNumber, cur.Serving.Leaf.SerialNumber, "the serving certificate was renewed")
	assert.Greater(t, len(seen), 10, "the admin certificate is renewed about monthly")
	code, served = h.get(adminCert(t, cur))
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, cur.Serving.Leaf.SerialNumber, served.SerialNumber, "the listener serves the new certificate without a restart")
	assert.True(t, h.clk.Now().Before(served.NotAfter.Add(-300*24*time.Hour)), "a fresh year")

	kc, err := os.ReadFile(h.kubeconfig)
	require.NoError(t, err)
	want, err := Kubeconfig(cur)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(kc), "the admin kubeconfig holds the newest admin certificate")
	assert.Equal(t, 30*24*time.Hour+time.Hour, cur.Admin.NotAfter.Sub(cur.Admin.NotBefore), "admin certificates live 30 days")
}

// TestRotateAdmin_OldAdminRefusedAtOnce is the attack on a leaked admin
// kubeconfig: after `minikubelet kubeconfig --rotate` (RotateAdmin, as
// another process would run it) the running daemon refuses the old
// certificate with 401 at its next request, also on a connection opened
// before the rotation, and accepts the new one; the CA stays; the
// daemon rewrites its own admin kubeconfig. A renewal, unlike a rotation,
// leaves the old certificate valid.
func TestRotateAdmin_OldAdminRefusedAtOnce(t *testing.T) {
	h := newRenewHarness(t)
	old := h.r.Current()
	oldCert := adminCert(t, old)

	// A kept-alive connection of the old certificate.
	keep := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: old.CertPool(), Certificates: []tls.Certificate{oldCert}, MinVersion: tls.VersionTLS12, Time: h.clk.Now}}}
	resp, err := keep.Get("https://" + h.addr + "/version")
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	// A renewal (day 28) keeps the old certificate valid.
	h.advance(h.clk.Now().Add(28 * 24 * time.Hour))
	renewed := h.r.Current()
	require.NotEqual(t, old.AdminCertPEM, renewed.AdminCertPEM)
	code, _ := h.get(oldCert)
	require.Equal(t, http.StatusOK, code, "a renewed-away certificate works until it expires")

	rotated, err := RotateAdmin(old.Dir, h.clk.Now())
	require.NoError(t, err)
	assert.Equal(t, old.CAPEM, rotated.CAPEM, "no new CA")

	code, _ = h.get(oldCert)
	assert.Equal(t, http.StatusUnauthorized, code, "the first admin certificate")
	code, _ = h.get(adminCert(t, renewed))
	assert.Equal(t, http.StatusUnauthorized, code, "the renewed one, issued before the rotation")
	resp, err = keep.Get("https://" + h.addr + "/version")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "a connection opened before the rotation")
	code, _ = h.get(adminCert(t, rotated))
	assert.Equal(t, http.StatusOK, code, "the new certificate")

	// The daemon noticed, and its kubeconfig has the new certificate.
	want, err := Kubeconfig(rotated)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(h.kubeconfig)
		return string(b) == string(want)
	}, 10*time.Second, 10*time.Millisecond, "the daemon rewrites its admin kubeconfig")

	// A restart keeps the rotation.
	again, err := EnsurePKI(old.Dir, h.addr, nil, h.clk.Now())
	require.NoError(t, err)
	assert.Equal(t, rotated.AdminCertPEM, again.AdminCertPEM)
	code, _ = h.get(oldCert)
	assert.Equal(t, http.StatusUnauthorized, code)
}

// TestEnsurePKI_AdminCertificateOfAnOlderPolicyReissued: a one-year admin
// certificate (before admin.serials existed) is replaced at start, and is
// not accepted.
func TestEnsurePKI_AdminCertificateOfAnOlderPolicyReissued(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	now := time.Now()
	p, err := EnsurePKI(dir, "127.0.0.1:6443", nil, now)
	require.NoError(t, err)
	yearLong, _, err := p.issue(dir, "admin", adminTemplate(), servingValidity, now)
	require.NoError(t, err)
	require.NoError(t, os.Remove(filepath.Join(dir, adminSerialsFile)))

	p2, err := EnsurePKI(dir, "127.0.0.1:6443", nil, now)
	require.NoError(t, err)
	assert.NotEqual(t, yearLong.SerialNumber, p2.Admin.SerialNumber)
	assert.Equal(t, adminValidity+skew, p2.Admin.NotAfter.Sub(p2.Admin.NotBefore))
	list := newAdminList(dir, nil)
	assert.False(t, list.accepts(yearLong.SerialNumber))
	assert.True(t, list.accepts(p2.Admin.SerialNumber))
}
