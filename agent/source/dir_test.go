// Over 600 lines: the directory source's cases (debounce, rescan, bad files,
// removal and recreation) share one harness of a directory and a consumer.

package source

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	testclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/agent/manifest"
)

// manifestYAML is a valid one-container pod; env is the value of its one
// variable, so tests can edit nothing but an env value.
func manifestYAML(name, env string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  containers:
  - name: app
    image: registry.example/app:1.0
    env:
    - name: GREETING
      value: %q
`, name, env)
}

// dirHarness runs a DirSource over a temp directory on a fake clock.
type dirHarness struct {
	dir   string
	clock *testclock.FakeClock
	src   *DirSource
	out   chan SourceUpdate
	// scans receives one value after every scan Run makes.
	scans chan struct{}
}

func newDirHarness(t *testing.T, dir string) *dirHarness {
	t.Helper()
	h := &dirHarness{
		dir:   dir,
		clock: testclock.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)),
		out:   make(chan SourceUpdate),
		scans: make(chan struct{}, 100),
	}
	h.src = NewDirSource(dir, "node-1", nil, h.clock)
	h.src.scanned = func() {
		select {
		case h.scans <- struct{}{}:
		default:
		}
	}
	return h
}

// start runs the source until the test ends.
func (h *dirHarness) start(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		h.src.Run(ctx, h.out)
	}()
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
}

// write writes a file in the directory the way editors and config tools
// do (a dotfile renamed into place), so one notification sees it whole.
func (h *dirHarness) write(t *testing.T, name, content string) {
	t.Helper()
	tmp := filepath.Join(h.dir, ".tmp-"+name)
	require.NoError(t, os.WriteFile(tmp, []byte(content), 0o644))
	require.NoError(t, os.Rename(tmp, filepath.Join(h.dir, name)))
}

// first returns the update Run sends at start, without touching the clock.
func (h *dirHarness) first(t *testing.T) SourceUpdate {
	t.Helper()
	select {
	case u := <-h.out:
		return u
	case <-time.After(5 * time.Second):
		t.Fatal("no initial update")
		return SourceUpdate{}
	}
}

// until returns the first update for which ok holds, stepping the fake
// clock by step while none arrives (the debounce window, or the rescan
// period). Updates in between are allowed: a change of several files may be
// seen half done. It fails after 5 s of real time or once maxFake of fake
// time has passed: a notification must be seen well before the rescan
// would have.
func (h *dirHarness) until(t *testing.T, step, maxFake time.Duration, ok func(SourceUpdate) bool) SourceUpdate {
	t.Helper()
	start := h.clock.Now()
	deadline := time.Now().Add(5 * time.Second)
	var last SourceUpdate
	for {
		select {
		case u := <-h.out:
			if ok(u) {
				return u
			}
			last = u
			continue
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) || h.clock.Since(start) >= maxFake {
			t.Fatalf("no expected update after %s of fake time; last: pods %v errors %v", h.clock.Since(start), podNames(last), errorPaths(last))
		}
		h.clock.Step(step)
	}
}

// withPods holds when the update's pods are exactly names, in order.
func withPods(names ...string) func(SourceUpdate) bool {
	return func(u SourceUpdate) bool { return slices.Equal(podNames(u), names) }
}

// waitScan waits for the next scan to complete.
func (h *dirHarness) waitScan(t *testing.T) {
	t.Helper()
	select {
	case <-h.scans:
	case <-time.After(5 * time.Second):
		t.Fatal("no scan")
	}
}

// podNames returns namespace/name of each pod, in order.
func podNames(u SourceUpdate) []string {
	var names []string
	for _, p := range u.Pods {
		names = append(names, p.Namespace+"/"+p.Name)
	}
	return names
}

// errorPaths returns the base name of each error's file, in order.
func errorPaths(u SourceUpdate) []string {
	var paths []string
	for _, e := range u.Errors {
		paths = append(paths, filepath.Base(e.Path))
	}
	return paths
}

func TestIsManifestFileName(t *testing.T) {
	for name, want := range map[string]bool{
		"pod.yaml": true, "pod.yml": true, "pod.json": true, "POD.YAML": true,
		".pod.yaml": false, "pod.yaml~": false, "pod.yaml.swp": false, ".pod.yaml.swp": false,
		"pod.yaml.swx": false, "pod.yaml.bak": false, "pod.yaml.tmp": false, "pod.txt": false,
		"pod": false, "pod.yaml.orig": false, "4913": false,
	} {
		assert.Equal(t, want, isManifestFileName(name), name)
	}
}

// TestDirSource_Scan checks which files are read, the annotations, and that
// a broken file never stops the others.
func TestDirSource_Scan(t *testing.T) {
	h := newDirHarness(t, t.TempDir())
	h.write(t, "a.yaml", manifestYAML("a", "x"))
	h.write(t, "b.yml", manifestYAML("b", "x"))
	h.write(t, "c.json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"c","namespace":"other"},"spec":{"containers":[{"name":"app","image":"registry.example/app:1.0"}]}}`)
	h.write(t, "broken.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: broken\nspec:\n  containerz: []\n")
	h.write(t, "empty.yaml", "")
	// None of these is read: each holds a pod that would show up.
	for i, name := range []string{".hidden.yaml", "d.yaml~", "d.yaml.swp", ".d.yaml.swx", "d.yaml.bak", "d.yaml.tmp", "d.txt", "d"} {
		h.write(t, name, manifestYAML(fmt.Sprintf("ignored-%d", i), "x"))
	}
	require.NoError(t, os.Mkdir(filepath.Join(h.dir, "sub.yaml"), 0o755))
	require.NoError(t, os.Symlink(filepath.Join(h.dir, "a.yaml"), filepath.Join(h.dir, "link.yaml")))

	u := h.src.Scan()
	assert.Equal(t, SourceFile, u.Source)
	// link.yaml is a.yaml again: the same pod, refused as a duplicate.
	assert.Equal(t, []string{"default/a", "default/b", "other/c"}, podNames(u))
	assert.Equal(t, []string{"broken.yaml", "empty.yaml", "link.yaml"}, errorPaths(u))
	assert.ErrorIs(t, u.Errors[0].Err, manifest.ErrInvalidManifest)
	assert.Contains(t, u.Errors[0].Err.Error(), "spec.containerz: unknown field")
	assert.Contains(t, u.Errors[2].Err.Error(), "also defined in "+filepath.Join(h.dir, "a.yaml"))

	for _, p := range u.Pods {
		assert.Equal(t, SourceFile, p.Annotations[AnnotationConfigSource])
		assert.NotEmpty(t, p.UID)
		assert.Equal(t, "node-1", p.Spec.NodeName)
		assert.Equal(t, v1.RestartPolicyAlways, p.Spec.RestartPolicy, "defaulted")
	}
	assert.Equal(t, filepath.Join(h.dir, "a.yaml"), u.Pods[0].Annotations[AnnotationSourceFile])
	assert.Equal(t, filepath.Join(h.dir, "c.json"), u.Pods[2].Annotations[AnnotationSourceFile])
}

