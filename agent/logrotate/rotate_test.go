package logrotate

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/cri"
	"github.com/minikubelet/minikubelet/cri/critest"
)

// logRuntime wraps critest's runtime, whose ContainerStatus carries no
// LogPath, with what containerd does for logs: each container writes to a
// file under a temp dir, and ReopenContainerLog creates that file anew.
type logRuntime struct {
	cri.Runtime

	mu sync.Mutex
	// paths holds the log path of each container id.
	paths map[string]string
	// reopened logs the ids ReopenContainerLog was called with.
	reopened []string
	// reopenErrs fail the next ReopenContainerLog calls, in order.
	reopenErrs []error
	// stopBeforeStatus is the id of a container ContainerStatus stops
	// before it answers (one that stopped after the list).
	stopBeforeStatus string
}

var _ cri.Runtime = (*logRuntime)(nil)

// ContainerStatus adds the log path.
func (r *logRuntime) ContainerStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.ContainerStatusResponse, error) {
	r.mu.Lock()
	stop := id == r.stopBeforeStatus
	r.mu.Unlock()
	if stop {
		if err := r.Runtime.StopContainer(ctx, id, 0); err != nil {
			return nil, err
		}
	}
	resp, err := r.Runtime.ContainerStatus(ctx, id, verbose)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	resp.Status.LogPath = r.paths[id]
	r.mu.Unlock()
	return resp, nil
}

// ReopenContainerLog records the call and, unless an error is injected,
// creates the log file again, as containerd does.
func (r *logRuntime) ReopenContainerLog(_ context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reopened = append(r.reopened, id)
	if len(r.reopenErrs) > 0 {
		err := r.reopenErrs[0]
		r.reopenErrs = r.reopenErrs[1:]
		return err
	}
	f, err := os.OpenFile(r.paths[id], os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return err
	}
	return f.Close()
}

func (r *logRuntime) reopenCalls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.reopened...)
}

// Labels the tests' containers carry: the caller's managed-by label, and
// the container name.
const (
	managedKey, managedValue = "io.minikubelet.managed-by", "minikubelet"
	containerNameKey         = "io.kubernetes.container.name"
)

// rotateHarness is a Rotator's options over logRuntime with a fake clock.
type rotateHarness struct {
	fake  *critest.Fake
	rt    *logRuntime
	clock *testclock.FakeClock
	dir   string
}

func newRotateHarness(t testing.TB) *rotateHarness {
	t.Helper()
	h := &rotateHarness{
		fake:  critest.New(),
		clock: testclock.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)),
		dir:   t.TempDir(),
	}
	h.fake.Now = h.clock.Now
	h.rt = &logRuntime{Runtime: h.fake.Runtime, paths: map[string]string{}}
	return h
}

// newRotator is a Rotator over the harness: it owns the containers with
// the managed-by label.
func (h *rotateHarness) newRotator() *Rotator {
	return New(Options{
		Runtime:        h.rt,
		Selector:       map[string]string{managedKey: managedValue},
		Owns:           func(l map[string]string) bool { return l[managedKey] == managedValue },
		Clock:          h.clock,
		RuntimeTimeout: time.Minute,
	})
}

// pass makes one pass with a rotator of its own (nothing cached).
func (h *rotateHarness) pass(ctx context.Context, cfg Config) error {
	return h.newRotator().Pass(ctx, cfg)
}

// container creates a container whose log holds size bytes; managed says
// whether it carries minikubelet's label, running whether it is started.
func (h *rotateHarness) container(t testing.TB, name string, size int, managed, running bool) (id, path string) {
	t.Helper()
	ctx := context.Background()
	sb, err := h.fake.Runtime.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: name + "-uid"},
	}, "")
	require.NoError(t, err)
	labels := map[string]string{containerNameKey: name}
	if managed {
		labels[managedKey] = managedValue
	}
	id, err = h.fake.Runtime.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: name},
		Image:    &runtimeapi.ImageSpec{Image: "registry.example/app:1.0"},
		Labels:   labels,
	}, nil)
	require.NoError(t, err)
	if running {
		require.NoError(t, h.fake.Runtime.StartContainer(ctx, id))
	}
	path = filepath.Join(h.dir, "default_"+name+"_uid", name, "0.log")
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(strings.Repeat("x", size)), 0o640))
	h.rt.mu.Lock()
	h.rt.paths[id] = path
	h.rt.mu.Unlock()
	return id, path
}

