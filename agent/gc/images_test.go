package gc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/cri/critest"
)

// The real fakes satisfy the narrow interfaces.
var (
	_ ImageService    = (*critest.FakeImages)(nil)
	_ ContainerLister = (*critest.FakeRuntime)(nil)
	_ ImageService    = (*fakeImages)(nil)
	_ ContainerLister = (*fakeImages)(nil)
)

// fakeImages is a runtime with images of given sizes on a filesystem of
// capacity bytes, other bytes of which are not images; removing an image
// frees its size.
type fakeImages struct {
	mu         sync.Mutex
	images     []*runtimeapi.Image
	containers []*runtimeapi.Container
	capacity   uint64
	other      uint64
	removed    []string
	removeErr  map[string]error
	// mounts are the mounts ContainerStatus reports, by container ID.
	mounts map[string][]*runtimeapi.Mount
	// statusCalls counts ContainerStatus calls.
	statusCalls int
}

func (f *fakeImages) ListImages(context.Context, *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.images), nil
}

func (f *fakeImages) RemoveImage(_ context.Context, spec *runtimeapi.ImageSpec) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.removeErr[spec.Image]; err != nil {
		return err
	}
	i := slices.IndexFunc(f.images, func(img *runtimeapi.Image) bool { return img.Id == spec.Image })
	if i < 0 {
		return fmt.Errorf("image %s not found", spec.Image)
	}
	f.removed = append(f.removed, f.images[i].RepoTags[0])
	f.images = slices.Delete(f.images, i, i+1)
	return nil
}

func (f *fakeImages) ImageFsInfo(context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	return &runtimeapi.ImageFsInfoResponse{ImageFilesystems: []*runtimeapi.FilesystemUsage{{
		FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: "/fake/images"},
	}}}, nil
}

func (f *fakeImages) ListContainers(context.Context, *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.containers), nil
}

func (f *fakeImages) ContainerStatus(_ context.Context, id string, _ bool) (*runtimeapi.ContainerStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.statusCalls++
	if !slices.ContainsFunc(f.containers, func(c *runtimeapi.Container) bool { return c.Id == id }) {
		return nil, status.Errorf(codes.NotFound, "container %q: not found", id)
	}
	return &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{Id: id, Mounts: f.mounts[id]}}, nil
}

// mountAsVolume makes a container of another image mount image name as an
// image volume (CRI Mount.Image, by ID as the agent passes it).
func (f *fakeImages) mountAsVolume(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := "iv-" + name
	f.containers = append(f.containers, &runtimeapi.Container{Id: id, ImageRef: "sha256:app", State: runtimeapi.ContainerState_CONTAINER_RUNNING})
	if f.mounts == nil {
		f.mounts = map[string][]*runtimeapi.Mount{}
	}
	f.mounts[id] = []*runtimeapi.Mount{{ContainerPath: "/data", Image: &runtimeapi.ImageSpec{Image: "sha256:" + name}, Readonly: true}}
}

func (f *fakeImages) statfs(path string) (FsStats, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if path != "/fake/images" {
		return FsStats{}, fmt.Errorf("unexpected path %s", path)
	}
	used := f.other
	for _, img := range f.images {
		used += img.Size
	}
	return FsStats{Capacity: f.capacity, Available: f.capacity - used}, nil
}

// setOther sets the bytes used by other data.
func (f *fakeImages) setOther(n uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.other = n
}

// removedNames is a copy of removed.
func (f *fakeImages) removedNames() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.removed)
}

// add puts an image named name of size bytes on the runtime.
func (f *fakeImages) add(name string, size uint64, pinned bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.images = append(f.images, &runtimeapi.Image{Id: "sha256:" + name, RepoTags: []string{name}, Size: size, Pinned: pinned})
}

// use makes a container (of any agent, in any state) use image name.
func (f *fakeImages) use(name string, byTag bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := &runtimeapi.Container{Id: "c-" + name, ImageRef: "sha256:" + name, State: runtimeapi.ContainerState_CONTAINER_EXITED}
	if byTag {
		c.ImageRef = ""
		c.Image = &runtimeapi.ImageSpec{Image: name}
	}
	f.containers = append(f.containers, c)
}

