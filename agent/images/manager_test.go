package images

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/agent/reason"
)

// fakeImages is an image service holding the images present; a pull of
// an image in fail fails with its error, any other pull makes it present.
type fakeImages struct {
	mu      sync.Mutex
	present map[string]bool
	fail    map[string]error
	calls   []string
}

func (f *fakeImages) ImageStatus(_ context.Context, image *runtimeapi.ImageSpec, _ bool) (*runtimeapi.ImageStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "ImageStatus "+image.Image)
	if !f.present[image.Image] {
		return &runtimeapi.ImageStatusResponse{}, nil
	}
	return &runtimeapi.ImageStatusResponse{Image: &runtimeapi.Image{Id: "sha256:" + image.Image}}, nil
}

func (f *fakeImages) PullImage(_ context.Context, image *runtimeapi.ImageSpec, _ *runtimeapi.AuthConfig, _ *runtimeapi.PodSandboxConfig) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "PullImage "+image.Image)
	if err := f.fail[image.Image]; err != nil {
		return "", err
	}
	if f.present == nil {
		f.present = map[string]bool{}
	}
	f.present[image.Image] = true
	return "sha256:" + image.Image, nil
}

// recorder is a Report that keeps what it was told.
type recorder struct {
	mu     sync.Mutex
	events []string
	steps  []string
}

func (r *recorder) report(on string) Report {
	ev := func(typ, why, format string, args ...any) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.events = append(r.events, on+" "+typ+" "+why+": "+fmt.Sprintf(format, args...))
	}
	return Report{
		Event:    ev,
		PodEvent: func(typ, why, format string, args ...any) { r.report("pod").Event(typ, why, format, args...) },
		Step: func(d time.Duration, detail string) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.steps = append(r.steps, fmt.Sprintf("%s %s", d, detail))
		},
		Logger: slog.New(slog.DiscardHandler),
	}
}

// testBackoff is a pull back-off of fixed length by key.
type testBackoff struct {
	mu    sync.Mutex
	until map[string]time.Time
}

func (b *testBackoff) in(key string, now time.Time) (bool, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if u, ok := b.until[key]; ok && now.Before(u) {
		return true, u.Sub(now)
	}
	return false, 0
}

func (b *testBackoff) next(key string, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.until[key] = now.Add(10 * time.Second)
}

func newTestManager(t *testing.T, imgs *fakeImages) (*Manager, *testBackoff) {
	b := &testBackoff{until: map[string]time.Time{}}
	return &Manager{
		Images:      imgs,
		Clock:       clocktesting.NewFakePassiveClock(time.Unix(1000, 0)),
		Secret:      func(*v1.Pod, string) (*v1.Secret, error) { return nil, errors.New("not found") },
		RootDir:     t.TempDir(),
		InBackoff:   b.in,
		BackoffNext: b.next,
		BackoffKey:  func(pod *v1.Pod, image string) string { return string(pod.UID) + "_" + image },
	}, b
}

