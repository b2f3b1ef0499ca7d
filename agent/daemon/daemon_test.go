package daemon

import (
	"context"
	"errors"
	"fmt"
	"github.com/minikubelet/minikubelet/agent/volume"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/agent/api"
	"github.com/minikubelet/minikubelet/agent/manifest/manifesttest"
	"github.com/minikubelet/minikubelet/agent/source"
)

// A manifest file that cannot be used shows in the pod list as a Failed
// pod with reason InvalidManifest and the loader's message.
func TestDaemon_ListsBadManifests(t *testing.T) {
	h := newHarness(t)
	d := New(h.agent, nil, nil, Config{})
	d.apply(source.SourceUpdate{Source: source.SourceFile, Errors: []source.FileError{{Path: "/etc/minikubelet/manifests/Broken.yaml", Err: errors.New("spec.containers[0].image: Required value")}}})
	pods := d.ListPods("")
	require.Len(t, pods, 1)
	assert.Equal(t, "manifest:broken", pods[0].Name)
	assert.Equal(t, v1.PodFailed, pods[0].Status.Phase)
	assert.Equal(t, "InvalidManifest", pods[0].Status.Reason)
	assert.Equal(t, "spec.containers[0].image: Required value", pods[0].Status.Message)
	assert.Equal(t, "/etc/minikubelet/manifests/Broken.yaml", pods[0].Annotations[source.AnnotationSourceFile])
}

func TestStuckAt(t *testing.T) {
	ready := []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}, {Type: v1.PodReadyToStartContainers, Status: v1.ConditionTrue}}
	sandboxOnly := []v1.PodCondition{{Type: v1.PodReadyToStartContainers, Status: v1.ConditionTrue}}
	pod := func(st v1.PodStatus) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Status: st}
	}
	waiting := func(reason, msg string) v1.ContainerStatus {
		return v1.ContainerStatus{Name: "app", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: reason, Message: msg}}}
	}
	for name, tc := range map[string]struct {
		pod      *v1.Pod
		probes   []api.ProbeState
		wantStep string
		wantIn   string
	}{
		"ready":    {pod(v1.PodStatus{Phase: v1.PodRunning, Conditions: ready}), nil, "", ""},
		"rejected": {pod(v1.PodStatus{Phase: v1.PodFailed, Reason: "OutOfmemory", Message: "Pod was rejected: Node didn't have enough resource: memory"}), nil, "admission", "enough resource"},
		"image": {pod(v1.PodStatus{Phase: v1.PodPending, ContainerStatuses: []v1.ContainerStatus{waiting("ErrImagePull", "reg/x:1: not found")}}),
			nil, "image", "not found"},
		"network": {pod(v1.PodStatus{Phase: v1.PodPending, ContainerStatuses: []v1.ContainerStatus{waiting("ContainerCreating", "network is not ready: NetworkPluginNotReady")}}),
			nil, "network", "NetworkPluginNotReady"},
		"crash loop with OOM": {pod(v1.PodStatus{Phase: v1.PodRunning, Conditions: sandboxOnly, ContainerStatuses: []v1.ContainerStatus{{Name: "app", RestartCount: 3,
			State:                v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
			LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}}}}}),
			nil, "crash-loop", "last exit code 137 (OOMKilled)"},
		"not ready": {pod(v1.PodStatus{Phase: v1.PodRunning, Conditions: sandboxOnly, ContainerStatuses: []v1.ContainerStatus{{Name: "app",
			State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}}),
			[]api.ProbeState{{Container: "app", Kind: "readiness", LastMessage: "HTTP probe failed with statuscode: 500"}}, "readiness", "statuscode: 500"},
		"no sandbox yet": {pod(v1.PodStatus{Phase: v1.PodPending}), nil, "sandbox", "sandbox"},
		// issue #28: a pod that simply exited (restartPolicy Never, exit
		// 1) showed "Stuck at: sandbox": its sandbox is stopped because
		// it is done.
		"exited, restartPolicy Never": {pod(v1.PodStatus{Phase: v1.PodFailed, Conditions: []v1.PodCondition{{Type: v1.PodReadyToStartContainers, Status: v1.ConditionFalse}},
			ContainerStatuses: []v1.ContainerStatus{{Name: "app", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}}}}),
			nil, "", ""},
		"succeeded": {pod(v1.PodStatus{Phase: v1.PodSucceeded}), nil, "", ""},
		"evicted":   {pod(v1.PodStatus{Phase: v1.PodFailed, Reason: "Evicted", Message: "The node was low on resource: memory."}), nil, "", ""},
	} {
		t.Run(name, func(t *testing.T) {
			got := stuckAt(tc.pod, tc.probes, false)
			if tc.wantStep == "" {
				assert.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			assert.Equal(t, tc.wantStep, got.Step)
			assert.Contains(t, got.Cause, tc.wantIn)
		})
	}
}

