package certificate

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Update writes the pair 0600 under a timestamped name and swaps the
// current symlink; a bad pair leaves the current one in place and no file
// behind; a regular file where the symlink belongs is refused.
func TestStore_UpdateIsAtomicAnd0600(t *testing.T) {
	ca := newTestCA(t)
	dir := filepath.Join(t.TempDir(), "pki")
	s, err := NewStore(dir, ClientPrefix)
	require.NoError(t, err)
	_, err = s.Current()
	require.ErrorIs(t, err, ErrNoCertificate)

	cert1, key1 := ca.pair(t, NodeSubject("n"), time.Now(), time.Hour)
	t1 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c1, err := s.Update(cert1, key1, t1)
	require.NoError(t, err)
	p1 := filepath.Join(dir, "kubelet-client-2026-01-02-03-04-05.pem")
	target, err := os.Readlink(s.CurrentPath())
	require.NoError(t, err)
	require.Equal(t, p1, target)
	fi, err := os.Stat(p1)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	// A certificate with another key's private key: refused, nothing changes.
	cert2, _ := ca.pair(t, NodeSubject("n"), time.Now(), time.Hour)
	_, key3 := ca.pair(t, NodeSubject("n"), time.Now(), time.Hour)
	_, err = s.Update(cert2, key3, t1.Add(time.Minute))
	require.ErrorContains(t, err, "private key does not match public key")
	cur, err := s.Current()
	require.NoError(t, err)
	require.Equal(t, c1.Leaf.SerialNumber, cur.Leaf.SerialNumber)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 2, "%v", entries)

	cert4, key4 := ca.pair(t, NodeSubject("n"), time.Now(), time.Hour)
	c4, err := s.Update(cert4, key4, t1.Add(2*time.Minute))
	require.NoError(t, err)
	cur, err = s.Current()
	require.NoError(t, err)
	require.Equal(t, c4.Leaf.SerialNumber, cur.Leaf.SerialNumber)
	entries, _ = os.ReadDir(dir)
	require.Len(t, entries, 3, "both pairs and the symlink, no temporary file: %v", entries)

	// A crash between making the updated link and renaming it over the
	// current one: the next start finishes the swap.
	require.NoError(t, os.Remove(s.CurrentPath()))
	require.NoError(t, os.Symlink(p1, filepath.Join(dir, "kubelet-client-updated.pem")))
	s, err = NewStore(dir, ClientPrefix)
	require.NoError(t, err)
	cur, err = s.Current()
	require.NoError(t, err)
	require.Equal(t, c1.Leaf.SerialNumber, cur.Leaf.SerialNumber)

	require.NoError(t, os.Remove(s.CurrentPath()))
	require.NoError(t, os.WriteFile(s.CurrentPath(), append(cert1, key1...), 0o600))
	_, err = s.Update(cert4, key4, t1.Add(3*time.Minute))
	require.ErrorContains(t, err, "should be a symlink but is a file")
}