// unuse removes the containers using image name.
func (f *fakeImages) unuse(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.containers = slices.DeleteFunc(f.containers, func(c *runtimeapi.Container) bool { return c.Id == "c-"+name })
}

var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type gcFixture struct {
	rt     *fakeImages
	clock  *clocktesting.FakeClock
	m      *ImageManager
	reg    *prometheus.Registry
	events []string
}

func newFixture(t *testing.T, p ImagePolicy) *gcFixture {
	t.Helper()
	fx := &gcFixture{rt: &fakeImages{capacity: 1000}, clock: clocktesting.NewFakeClock(start), reg: prometheus.NewRegistry()}
	var err error
	fx.m, err = NewImageManager(ImageManagerConfig{
		Images: fx.rt, Containers: fx.rt, StatFS: fx.rt.statfs, Policy: p, Clock: fx.clock, Registerer: fx.reg,
		Event: func(typ, reason, msg string) { fx.events = append(fx.events, typ+" "+reason+": "+msg) },
	})
	require.NoError(t, err)
	return fx
}

func (fx *gcFixture) collected(reason string) float64 {
	var out dto.Metric
	if err := fx.m.collected.WithLabelValues(reason).Write(&out); err != nil {
		panic(err)
	}
	return out.GetCounter().GetValue()
}

func TestImagePolicy_Validate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mutate  func(*ImagePolicy)
		wantErr string
	}{
		{name: "kubelet defaults", mutate: func(*ImagePolicy) {}},
		{name: "high 100 turns space GC off", mutate: func(p *ImagePolicy) { p.HighThresholdPercent, p.LowThresholdPercent = 100, 100 }},
		{name: "high above 100", mutate: func(p *ImagePolicy) { p.HighThresholdPercent = 101 }, wantErr: "between 0 and 100"},
		{name: "low not below high", mutate: func(p *ImagePolicy) { p.LowThresholdPercent = 85 }, wantErr: "below the high threshold"},
		{name: "negative min age", mutate: func(p *ImagePolicy) { p.MinAge = -time.Second }, wantErr: "must not be negative"},
		{name: "max age not above min age", mutate: func(p *ImagePolicy) { p.MaxAge = time.Minute }, wantErr: "above the minimum age"},
		{name: "max age", mutate: func(p *ImagePolicy) { p.MaxAge = time.Hour }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := DefaultImagePolicy()
			tc.mutate(&p)
			err := p.Validate()
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.wantErr)
		})
	}
}

// Below the high threshold nothing goes, however old and unused.
func TestImageManager_BelowHighThresholdKeepsEverything(t *testing.T) {
	fx := newFixture(t, DefaultImagePolicy())
	fx.rt.add("a", 400, false)
	fx.rt.add("b", 440, false) // 84 % used
	require.NoError(t, fx.m.Detect(context.Background()))
	fx.clock.Step(time.Hour)
	res, err := fx.m.Collect(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 84, res.UsagePercent)
	assert.Empty(t, fx.rt.removed)
}

