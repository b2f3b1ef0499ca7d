package e2e

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrv1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Garbage collection on a real containerd (issue #21): a private containerd
// whose root is a small loop-mounted ext4 filesystem, so that a few pulls
// move its usage by whole percents and the thresholds are reached in
// seconds.

// gcFillImages is how many unused images the test pulls, gcFillSize the
// size of each one's single layer (random bytes: its blob and its
// unpacked snapshot each take that much).
const (
	gcFillImages = 5
	gcFillSize   = 8 << 20
)

// loopFS makes an ext4 filesystem of sizeMB in a file, with no blocks
// reserved for root, and mounts it on a new short directory under /tmp.
// Cleanup (registered first: it runs after the runtime on it stopped)
// unmounts it and removes the file.
func loopFS(t *testing.T, sizeMB int) string {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "mkg-")
	require.NoError(t, err)
	img := dir + ".img"
	f, err := os.Create(img)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(int64(sizeMB)<<20))
	require.NoError(t, f.Close())
	t.Cleanup(func() {
		if err := exec.Command("umount", dir).Run(); err != nil {
			_ = exec.Command("umount", "-l", dir).Run()
		}
		_ = os.Remove(dir)
		_ = os.Remove(img)
	})
	for _, args := range [][]string{{"mkfs.ext4", "-q", "-F", "-m", "0", img}, {"mount", "-o", "loop", img, dir}} {
		out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
		require.NoError(t, err, "%s: %s", strings.Join(args, " "), out)
	}
	return dir
}

// fsUsage is the filesystem's usage as image GC computes it: percent in
// use (100 - available×100/capacity, statfs), capacity and available bytes.
func fsUsage(t *testing.T, path string) (usage int, capacity, available uint64) {
	t.Helper()
	var st syscall.Statfs_t
	require.NoError(t, syscall.Statfs(path, &st))
	bs := uint64(st.Bsize)
	capacity, available = st.Blocks*bs, st.Bavail*bs
	return 100 - int(available*100/capacity), capacity, available
}

// pushFillImage pushes an image with one layer of size random bytes (the
// same bytes for the same k, so the registry keeps one copy across runs)
// and returns its reference. It is never run, only pulled.
func pushFillImage(t *testing.T, k, size int) string {
	t.Helper()
	data := make([]byte, size)
	rng := rand.New(rand.NewPCG(uint64(k), 21))
	for i := 0; i+8 <= len(data); i += 8 {
		v := rng.Uint64()
		for j := range 8 {
			data[i+j] = byte(v >> (8 * j))
		}
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	require.NoError(t, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "fill.bin", Mode: 0o644, Size: int64(size), ModTime: time.Unix(0, 0)}))
	_, err := tw.Write(data)
	require.NoError(t, err)
	require.NoError(t, tw.Close())
	layerBytes := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layerBytes)), nil })
	require.NoError(t, err)
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.ConfigFile(img, &ggcrv1.ConfigFile{
		Architecture: runtime.GOARCH, OS: "linux", Created: ggcrv1.Time{Time: time.Unix(0, 0)},
		Config: ggcrv1.Config{Cmd: []string{"/fill.bin"}},
		RootFS: ggcrv1.RootFS{Type: "layers"},
	})
	require.NoError(t, err)
	img, err = mutate.AppendLayers(img, layer)
	require.NoError(t, err)
	ref := fmt.Sprintf("%s/minikubelet/gc-fill:%d", suite.registry, k)
	r, err := name.ParseReference(ref, name.Insecure)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, remote.Write(r, img, remote.WithContext(ctx)), "push %s", ref)
	return ref
}

// imageTags are the tags of the runtime's images.
func imageTags(t *testing.T, r *privateRuntime) (tags []string, sizes map[string]uint64) {
	t.Helper()
	ctx, cancel := shortCtx()
	defer cancel()
	imgs, err := r.rt.ListImages(ctx, nil)
	require.NoError(t, err)
	sizes = map[string]uint64{}
	for _, img := range imgs {
		for _, tag := range img.RepoTags {
			tags = append(tags, tag)
			sizes[tag] = img.Size
		}
	}
	slices.Sort(tags)
	return tags, sizes
}

