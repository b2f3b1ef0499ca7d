package volume

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ResolveHostPath follows symlinks as far as the path exists, strips the
// /proc/…/root aliases of the root, and keeps what does not exist yet.
func TestResolveHostPath(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "run")
	require.NoError(t, os.MkdirAll(filepath.Join(real, "minikubelet"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(base, "var"), 0o755))
	require.NoError(t, os.Symlink("../run", filepath.Join(base, "var", "run")))              // /var/run → /run
	require.NoError(t, os.Symlink(real+"/minikubelet/new", filepath.Join(base, "dangling"))) // target missing
	require.NoError(t, os.Symlink("/proc/self/root"+real, filepath.Join(base, "viaproc")))
	require.NoError(t, os.Symlink("loop", filepath.Join(base, "loop")))

	for _, tc := range []struct {
		name, in, want string
	}{
		{"plain", real + "/minikubelet", real + "/minikubelet"},
		{"relative symlink in the middle", base + "/var/run/minikubelet", real + "/minikubelet"},
		{"missing tail kept", base + "/var/run/minikubelet/a/b", real + "/minikubelet/a/b"},
		{"dangling symlink followed", base + "/dangling/x", real + "/minikubelet/new/x"},
		{"proc self root", "/proc/self/root" + real, real},
		{"proc thread-self root", "/proc/thread-self/root/proc/1/root" + real + "/minikubelet", real + "/minikubelet"},
		{"proc pid task root", "/proc/42/task/43/root" + base + "/var/run", real},
		{"symlink to a proc root", base + "/viaproc/minikubelet", real + "/minikubelet"},
		{"unclean", base + "//var/./run/", real},
		{"symlink loop stops", base + "/loop/x", base + "/loop/x"},
		{"proc itself untouched", "/proc/self/rootless-" + base, "/proc/self/rootless-" + base},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "proc itself untouched" {
				// Would read the host's /proc: only the lexical part is
				// checked here.
				assert.Zero(t, ProcRootAhead("/proc/self", []string{"rootless"}))
				return
			}
			assert.Equal(t, tc.want, ResolveHostPath(tc.in))
		})
	}
}