func TestManager_EnsureImage(t *testing.T) {
	pod := &v1.Pod{}
	pod.UID = "uid-1"
	for name, tc := range map[string]struct {
		policy      v1.PullPolicy
		present     bool
		fail        error
		wantRef     string
		wantImage   bool
		wantReason  error
		wantCalls   []string
		wantEvents  []string
		wantSteps   int
		wantMessage string
	}{
		"present, IfNotPresent": {policy: v1.PullIfNotPresent, present: true, wantRef: "sha256:app", wantImage: true,
			wantCalls: []string{"ImageStatus app"}, wantEvents: []string{`c Normal Pulled: Container image "app" already present on machine`}, wantSteps: 1},
		"absent, IfNotPresent": {policy: v1.PullIfNotPresent, wantRef: "sha256:app",
			wantCalls:  []string{"ImageStatus app", "PullImage app"},
			wantEvents: []string{`c Normal Pulling: Pulling image "app"`, `c Normal Pulled: Successfully pulled image "app" in 0s`}, wantSteps: 1},
		"present, Always": {policy: v1.PullAlways, present: true, wantRef: "sha256:app",
			wantCalls:  []string{"PullImage app"},
			wantEvents: []string{`c Normal Pulling: Pulling image "app"`, `c Normal Pulled: Successfully pulled image "app" in 0s`}, wantSteps: 1},
		"absent, Never": {policy: v1.PullNever, wantReason: ErrImageNeverPull,
			wantCalls:   []string{"ImageStatus app"},
			wantEvents:  []string{`c Warning ErrImageNeverPull: Container image "app" is not present with pull policy of Never`},
			wantMessage: `Container image "app" is not present with pull policy of Never`},
		"pull fails": {policy: v1.PullIfNotPresent, fail: status.Error(codes.NotFound, "app: not found"), wantReason: ErrImagePull,
			wantCalls:   []string{"ImageStatus app", "PullImage app"},
			wantEvents:  []string{`c Normal Pulling: Pulling image "app"`, `c Warning Failed: Failed to pull image "app": app: not found`},
			wantMessage: "app: not found"},
	} {
		t.Run(name, func(t *testing.T) {
			imgs := &fakeImages{present: map[string]bool{"app": tc.present}, fail: map[string]error{"app": tc.fail}}
			m, _ := newTestManager(t, imgs)
			rec := &recorder{}
			ref, img, err := m.EnsureImage(context.Background(), pod, rec.report("c"), "app", tc.policy, nil)
			assert.Equal(t, tc.wantRef, ref)
			assert.Equal(t, tc.wantImage, img != nil)
			if tc.wantReason != nil {
				assert.ErrorIs(t, err, tc.wantReason)
				_, msg := reason.Split(err)
				assert.Equal(t, tc.wantMessage, msg)
			} else {
				assert.NoError(t, err)
			}
			assert.Equal(t, tc.wantCalls, imgs.calls)
			assert.Equal(t, tc.wantEvents, rec.events)
			assert.Len(t, rec.steps, tc.wantSteps)
		})
	}
}

// A pull cancelled with its context is no failure: no Failed event, no
// ErrImagePull (so no back-off).
func TestManager_EnsureImageCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	imgs := &fakeImages{fail: map[string]error{"app": context.Canceled}}
	m, _ := newTestManager(t, imgs)
	rec := &recorder{}
	_, _, err := m.EnsureImage(ctx, &v1.Pod{}, rec.report("c"), "app", v1.PullAlways, nil)
	require.Error(t, err)
	assert.NotErrorIs(t, err, ErrImagePull)
	assert.Equal(t, []string{`c Normal Pulling: Pulling image "app"`}, rec.events)
}

// Missing pull secrets are a warning on the pod; the pull goes on.
func TestManager_MissingPullSecret(t *testing.T) {
	imgs := &fakeImages{}
	m, _ := newTestManager(t, imgs)
	pod := &v1.Pod{Spec: v1.PodSpec{ImagePullSecrets: []v1.LocalObjectReference{{Name: "a"}, {Name: "b"}}}}
	rec := &recorder{}
	_, _, err := m.EnsureImage(context.Background(), pod, rec.report("c"), "app", v1.PullAlways, nil)
	require.NoError(t, err)
	assert.Contains(t, rec.events, "pod Warning FailedToRetrieveImagePullSecret: Unable to retrieve some image pull secrets (a, b); attempting to pull the image may not succeed.")
}

// PullAll pulls each image once, skips one in back-off, and starts the
// back-off of a failed pull.
func TestManager_PullAll(t *testing.T) {
	imgs := &fakeImages{fail: map[string]error{"bad": errors.New("boom")}}
	m, b := newTestManager(t, imgs)
	pod := &v1.Pod{Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "init", Image: "app"}},
		Containers:     []v1.Container{{Name: "a", Image: "app"}, {Name: "b", Image: "bad"}, {Name: "c", Image: "held"}},
	}}
	pod.UID = "uid-1"
	b.next("uid-1_held", m.Clock.Now())
	rec := &recorder{}
	out, wg := m.PullAll(context.Background(), pod, rec.report, &runtimeapi.PodSandboxConfig{})
	wg.Wait()
	require.Len(t, out, 2)
	assert.Equal(t, "sha256:app", out["app"].Ref)
	assert.ErrorIs(t, out["bad"].Err, ErrImagePull)
	in, _ := b.in("uid-1_bad", m.Clock.Now())
	assert.True(t, in, "a failed pull starts its back-off")
	assert.NotContains(t, imgs.calls, "ImageStatus held")
}