// ConfigMaps and Secrets in the manifest directory travel with the pods,
// and one defined in two files is refused in the later file.
func TestDirSource_ConfigData(t *testing.T) {
	dir := t.TempDir()
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {mode: fast}\n"
	pod := "apiVersion: v1\nkind: Pod\nmetadata: {name: app}\nspec:\n  containers: [{name: c, image: reg/c:1, envFrom: [{configMapRef: {name: settings}}]}]\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.yaml"), []byte(cm+"---\n"+pod), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b.yaml"), []byte(cm), 0o644))
	u := source.NewDirSource(dir, "node-1", nil, nil).Scan()
	require.Len(t, u.Pods, 1)
	require.Len(t, u.ConfigMaps, 1)
	assert.Equal(t, "fast", u.ConfigMaps[0].Data["mode"])
	require.Len(t, u.Errors, 1)
	assert.Contains(t, u.Errors[0].Err.Error(), "ConfigMap default/settings is already defined in")
}

// The daemon hands the agent the ConfigMaps and Secrets of both sources:
// the manifest directory's win a clash (logged), the API's are persisted,
// refused with field errors when invalid, and cannot shadow or delete the
// directory's.
func TestDaemon_MergesConfigData(t *testing.T) {
	h := newHarness(t)
	secretDir := filepath.Join(t.TempDir(), "secrets") // a tmpfs in the daemon
	store, err := source.NewPodStoreWithSecretDir(filepath.Join(h.cfg.RootDir, "api-pods"), secretDir, "node-1")
	require.NoError(t, err)
	d := New(h.agent, store, nil, Config{})
	ctx := context.Background()
	local := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "x", Annotations: map[string]string{source.AnnotationConfigSource: source.SourceAPI}}}
	cluster := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "y", Annotations: map[string]string{source.AnnotationConfigSource: sourceTestCluster}}}

	// The API's first, then a manifest file defining the same name.
	_, err = d.CreateConfigMap(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "shared"}, Data: map[string]string{"from": "api"}})
	require.NoError(t, err)
	_, err = d.CreateSecret(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds"}, StringData: map[string]string{"password": "pw-3f9a1c"}})
	require.NoError(t, err)
	got, err := h.agent.ConfigMapFor(local, "shared")
	require.NoError(t, err, "a created ConfigMap is the agent's before CreateConfigMap returns")
	assert.Equal(t, "api", got.Data["from"])
	sec, err := h.agent.SecretFor(local, "creds")
	require.NoError(t, err)
	assert.Equal(t, []byte("pw-3f9a1c"), sec.Data["password"])
	assertNoFileContains(t, h.cfg.RootDir, "pw-3f9a1c")
	fi, err := os.Stat(filepath.Join(secretDir, "default_creds.yaml"))
	require.NoError(t, err, "the API's Secrets are kept in the secret dir")
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	// The cluster's Secret of the same name is the cluster pods' only, and
	// shadows nothing of the node's.
	clusterSecret := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "default"}, Data: map[string][]byte{"password": []byte("from-cluster")}}
	d.apply(source.SourceUpdate{Source: sourceTestCluster, Secrets: []*v1.Secret{clusterSecret}})
	sec, err = h.agent.SecretFor(cluster, "creds")
	require.NoError(t, err)
	assert.Equal(t, "from-cluster", string(sec.Data["password"]))
	sec, err = h.agent.SecretFor(local, "creds")
	require.NoError(t, err)
	assert.Equal(t, "pw-3f9a1c", string(sec.Data["password"]))
	_, err = h.agent.ConfigMapFor(cluster, "shared")
	assert.ErrorIs(t, err, volume.ErrConfigNotFound, "the node's ConfigMap is not the cluster pods'")
	assertNoFileContains(t, h.cfg.RootDir, "from-cluster")
	assert.Len(t, d.ListSecrets(""), 1, "the local API lists the node's Secrets only")

	fileCM := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "shared", Namespace: "default"}, Data: map[string]string{"from": "file"}}
	d.apply(source.SourceUpdate{Source: source.SourceFile, ConfigMaps: []*v1.ConfigMap{fileCM}})
	got, err = h.agent.ConfigMapFor(local, "shared")
	require.NoError(t, err)
	assert.Equal(t, "file", got.Data["from"], "the manifest directory wins a clash")
	cms := d.ListConfigMaps("")
	require.Len(t, cms, 1)
	assert.Equal(t, "file", cms[0].Data["from"])
	require.Len(t, d.ListSecrets("default"), 1)
	assert.Empty(t, d.ListSecrets("prod"))

	// A pod update of the API source keeps the data (the whole set travels).
	_, err = d.CreatePod(ctx, manifesttest.APIPod("", "web", "hi"))
	require.NoError(t, err)
	_, err = h.agent.SecretFor(local, "creds")
	require.NoError(t, err)

	_, err = d.CreateConfigMap(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "other"}})
	require.NoError(t, err)
	_, err = d.CreateConfigMap(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "other"}})
	assert.True(t, apierrors.IsAlreadyExists(err), "%v", err)
	d.apply(source.SourceUpdate{Source: source.SourceFile, ConfigMaps: []*v1.ConfigMap{fileCM}})
	_, err = d.CreateConfigMap(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "shared", Namespace: "default"}})
	assert.True(t, apierrors.IsAlreadyExists(err), "a name the manifest directory uses: %v", err)
	err = d.DeleteConfigMap(ctx, "default", "shared")
	assert.True(t, apierrors.IsForbidden(err), "%v", err)

	_, err = d.CreateSecret(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "reg"}, Type: v1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{v1.DockerConfigJsonKey: []byte("{not json")}})
	require.True(t, apierrors.IsInvalid(err), "%v", err)
	var se apierrors.APIStatus
	require.ErrorAs(t, err, &se)
	require.Len(t, se.Status().Details.Causes, 1)
	assert.Equal(t, "data[.dockerconfigjson]", se.Status().Details.Causes[0].Field)

	require.NoError(t, d.DeleteSecret(ctx, "default", "creds"))
	_, err = h.agent.SecretFor(local, "creds")
	assert.Error(t, err, "a deleted Secret is gone from the agent")
	assert.True(t, apierrors.IsNotFound(d.DeleteSecret(ctx, "default", "creds")))
	_, err = os.Stat(filepath.Join(secretDir, "default_creds.yaml"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// Pods created and deleted through the API concurrently: once every call
// returned, the agent wants exactly what the store holds. Each call hands
// the store's set to the agent; a set read before a concurrent deletion
// must never be applied after it (the deleted pod came back, running,
// and could no longer be deleted through the API).
func TestDaemon_ConcurrentCreateDeleteKeepsNewestSet(t *testing.T) {
	for round := range 3 {
		h := newHarness(t)
		store, err := source.NewPodStore(t.TempDir(), "node-1")
		require.NoError(t, err)
		d := New(h.agent, store, nil, Config{})
		const n = 16
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				pod := testPod(t, fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p%d\nspec:\n  containers:\n  - name: c\n    image: busybox\n", i))
				if _, err := d.CreatePod(context.Background(), pod); err != nil {
					errs[i] = err
					return
				}
				_, errs[i] = d.DeletePod(context.Background(), pod.Namespace, pod.Name, nil)
			}()
		}
		wg.Wait()
		require.NoError(t, errors.Join(errs...))
		// Each name was used once: FindPod finds a wanted worker first.
		var alive []string
		for i := range n {
			if w, _ := h.agent.FindPod("default", fmt.Sprintf("p%d", i)); w != nil && !w.Terminating() {
				alive = append(alive, w.Pod().Name)
			}
		}
		if k := h.agent.PodTables()["restartAfterTeardown"]; k > 0 {
			alive = append(alive, fmt.Sprintf("%d (restart after teardown)", k))
		}
		require.Empty(t, alive, "round %d: pods deleted through the API are still wanted", round)
	}
}

// The daemon's loop follows the store's signal: a change committed without
// an API call (the call's own hand-over skipped) still reaches the agent,
// and a generation already handed over is not handed over again.
func TestDaemon_RunFollowsStore(t *testing.T) {
	h := newHarness(t)
	store, err := source.NewPodStore(t.TempDir(), "node-1")
	require.NoError(t, err)
	d := New(h.agent, store, nil, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})

	p, err := store.Add(manifesttest.APIPod("default", "web", "x"))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, ok := h.agent.GetPod(p.UID)
		return ok
	}, 10*time.Second, 5*time.Millisecond, "the loop hands the stored pod to the agent")
	w, _ := h.agent.FindPod("default", "web")
	require.NotNil(t, w)
	_, gen := store.SnapshotGen()
	require.Eventually(t, func() bool {
		d.applyMu.Lock()
		defer d.applyMu.Unlock()
		return d.storeApplied && d.storeGen == gen
	}, 10*time.Second, 5*time.Millisecond)

	// Applying the same generation again changes nothing, not even the
	// worker's spec pointer.
	d.applyStore()
	assert.Same(t, w.Pod(), store.Snapshot().Pods[0], "the agent shares the store's pod")

	require.NoError(t, store.Delete("default", "web"))
	require.Eventually(t, func() bool {
		w, _ := h.agent.FindPod("default", "web")
		return w == nil || w.Terminating()
	}, 10*time.Second, 5*time.Millisecond, "the loop hands the deletion to the agent")
}

