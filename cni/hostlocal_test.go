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
