package cluster

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/minikubelet/minikubelet/agent/source"
)

func TestPodConfigRefs(t *testing.T) {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
		Spec: v1.PodSpec{
			ImagePullSecrets: []v1.LocalObjectReference{{Name: "pull"}},
			Volumes: []v1.Volume{
				{Name: "a", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "vol-cm"}}}},
				{Name: "b", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "vol-secret"}}},
				{Name: "c", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
					{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "proj-cm"}}},
					{Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: "proj-secret"}}},
					{DownwardAPI: &v1.DownwardAPIProjection{}},
				}}}},
				{Name: "d", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
			},
			InitContainers: []v1.Container{{Name: "i", EnvFrom: []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "init-envfrom-cm"}}}}}},
			Containers: []v1.Container{{
				Name: "c",
				Env: []v1.EnvVar{
					{Name: "PLAIN", Value: "x"},
					{Name: "A", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "env-cm"}, Key: "k"}}},
					{Name: "B", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "env-secret"}, Key: "k"}}},
					{Name: "C", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				},
				EnvFrom: []v1.EnvFromSource{{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "envfrom-secret"}}}},
			}},
			EphemeralContainers: []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{
				Name: "e", Env: []v1.EnvVar{{Name: "D", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "eph-cm"}, Key: "k"}}}},
			}}},
		},
	}
	refs := map[configRef]bool{}
	podConfigRefs(pod, refs)
	want := map[configRef]bool{}
	for _, n := range []string{"vol-cm", "proj-cm", "init-envfrom-cm", "env-cm", "eph-cm"} {
		want[configRef{kindConfigMap, "ns", n}] = true
	}
	for _, n := range []string{"pull", "vol-secret", "proj-secret", "env-secret", "envfrom-secret"} {
		want[configRef{kindSecret, "ns", n}] = true
	}
	require.Equal(t, want, refs)
}

// configPod is nodePod with a configMap volume cm and an env var from
// secret sec (and, with optional, an optional envFrom of ConfigMap "later").
func configPod(name, cm, sec string, optional bool) *v1.Pod {
	p := nodePod(name, "node-a")
	p.Spec.Volumes = []v1.Volume{{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: cm}}}}}
	c := &p.Spec.Containers[0]
	c.VolumeMounts = []v1.VolumeMount{{Name: "cfg", MountPath: "/etc/cfg"}}
	c.Env = []v1.EnvVar{{Name: "PASSWORD", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: sec}, Key: "password"}}}}
	if optional {
		yes := true
		c.EnvFrom = []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "later"}, Optional: &yes}}}
	}
	return p
}

func configMap(name, rv string, data map[string]string) *v1.ConfigMap {
	return &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-cm-" + name), ResourceVersion: rv}, Data: data}
}

// configNames lists an update's ConfigMaps and Secrets by name.
func configNames(u source.SourceUpdate) (cms, secrets []string) {
	for _, c := range u.ConfigMaps {
		cms = append(cms, c.Name)
	}
	for _, s := range u.Secrets {
		secrets = append(secrets, s.Name)
	}
	return cms, secrets
}

// stopRecordingWatches makes the fake clientset's watches of resource
// report, on stopped, the field selector of each watch stopped, and keep
// in started the field selectors of the watches started.
func stopRecordingWatches(client *fake.Clientset, resource string, stopped chan<- string) *startedWatches {
	gvr := schema.GroupVersionResource{Version: "v1", Resource: resource}
	started := &startedWatches{}
	client.PrependWatchReactor(resource, func(a k8stesting.Action) (bool, watch.Interface, error) {
		w, err := client.Tracker().Watch(gvr, a.GetNamespace())
		if err != nil {
			return true, nil, err
		}
		sel := a.(k8stesting.WatchAction).GetWatchRestrictions().Fields.String()
		started.add(sel)
		return true, &recordedWatch{Interface: w, sel: sel, stopped: stopped}, nil
	})
	return started
}

// startedWatches are the field selectors of the watches started so far.
type startedWatches struct {
	mu   sync.Mutex
	sels map[string]int
}

func (s *startedWatches) add(sel string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sels == nil {
		s.sels = map[string]int{}
	}
	s.sels[sel]++
}

// wait waits until a watch whose field selector contains part has
// started: the fake clientset's watches replay nothing, so a change made
// between the source's list and its watch would be lost (an API server
// replays it from the list's resource version).
func (s *startedWatches) wait(t *testing.T, part string) {
	t.Helper()
	require.Eventually(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		for sel := range s.sels {
			if strings.Contains(sel, part) {
				return true
			}
		}
		return false
	}, 10*time.Second, 5*time.Millisecond, "a watch of %s", part)
}

type recordedWatch struct {
	watch.Interface
	sel     string
	stopped chan<- string
}

func (w *recordedWatch) Stop() {
	w.Interface.Stop()
	w.stopped <- w.sel
}