// At the high threshold, unused images go least recently used first
// (never used first, ties by first detection) until what they free brings
// the usage to the low threshold; in-use, pinned and young images stay.
func TestImageManager_FreesLRUDownToLowThreshold(t *testing.T) {
	fx := newFixture(t, DefaultImagePolicy())
	fx.m.cfg.Keep = []string{"sandbox"}
	ctx := context.Background()
	fx.rt.other = 150
	fx.rt.add("used-long-ago", 100, false)
	fx.rt.add("used-recently", 100, false)
	fx.rt.add("never-used", 100, false)
	fx.rt.add("pause", 100, true)
	fx.rt.add("sandbox", 100, false) // Keep: the runtime's sandbox image, not pinned
	fx.rt.add("running", 100, false)
	fx.rt.use("used-long-ago", false)
	fx.rt.use("used-recently", true) // by tag
	fx.rt.use("running", false)
	require.NoError(t, fx.m.Detect(ctx)) // t0: all detected, three used
	fx.clock.Step(10 * time.Minute)
	fx.rt.unuse("used-long-ago")
	require.NoError(t, fx.m.Detect(ctx)) // t0+10m: used-recently and running used again
	fx.rt.unuse("used-recently")
	fx.clock.Step(10 * time.Minute)
	fx.rt.add("just-pulled", 100, false) // detected now: younger than MinAge
	// 150 + 7×100 = 850 of 1000: 85 %, at the high threshold. The low
	// threshold, 80 %, needs 50 bytes freed: one image.
	res, err := fx.m.Collect(ctx)
	require.NoError(t, err)
	assert.Equal(t, 85, res.UsagePercent)
	assert.Equal(t, []string{"never-used"}, fx.rt.removed)

	// More pressure: 950 of 1000 needs 150 bytes freed: two images, in
	// LRU order; just-pulled is still too young, the rest in use or pinned.
	fx.rt.other = 350
	fx.clock.Step(time.Minute)
	res, err = fx.m.Collect(ctx)
	require.NoError(t, err)
	assert.Equal(t, 95, res.UsagePercent)
	assert.Equal(t, []string{"used-long-ago", "used-recently"}, res.Removed)
	assert.Equal(t, []string{"never-used", "used-long-ago", "used-recently"}, fx.rt.removed)
}

func TestImageManager_LRUOrderAndShortfall(t *testing.T) {
	fx := newFixture(t, DefaultImagePolicy())
	ctx := context.Background()
	fx.rt.other = 500
	for _, n := range []string{"a", "b", "c", "d"} {
		fx.rt.add(n, 100, false)
	}
	fx.rt.add("busy", 100, false)
	fx.rt.use("busy", false)
	// Uses at different times: c at t0, a at t0+1m, d never, b at t0+2m.
	fx.rt.use("c", false)
	require.NoError(t, fx.m.Detect(ctx))
	fx.rt.unuse("c")
	fx.clock.Step(time.Minute)
	fx.rt.use("a", false)
	require.NoError(t, fx.m.Detect(ctx))
	fx.rt.unuse("a")
	fx.clock.Step(time.Minute)
	fx.rt.use("b", false)
	require.NoError(t, fx.m.Detect(ctx))
	fx.rt.unuse("b")
	fx.clock.Step(5 * time.Minute)

	// 1000 of 1000 used; the low threshold, 80 %, needs 200 freed.
	res, err := fx.m.Collect(ctx)
	require.NoError(t, err)
	assert.Equal(t, 100, res.UsagePercent)
	assert.Equal(t, []string{"d", "c"}, fx.rt.removed)
	assert.Equal(t, uint64(200), res.Freed)
	assert.Equal(t, 2.0, fx.collected(ReasonSpace))

	// Full again (other data grew, a is used again): 200 needed, only b
	// (100) may go.
	fx.rt.other = 700
	fx.rt.use("a", false)
	res, err = fx.m.Collect(ctx)
	require.ErrorContains(t, err, "attempted to free 200 bytes, but only found 100 bytes eligible to free")
	assert.Equal(t, []string{"d", "c", "b"}, fx.rt.removed)
	assert.Equal(t, []string{"b"}, res.Removed)
	require.NotEmpty(t, fx.events)
	assert.Contains(t, fx.events[len(fx.events)-1], "Warning FreeDiskSpaceFailed")
	assert.Equal(t, 2, fx.m.Status().Runs)
	assert.Equal(t, 1, fx.m.Status().ConsecutiveFailures)
	assert.Equal(t, 3.0, fx.collected(ReasonSpace))
}

