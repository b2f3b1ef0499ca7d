package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestChaosIPLeakRepairRun plants host-local reservations of sandboxes the
// runtime never had (what a containerd crash between CNI ADD and its
// metadata write leaves) and starts a foreground `minikubelet run`: it
// releases them before creating its pod, says so in its progress output,
// and its own pod gets an IP and gives it back at the end.
func TestChaosIPLeakRepairRun(t *testing.T) {
	t.Parallel()
	r := newPrivateRuntime(t)
	store := filepath.Join(r.network.DataDir, r.network.Name)
	require.NoError(t, os.MkdirAll(store, 0o755))
	prefix := strings.TrimSuffix(r.network.PodCIDR, "0/24")
	old := time.Now().Add(-time.Hour)
	for ip, id := range map[string]string{prefix + "249": "deadbeef0001aaaa", prefix + "250": "deadbeef0002bbbb"} {
		path := filepath.Join(store, ip)
		require.NoError(t, os.WriteFile(path, []byte(id+"\r\neth0"), 0o600))
		require.NoError(t, os.Chtimes(path, old, old))
	}

	base := t.TempDir()
	manifest := writeManifest(t, `apiVersion: v1
kind: Pod
metadata: {name: chaos-ipam}
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - name: c
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"]
`)
	args := append([]string{"run"}, r.nodeArgs()...)
	args = append(args, "--root-dir", filepath.Join(base, "root"), "--pod-log-dir", filepath.Join(base, "logs"), manifest)
	p := startRunArgs(t, args...)

	p.waitFor(`node\s+ipam\s+\S+\s+released 2 leaked IPs: `+regexp.QuoteMeta(prefix+"249 (sandbox deadbeef0001a), "+prefix+"250 (sandbox deadbeef0002b)"), time.Minute)
	ip := p.waitRunning("chaos-ipam")
	res := r.reservations(t)
	require.Len(t, res, 1, "only the pod's own IP is reserved: %v", res)
	require.Contains(t, res, ip)
	out := p.interrupt()
	require.Regexp(t, `ipam .*\n(.*\n)*.*sandbox`, out, "the repair comes before the pod's sandbox")
	require.Empty(t, r.reservations(t), "the pod's IP is released when run stops it")
}
