package api

// This file keeps the TCP API's certificates current while the daemon
// runs (Renewer) and holds the list of admin certificates the listener
// accepts (admin.serials); see pki.go's file comment.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/agent/atomicfile"
)

// lockPKI takes the PKI directory's lock (flock on dir/.lock): the daemon's
// renewals and `minikubelet kubeconfig --rotate` never write the files at
// the same time.
func lockPKI(dir string) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock PKI directory: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock PKI directory: %w", err)
	}
	return func() { f.Close() }, nil // closing releases the lock
}

// adminSerial is one line of admin.serials: an accepted admin
// certificate's serial and end.
type adminSerial struct {
	serial   *big.Int
	notAfter time.Time
}

// readAdminSerials reads dir/admin.serials: "<hex serial> <unix end>" a
// line.
func readAdminSerials(dir string) ([]adminSerial, error) {
	b, err := os.ReadFile(filepath.Join(dir, adminSerialsFile))
	if err != nil {
		return nil, err
	}
	return parseAdminSerials(b)
}

func parseAdminSerials(b []byte) ([]adminSerial, error) {
	var out []adminSerial
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		n, ok := new(big.Int).SetString(f[0], 16)
		if len(f) != 2 || !ok {
			return nil, fmt.Errorf("%s: bad line %q", adminSerialsFile, sc.Text())
		}
		end, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: bad line %q", adminSerialsFile, sc.Text())
		}
		out = append(out, adminSerial{n, time.Unix(end, 0)})
	}
	return out, sc.Err()
}

// writeAdminSerials writes list to dir/admin.serials, without the
// certificates that ended before now.
func writeAdminSerials(dir string, list []adminSerial, now time.Time) error {
	var b bytes.Buffer
	for _, s := range list {
		if s.notAfter.Before(now) {
			continue
		}
		fmt.Fprintf(&b, "%x %d\n", s.serial, s.notAfter.Unix())
	}
	return atomicfile.Write(filepath.Join(dir, adminSerialsFile), b.Bytes(), 0o644)
}

// adminList answers whether an admin certificate is accepted. It reads
// admin.serials again whenever the file changed (a stat per request), so
// that a rotation by another process takes effect at the next request.
type adminList struct {
	path string
	// changed is called (without the lock) when the file changed after
	// the first read; nil for none.
	changed func()
	// mu guards stamp and serials.
	mu      sync.Mutex
	stamp   string
	serials map[string]bool
}

func newAdminList(dir string, changed func()) *adminList {
	return &adminList{path: filepath.Join(dir, adminSerialsFile), changed: changed}
}

// accepts reports whether the certificate with serial is listed. An
// unreadable list accepts nothing.
func (l *adminList) accepts(serial *big.Int) bool {
	fi, err := os.Stat(l.path)
	if err != nil {
		return false
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	stamp := fmt.Sprintf("%d/%d/%d", fi.ModTime().UnixNano(), fi.Size(), inode(st))
	l.mu.Lock()
	reread := stamp != l.stamp
	first := l.serials == nil
	if reread {
		b, err := os.ReadFile(l.path)
		list, perr := parseAdminSerials(b)
		if err != nil || perr != nil {
			l.mu.Unlock()
			return false
		}
		l.serials = make(map[string]bool, len(list))
		for _, s := range list {
			l.serials[s.serial.Text(16)] = true
		}
		l.stamp = stamp
	}
	ok := l.serials[serial.Text(16)]
	l.mu.Unlock()
	if reread && !first && l.changed != nil {
		l.changed()
	}
	return ok
}

func inode(st *syscall.Stat_t) uint64 {
	if st == nil {
		return 0
	}
	return st.Ino
}

// PKISource gives the PKI in effect: a fixed *PKI, or a Renewer's newest.
type PKISource interface {
	Current() *PKI
}

// Current is p itself.
func (p *PKI) Current() *PKI { return p }

// Renewer keeps the TCP API's certificates current while the daemon runs:
// it calls EnsurePKI at a random point between 70 % and 90 % of the life
// of the certificate that ends first (and when admin.serials changed:
// a rotation), rewrites the admin kubeconfig when the admin certificate
// changed, and hands the listener the new certificates (ServeTLS takes
// them at each handshake).
type Renewer struct {
	addr       string
	extraHosts []string
	kubeconfig string
	clock      clock.Clock
	logger     *slog.Logger
	cur        atomic.Pointer[PKI]
	// wake asks Run to look at the directory now; capacity 1.
	wake chan struct{}
	// renewed is signalled after each renewal attempt (tests); capacity 1.
	renewed chan struct{}
}

// NewRenewer starts from p, which EnsurePKI returned for addr and
// extraHosts; kubeconfig is the admin kubeconfig to rewrite ("" none).
func NewRenewer(p *PKI, extraHosts []string, kubeconfig string, clk clock.Clock, logger *slog.Logger) *Renewer {
	if clk == nil {
		clk = clock.RealClock{}
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	r := &Renewer{addr: p.Address, extraHosts: extraHosts, kubeconfig: kubeconfig, clock: clk,
		logger: logger.With("component", "api-pki"), wake: make(chan struct{}, 1), renewed: make(chan struct{}, 1)}
	r.cur.Store(p)
	return r
}

// Current is the newest PKI.
func (r *Renewer) Current() *PKI { return r.cur.Load() }

// Poke asks Run to read the directory again now.
func (r *Renewer) Poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// retryAfterFailure is how long Run waits after a failed renewal.
const retryAfterFailure = time.Minute

// maxRenewalSleep bounds one wait, so that a wall clock that jumped
// (a suspended machine) is noticed within the hour.
const maxRenewalSleep = time.Hour

// Run renews until ctx ends.
func (r *Renewer) Run(ctx context.Context) {
	var last *PKI
	var jitter float64
	for {
		p := r.cur.Load()
		if p != last {
			// One point of the window per set of certificates: drawn
			// again at each wake, the earliest draws would win.
			last, jitter = p, rand.Float64()
		}
		wait := nextRenewal(p, jitter).Sub(r.clock.Now())
		wait = min(max(wait, 0), maxRenewalSleep)
		t := r.clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-r.wake:
			t.Stop()
		case <-t.C():
		}
		if err := r.renew(); err != nil {
			r.logger.Warn("Renewing the API certificates failed; retrying", "err", err, "in", retryAfterFailure)
			t := r.clock.NewTimer(retryAfterFailure)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C():
			}
		}
	}
}

