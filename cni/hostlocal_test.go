package cni

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHostLocalReservations(t *testing.T) {
	c := Config{Name: "testnet", DataDir: t.TempDir()}
	dir := filepath.Join(c.DataDir, "testnet")
	assert.Equal(t, dir, HostLocalDir(c))

	got, err := HostLocalReservations(c)
	require.NoError(t, err, "no store yet means no reservations")
	assert.Empty(t, got)

	require.NoError(t, os.MkdirAll(filepath.Join(dir, "10.88.0.9"), 0o755)) // a dir is not a reservation
	files := map[string]string{
		"10.88.0.2":          "abc123\r\neth0", // host-local's format
		"10.88.0.3":          "def456\n",       // older format
		"last_reserved_ip.0": "10.88.0.3",
		"lock":               "",
	}
	for name, content := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600))
	}

	got, err = HostLocalReservations(c)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"10.88.0.2": "abc123", "10.88.0.3": "def456"}, got)
}

func TestHostLocalDir_Default(t *testing.T) {
	assert.Equal(t, "/var/lib/cni/networks/minikubelet", HostLocalDir(Config{}))
}

func TestReleaseHostLocal(t *testing.T) {
	c := Config{Name: "testnet", DataDir: t.TempDir()}
	cache := t.TempDir()
	dir := HostLocalDir(c)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(cache, "results"), 0o755))
	write := func(path, content string) {
		require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	}
	write(filepath.Join(dir, "10.88.0.10"), "leaked1\r\neth0")
	write(filepath.Join(dir, "10.88.0.9"), "live\r\neth0")
	write(filepath.Join(dir, "10.88.0.2"), "reused\r\neth0")
	write(filepath.Join(cache, "results", "testnet-leaked1-eth0"), "{}")
	write(filepath.Join(cache, "results", "othernet-leaked1-eth0"), "{}")

	list, err := ListHostLocal(c)
	require.NoError(t, err)
	var ips []string
	for _, r := range list {
		ips = append(ips, r.IP+"="+r.ID+"/"+r.IfName)
		assert.False(t, r.Written.IsZero())
	}
	assert.Equal(t, []string{"10.88.0.2=reused/eth0", "10.88.0.9=live/eth0", "10.88.0.10=leaked1/eth0"}, ips, "sorted numerically")

	tests := []struct {
		name     string
		r        Reservation
		released bool
	}{
		{"owner matches", Reservation{IP: "10.88.0.10", ID: "leaked1"}, true},
		{"already gone", Reservation{IP: "10.88.0.10", ID: "leaked1"}, false},
		{"handed to another container meanwhile", Reservation{IP: "10.88.0.2", ID: "old"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, err := ReleaseHostLocal(c, cache, tt.r)
			require.NoError(t, err)
			assert.Equal(t, tt.released, ok)
		})
	}
	got, err := HostLocalReservations(c)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"10.88.0.2": "reused", "10.88.0.9": "live"}, got)
	assert.NoFileExists(t, filepath.Join(cache, "results", "testnet-leaked1-eth0"), "the network's result cache goes with the IP")
	assert.FileExists(t, filepath.Join(cache, "results", "othernet-leaked1-eth0"), "another network's cache stays")
	assert.FileExists(t, filepath.Join(dir, "lock"), "released under host-local's lock file")
}