// logFiles returns the names of the files in path's directory, sorted.
func logFiles(t *testing.T, path string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestConfig(t *testing.T) {
	assert.Equal(t, Config{MaxSize: 10 << 20, MaxFiles: 5, Period: 10 * time.Second}, Config{}.WithDefaults())
	assert.Equal(t, Config{MaxSize: 1, MaxFiles: 2, Period: time.Second},
		Config{MaxSize: 1, MaxFiles: 2, Period: time.Second}.WithDefaults())
	assert.NoError(t, Config{}.Validate())
	assert.ErrorContains(t, Config{MaxFiles: 1}.Validate(), "at least 2")
	assert.ErrorContains(t, Config{MaxSize: -1}.Validate(), "max size")
	assert.ErrorContains(t, Config{Period: -time.Second}.Validate(), "period")
}

// TestRotator_Pass checks one pass: only running containers of ours
// whose log exceeds MaxSize are rotated, with the runtime asked to reopen.
func TestRotator_Pass(t *testing.T) {
	h := newRotateHarness(t)
	cfg := Config{MaxSize: 100, MaxFiles: 3}
	big, bigPath := h.container(t, "big", 101, true, true)
	_, atLimitPath := h.container(t, "at-limit", 100, true, true)
	_, foreignPath := h.container(t, "foreign", 1000, false, true)
	_, exitedPath := h.container(t, "exited", 1000, true, false)

	require.NoError(t, h.pass(context.Background(), cfg))

	assert.Equal(t, []string{big}, h.rt.reopenCalls())
	rotatedName := "0.log.20260102-030405.123456"
	assert.Equal(t, []string{"0.log", rotatedName}, logFiles(t, bigPath))
	data, err := os.ReadFile(filepath.Join(filepath.Dir(bigPath), rotatedName))
	require.NoError(t, err)
	assert.Len(t, data, 101, "the rotated file holds the old log")
	fi, err := os.Stat(bigPath)
	require.NoError(t, err)
	assert.Zero(t, fi.Size(), "the runtime reopened a fresh log")

	for _, p := range []string{atLimitPath, foreignPath, exitedPath} {
		assert.Equal(t, []string{"0.log"}, logFiles(t, p), "untouched: %s", p)
	}

	// Nothing to do the second time.
	require.NoError(t, h.pass(context.Background(), cfg))
	assert.Len(t, h.rt.reopenCalls(), 1)
}

// TestRotator_Pass_Prunes checks that at most MaxFiles-1 rotated files
// remain, the oldest removed, and unrelated files stay.
func TestRotator_Pass_Prunes(t *testing.T) {
	h := newRotateHarness(t)
	cfg := Config{MaxSize: 10, MaxFiles: 3}
	_, path := h.container(t, "app", 50, true, true)
	dir := filepath.Dir(path)
	for _, name := range []string{
		"0.log.20250101-000000.000000",
		"0.log.20250101-000001",        // the kubelet's format
		"0.log.20250102-000000.000000", // newest old one
		"1.log.20240101-000000.000000", // another instance's log
		"0.log.notes",                  // not a rotated log
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), nil, 0o640))
	}

	require.NoError(t, h.pass(context.Background(), cfg))
	assert.Equal(t, []string{
		"0.log",
		"0.log.20250102-000000.000000",
		"0.log.20260102-030405.123456",
		"0.log.notes",
		"1.log.20240101-000000.000000",
	}, logFiles(t, path))

	// Grown again later: the next rotation drops the oldest again.
	require.NoError(t, os.WriteFile(path, []byte(strings.Repeat("y", 11)), 0o640))
	h.clock.Step(time.Minute)
	require.NoError(t, h.pass(context.Background(), cfg))
	assert.Equal(t, []string{
		"0.log",
		"0.log.20260102-030405.123456",
		"0.log.20260102-030505.123456",
		"0.log.notes",
		"1.log.20240101-000000.000000",
	}, logFiles(t, path))
}

// TestRotator_Pass_ReopenFails checks that the log is renamed back when
// the runtime cannot reopen it, so nothing is lost and the next pass retries.
func TestRotator_Pass_ReopenFails(t *testing.T) {
	h := newRotateHarness(t)
	cfg := Config{MaxSize: 10, MaxFiles: 2}
	id, path := h.container(t, "app", 50, true, true)
	h.rt.reopenErrs = []error{errors.New("runtime busy")}

	err := h.pass(context.Background(), cfg)
	require.Error(t, err)
	assert.ErrorContains(t, err, "rotate log of container "+id)
	assert.ErrorContains(t, err, "runtime busy")
	assert.Equal(t, []string{"0.log"}, logFiles(t, path))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Len(t, data, 50, "renamed back with its content")

	// The next pass succeeds.
	h.clock.Step(10 * time.Second)
	require.NoError(t, h.pass(context.Background(), cfg))
	assert.Equal(t, []string{id, id}, h.rt.reopenCalls())
	assert.Equal(t, []string{"0.log", "0.log.20260102-030415.123456"}, logFiles(t, path))
}

