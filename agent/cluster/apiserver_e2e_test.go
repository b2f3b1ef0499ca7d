package cluster

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/agent/manifest"
	"github.com/minikubelet/minikubelet/agent/source"
	"github.com/minikubelet/minikubelet/test/controlplane"
)

// TestAgainstTheAPIServer drives this package's parts with a node's
// credentials against a real kube-apiserver (test/controlplane; only with
// MINIKUBELET_E2E=1), through the narrow client NewClient builds: what a
// fake clientset cannot tell. The Node authorizer and the NodeRestriction
// admission plugin accept the mirror pod and its status, and the reads of
// a pod's ConfigMap and Secret by name; a graceful delete reaches the
// source marked, and the node's final delete removes the object; the
// protobuf codec of the small scheme decodes what the server sends.
// No agent runs: the pods are the source's output only (the daemon's
// end-to-end tests in test/e2e run them).
func TestAgainstTheAPIServer(t *testing.T) {
	const node = "mkl-cluster-unit"
	cp := controlplane.Start(t, node)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	api, _, err := NewClient(cp.NodeKubeconfig(t, node), "minikubelet/test")
	require.NoError(t, err)
	_, err = api.Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, metav1.CreateOptions{})
	require.NoError(t, err)

	sw := NewStatusWriter(api, nil, nil)
	mirrors := NewMirrorPods(api, node, sw, nil)
	podDone := func(types.UID) <-chan struct{} { return nil }
	src := NewPodSource(api, node, nil, WithPodDone(podDone), WithMirrorPods(mirrors))
	out := make(chan source.SourceUpdate)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	wg.Go(func() { src.Run(ctx, out) })
	wg.Go(func() { sw.Run(ctx) })
	wg.Go(func() { mirrors.Run(ctx) })
	latest := make(chan source.SourceUpdate, 100)
	wg.Go(func() {
		for {
			select {
			case u := <-out:
				if u.Applied != nil {
					close(u.Applied) // as the daemon, once applied
				}
				latest <- u
			case <-ctx.Done():
				return
			}
		}
	})
	waitFor := func(what string, ok func(source.SourceUpdate) bool) source.SourceUpdate {
		t.Helper()
		for {
			select {
			case u := <-latest:
				t.Logf("update: %d pods %d cms %d secrets %d errors", len(u.Pods), len(u.ConfigMaps), len(u.Secrets), len(u.Errors))
				for _, e := range u.Errors {
					t.Logf("  error %s: %v", e.Path, e.Err)
				}
				if ok(u) {
					return u
				}
			case <-time.After(60 * time.Second):
				t.Fatalf("timeout: %s", what)
			}
		}
	}

	// A static pod gets its mirror, with its status.
	static := &v1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "static-web", Labels: map[string]string{"app": "s"}},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "127.0.0.1:5000/minikubelet/busybox:1.36", Command: []string{"sleep", "3600"}}}},
	}
	manifest.SetPodDefaults(static, "/etc/m/static.yaml", node)
	require.Empty(t, manifest.ValidatePod(static))
	static.Annotations = map[string]string{annotationConfigSource: "file", "minikubelet.io/source-file": "/etc/m/static.yaml"}
	mirrors.SetStaticPods([]*v1.Pod{static})
	var mirror *v1.Pod
	require.Eventually(t, func() bool {
		mirror, err = cp.Admin.CoreV1().Pods("default").Get(ctx, "static-web-"+node, metav1.GetOptions{})
		return err == nil
	}, 60*time.Second, 100*time.Millisecond, "mirror created: %v", err)
	t.Logf("mirror: uid %s annotations %v owner %v sa %q", mirror.UID, mirror.Annotations, mirror.OwnerReferences, mirror.Spec.ServiceAccountName)
	st := static.DeepCopy()
	st.Status = v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.89.0.5", Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}}
	mirrors.PodStatus(st)
	require.Eventually(t, func() bool {
		m, err := cp.Admin.CoreV1().Pods("default").Get(ctx, "static-web-"+node, metav1.GetOptions{})
		return err == nil && m.Status.Phase == v1.PodRunning && m.Status.PodIP == "10.89.0.5"
	}, 30*time.Second, 100*time.Millisecond, "mirror status")

	// A mirror an admin deletes comes back.
	require.NoError(t, cp.Admin.CoreV1().Pods("default").Delete(ctx, "static-web-"+node, metav1.DeleteOptions{}))
	require.Eventually(t, func() bool {
		m, err := cp.Admin.CoreV1().Pods("default").Get(ctx, "static-web-"+node, metav1.GetOptions{})
		return err == nil && m.UID != mirror.UID && m.DeletionTimestamp == nil
	}, 60*time.Second, 100*time.Millisecond, "mirror recreated")

	// A pod's ConfigMap volume and Secret env come with it.
	_, err = cp.Admin.CoreV1().ConfigMaps("default").Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg"}, Data: map[string]string{"a": "1"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cp.Admin.CoreV1().Secrets("default").Create(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sec"}, StringData: map[string]string{"password": "x"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	f := false
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: v1.PodSpec{
			NodeName: node, AutomountServiceAccountToken: &f,
			Volumes: []v1.Volume{{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}}},
			Containers: []v1.Container{{Name: "c", Image: "127.0.0.1:5000/minikubelet/busybox:1.36", Command: []string{"sleep", "3600"},
				VolumeMounts: []v1.VolumeMount{{Name: "cfg", MountPath: "/cfg"}},
				Env:          []v1.EnvVar{{Name: "P", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "sec"}, Key: "password"}}}}}},
		},
	}
	_, err = cp.Admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	u := waitFor("pod with config", func(u source.SourceUpdate) bool {
		return len(u.Pods) == 1 && len(u.ConfigMaps) == 1 && len(u.Secrets) == 1
	})
	require.Equal(t, "1", u.ConfigMaps[0].Data["a"])
	require.Equal(t, []byte("x"), u.Secrets[0].Data["password"])

	// A change of the ConfigMap resends the set.
	cm, err := cp.Admin.CoreV1().ConfigMaps("default").Get(ctx, "cfg", metav1.GetOptions{})
	require.NoError(t, err)
	cm.Data["a"] = "2"
	_, err = cp.Admin.CoreV1().ConfigMaps("default").Update(ctx, cm, metav1.UpdateOptions{})
	require.NoError(t, err)
	waitFor("cm change", func(u source.SourceUpdate) bool {
		return len(u.ConfigMaps) == 1 && u.ConfigMaps[0].Data["a"] == "2"
	})

	// A graceful delete reaches the source marked; once the agent has
	// nothing of the pod (podDone nil), the node deletes the object.
	require.NoError(t, cp.Admin.CoreV1().Pods("default").Delete(ctx, "web", metav1.DeleteOptions{}))
	waitFor("marked", func(u source.SourceUpdate) bool {
		return len(u.Pods) == 1 && u.Pods[0].DeletionTimestamp != nil
	})
	require.Eventually(t, func() bool {
		_, err := cp.Admin.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, 30*time.Second, 100*time.Millisecond, "object gone")
	waitFor("empty", func(u source.SourceUpdate) bool { return len(u.Pods) == 0 && len(u.ConfigMaps) == 0 })

	// The static pod goes, and so does its mirror.
	mirrors.SetStaticPods(nil)
	require.Eventually(t, func() bool {
		_, err := cp.Admin.CoreV1().Pods("default").Get(ctx, "static-web-"+node, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, 30*time.Second, 100*time.Millisecond, "mirror deleted")
}
