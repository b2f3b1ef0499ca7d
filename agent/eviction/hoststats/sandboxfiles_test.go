package hoststats

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/eviction"
)

// fakeStatuses answers verbose ContainerStatus with containerd's info of
// each container: its sandbox ID and its spec's mounts.
type fakeStatuses struct {
	mu    sync.Mutex
	infos map[string]string
	calls map[string]int
}

func (f *fakeStatuses) ContainerStatus(_ context.Context, id string, verbose bool) (*runtimeapi.ContainerStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[id]++
	info, ok := f.infos[id]
	if !ok {
		return nil, fmt.Errorf("container %q not found", id)
	}
	resp := &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{Id: id}}
	if verbose {
		resp.Info = map[string]string{"info": info}
	}
	return resp, nil
}

// containerdInfo is containerd's verbose info of a container of sandbox
// sb with mounts (destination -> source).
func containerdInfo(t *testing.T, sb string, mounts [][2]string) string {
	t.Helper()
	type mount struct {
		Destination string `json:"destination"`
		Type        string `json:"type"`
		Source      string `json:"source"`
	}
	var ms []mount
	for _, m := range mounts {
		ms = append(ms, mount{m[0], "bind", m[1]})
	}
	b, err := json.Marshal(map[string]any{"sandboxID": sb, "pid": 42, "runtimeSpec": map[string]any{"mounts": ms}})
	require.NoError(t, err)
	return string(b)
}

func ctrStatsID(uid, name, id string, layer uint64) *runtimeapi.ContainerStats {
	c := ctrStats(uid, name, 0, layer)
	c.Attributes.Id = id
	return c
}