// A stored Secret is listed once Loaded is closed, and Loaded is closed
// only by Run: serve serves the API after it, so a GET right after start
// never answers "not found" for what the store holds (the e2e test
// TestBoundarySingle_OldSecretTmpfsBesideSocketAdopted did, once).
func TestDaemon_LoadedAfterTheStoreIsApplied(t *testing.T) {
	h := newHarness(t)
	secretDir := filepath.Join(t.TempDir(), "secrets")
	dir := filepath.Join(h.cfg.RootDir, "api-pods")
	first, err := source.NewPodStoreWithSecretDir(dir, secretDir, "node-1")
	require.NoError(t, err)
	_, err = first.AddSecret(&v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "stored", Namespace: "default"}, StringData: map[string]string{"k": "v"}})
	require.NoError(t, err)

	store, err := source.NewPodStoreWithSecretDir(dir, secretDir, "node-1") // a restarted daemon's
	require.NoError(t, err)
	d := New(h.agent, store, nil, Config{})
	select {
	case <-d.Loaded():
		t.Fatal("Loaded before Run applied the store")
	default:
	}
	assert.Empty(t, d.ListSecrets(""), "before Run, the daemon's view is empty: why serve waits for Loaded")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-d.Loaded():
	case <-time.After(10 * time.Second):
		t.Fatal("Loaded never closed")
	}
	got := d.ListSecrets("")
	require.Len(t, got, 1)
	assert.Equal(t, "stored", got[0].Name)
}