// countFill counts the fill images among tags.
func countFill(tags []string) int {
	n := 0
	for _, tag := range tags {
		if strings.Contains(tag, "/minikubelet/gc-fill:") {
			n++
		}
	}
	return n
}

// TestGC_ImagesAndDeadContainers fills the runtime's image filesystem past
// the high threshold with unused images while a pod runs and checks that
// serve removes unused images, and only as many as bring the usage below
// the low threshold, keeping the running pod's image and the sandbox
// image; the metric and log lines name them. Then dead containers and the
// dead sandbox of a pod of this daemon that no source wants, with their
// log files and the pod's log directory, are removed within a few
// container GC periods, while the live pod keeps everything.
func TestGC_ImagesAndDeadContainers(t *testing.T) {
	mnt := loopFS(t, 160)
	// containerd's DIR is a directory on the filesystem, not its root:
	// stop-containerd.sh removes DIR.
	ctrDir := filepath.Join(mnt, "c")
	require.NoError(t, os.Mkdir(ctrDir, 0o711))
	r := newPrivateRuntimeIn(t, ctrDir)
	var fill []string
	for k := range gcFillImages {
		fill = append(fill, pushFillImage(t, k, gcFillSize))
	}
	busybox := suite.registry + "/minikubelet/busybox:1.36"

	// Generation 1: the pod that uses busybox; image GC far away.
	d := r.newDaemon(t, []string{"gc-user", "gc-gone"}, "--image-gc-period=1h")
	d.start(t)
	zero := int64(0)
	ctx0, cancel := shortCtx()
	_, err := d.api().CreatePod(ctx0, &v1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "gc-user", Namespace: "default"},
		Spec: v1.PodSpec{
			TerminationGracePeriodSeconds: &zero,
			Containers:                    []v1.Container{{Name: "app", Image: busybox, Command: []string{"sleep", "3600"}}},
		},
	})
	cancel()
	require.NoError(t, err)
	user := d.waitPod(t, "gc-user", "Running", 2*time.Minute, isRunning)
	for _, ref := range fill {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		_, err := r.rt.PullImage(ctx, &runtimeapi.ImageSpec{Image: ref}, nil, nil)
		cancel()
		require.NoError(t, err, "pull %s", ref)
	}
	d.stop(t)

	// Thresholds from the usage now: the high one just below it; the low
	// one such that the bytes to free are 1.5 fill images by the sizes the
	// runtime reports (which image GC counts): two images must go, not
	// all five.
	tags, sizes := imageTags(t, r)
	require.Equal(t, gcFillImages, countFill(tags), "images: %v", tags)
	require.Contains(t, tags, busybox)
	s := sizes[fill[0]]
	usage, capacity, available := fsUsage(t, mnt)
	high := usage - 1
	low := 100 - int((available+3*s/2)*100/capacity) - 1
	t.Logf("image filesystem %d%% used (%d of %d bytes available), fill image %d bytes: thresholds high %d%%, low %d%%", usage, available, capacity, s, high, low)
	require.Greater(t, low, 0)
	require.Less(t, low, high)

	// Generation 2: image GC every second with these thresholds, a
	// one-second minimum age (the images count as detected at its start),
	// container GC every second.
	d.extra = []string{
		"--image-gc-high-threshold=" + strconv.Itoa(high), "--image-gc-low-threshold=" + strconv.Itoa(low),
		"--image-minimum-gc-age=1s", "--image-gc-period=1s", "--container-gc-period=1s",
	}
	mark, _ := d.out.snapshot()
	start := time.Now()
	d.start(t)
	waitFor(t, "unused images removed below the low threshold", time.Minute, func() string {
		if u, _, _ := fsUsage(t, mnt); u >= low {
			return fmt.Sprintf("usage %d%%", u)
		}
		return ""
	})
	t.Logf("below the low threshold %s after the daemon's start", time.Since(start).Round(time.Millisecond))
	// A few more periods: nothing else goes.
	time.Sleep(3 * time.Second)
	tags, _ = imageTags(t, r)
	usageAfter, _, _ := fsUsage(t, mnt)
	removed := gcFillImages - countFill(tags)
	t.Logf("after GC: usage %d%%, %d fill images removed, images left: %v", usageAfter, removed, tags)
	require.Equal(t, 2, removed, "1.5 images' worth to free: two unused images go, the rest stay; images: %v", tags)
	require.Less(t, usageAfter, low)
	require.Contains(t, tags, busybox, "the running pod's image stays")
	require.True(t, slices.ContainsFunc(tags, func(s string) bool { return strings.Contains(s, "/minikubelet/pause:") }), "the sandbox image stays: %v", tags)
	out, _ := d.out.snapshot()
	out = out[len(mark):]
	require.Equal(t, 2, strings.Count(out, "Removed an unused image"), "log lines:\n%s", tail(out, 4000))
	require.Regexp(t, `reason="?space`, out)
	code, metrics, err := d.get("/metrics")
	require.NoError(t, err)
	require.Equal(t, 200, code)
	v, ok := metricValue(metrics, "kubelet_image_garbage_collected_total", `reason="space"`)
	require.True(t, ok, "kubelet_image_garbage_collected_total missing")
	require.Equal(t, 2.0, v)
	p, err := d.api().GetPod(context.Background(), "default", "gc-user")
	require.NoError(t, err)
	require.True(t, isRunning(p) && p.UID == user.UID, "the pod runs on: %s", podSummary(p))

	// Container GC: a pod of this daemon (its labels) that no source wants,
	// left with two dead instances of a container and a stopped sandbox.
	gone := leaveDeadPod(t, r, d, busybox)
	stopped := time.Now()
	waitFor(t, "the gone pod's containers, sandbox and logs removed", 30*time.Second, func() string {
		ctx, cancel := shortCtx()
		defer cancel()
		sel := map[string]string{"io.kubernetes.pod.uid": gone.uid}
		cs, err := r.rt.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: sel})
		if err != nil {
			return err.Error()
		}
		sbs, err := r.rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: sel})
		if err != nil {
			return err.Error()
		}
		_, statErr := os.Stat(gone.logDir)
		if len(cs) > 0 || len(sbs) > 0 || statErr == nil {
			return fmt.Sprintf("%d containers, %d sandboxes, log dir: %v", len(cs), len(sbs), statErr)
		}
		return ""
	})
	t.Logf("the gone pod's 2 dead containers, sandbox and log directory removed %s after its sandbox stopped", time.Since(stopped).Round(time.Millisecond))
	// Each removal is logged once the runtime (or the filesystem) has
	// done it, a moment after the runtime's list shows it.
	waitFor(t, "the removals logged", 10*time.Second, func() string {
		out, _ := d.out.snapshot()
		if n := strings.Count(out, "Removed a dead container of a gone pod"); n != 2 || !strings.Contains(out, "Removed the log directory of a gone pod") {
			return fmt.Sprintf("%d dead containers' removals logged, log directory's: %v; log:\n%s", n, strings.Contains(out, "Removed the log directory of a gone pod"), tail(out, 4000))
		}
		return ""
	})
	// The live pod keeps its container and its log.
	require.Len(t, podContainersOn(t, r, "gc-user"), 1)
	logs, err := filepath.Glob(filepath.Join(d.logDir, "default_gc-user_*", "app", "0.log"))
	require.NoError(t, err)
	require.Len(t, logs, 1, "the live pod's log stays")

	// Generation 3: no removal for space (high threshold 100), a maximum
	// age of 3 s: the unused images go for age once unused that long
	// (counted from this start, where they are detected), the used and
	// the sandbox image stay.
	d.stop(t)
	d.extra = []string{"--image-gc-high-threshold=100", "--image-maximum-gc-age=3s", "--image-minimum-gc-age=1s", "--image-gc-period=1s"}
	start = time.Now()
	d.start(t)
	waitFor(t, "unused images removed for age", 30*time.Second, func() string {
		tags, _ := imageTags(t, r)
		if n := countFill(tags); n > 0 {
			return fmt.Sprintf("%d fill images left: %v", n, tags)
		}
		return ""
	})
	idle := time.Since(start)
	t.Logf("unused images removed for age %s after the daemon's start", idle.Round(time.Millisecond))
	require.GreaterOrEqual(t, idle, 3*time.Second, "not before the maximum age")
	tags, _ = imageTags(t, r)
	require.Contains(t, tags, busybox)
	require.True(t, slices.ContainsFunc(tags, func(s string) bool { return strings.Contains(s, "/minikubelet/pause:") }), "the sandbox image stays: %v", tags)
	// The counter counts an image once the runtime's RemoveImage has
	// returned, a moment after the image left the runtime's list.
	waitFor(t, "three images counted as removed for age", 10*time.Second, func() string {
		_, metrics, err := d.get("/metrics")
		if err != nil {
			return err.Error()
		}
		if v, _ := metricValue(metrics, "kubelet_image_garbage_collected_total", `reason="age"`); v != 3 {
			return fmt.Sprintf(`kubelet_image_garbage_collected_total{reason="age"} %v`, v)
		}
		return ""
	})
}

