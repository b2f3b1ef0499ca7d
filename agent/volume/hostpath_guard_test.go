package volume

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/agent/manifest"
)

// The guard compares resolved paths in both directions: aliases of the
// root dir and of the socket dir, and their parents, are refused; the pod
// log dir only when mounted writable.
func TestManager_HostPathGuardResolvesAliases(t *testing.T) {
	cfg := Config{RootDir: t.TempDir(), PodLogDir: t.TempDir()}
	base := t.TempDir()
	sockDir := filepath.Join(base, "run", "minikubelet")
	require.NoError(t, os.MkdirAll(sockDir, 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(base, "var"), 0o755))
	require.NoError(t, os.Symlink("../run", filepath.Join(base, "var", "run")))
	require.NoError(t, os.Symlink(cfg.RootDir, filepath.Join(base, "rootlink")))
	cfg.ProtectedPaths = []string{sockDir}
	m := NewManager(cfg, Deps{})
	root := cfg.RootDir

	pod := func(i int, path string, readOnly bool) *v1.Pod {
		pods, err := manifest.PrepareManifest(fmt.Appendf(nil, `
apiVersion: v1
kind: Pod
metadata: {name: guard%d}
spec:
  volumes: [{name: state, hostPath: {path: %s}}]
  containers: [{name: app, image: reg.local/x:1, volumeMounts: [{name: state, mountPath: /state, readOnly: %t}]}]
`, i, path, readOnly), "test.yaml", "node-1")
		require.NoError(t, err)
		require.Len(t, pods, 1)
		return pods[0]
	}
	for i, tc := range []struct {
		name     string
		path     string
		readOnly bool
		refused  bool
	}{
		{"proc self root alias of the root dir", "/proc/self/root" + root + "/api-pods", false, true},
		{"proc pid root alias", "/proc/1/root" + root, true, true},
		{"symlinked socket dir (/var/run)", base + "/var/run/minikubelet", false, true},
		{"symlink to the root dir", base + "/rootlink/pods", false, true},
		{"parent of the socket dir", base + "/var/run", true, true},
		{"the host root", "/", true, true},
		{"pod log dir writable", cfg.PodLogDir, false, true},
		{"pod log dir read-only", cfg.PodLogDir, true, false},
		{"a sibling that only shares a prefix", root + "-other", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reason, msg := m.ProtectedHostPath(pod(i, tc.path, tc.readOnly))
			if !tc.refused {
				assert.Empty(t, reason, msg)
				return
			}
			assert.Equal(t, "HostPathForbidden", reason)
			assert.Contains(t, msg, "--pod-security=privileged")
			assert.Contains(t, msg, "spec.volumes[0].hostPath.path: ", "the refusal names the field")
		})
	}
}