// TestDirSource_DuplicateAcrossFiles checks that the later file (by name)
// defining the same namespace/name is the error, naming both files.
func TestDirSource_DuplicateAcrossFiles(t *testing.T) {
	h := newDirHarness(t, t.TempDir())
	h.write(t, "10-web.yaml", manifestYAML("web", "first"))
	h.write(t, "20-web.yaml", manifestYAML("web", "second")+"---\n"+manifestYAML("other", "x"))

	u := h.src.Scan()
	require.Equal(t, []string{"default/web"}, podNames(u))
	assert.Equal(t, "first", u.Pods[0].Spec.Containers[0].Env[0].Value)
	require.Equal(t, []string{"20-web.yaml"}, errorPaths(u))
	msg := u.Errors[0].Err.Error()
	assert.Contains(t, msg, filepath.Join(h.dir, "20-web.yaml"))
	assert.Contains(t, msg, `Duplicate value: "default/web": also defined in `+filepath.Join(h.dir, "10-web.yaml"))
	assert.ErrorIs(t, u.Errors[0].Err, manifest.ErrInvalidManifest)
}

// TestDirSource_UIDFollowsContent checks that editing only an env value
// gives the pod a new UID (so the agent recreates it), and that re-saving
// identical content, or rescanning, does not.
func TestDirSource_UIDFollowsContent(t *testing.T) {
	h := newDirHarness(t, t.TempDir())
	h.write(t, "web.yaml", manifestYAML("web", "hello"))
	uid := func() string {
		t.Helper()
		u := h.src.Scan()
		require.Empty(t, u.Errors)
		require.Len(t, u.Pods, 1)
		return string(u.Pods[0].UID)
	}
	first := uid()
	assert.Equal(t, first, uid(), "rescan")
	h.write(t, "web.yaml", manifestYAML("web", "hello"))
	assert.Equal(t, first, uid(), "identical content re-saved")

	h.write(t, "web.yaml", manifestYAML("web", "bonjour"))
	edited := uid()
	assert.NotEqual(t, first, edited, "env value edited")

	h.write(t, "web.yaml", manifestYAML("web", "hello"))
	assert.Equal(t, first, uid(), "edited back")

	// The same content in another file is another pod.
	require.NoError(t, os.Rename(filepath.Join(h.dir, "web.yaml"), filepath.Join(h.dir, "web2.yaml")))
	assert.NotEqual(t, first, uid(), "renamed file")
}