const volumeImage = "reg.local/data:1"

func volumePod() *v1.Pod {
	pod := &v1.Pod{Spec: v1.PodSpec{
		Volumes:    []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: volumeImage}}}, {Name: "plain"}},
		Containers: []v1.Container{{Name: "reader", VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/data"}, {Name: "plain", MountPath: "/p"}}}},
	}}
	pod.UID = "uid-1"
	return pod
}

// PullVolumes pulls an image volume's image with the pod's events; a
// failure starts the back-off, and the next round reports ImagePullBackOff
// without a pull and says when to retry. ContainerVolumes turns the pulls
// into the container's CRI images, or the error that keeps it waiting.
func TestManager_PullVolumes(t *testing.T) {
	imgs := &fakeImages{}
	m, _ := newTestManager(t, imgs)
	pod := volumePod()
	rec := &recorder{}
	var retry []time.Duration
	pulls := m.PullVolumes(context.Background(), pod, rec.report("pod"), nil, func(d time.Duration) { retry = append(retry, d) })
	require.Len(t, pulls, 1)
	require.NoError(t, pulls["data"].Err)
	vols, err := ContainerVolumes(pod, &pod.Spec.Containers[0], pulls, rec.report("reader").Event)
	require.NoError(t, err)
	assert.Equal(t, "sha256:"+volumeImage, vols["data"].GetImage())
	assert.Empty(t, retry)

	imgs = &fakeImages{fail: map[string]error{volumeImage: errors.New("boom")}}
	m, _ = newTestManager(t, imgs)
	pulls = m.PullVolumes(context.Background(), pod, rec.report("pod"), nil, func(d time.Duration) { retry = append(retry, d) })
	assert.ErrorIs(t, pulls["data"].Err, ErrImagePull)
	pulls = m.PullVolumes(context.Background(), pod, rec.report("pod"), nil, func(d time.Duration) { retry = append(retry, d) })
	assert.ErrorIs(t, pulls["data"].Err, ErrImagePullBackOff)
	assert.Equal(t, []time.Duration{10 * time.Second}, retry)
	assert.Equal(t, 1, countPrefix(imgs.calls, "PullImage"), "no pull within the back-off")

	rec = &recorder{}
	_, err = ContainerVolumes(pod, &pod.Spec.Containers[0], pulls, rec.report("reader").Event)
	assert.ErrorIs(t, err, ErrImagePullBackOff)
	assert.Equal(t, []string{`reader Warning Failed: Error: Back-off pulling image "reg.local/data:1"`}, rec.events)
}

func countPrefix(list []string, prefix string) int {
	n := 0
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			n++
		}
	}
	return n
}

// versioner answers CRI Version and counts the questions.
type versioner struct {
	name, version string
	asked         int
}

func (v *versioner) Version(context.Context, string) (*runtimeapi.VersionResponse, error) {
	v.asked++
	return &runtimeapi.VersionResponse{RuntimeName: v.name, RuntimeVersion: v.version}, nil
}

// The runtime is asked its version once, and only for a pod with image
// volumes.
func TestManager_RefuseVolumes(t *testing.T) {
	rt := &versioner{name: "containerd", version: "v1.6.38"}
	var cache RuntimeVersion
	m, _ := newTestManager(t, &fakeImages{})
	m.RuntimeVersion = func(ctx context.Context) (string, string, error) { return cache.Get(ctx, rt) }

	msg, err := m.RefuseVolumes(context.Background(), &v1.Pod{})
	require.NoError(t, err)
	assert.Empty(t, msg)
	assert.Zero(t, rt.asked, "no image volume: the runtime is not asked")

	for range 2 {
		msg, err = m.RefuseVolumes(context.Background(), volumePod())
		require.NoError(t, err)
		assert.Equal(t, VolumeRefusal([]string{"spec.volumes[0].image"}, "containerd", "v1.6.38"), msg)
	}
	assert.Equal(t, 1, rt.asked, "asked once")
}