// Images younger than MinAge are never removed for space; once they are
// old enough they are.
func TestImageManager_MinimumAge(t *testing.T) {
	fx := newFixture(t, DefaultImagePolicy())
	ctx := context.Background()
	fx.rt.other = 800
	fx.rt.add("new", 150, false) // 95 %
	_, err := fx.m.Collect(ctx)
	require.ErrorContains(t, err, "only found 0 bytes")
	assert.Empty(t, fx.rt.removed)
	fx.clock.Step(DefaultImageMinimumGCAge - time.Second)
	_, err = fx.m.Collect(ctx)
	require.Error(t, err)
	assert.Empty(t, fx.rt.removed)
	fx.clock.Step(time.Second)
	_, err = fx.m.Collect(ctx)
	require.NoError(t, err) // 150 freed of 150 needed
	assert.Equal(t, []string{"new"}, fx.rt.removed)
}

// An agent restart forgets the records: images in use by containers count
// as used now, the others as detected at the start, so none is removed
// before MinAge after the start.
func TestImageManager_RestartDetectsAtStart(t *testing.T) {
	fx := newFixture(t, DefaultImagePolicy())
	ctx := context.Background()
	fx.rt.other = 700
	fx.rt.add("old-unused", 100, false)
	fx.rt.add("old-used", 100, false)
	fx.rt.use("old-used", false)
	fx.clock.Step(24 * time.Hour)        // the images are a day old
	require.NoError(t, fx.m.Detect(ctx)) // Run's first step
	_, err := fx.m.Collect(ctx)          // 90 %: nothing old enough yet
	require.ErrorContains(t, err, "found 0 bytes")
	fx.clock.Step(DefaultImageMinimumGCAge)
	_, err = fx.m.Collect(ctx)
	require.NoError(t, err) // 100 freed of 100 needed
	assert.Equal(t, []string{"old-unused"}, fx.rt.removed)
}

// MaxAge removes images unused for longer whatever the usage; a used
// image's clock starts at its last use, a never-used one's at detection.
func TestImageManager_MaximumAge(t *testing.T) {
	p := DefaultImagePolicy()
	p.MaxAge = time.Hour
	fx := newFixture(t, p)
	ctx := context.Background()
	fx.rt.add("stale", 10, false)
	fx.rt.add("used-late", 10, false)
	fx.rt.add("busy", 10, false)
	fx.rt.add("pause", 10, true)
	fx.rt.use("busy", false)
	fx.rt.use("used-late", false)
	require.NoError(t, fx.m.Detect(ctx))
	fx.clock.Step(30 * time.Minute)
	require.NoError(t, fx.m.Detect(ctx)) // used-late last used at +30m
	fx.rt.unuse("used-late")
	fx.clock.Step(30 * time.Minute) // +60m: nothing idle for more than an hour
	res, err := fx.m.Collect(ctx)
	require.NoError(t, err)
	assert.Empty(t, res.Removed)
	fx.clock.Step(time.Second) // stale idle 1h0m1s
	res, err = fx.m.Collect(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"stale"}, res.Removed)
	assert.Equal(t, 1.0, fx.collected(ReasonAge))
	assert.Equal(t, 0.0, fx.collected(ReasonSpace))
	fx.clock.Step(30 * time.Minute)
	res, err = fx.m.Collect(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"used-late"}, res.Removed)
	assert.Equal(t, []string{"stale", "used-late"}, fx.rt.removed)
	require.Len(t, fx.events, 2)
	assert.Contains(t, fx.events[0], "Normal ImageGarbageCollected: Removed image stale (10 bytes, last used never since the agent started): unused for 1h0m1s, above the maximum age 1h0m0s")
}

// A removal that fails is reported and the next candidate is tried.
func TestImageManager_RemoveFailureContinues(t *testing.T) {
	fx := newFixture(t, DefaultImagePolicy())
	ctx := context.Background()
	fx.rt.other = 700
	fx.rt.add("a", 100, false)
	fx.rt.add("b", 100, false)
	fx.rt.removeErr = map[string]error{"sha256:a": errors.New("image is being used")}
	require.NoError(t, fx.m.Detect(ctx))
	fx.clock.Step(time.Hour)
	_, err := fx.m.Collect(ctx)
	require.ErrorContains(t, err, "remove image a (sha256:a): image is being used")
	assert.Equal(t, []string{"b"}, fx.rt.removed)
}