// TestDirSource_NotificationsDriveUpdates checks the fsnotify path: with the
// rescan an hour away, adding, editing, breaking and removing files each
// yield a new complete set after the debounce window.
func TestDirSource_NotificationsDriveUpdates(t *testing.T) {
	h := newDirHarness(t, t.TempDir())
	h.src.rescanPeriod = time.Hour
	h.write(t, "a.yaml", manifestYAML("a", "x"))
	h.start(t)

	u := h.first(t)
	require.Equal(t, []string{"default/a"}, podNames(u))
	uidA := u.Pods[0].UID

	// Far less than the hour of the rescan. Not 10 s: stepping 100 ms of
	// fake time every 5 ms of real time left a notification half a second
	// of real time, which a loaded machine's stall can take; now until's
	// 5 s of real time bound the wait, and 1000 steps are 100 s of fake
	// time, still far below the hour.
	const within = 30 * time.Minute
	h.write(t, "b.yaml", manifestYAML("b", "x"))
	u = h.until(t, dirDebounce, within, withPods("default/a", "default/b"))
	assert.Equal(t, uidA, u.Pods[0].UID, "an untouched file keeps its pod")
	uidB := u.Pods[1].UID

	// Editor leftovers change nothing; the edit itself does.
	h.write(t, ".b.yaml.swp", "junk")
	h.write(t, "b.yaml~", manifestYAML("b", "x"))
	h.write(t, "b.yaml", manifestYAML("b", "y"))
	u = h.until(t, dirDebounce, within, func(u SourceUpdate) bool { return len(u.Pods) == 2 && u.Pods[1].UID != uidB })
	uidB = u.Pods[1].UID
	assert.Equal(t, []string{"default/a", "default/b"}, podNames(u))
	assert.Equal(t, "y", u.Pods[1].Spec.Containers[0].Env[0].Value, "edited pod, new UID")
	assert.Equal(t, uidA, u.Pods[0].UID)

	h.write(t, "c.yaml", "not: [a pod")
	u = h.until(t, dirDebounce, within, func(u SourceUpdate) bool { return len(u.Errors) > 0 })
	assert.Equal(t, []string{"default/a", "default/b"}, podNames(u), "a broken file stops nothing")
	assert.Equal(t, []string{"c.yaml"}, errorPaths(u))

	require.NoError(t, os.Remove(filepath.Join(h.dir, "c.yaml")))
	require.NoError(t, os.Remove(filepath.Join(h.dir, "a.yaml")))
	// A removed file removes its pod (and its error).
	u = h.until(t, dirDebounce, within, func(u SourceUpdate) bool { return withPods("default/b")(u) && len(u.Errors) == 0 })
	assert.Equal(t, uidB, u.Pods[0].UID)
}

// rescanWithin bounds the fake time until takes for a change that, with
// notifications off, only a rescan can find. It is no test of the period
// (which is fake time anyway): with two periods, 1 s steps every 5 ms of
// real time gave a scan 100 ms of real time, and a scan a loaded machine
// stalled 600 ms failed the test. Now until's 5 s of real time bound it.
const rescanWithin = time.Hour

// TestDirSource_RescanSafetyNet checks, without notifications, that the
// periodic rescan finds changes, and that an unchanged set is not sent again.
func TestDirSource_RescanSafetyNet(t *testing.T) {
	h := newDirHarness(t, t.TempDir())
	h.src.watch = false
	h.start(t)

	u := h.first(t)
	assert.Empty(t, u.Pods, "an empty directory is an empty set, sent at start")
	assert.Empty(t, u.Errors)

	h.write(t, "a.yaml", manifestYAML("a", "x"))
	u = h.until(t, time.Second, rescanWithin, withPods("default/a"))
	assert.Empty(t, u.Errors)

	// Re-saving identical content: a scan, but nothing to send.
	for len(h.scans) > 0 {
		<-h.scans
	}
	h.write(t, "a.yaml", manifestYAML("a", "x"))
	h.clock.Step(dirRescanPeriod)
	h.waitScan(t)
	select {
	case u := <-h.out:
		t.Fatalf("unchanged set sent again: %v", podNames(u))
	case <-time.After(50 * time.Millisecond):
	}
}