// The runtime's per-sandbox files (containerd's <root>/…/sandboxes/<id>/
// hostname and resolv.conf, mounted writable at /etc/hostname and
// /etc/resolv.conf) count in the pod's ephemeral storage: a pod that
// wrote 8 MiB into /etc/hostname is over its 5Mi limit (before, its total
// was its empty writable layer and it ran on). Each file counts once
// however many containers mount it; a mount the pod asked for at
// /etc/resolv.conf (a volume, counted as such) and a file swapped for a
// symlink (never followed) or a FIFO (never opened) count nothing; the
// paths are looked up once per container, and forgotten with it.
func TestHostEvictionStats_SandboxFilesCount(t *testing.T) {
	h := newTestEngine(t)
	root := filepath.Join(t.TempDir(), "io.containerd.grpc.v1.cri", "sandboxes")
	sbDir := filepath.Join(root, "sb1")
	require.NoError(t, os.MkdirAll(sbDir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(sbDir, "hostname"), make([]byte, 8<<20), 0o644)) // written: blocks allocated
	require.NoError(t, os.WriteFile(filepath.Join(sbDir, "resolv.conf"), []byte("nameserver 10.0.0.10\n"), 0o644))
	// A second sandbox whose files were swapped for a symlink to a big
	// file and for a FIFO.
	sb2 := filepath.Join(root, "sb2")
	require.NoError(t, os.MkdirAll(sb2, 0o755))
	big := filepath.Join(t.TempDir(), "big")
	require.NoError(t, os.WriteFile(big, make([]byte, 16<<20), 0o644))
	require.NoError(t, os.Symlink(big, filepath.Join(sb2, "hostname")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(sb2, "resolv.conf"), 0o644))
	vol := filepath.Join(t.TempDir(), "resolv-volume")
	require.NoError(t, os.WriteFile(vol, make([]byte, 4<<20), 0o644))

	st := &fakeStatuses{calls: map[string]int{}, infos: map[string]string{
		"c1": containerdInfo(t, "sb1", [][2]string{{"/etc/hostname", filepath.Join(sbDir, "hostname")}, {"/etc/resolv.conf", filepath.Join(sbDir, "resolv.conf")},
			{"/etc/hosts", "/var/lib/minikubelet/pods/uid-1/etc-hosts"}}),
		"c2": containerdInfo(t, "sb1", [][2]string{{"/etc/hostname", filepath.Join(sbDir, "hostname")}, {"/etc/resolv.conf", vol}}),
		"c3": containerdInfo(t, "sb2", [][2]string{{"/etc/hostname", filepath.Join(sb2, "hostname")}, {"/etc/resolv.conf", filepath.Join(sb2, "resolv.conf")}}),
	}}
	lim := v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("5Mi")}
	p := &v1.Pod{}
	p.Name, p.Namespace, p.UID = "p", "default", "uid-1"
	p.Spec.Containers = []v1.Container{{Name: "a", Resources: v1.ResourceRequirements{Limits: lim}}, {Name: "b"}}
	q := p.DeepCopy()
	q.Name, q.UID = "q", "uid-2"
	s := h.provider(fakeStats{
		ctrStatsID("uid-1", "a", "c1", 0), ctrStatsID("uid-1", "b", "c2", 0), ctrStatsID("uid-2", "a", "c3", 0),
	})
	s.statuses = st

	got := s.LocalStorage(context.Background(), []*v1.Pod{p, q})
	require.Contains(t, got, p.UID)
	u := got[p.UID]
	require.True(t, u.PodMeasured)
	hostname := int64(8 << 20)
	assert.GreaterOrEqual(t, u.Pod, hostname, "the hostname file counts")
	assert.Less(t, u.Pod, hostname+(1<<20), "once, and the pod's resolv.conf volume is not containerd's file")
	pl := lim[v1.ResourceEphemeralStorage]
	sig, msg := eviction.LocalStorageViolation(p, u, &pl, false)
	assert.Equal(t, eviction.SignalEphemeralPodFsLimit, sig, msg)

	require.Contains(t, got, q.UID)
	assert.Less(t, got[q.UID].Pod, int64(1<<20), "a symlink is not followed, a FIFO not counted")

	// Ranking under disk pressure counts them too.
	ps := s.PodStats(context.Background(), []*v1.Pod{p}, true)
	require.Contains(t, ps, p.UID)
	assert.GreaterOrEqual(t, ps[p.UID].Disk, hostname)

	// Looked up once per container; forgotten once it is gone.
	s.LocalStorage(context.Background(), []*v1.Pod{p, q})
	st.mu.Lock()
	assert.Equal(t, map[string]int{"c1": 1, "c2": 1, "c3": 1}, st.calls)
	st.mu.Unlock()
	s.stats = fakeStats{ctrStatsID("uid-1", "a", "c1", 0)}
	s.LocalStorage(context.Background(), []*v1.Pod{p})
	s.sandboxFiles.mu.Lock()
	assert.Equal(t, []string{"c1"}, keys(s.sandboxFiles.paths))
	s.sandboxFiles.mu.Unlock()
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Which mounts are the runtime's per-sandbox files: /etc/hostname,
// /etc/resolv.conf and /etc/hosts from <dir named by the sandbox ID>/<the
// same name>, nothing else.
func TestSandboxFilesOfInfo(t *testing.T) {
	info := containerdInfo(t, "abc", [][2]string{
		{"/etc/hostname", "/var/lib/containerd/io.containerd.grpc.v1.cri/sandboxes/abc/hostname"},
		{"/etc/resolv.conf", "/var/lib/containerd/io.containerd.grpc.v1.cri/sandboxes/abc/resolv.conf"},
		{"/etc/hosts", "/var/lib/minikubelet/pods/u/etc-hosts"},                                         // the agent's: in the pod directory
		{"/etc/resolv.conf", "/var/lib/containerd/io.containerd.grpc.v1.cri/sandboxes/xyz/resolv.conf"}, // another sandbox's
		{"/data/hostname", "/var/lib/containerd/io.containerd.grpc.v1.cri/sandboxes/abc/hostname"},      // not at /etc
		{"/dev/shm", "/run/containerd/io.containerd.grpc.v1.cri/sandboxes/abc/shm"},
	})
	assert.Equal(t, []string{
		"/var/lib/containerd/io.containerd.grpc.v1.cri/sandboxes/abc/hostname",
		"/var/lib/containerd/io.containerd.grpc.v1.cri/sandboxes/abc/resolv.conf",
	}, sandboxFilesOfInfo(info))
	assert.Empty(t, sandboxFilesOfInfo(""))
	assert.Empty(t, sandboxFilesOfInfo("{not json"))
	assert.Empty(t, sandboxFilesOfInfo(`{"runtimeSpec":{"mounts":[{"destination":"/etc/hostname","source":"/x//hostname"}]}}`), "no sandbox ID")
}
