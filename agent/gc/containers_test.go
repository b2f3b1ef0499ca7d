package gc

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/cri/critest"
)

var _ RuntimeService = (*critest.FakeRuntime)(nil)

// Label keys of the test (the agent passes its own).
const (
	tUID, tName, tNS, tOwner = "io.kubernetes.pod.uid", "io.kubernetes.pod.name", "io.kubernetes.pod.namespace", "owner"
	tRestart                 = "restartCount"
)

// cgFixture is a fake runtime with pods of this agent ("me") and of
// another, and a pod log directory on disk.
type cgFixture struct {
	f      *critest.Fake
	logDir string
	clock  *clocktesting.FakeClock
	gone   map[string]bool
	// terminated are the pods PodTerminated reports.
	terminated map[string]bool
	g          *ContainerGC
}

func newCGFixture(t *testing.T) *cgFixture {
	t.Helper()
	fx := &cgFixture{f: critest.New(), logDir: t.TempDir(), gone: map[string]bool{}, terminated: map[string]bool{}}
	// Files written now are old for the stray-log sweep.
	fx.clock = clocktesting.NewFakeClock(time.Now().Add(2 * strayLogMinAge))
	var err error
	fx.g, err = NewContainerGC(ContainerGCConfig{
		Runtime:       fx.f.Runtime,
		Selector:      map[string]string{"managed-by": "me-and-friends"},
		Owns:          func(l map[string]string) bool { return l[tOwner] == "me" },
		Labels:        PodLabels{UID: tUID, Name: tName, Namespace: tNS},
		PodGone:       func(uid string) bool { return fx.gone[uid] },
		PodTerminated: func(uid string) bool { return fx.gone[uid] || fx.terminated[uid] },
		LogFile: func(c *runtimeapi.Container) string {
			return filepath.Join(c.Labels["container"], c.Annotations[tRestart]+".log")
		},
		PodLogDir:  fx.logDir,
		Clock:      fx.clock,
		Registerer: prometheus.NewRegistry(),
	})
	require.NoError(t, err)
	return fx
}

// pod runs a sandbox for pod name (uid name-uid) owned by owner.
func (fx *cgFixture) pod(t *testing.T, name, owner string) (sandboxID string, cfg *runtimeapi.PodSandboxConfig) {
	t.Helper()
	labels := map[string]string{tUID: name + "-uid", tName: name, tNS: "default", tOwner: owner, "managed-by": "me-and-friends"}
	cfg = &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: name + "-uid"},
		Labels:       labels,
		LogDirectory: filepath.Join(fx.logDir, "default_"+name+"_"+name+"-uid"),
	}
	id, err := fx.f.Runtime.RunPodSandbox(context.Background(), cfg, "")
	require.NoError(t, err)
	return id, cfg
}

// container creates and starts instance restart of container name in the
// sandbox, writes its log file, and stops it unless running.
func (fx *cgFixture) container(t *testing.T, sbID string, sb *runtimeapi.PodSandboxConfig, name string, restart int, running bool) (id, logPath string) {
	t.Helper()
	ctx := context.Background()
	labels := map[string]string{"container": name}
	for _, k := range []string{tUID, tName, tNS, tOwner, "managed-by"} {
		labels[k] = sb.Labels[k]
	}
	rel := filepath.Join(name, strconv.Itoa(restart)+".log")
	id, err := fx.f.Runtime.CreateContainer(ctx, sbID, &runtimeapi.ContainerConfig{
		Metadata:    &runtimeapi.ContainerMetadata{Name: name, Attempt: uint32(restart)},
		Image:       &runtimeapi.ImageSpec{Image: "busybox"},
		Labels:      labels,
		Annotations: map[string]string{tRestart: strconv.Itoa(restart)},
		LogPath:     rel,
	}, sb)
	require.NoError(t, err)
	logPath = filepath.Join(sb.LogDirectory, rel)
	fx.f.Runtime.Lock()
	fx.f.Runtime.Containers[id].LogPath = logPath // containerd joins the two
	fx.f.Runtime.Unlock()
	require.NoError(t, os.MkdirAll(filepath.Dir(logPath), 0o755))
	require.NoError(t, os.WriteFile(logPath, []byte("log\n"), 0o644))
	require.NoError(t, fx.f.Runtime.StartContainer(ctx, id))
	if !running {
		require.NoError(t, fx.f.Runtime.StopContainer(ctx, id, 0))
	}
	return id, logPath
}