// TestDirSource_NewestWins checks that an unread set is replaced by a newer
// one rather than queued: Run never blocks on its consumer.
func TestDirSource_NewestWins(t *testing.T) {
	h := newDirHarness(t, t.TempDir())
	h.src.watch = false
	h.start(t)
	h.waitScan(t) // the empty set is pending, unread

	h.write(t, "a.yaml", manifestYAML("a", "x"))
	h.clock.Step(dirRescanPeriod)
	h.waitScan(t)
	h.write(t, "b.yaml", manifestYAML("b", "x"))
	h.clock.Step(dirRescanPeriod)
	h.waitScan(t)

	u := h.first(t)
	assert.Equal(t, []string{"default/a", "default/b"}, podNames(u))
	select {
	case u := <-h.out:
		t.Fatalf("stale set sent: %v", podNames(u))
	case <-time.After(50 * time.Millisecond):
	}
}

// TestDirSource_MissingDirectory checks that a missing directory is created
// (0755), and one that cannot be is reported, not fatal, and retried.
func TestDirSource_MissingDirectory(t *testing.T) {
	t.Run("created", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "etc", "manifests")
		h := newDirHarness(t, dir)
		// The rescan an hour away, so that a notification, not a rescan,
		// finds a.yaml within the (stall-proof) 30 min below.
		h.src.rescanPeriod = time.Hour
		h.start(t)
		u := h.first(t)
		assert.Empty(t, u.Pods)
		assert.Empty(t, u.Errors)
		fi, err := os.Stat(dir)
		require.NoError(t, err)
		assert.True(t, fi.IsDir())
		assert.Equal(t, os.FileMode(0o755), fi.Mode().Perm()&^umask())

		// Notifications work in the directory created.
		h.write(t, "a.yaml", manifestYAML("a", "x"))
		h.until(t, dirDebounce, 30*time.Minute, withPods("default/a"))
	})
	t.Run("reported", func(t *testing.T) {
		parent := t.TempDir()
		dir := filepath.Join(parent, "manifests")
		require.NoError(t, os.WriteFile(dir, []byte("a file, not a directory"), 0o644))
		h := newDirHarness(t, dir)
		h.src.watch = false
		h.start(t)
		u := h.first(t)
		assert.Empty(t, u.Pods)
		require.Equal(t, []string{"manifests"}, errorPaths(u))
		assert.Equal(t, dir, u.Errors[0].Path)

		// Fixed by hand: the next rescan picks it up.
		require.NoError(t, os.Remove(dir))
		require.NoError(t, os.Mkdir(dir, 0o755))
		h.write(t, "a.yaml", manifestYAML("a", "x"))
		u = h.until(t, time.Second, rescanWithin, withPods("default/a"))
		assert.Empty(t, u.Errors)

		// Unreadable again: reported, but the pods of the last good scan
		// stay (a transient failure must not tear them down).
		require.NoError(t, os.RemoveAll(dir))
		require.NoError(t, os.WriteFile(dir, []byte("a file again"), 0o644))
		u = h.until(t, time.Second, rescanWithin, func(u SourceUpdate) bool { return len(u.Errors) > 0 })
		assert.Equal(t, []string{"default/a"}, podNames(u))
		assert.Equal(t, []string{"manifests"}, errorPaths(u))
	})
}

// umask returns the process umask's bits that MkdirAll's 0755 may lose.
func umask() os.FileMode {
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("umask-probe-%d", time.Now().UnixNano()))
	if err := os.Mkdir(dir, 0o777); err != nil {
		return 0
	}
	defer os.Remove(dir)
	fi, err := os.Stat(dir)
	if err != nil {
		return 0
	}
	return 0o777 &^ fi.Mode().Perm()
}