// TestRotator_Pass_MissingLog checks that a lost log file is recreated
// through the runtime, as the kubelet does.
func TestRotator_Pass_MissingLog(t *testing.T) {
	h := newRotateHarness(t)
	id, path := h.container(t, "app", 0, true, true)
	require.NoError(t, os.Remove(path))

	require.NoError(t, h.pass(context.Background(), Config{}))
	assert.Equal(t, []string{id}, h.rt.reopenCalls())
	assert.FileExists(t, path)
}

// TestRotator_Pass_ListFails checks that a runtime failure is returned.
func TestRotator_Pass_ListFails(t *testing.T) {
	h := newRotateHarness(t)
	h.fake.InjectError("ListContainers", errors.New("runtime down"))
	assert.ErrorContains(t, h.pass(context.Background(), Config{}), "runtime down")
}

// TestRotator_Run checks the loop: a pass every Period on the
// clock, until ctx ends.
func TestRotator_Run(t *testing.T) {
	h := newRotateHarness(t)
	id, path := h.container(t, "app", 50, true, true)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.newRotator().Run(ctx, Config{MaxSize: 10, MaxFiles: 2, Period: 10 * time.Second})
	}()

	// Before the first period nothing happens.
	for !h.clock.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	assert.Empty(t, h.rt.reopenCalls())
	h.clock.Step(10 * time.Second)
	require.Eventually(t, func() bool { return len(h.rt.reopenCalls()) == 1 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, []string{id}, h.rt.reopenCalls())
	assert.Len(t, logFiles(t, path), 2)

	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return")
	}
}

// statusCalls counts the ContainerStatus calls the fake runtime logged.
func (h *rotateHarness) statusCalls() int {
	n := 0
	for _, c := range h.fake.Calls() {
		if strings.HasPrefix(c, "ContainerStatus ") {
			n++
		}
	}
	return n
}

// TestRotator_CachesLogPaths checks that a rotator asks ContainerStatus
// once per running container, not once per container and pass, and still
// rotates a remembered log that grew.
func TestRotator_CachesLogPaths(t *testing.T) {
	h := newRotateHarness(t)
	cfg := Config{MaxSize: 100, MaxFiles: 2}
	a, aPath := h.container(t, "a", 10, true, true)
	b, _ := h.container(t, "b", 10, true, true)
	h.container(t, "exited", 10, true, false)
	r := h.newRotator()

	require.NoError(t, r.Pass(context.Background(), cfg))
	assert.Equal(t, 2, h.statusCalls(), "one status per running container")
	assert.Equal(t, map[string]string{a: aPath, b: r.paths[b]}, r.paths)

	for range 3 {
		require.NoError(t, r.Pass(context.Background(), cfg))
	}
	assert.Equal(t, 2, h.statusCalls(), "remembered paths are not asked again")

	// The remembered path is still checked every pass.
	require.NoError(t, os.WriteFile(aPath, []byte(strings.Repeat("x", 101)), 0o640))
	require.NoError(t, r.Pass(context.Background(), cfg))
	assert.Equal(t, []string{a}, h.rt.reopenCalls())
	assert.Len(t, logFiles(t, aPath), 2)
	assert.Equal(t, 2, h.statusCalls())
}