func (fx *cgFixture) ids(t *testing.T) (sandboxes, containers []string) {
	t.Helper()
	sbs, err := fx.f.Runtime.ListPodSandbox(context.Background(), nil)
	require.NoError(t, err)
	for _, sb := range sbs {
		sandboxes = append(sandboxes, sb.Id)
	}
	cs, err := fx.f.Runtime.ListContainers(context.Background(), nil)
	require.NoError(t, err)
	for _, c := range cs {
		containers = append(containers, c.Id)
	}
	return sandboxes, containers
}

// A gone pod's dead containers go with their log files (and rotations),
// then its dead sandbox, then its log directory; a gone pod that still
// runs something keeps that and its sandbox and directory; another
// agent's pod and live pods keep their objects.
func TestContainerGC_GonePods(t *testing.T) {
	fx := newCGFixture(t)
	ctx := context.Background()

	goneSB, goneCfg := fx.pod(t, "gone", "me")
	old, oldLog := fx.container(t, goneSB, goneCfg, "app", 0, false)
	newer, newerLog := fx.container(t, goneSB, goneCfg, "app", 1, false)
	require.NoError(t, os.WriteFile(newerLog+".20260101-000000", []byte("rotated\n"), 0o644))
	require.NoError(t, fx.f.Runtime.StopPodSandbox(ctx, goneSB))

	runSB, runCfg := fx.pod(t, "gone-running", "me")
	runC, _ := fx.container(t, runSB, runCfg, "app", 0, true)
	deadC, _ := fx.container(t, runSB, runCfg, "side", 0, false)

	otherSB, otherCfg := fx.pod(t, "others", "someone-else")
	otherC, otherLog := fx.container(t, otherSB, otherCfg, "app", 0, false)
	require.NoError(t, fx.f.Runtime.StopPodSandbox(ctx, otherSB))

	liveSB, liveCfg := fx.pod(t, "live", "me")
	live0, _ := fx.container(t, liveSB, liveCfg, "app", 0, false)

	// Nothing is gone yet (the agent still collects orphans): nothing goes.
	res, err := fx.g.Collect(ctx)
	require.NoError(t, err)
	assert.Empty(t, res.Containers)
	assert.Empty(t, res.Sandboxes)

	fx.gone["gone-uid"] = true
	fx.gone["gone-running-uid"] = true
	fx.gone["others-uid"] = true // gone for us, but not ours
	res, err = fx.g.Collect(ctx)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{old, newer, deadC}, res.Containers)
	assert.Equal(t, []string{goneSB}, res.Sandboxes)
	assert.Equal(t, []string{filepath.Join(fx.logDir, "default_gone_gone-uid")}, res.LogDirs)
	assert.ElementsMatch(t, []string{oldLog, newerLog, newerLog + ".20260101-000000",
		filepath.Join(fx.logDir, "default_gone-running_gone-running-uid", "side", "0.log")}, res.LogFiles)
	assert.NoDirExists(t, filepath.Join(fx.logDir, "default_gone_gone-uid"))
	assert.FileExists(t, otherLog)
	assert.DirExists(t, filepath.Join(fx.logDir, "default_gone-running_gone-running-uid", "app"))

	sbs, ctrs := fx.ids(t)
	assert.ElementsMatch(t, []string{runSB, otherSB, liveSB}, sbs)
	assert.ElementsMatch(t, []string{runC, otherC, live0}, ctrs)
	st := fx.g.Status()
	assert.Equal(t, 2, st.Runs)
	assert.Equal(t, 0, st.Failures)
}