// A rescan decodes only the files whose content changed: an unchanged
// file gives the very objects of the last scan; an edited one is decoded
// again; a removed one leaves the cache; a bad file's error is kept too.
func TestDirSource_RescanDecodesOnlyChangedFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	write("a.yaml", manifestYAML("a", "1"))
	write("b.yaml", manifestYAML("b", "1"))
	write("bad.yaml", "kind: Pod\napiVersion: v1\nmetadata: {name: bad}\nspec: {containers: []}\n")
	src := NewDirSource(dir, "node-1", nil, nil)

	u1 := src.Scan()
	require.Equal(t, []string{"default/a", "default/b"}, podNames(u1))
	require.Len(t, u1.Errors, 1)
	write("b.yaml", manifestYAML("b", "2"))
	u2 := src.Scan()
	require.Equal(t, []string{"default/a", "default/b"}, podNames(u2))
	assert.Same(t, u1.Pods[0], u2.Pods[0], "the unchanged file is not decoded again")
	assert.NotSame(t, u1.Pods[1], u2.Pods[1], "the edited file is")
	assert.Equal(t, "2", u2.Pods[1].Spec.Containers[0].Env[0].Value)
	assert.Equal(t, SourceFile, u2.Pods[0].Annotations[AnnotationConfigSource])
	assert.Equal(t, filepath.Join(dir, "a.yaml"), u2.Pods[0].Annotations[AnnotationSourceFile])
	require.Len(t, u2.Errors, 1)
	assert.Equal(t, u1.Errors[0].Err.Error(), u2.Errors[0].Err.Error())

	require.NoError(t, os.Remove(filepath.Join(dir, "a.yaml")))
	u3 := src.Scan()
	require.Equal(t, []string{"default/b"}, podNames(u3))
	assert.NotContains(t, src.files, filepath.Join(dir, "a.yaml"), "a removed file leaves the cache")
	assert.Len(t, src.files, 2)

	// The fingerprint follows the content, not the objects' identity.
	_, f1 := src.scanFiles(false)
	src.files = nil
	_, f2 := src.scanFiles(false)
	assert.Equal(t, fingerprint(f1, nil), fingerprint(f2, nil))
	write("b.yaml", manifestYAML("b", "3"))
	_, f3 := src.scanFiles(false)
	assert.NotEqual(t, fingerprint(f1, nil), fingerprint(f3, nil))
}

// BenchmarkDirSource_Rescan: a rescan of 100 unchanged pod files, against
// the same rescan with the cache emptied first (every file decoded and
// validated again, as before the cache), in the same run.
func BenchmarkDirSource_Rescan(b *testing.B) {
	dir := b.TempDir()
	for i := range 100 {
		require.NoError(b, os.WriteFile(filepath.Join(dir, fmt.Sprintf("p%03d.yaml", i)), []byte(manifestYAML(fmt.Sprintf("p%03d", i), "x")), 0o644))
	}
	for _, cached := range []bool{false, true} {
		b.Run(fmt.Sprintf("cached=%v", cached), func(b *testing.B) {
			src := NewDirSource(dir, "node-1", nil, nil)
			src.scanFiles(false)
			b.ReportAllocs()
			for b.Loop() {
				if !cached {
					src.files = nil
				}
				u, files := src.scanFiles(false)
				if len(u.Pods) != 100 {
					b.Fatalf("%d pods", len(u.Pods))
				}
				_ = fingerprint(files, u.Errors)
			}
		})
	}
}

// TestDirSource_NewFileReadBeforeTheWindow: a file renamed into place
// after a quiet spell is delivered without the fake clock moving at all:
// the debounce window adds nothing to a new static pod's start (the
// kubelet reads it at the notification too). An edit of an existing file
// still waits for the window.
func TestDirSource_NewFileReadBeforeTheWindow(t *testing.T) {
	h := newDirHarness(t, t.TempDir())
	h.src.rescanPeriod = time.Hour
	h.write(t, "a.yaml", manifestYAML("a", "x"))
	h.start(t)
	require.Equal(t, []string{"default/a"}, podNames(h.first(t)))

	start := h.clock.Now()
	h.write(t, "b.yaml", manifestYAML("b", "x"))
	select {
	case u := <-h.out:
		require.Equal(t, []string{"default/a", "default/b"}, podNames(u))
	case <-time.After(5 * time.Second):
		t.Fatal("a new file was not read before the debounce window ended")
	}
	require.Equal(t, start, h.clock.Now(), "no fake time passed")

	// Let the window close (its scan finds nothing new), then edit in
	// place: that waits for the window.
	drainScans(h)
	h.clock.Step(dirDebounce)
	h.waitScan(t)
	require.NoError(t, os.WriteFile(filepath.Join(h.dir, "a.yaml"), []byte(manifestYAML("a", "y")), 0o644))
	select {
	case u := <-h.out:
		t.Fatalf("an in-place edit was read before its window: %v", podNames(u))
	case <-time.After(300 * time.Millisecond):
	}
	u := h.until(t, dirDebounce, 30*time.Minute, func(u SourceUpdate) bool {
		return len(u.Pods) == 2 && u.Pods[0].Spec.Containers[0].Env[0].Value == "y"
	})
	require.Equal(t, []string{"default/a", "default/b"}, podNames(u))
}