// TestRotator_DropsGoneContainers checks that the entry of a container
// that stopped or was removed is dropped at the next pass, and that a
// container that replaces it (the kubelet's restart: a new container in the
// same sandbox, with the next attempt's log) gets its own path.
func TestRotator_DropsGoneContainers(t *testing.T) {
	ctx := context.Background()
	h := newRotateHarness(t)
	cfg := Config{MaxSize: 100, MaxFiles: 2}
	old, oldPath := h.container(t, "app", 10, true, true)
	other, _ := h.container(t, "other", 10, true, true)
	r := h.newRotator()
	require.NoError(t, r.Pass(ctx, cfg))
	require.Contains(t, r.paths, old)

	// Stopped: dropped although the container still exists.
	require.NoError(t, h.fake.Runtime.StopContainer(ctx, old, 0))
	require.NoError(t, r.Pass(ctx, cfg))
	assert.NotContains(t, r.paths, old)
	assert.Contains(t, r.paths, other)

	// Removed, and recreated in the same sandbox under the same name: its
	// log is 1.log beside the old 0.log.
	st, err := h.fake.Runtime.ContainerStatus(ctx, old, false)
	require.NoError(t, err)
	require.NoError(t, h.fake.Runtime.RemoveContainer(ctx, old))
	sbID := sandboxOfFake(t, h, "app")
	id, err := h.fake.Runtime.CreateContainer(ctx, sbID, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "app", Attempt: 1},
		Image:    st.GetStatus().GetImage(),
		Labels:   map[string]string{managedKey: managedValue, containerNameKey: "app"},
	}, nil)
	require.NoError(t, err)
	require.NotEqual(t, old, id)
	require.NoError(t, h.fake.Runtime.StartContainer(ctx, id))
	newPath := filepath.Join(filepath.Dir(oldPath), "1.log")
	require.NoError(t, os.WriteFile(newPath, []byte(strings.Repeat("y", 101)), 0o640))
	require.NoError(t, os.WriteFile(oldPath, []byte(strings.Repeat("x", 101)), 0o640))
	h.rt.mu.Lock()
	h.rt.paths[id] = newPath
	h.rt.mu.Unlock()

	require.NoError(t, r.Pass(ctx, cfg))
	assert.Equal(t, map[string]string{id: newPath, other: r.paths[other]}, r.paths)
	assert.Equal(t, []string{id}, h.rt.reopenCalls(), "the new container's log is rotated")
	assert.Equal(t, []string{"0.log", "1.log", "1.log.20260102-030405.123456"}, logFiles(t, oldPath),
		"the old container's log is not touched")
}

// TestRotator_StatusNotRunning checks that a container that stopped
// between the list and its status is not remembered, so a later pass does
// not rotate a log on the strength of a stale answer.
func TestRotator_StatusNotRunning(t *testing.T) {
	ctx := context.Background()
	h := newRotateHarness(t)
	id, _ := h.container(t, "app", 1000, true, true)
	r := h.newRotator()
	h.rt.stopBeforeStatus = id
	require.NoError(t, r.Pass(ctx, Config{MaxSize: 100, MaxFiles: 2}))
	assert.Empty(t, r.paths)
	assert.Empty(t, h.rt.reopenCalls())
}

// sandboxOfFake returns the ID of the fake runtime's sandbox named name.
func sandboxOfFake(t *testing.T, h *rotateHarness, name string) string {
	t.Helper()
	sbs, err := h.fake.Runtime.ListPodSandbox(context.Background(), nil)
	require.NoError(t, err)
	for _, sb := range sbs {
		if sb.GetMetadata().GetName() == name {
			return sb.GetId()
		}
	}
	t.Fatalf("no sandbox %s", name)
	return ""
}

// BenchmarkLogRotation_Pass compares one rotation pass over 100 running
// containers whose logs are below the limit: without the path cache (every
// pass asks ContainerStatus of each, as before) and with it (a rotator's
// later passes). The fake runtime's calls cost far less than containerd's
// gRPC round trips, so the real saving is larger than this shows.
func BenchmarkLogRotation_Pass(b *testing.B) {
	h := newRotateHarness(b)
	for i := range 100 {
		h.container(b, "c"+strconv.Itoa(i), 100, true, true)
	}
	cfg := Config{MaxSize: 10 << 20, MaxFiles: 5}
	ctx := context.Background()
	b.Run("uncached", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			h.fake.Reset()
			if err := h.pass(ctx, cfg); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		r := h.newRotator()
		if err := r.Pass(ctx, cfg); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			h.fake.Reset()
			if err := r.Pass(ctx, cfg); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestRotator_RunRefusesABadPolicy checks that a policy Validate refuses
// turns rotation off: Run returns at once, without a pass.
func TestRotator_RunRefusesABadPolicy(t *testing.T) {
	h := newRotateHarness(t)
	h.container(t, "app", 50, true, true)
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.newRotator().Run(context.Background(), Config{MaxSize: 10, MaxFiles: 1, Period: time.Second})
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run went on with a policy Validate refuses")
	}
	assert.False(t, h.clock.HasWaiters(), "no ticker")
	assert.Empty(t, h.rt.reopenCalls())
}
