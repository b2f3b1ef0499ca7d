package certificate

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/minikubelet/minikubelet/agent/atomicfile"
)

// The store's file names, as client-go's FileStore names them: the pairs
// are <prefix>-<timestamp>.pem (certificate chain then key, 0600) and the
// symlink <prefix>-current.pem points at the one in use; <prefix>-updated.pem
// is the symlink being swapped in.
const (
	currentSuffix = "-current.pem"
	updatedSuffix = "-updated.pem"
	// timestampLayout is client-go's FileStore's.
	timestampLayout = "2006-01-02-15-04-05"
)

// ClientPrefix is the kubelet's name of its client certificate pairs.
const ClientPrefix = "kubelet-client"

// ErrNoCertificate says the store has no current pair.
var ErrNoCertificate = errors.New("no current certificate")

// Store keeps certificate/key pairs in a directory as the kubelet does.
type Store struct {
	dir, prefix string
}

// NewStore returns the store of prefix's pairs in dir, finishing a swap of
// the current symlink that a crash interrupted (as client-go's recover).
func NewStore(dir, prefix string) (*Store, error) {
	s := &Store{dir: dir, prefix: prefix}
	cur, upd := s.CurrentPath(), filepath.Join(dir, prefix+updatedSuffix)
	if _, err := os.Stat(cur); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	fi, err := os.Lstat(upd)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	} else if err != nil {
		return nil, err
	}
	if fi.Mode()&os.ModeSymlink == 0 {
		return nil, fmt.Errorf("%s should be a symlink but is a file: remove it", upd)
	}
	if err := os.Rename(upd, cur); err != nil {
		return nil, err
	}
	return s, nil
}

// CurrentPath is the symlink to the current pair (what the kubeconfig
// names as client-certificate and client-key).
func (s *Store) CurrentPath() string { return filepath.Join(s.dir, s.prefix+currentSuffix) }

// Current loads the current pair; ErrNoCertificate when there is none.
func (s *Store) Current() (*tls.Certificate, error) {
	data, err := os.ReadFile(s.CurrentPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNoCertificate
	} else if err != nil {
		return nil, err
	}
	c, err := parsePair(data, data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.CurrentPath(), err)
	}
	return c, nil
}

// Update stores a new pair (certPEM: the issued chain, keyPEM: its key)
// as <prefix>-<now>.pem and makes it current. Unlike client-go's
// FileStore, which writes the timestamped file in place and removes the
// current symlink before renaming the new one over it, the file is written
// to a temporary name, synced and renamed, and the symlink is replaced by
// a rename: a crash leaves either the old pair or the new one current,
// never a torn file or no current link.
func (s *Store) Update(certPEM, keyPEM []byte, now time.Time) (*tls.Certificate, error) {
	c, err := parsePair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return nil, fmt.Errorf("certificate directory: %w", err)
	}
	var data []byte
	for _, der := range c.Certificate {
		data = append(data, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	block, _ := pem.Decode(keyPEM)
	data = append(data, pem.EncodeToMemory(block)...)
	name := s.prefix + "-" + now.Format(timestampLayout) + ".pem"
	path := filepath.Join(s.dir, name)
	if err := atomicfile.Write(path, data, 0o600); err != nil {
		return nil, err
	}
	upd := filepath.Join(s.dir, s.prefix+updatedSuffix)
	_ = os.Remove(upd)
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if err := os.Symlink(abs, upd); err != nil {
		return nil, err
	}
	if fi, err := os.Lstat(s.CurrentPath()); err == nil && fi.Mode()&os.ModeSymlink == 0 {
		_ = os.Remove(upd)
		return nil, fmt.Errorf("%s should be a symlink but is a file: move it away", s.CurrentPath())
	}
	if err := os.Rename(upd, s.CurrentPath()); err != nil {
		return nil, err
	}
	return c, syncDir(s.dir)
}

// parsePair parses a certificate chain and its key (PEM), checking that
// they belong together, with Leaf set.
func parsePair(certPEM, keyPEM []byte) (*tls.Certificate, error) {
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("certificate and key: %w", err)
	}
	if c.Leaf == nil {
		if c.Leaf, err = x509.ParseCertificate(c.Certificate[0]); err != nil {
			return nil, err
		}
	}
	return &c, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