// Trigger never blocks and coalesces.
func TestImageManager_Trigger(t *testing.T) {
	fx := newFixture(t, DefaultImagePolicy())
	for range 3 {
		fx.m.Trigger()
	}
	assert.Len(t, fx.m.trigger, 1)
}

// A filesystem without capacity is reported, as the kubelet's
// InvalidDiskCapacity.
func TestImageManager_InvalidCapacity(t *testing.T) {
	fx := newFixture(t, DefaultImagePolicy())
	fx.rt.capacity = 0
	_, err := fx.m.Collect(context.Background())
	require.ErrorContains(t, err, "invalid capacity 0")
	require.Len(t, fx.events, 1)
	assert.True(t, strings.HasPrefix(fx.events[0], "Warning InvalidDiskCapacity"))
}

// Run collects at once when a pressure check finds the image filesystem
// at or above the high threshold, without waiting for the 5-minute period;
// after a collection that freed nothing it waits for the next period.
func TestImageManager_RunCollectsUnderPressure(t *testing.T) {
	fx := newFixture(t, DefaultImagePolicy())
	fx.rt.other = 700
	fx.rt.add("a", 100, false) // 80 %: below the high threshold
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); fx.m.Run(ctx, ImageGCPeriod) }()
	defer func() { cancel(); <-done }()
	step := func(d time.Duration) {
		require.Eventually(t, fx.clock.HasWaiters, 5*time.Second, time.Millisecond)
		fx.clock.Step(d)
	}
	step(DefaultImageMinimumGCAge) // a is old enough; the checks found 80 %
	assert.Empty(t, fx.rt.removed)
	fx.rt.add("b", 100, false) // 90 %
	step(DefaultPressureCheckPeriod)
	require.Eventually(t, func() bool { return fx.m.Status().Runs == 1 }, 5*time.Second, time.Millisecond)
	// b was detected at that collection: too young; a went.
	assert.Equal(t, []string{"a"}, fx.rt.removedNames())
	fx.rt.use("b", false)
	fx.rt.setOther(850) // 95 %, nothing removable
	step(DefaultPressureCheckPeriod)
	require.Eventually(t, func() bool { return fx.m.Status().Runs == 2 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, 1, fx.m.Status().ConsecutiveFailures)
	step(DefaultPressureCheckPeriod) // held: no collection
	step(DefaultPressureCheckPeriod)
	time.Sleep(50 * time.Millisecond)
	assert.Equal(t, 2, fx.m.Status().Runs, "pressure checks wait for the next period after a fruitless run")
}

// An image a container mounts as an image volume (its status's
// Mount.Image) is in use, as the kubelet's handleImageVolumes counts it,
// and stays when space must be freed; once no container mounts it, it
// goes. No container status is asked for when the list alone shows every
// image in use.
func TestImageManager_ImageVolumeIsInUse(t *testing.T) {
	fx := newFixture(t, DefaultImagePolicy())
	ctx := context.Background()
	fx.rt.add("app", 100, false)
	fx.rt.use("app", false)
	fx.rt.mountAsVolume("app")
	require.NoError(t, fx.m.Detect(ctx))
	assert.Zero(t, fx.rt.statusCalls, "every image in use by the list: no status asked for")

	fx.rt.add("data", 400, false)
	fx.rt.add("old", 100, false)
	fx.rt.mountAsVolume("data")
	fx.rt.other = 250 // 850 of 1000: at the high threshold
	require.NoError(t, fx.m.Detect(ctx))
	fx.clock.Step(time.Hour)
	res, err := fx.m.Collect(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"old"}, res.Removed, "data is mounted by a live container")
	assert.Equal(t, []string{"old"}, fx.rt.removedNames())

	// The pod is gone: data is no longer mounted and goes.
	fx.rt.mu.Lock()
	fx.rt.containers = slices.DeleteFunc(fx.rt.containers, func(c *runtimeapi.Container) bool { return c.Id == "iv-data" })
	fx.rt.mu.Unlock()
	fx.rt.other = 450
	fx.clock.Step(time.Hour)
	res, err = fx.m.Collect(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"data"}, res.Removed)
}