// Under disk pressure (DeleteAllUnused) a terminated pod that is not
// deleted loses its dead containers with their log files and its dead
// sandbox, but keeps its log directory (the kubelet removes that only for
// deleted pods; here the pod's teardown does); the periodic Collect keeps
// all of it. A live pod keeps
// its dead instance either way.
func TestContainerGC_DeleteAllUnusedTakesTerminatedPods(t *testing.T) {
	fx := newCGFixture(t)
	ctx := context.Background()
	doneSB, doneCfg := fx.pod(t, "done", "me")
	initC, initLog := fx.container(t, doneSB, doneCfg, "setup", 0, false)
	jobC, jobLog := fx.container(t, doneSB, doneCfg, "job", 0, false)
	require.NoError(t, fx.f.Runtime.StopPodSandbox(ctx, doneSB))
	fx.terminated["done-uid"] = true

	liveSB, liveCfg := fx.pod(t, "live", "me")
	prev, prevLog := fx.container(t, liveSB, liveCfg, "app", 0, false)
	cur, _ := fx.container(t, liveSB, liveCfg, "app", 1, true)

	res, err := fx.g.Collect(ctx)
	require.NoError(t, err)
	assert.Empty(t, res.Containers, "periodic GC: a terminated pod that is not deleted keeps its containers")
	assert.Empty(t, res.Sandboxes)

	res, err = fx.g.DeleteAllUnused(ctx)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{initC, jobC}, res.Containers)
	assert.Equal(t, []string{doneSB}, res.Sandboxes)
	assert.ElementsMatch(t, []string{initLog, jobLog}, res.LogFiles)
	assert.Empty(t, res.LogDirs, "the terminated pod's log directory stays until it is deleted")
	assert.DirExists(t, doneCfg.LogDirectory)
	assert.FileExists(t, prevLog)
	sbs, ctrs := fx.ids(t)
	assert.Equal(t, []string{liveSB}, sbs)
	assert.ElementsMatch(t, []string{prev, cur}, ctrs, "a live pod's dead instance stays")
}

// A live pod's log files that no listed container writes (instances its
// worker pruned) go once they are a minute old; the files of its listed
// containers and their rotations stay.
func TestContainerGC_SweepsStrayLogsOfLivePods(t *testing.T) {
	fx := newCGFixture(t)
	ctx := context.Background()
	sb, cfg := fx.pod(t, "live", "me")
	_, prunedLog := fx.container(t, sb, cfg, "app", 0, false)
	_, prevLog := fx.container(t, sb, cfg, "app", 1, false)
	_, curLog := fx.container(t, sb, cfg, "app", 2, true)
	require.NoError(t, os.WriteFile(curLog+".20260101-000000", nil, 0o644))
	require.NoError(t, os.WriteFile(prunedLog+".20260101-000000", nil, 0o644))
	// The worker pruned instance 0 (pruneContainers); its files stayed.
	cs, err := fx.f.Runtime.ListContainers(ctx, nil)
	require.NoError(t, err)
	for _, c := range cs {
		if c.Metadata.Attempt == 0 {
			require.NoError(t, fx.f.Runtime.RemoveContainer(ctx, c.Id))
		}
	}
	other := filepath.Join(filepath.Dir(curLog), "notes.txt") // not an instance log: never swept
	require.NoError(t, os.WriteFile(other, nil, 0o644))
	fresh := filepath.Join(filepath.Dir(curLog), "7.log") // just written by someone: too young
	require.NoError(t, os.WriteFile(fresh, nil, 0o644))
	require.NoError(t, os.Chtimes(fresh, fx.clock.Now(), fx.clock.Now()))

	res, err := fx.g.Collect(ctx)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{prunedLog, prunedLog + ".20260101-000000"}, res.LogFiles)
	assert.FileExists(t, prevLog)
	assert.FileExists(t, curLog)
	assert.FileExists(t, curLog+".20260101-000000")
	assert.FileExists(t, fresh)
	assert.FileExists(t, other)
	assert.Empty(t, res.Containers)
}

// Log paths outside the pod log directory are never removed.
func TestContainerGC_UnderLogDir(t *testing.T) {
	g := &ContainerGC{cfg: ContainerGCConfig{PodLogDir: "/var/log/pods"}}
	for path, want := range map[string]bool{
		"/var/log/pods/ns_n_u/c/0.log": true,
		"/var/log/pods":                false,
		"/var/log/pods/../secret":      false,
		"/etc/passwd":                  false,
		"relative/0.log":               false,
	} {
		assert.Equal(t, want, g.underLogDir(path), path)
	}
}