func TestPodSource_CarriesTheReferencedConfigMapsAndSecrets(t *testing.T) {
	sec := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sec", Namespace: "default", UID: "uid-sec", ResourceVersion: "1"}, Data: map[string][]byte{"password": []byte("s3cret")}}
	unrelated := configMap("unrelated", "1", map[string]string{"x": "y"})
	client := fake.NewClientset(configPod("web", "cfg", "sec", true), configMap("cfg", "1", map[string]string{"a": "1"}), sec, unrelated)
	stopped := make(chan string, 10)
	watches := stopRecordingWatches(client, "configmaps", stopped)
	src := NewPodSource(fromClientset(client), "node-a", nil)
	next := runSource(t, src)
	ctx := context.Background()

	u := next()
	pods, _ := names(u)
	require.Equal(t, []string{"web"}, pods)
	cms, secrets := configNames(u)
	require.Equal(t, []string{"cfg"}, cms, "only what the pods reference; a missing one is absent")
	require.Equal(t, []string{"sec"}, secrets)
	require.Equal(t, map[string]string{"a": "1"}, u.ConfigMaps[0].Data)
	require.Equal(t, "ConfigMap", u.ConfigMaps[0].Kind)
	require.Equal(t, []byte("s3cret"), u.Secrets[0].Data["password"])

	// A referenced object changes: the set is sent again.
	watches.wait(t, "cfg")
	_, err := client.CoreV1().ConfigMaps("default").Update(ctx, configMap("cfg", "2", map[string]string{"a": "2"}), metav1.UpdateOptions{})
	require.NoError(t, err)
	u = next()
	require.Equal(t, map[string]string{"a": "2"}, u.ConfigMaps[0].Data)

	// A missing one appears.
	_, err = client.CoreV1().ConfigMaps("default").Create(ctx, configMap("later", "1", map[string]string{"b": "1"}), metav1.CreateOptions{})
	require.NoError(t, err)
	cms, _ = configNames(next())
	require.Equal(t, []string{"cfg", "later"}, cms)

	// An unreferenced one changes: nothing to send (the next update is the
	// pod's deletion).
	_, err = client.CoreV1().ConfigMaps("default").Update(ctx, configMap("unrelated", "2", map[string]string{"x": "z"}), metav1.UpdateOptions{})
	require.NoError(t, err)

	// Every read was one object by name in the pod's namespace (what the
	// Node authorizer allows).
	for _, a := range client.Actions() {
		var sel string
		switch a := a.(type) {
		case k8stesting.ListAction:
			sel = a.GetListRestrictions().Fields.String()
		case k8stesting.WatchAction:
			sel = a.GetWatchRestrictions().Fields.String()
		default:
			continue
		}
		switch a.GetResource().Resource {
		case "configmaps", "secrets":
			require.Equal(t, "default", a.GetNamespace())
			require.Regexp(t, `^metadata\.name=(cfg|later|sec)$`, sel)
		}
	}

	// The pod goes: so do its objects, and their watches stop.
	require.NoError(t, client.CoreV1().Pods("default").Delete(ctx, "web", metav1.DeleteOptions{}))
	u = next()
	require.Empty(t, u.Pods)
	require.Empty(t, u.ConfigMaps)
	require.Empty(t, u.Secrets)
	gone := map[string]bool{}
	for len(gone) < 2 {
		select {
		case sel := <-stopped:
			gone[sel] = true
		case <-time.After(10 * time.Second):
			t.Fatalf("watches stopped: %v; want cfg's and later's", gone)
		}
	}
	require.Equal(t, map[string]bool{"metadata.name=cfg": true, "metadata.name=later": true}, gone)
}

func TestPodSource_HoldsASetUntilItsObjectsAreListed(t *testing.T) {
	t.Run("until the list answers", func(t *testing.T) {
		client := fake.NewClientset(configPod("web", "cfg", "sec", false), configMap("cfg", "1", map[string]string{"a": "1"}))
		release := make(chan struct{})
		client.PrependReactor("list", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
			<-release
			return false, nil, nil
		})
		src := NewPodSource(fromClientset(client), "node-a", nil)
		rebuilt := make(chan struct{}, 100)
		src.rebuilt = func() { rebuilt <- struct{}{} }
		out := startSource(t, src)
		// Runs before the source's cleanup, which waits for the informer.
		t.Cleanup(func() {
			select {
			case <-release:
			default:
				close(release)
			}
		})
		select {
		case <-rebuilt:
		case <-time.After(10 * time.Second):
			t.Fatal("the source built no set")
		}
		// A set that should not come: a bounded look.
		select {
		case u := <-out:
			t.Fatalf("a set is held while a referenced ConfigMap is being listed, got %d pods", len(u.Pods))
		case <-time.After(200 * time.Millisecond):
		}
		close(release)
		var u source.SourceUpdate
		select {
		case u = <-out:
		case <-time.After(10 * time.Second):
			t.Fatal("no set once the ConfigMap was listed")
		}
		cms, secrets := configNames(u)
		require.Equal(t, []string{"cfg"}, cms)
		require.Empty(t, secrets, "the Secret does not exist")
	})
	t.Run("for configSyncWait at most", func(t *testing.T) {
		client := fake.NewClientset(configPod("web", "cfg", "sec", false), configMap("cfg", "1", map[string]string{"a": "1"}))
		client.PrependReactor("list", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "cfg", nil)
		})
		src := NewPodSource(fromClientset(client), "node-a", nil)
		src.configSyncWait = 50 * time.Millisecond
		next := runSource(t, src)
		u := next()
		pods, _ := names(u)
		require.Equal(t, []string{"web"}, pods)
		require.Empty(t, u.ConfigMaps, "not readable: absent, the agent waits with a reason")
	})
}