// nextRenewal is when the first of p's certificates is due: a leaf at
// fraction renewFrom + jitter*(renewTo-renewFrom) of its life, the CA
// renewBefore its end.
func nextRenewal(p *PKI, jitter float64) time.Time {
	f := renewFrom + jitter*(renewTo-renewFrom)
	next := p.CA.NotAfter.Add(-renewBefore)
	for _, c := range []*x509.Certificate{p.Serving.Leaf, p.Admin} {
		if c == nil {
			continue
		}
		if t := renewalTime(c, f); t.Before(next) {
			next = t
		}
	}
	return next
}

// renew runs EnsurePKI and takes its result.
func (r *Renewer) renew() error {
	defer func() {
		select {
		case r.renewed <- struct{}{}:
		default:
		}
	}()
	old := r.cur.Load()
	p, err := EnsurePKI(old.Dir, r.addr, r.extraHosts, r.clock.Now())
	if err != nil {
		return err
	}
	if !bytes.Equal(p.AdminCertPEM, old.AdminCertPEM) || !bytes.Equal(p.CAPEM, old.CAPEM) {
		if r.kubeconfig != "" {
			if err := WriteKubeconfig(r.kubeconfig, p); err != nil {
				return fmt.Errorf("--admin-kubeconfig: %w", err)
			}
		}
		r.logger.Info("New admin certificate", "serial", p.Admin.SerialNumber.Text(16), "notAfter", p.Admin.NotAfter, "kubeconfig", r.kubeconfig)
	}
	newServing := !slices.Equal(p.Serving.Certificate[0], old.Serving.Certificate[0])
	if newServing {
		r.logger.Info("New serving certificate", "serial", p.Serving.Leaf.SerialNumber.Text(16), "notAfter", p.Serving.Leaf.NotAfter)
	}
	if newServing || !bytes.Equal(p.AdminCertPEM, old.AdminCertPEM) || !bytes.Equal(p.CAPEM, old.CAPEM) {
		r.cur.Store(p) // else the same certificates: Run keeps its point of the window
	}
	return nil
}

// listenerTLS is the TCP listener's TLS: each handshake takes src's
// newest PKI, so a renewed serving certificate or CA is served without a
// restart. A Renewer's clock verifies client certificates.
func listenerTLS(src PKISource) *tls.Config {
	var clk clock.PassiveClock
	if r, ok := src.(*Renewer); ok {
		if _, real := r.clock.(clock.RealClock); !real {
			clk = r.clock
		}
	}
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"h2", "http/1.1"},
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			p := src.Current()
			p.tlsOnce.Do(func() {
				p.tlsConfig = TLSConfig(p)
				if clk != nil {
					p.tlsConfig.Time = clk.Now
				}
			})
			return p.tlsConfig, nil
		},
	}
}