// deadPod is what leaveDeadPod made.
type deadPod struct {
	uid, logDir string
}

// leaveDeadPod creates, through the CRI, what a pod of daemon d that no
// source wants any more leaves behind (a teardown cut short, an older
// version): a stopped sandbox (host network: no CNI needed) and two
// instances of a container that wrote a log line each, stopped with it.
// They run until the sandbox stops, so container GC leaves them alone
// while the test looks at their logs.
func leaveDeadPod(t *testing.T, r *privateRuntime, d *daemon, image string) deadPod {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The daemon does not look meanwhile (SIGSTOP): its relist tears down a
	// running sandbox of its own whose pod has no worker (agent/relist.go),
	// and this pod is to be found dead, as a teardown's remains would be,
	// for container GC. The deferred SIGCONT covers a failure too.
	require.NoError(t, d.cmd.Process.Signal(syscall.SIGSTOP))
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			require.NoError(t, d.cmd.Process.Signal(syscall.SIGCONT))
		}
	}
	defer resume()
	uid := fmt.Sprintf("gc-gone-%d", time.Now().UnixNano())
	labels := map[string]string{
		"io.kubernetes.pod.name":      "gc-gone",
		"io.kubernetes.pod.namespace": "default",
		"io.kubernetes.pod.uid":       uid,
		"io.minikubelet.managed-by":   "minikubelet",
	}
	logDir := filepath.Join(d.logDir, "default_gc-gone_"+uid)
	sbCfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "gc-gone", Namespace: "default", Uid: uid},
		Labels:       labels,
		LogDirectory: logDir,
		Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE},
		}},
	}
	sb, err := r.rt.RunPodSandbox(ctx, sbCfg, "")
	require.NoError(t, err)
	for restart := range 2 {
		cl := map[string]string{"io.kubernetes.container.name": "app"}
		for k, v := range labels {
			cl[k] = v
		}
		cfg := &runtimeapi.ContainerConfig{
			Metadata:    &runtimeapi.ContainerMetadata{Name: "app", Attempt: uint32(restart)},
			Image:       &runtimeapi.ImageSpec{Image: image},
			Command:     []string{"sh", "-c", "echo gone-pod-output; exec sleep 3600"},
			Labels:      cl,
			Annotations: map[string]string{"io.kubernetes.container.restartCount": strconv.Itoa(restart)},
			LogPath:     filepath.Join("app", strconv.Itoa(restart)+".log"),
		}
		// Started at once, and made again should the start fail.
		for try := 0; ; try++ {
			id, err := r.rt.CreateContainer(ctx, sb, cfg, sbCfg)
			require.NoError(t, err)
			if err = r.rt.StartContainer(ctx, id); err == nil {
				break
			}
			require.Less(t, try, 3, "start container: %v", err)
			_ = r.rt.RemoveContainer(ctx, id)
		}
		logFile := filepath.Join(logDir, "app", strconv.Itoa(restart)+".log")
		waitFor(t, "the gone pod's container wrote its log", 20*time.Second, func() string {
			if b, err := os.ReadFile(logFile); err != nil || !strings.Contains(string(b), "gone-pod-output") {
				return fmt.Sprintf("%s: %q %v", logFile, b, err)
			}
			return ""
		})
	}
	require.NoError(t, r.rt.StopPodSandbox(ctx, sb))
	resume()
	return deadPod{uid: uid, logDir: logDir}
}

// podContainersOn lists the containers of pod name on runtime r.
func podContainersOn(t *testing.T, r *privateRuntime, pod string) []*runtimeapi.Container {
	t.Helper()
	ctx, cancel := shortCtx()
	defer cancel()
	cs, err := r.rt.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: map[string]string{"io.kubernetes.pod.name": pod}})
	require.NoError(t, err)
	return cs
}