// TestDirSource_LeadingScanSkipsUnwrittenFiles: the scan at a Create reads
// no file that is still empty. A new empty file is left out (no error for
// a file about to be written; the window's scan reports it if it stays
// empty); a known file truncated to be rewritten keeps its pods instead
// of losing them for the instant between truncate and write.
func TestDirSource_LeadingScanSkipsUnwrittenFiles(t *testing.T) {
	dir := t.TempDir()
	src := NewDirSource(dir, "node-1", nil, nil)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.yaml"), []byte(manifestYAML("a", "x")), 0o644))
	u, _ := src.scanFiles(false)
	require.Equal(t, []string{"default/a"}, podNames(u))

	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.yaml"), nil, 0o644)) // truncated
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b.yaml"), nil, 0o644)) // created
	u, _ = src.scanFiles(true)
	require.Equal(t, []string{"default/a"}, podNames(u), "the truncated file keeps its pods, the new empty one is not read yet")
	require.Empty(t, u.Errors)

	// The window's scan reads both as they are.
	u, _ = src.scanFiles(false)
	require.Empty(t, podNames(u))
	require.Equal(t, []string{"a.yaml", "b.yaml"}, errorPaths(u))
}

// drainScans empties the harness's scan signals.
func drainScans(h *dirHarness) {
	for {
		select {
		case <-h.scans:
		default:
			return
		}
	}
}

// A file removed and created again before the consumer read the set
// without it (the node e2e's "file is removed and recreated": os.Remove,
// then the same content written at once) is reported as Recreated, so the
// pod is stopped and started again as on the kubelet; a removal the
// consumer saw, or a file rewritten in place, is not.
func TestDirSource_RemovedAndRecreatedFile(t *testing.T) {
	h := newDirHarness(t, t.TempDir())
	h.src.rescanPeriod = time.Hour
	path := filepath.Join(h.dir, "a.yaml")
	h.write(t, "a.yaml", manifestYAML("a", "x"))
	h.start(t)
	u := h.first(t)
	require.Equal(t, []string{"default/a"}, podNames(u))
	uid := u.Pods[0].UID
	assert.Empty(t, u.Recreated)

	require.NoError(t, os.Remove(path))
	require.NoError(t, os.WriteFile(path, []byte(manifestYAML("a", "x")), 0o644))
	u = h.until(t, dirDebounce, 30*time.Minute, func(u SourceUpdate) bool { return len(u.Recreated) > 0 })
	assert.Equal(t, []string{"default/a"}, podNames(u))
	assert.Equal(t, uid, u.Pods[0].UID, "the same file, the same pod")
	assert.Equal(t, []types.UID{uid}, u.Recreated)

	// Reported once: the next scans find nothing new.
	drainScans(h)
	h.clock.Step(time.Hour)
	h.waitScan(t)
	select {
	case u := <-h.out:
		t.Fatalf("sent again: %v recreated %v", podNames(u), u.Recreated)
	case <-time.After(50 * time.Millisecond):
	}

	// Rewritten in place (renamed over): no removal.
	h.write(t, "a.yaml", manifestYAML("a", "x"))
	drainScans(h)
	h.clock.Step(time.Hour)
	h.waitScan(t)
	select {
	case u := <-h.out:
		t.Fatalf("a rewrite with the same content was sent: %v recreated %v", podNames(u), u.Recreated)
	case <-time.After(50 * time.Millisecond):
	}

	// The consumer saw the removal: the file's return is a plain addition.
	require.NoError(t, os.Remove(path))
	h.until(t, dirDebounce, 30*time.Minute, withPods())
	require.NoError(t, os.WriteFile(path, []byte(manifestYAML("a", "x")), 0o644))
	u = h.until(t, dirDebounce, 30*time.Minute, withPods("default/a"))
	assert.Empty(t, u.Recreated)
}
