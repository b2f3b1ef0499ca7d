package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/minikubelet/minikubelet/agent/manifest"
	"github.com/minikubelet/minikubelet/agent/source"
)

// apiserverPod loads a pod as kube-apiserver v1.37 returned it on create
// (defaults, admission, metadata and status filled in by the server).
func apiserverPod(t *testing.T, file string) *v1.Pod {
	t.Helper()
	b, err := os.ReadFile("testdata/" + file)
	require.NoError(t, err)
	var p v1.Pod
	require.NoError(t, json.Unmarshal(b, &p))
	return &p
}

func TestPreparePod(t *testing.T) {
	t.Run("a pod from the API server runs as it is", func(t *testing.T) {
		in := apiserverPod(t, "apiserver-pod-no-token.json")
		require.NotEmpty(t, in.ManagedFields, "the fixture is a real server object")
		require.NotEmpty(t, in.ResourceVersion)
		got, err := PreparePod(in, "node-a")
		require.NoError(t, err)
		require.Equal(t, in.UID, got.UID, "the API server's UID is kept")
		require.Equal(t, SourceCluster, got.Annotations[annotationConfigSource])
		require.Empty(t, got.ResourceVersion)
		require.Empty(t, got.ManagedFields)
		require.Equal(t, v1.PodStatus{}, got.Status)
		require.Equal(t, in.Spec.Containers[0].Image, got.Spec.Containers[0].Image)
		require.NotContains(t, in.Annotations, annotationConfigSource, "the informer's object is not modified")
	})
	t.Run("the ServiceAccount admission's token volume is accepted", func(t *testing.T) {
		got, err := PreparePod(apiserverPod(t, "apiserver-pod-default-sa.json"), "node-a")
		require.NoError(t, err)
		require.NotNil(t, got.Spec.Volumes[0].Projected.Sources[0].ServiceAccountToken)
	})
	t.Run("the conditions readiness gates name are kept, nothing else of the status", func(t *testing.T) {
		in := apiserverPod(t, "apiserver-pod-no-token.json")
		in.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: "k8s.io/gate"}}
		in.Status.Phase = v1.PodRunning
		in.Status.Conditions = []v1.PodCondition{
			{Type: v1.PodReady, Status: v1.ConditionFalse},
			{Type: "k8s.io/gate", Status: v1.ConditionTrue, Reason: "LB"},
			{Type: "k8s.io/other", Status: v1.ConditionTrue},
		}
		got, err := PreparePod(in, "node-a")
		require.NoError(t, err)
		require.Equal(t, v1.PodStatus{Conditions: []v1.PodCondition{{Type: "k8s.io/gate", Status: v1.ConditionTrue, Reason: "LB"}}}, got.Status)
		got.Status.Conditions[0].Status = v1.ConditionFalse
		require.Equal(t, v1.ConditionTrue, in.Status.Conditions[1].Status, "the informer's object is not modified")
	})
	t.Run("what minikubelet cannot run is refused by field path", func(t *testing.T) {
		in := apiserverPod(t, "apiserver-pod-default-sa.json")
		bundle, user := "bundle", int64(1000)
		in.Spec.Volumes[0].Projected.Sources[0] = v1.VolumeProjection{ClusterTrustBundle: &v1.ClusterTrustBundleProjection{Name: &bundle, Path: "b", User: &user}}
		_, err := PreparePod(in, "node-a")
		require.ErrorIs(t, err, manifest.ErrInvalidManifest)
		var me *manifest.ManifestError
		require.True(t, errors.As(err, &me))
		require.Equal(t, "cluster:default/web", me.Source)
		require.Contains(t, err.Error(), "spec.volumes[0].projected.sources[0].clusterTrustBundle.user")
	})
	t.Run("bound to another node", func(t *testing.T) {
		_, err := PreparePod(apiserverPod(t, "apiserver-pod-no-token.json"), "node-b")
		require.ErrorContains(t, err, `spec.nodeName: Invalid value: "node-a": must be the name of this node ("node-b")`)
	})
}

// nodePod is a minimal runnable pod bound to node.
func nodePod(name, node string) *v1.Pod {
	f := false
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), ResourceVersion: "1"},
		Spec: v1.PodSpec{
			NodeName:                     node,
			AutomountServiceAccountToken: &f,
			Containers:                   []v1.Container{{Name: "c", Image: "127.0.0.1:5000/minikubelet/busybox:1.36"}},
		},
	}
}

// names lists the pods of an update by name.
func names(u source.SourceUpdate) (pods, errs []string) {
	for _, p := range u.Pods {
		pods = append(pods, p.Name)
	}
	for _, e := range u.Errors {
		errs = append(errs, e.Path)
	}
	return pods, errs
}

func TestPodSource_StreamsTheNodesPods(t *testing.T) {
	bad := nodePod("bad", "node-a")
	bad.Spec.Containers[0].Image = ""
	done := nodePod("done", "node-a")
	done.Status.Phase = v1.PodSucceeded
	client := fake.NewClientset(nodePod("web", "node-a"), nodePod("elsewhere", "node-b"), bad, done)
	src := NewPodSource(fromClientset(client), "node-a", nil)
	synced := make(chan struct{})
	src.synced = func() { close(synced) }
	next := runSource(t, src)
	u := next()
	require.Equal(t, SourceCluster, u.Source)
	pods, errs := names(u)
	require.Equal(t, []string{"web"}, pods, "other nodes' and finished pods are left out")
	// The source refuses bad as soon as it listed it; when the refusal
	// (bad turns Failed, a terminal pod) was quicker than this reader, the
	// newer set without it replaced the unsent one.
	if len(errs) > 0 {
		require.Equal(t, []string{"cluster:default/bad"}, errs)
		require.ErrorContains(t, u.Errors[0].Err, "spec.containers[0].image: Required value")
	}
	<-synced

	// The pod it cannot run is marked Failed on the API server, with why;
	// as a terminal pod it then leaves the set.
	var refused *v1.Pod
	require.Eventually(t, func() bool {
		refused, _ = client.CoreV1().Pods("default").Get(context.Background(), "bad", metav1.GetOptions{})
		return refused != nil && refused.Status.Phase == v1.PodFailed
	}, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, ReasonUnsupportedPodSpec, refused.Status.Reason)
	require.Equal(t, "Pod was rejected: minikubelet cannot run this pod: spec.containers[0].image: Required value", refused.Status.Message)
	for len(errs) > 0 {
		pods, errs = names(next())
		require.Equal(t, []string{"web"}, pods)
	}

	// The list and the watch asked only for this node's pods.
	var selectors []string
	for _, a := range client.Actions() {
		switch a := a.(type) {
		case k8stesting.ListAction:
			selectors = append(selectors, a.GetListRestrictions().Fields.String())
		case k8stesting.WatchAction:
			selectors = append(selectors, a.GetWatchRestrictions().Fields.String())
		}
	}
	require.NotEmpty(t, selectors)
	for _, s := range selectors {
		require.Equal(t, "spec.nodeName=node-a", s)
	}

	ctx2 := context.Background()
	_, err := client.CoreV1().Pods("default").Create(ctx2, nodePod("second", "node-a"), metav1.CreateOptions{})
	require.NoError(t, err)
	pods, _ = names(next())
	require.Equal(t, []string{"second", "web"}, pods)

	// Being deleted: still in the set, marked, with its grace period (the
	// agent tears it down); without WithPodDone the object is left alone.
	web, err := client.CoreV1().Pods("default").Get(ctx2, "web", metav1.GetOptions{})
	require.NoError(t, err)
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	grace := int64(7)
	web.DeletionTimestamp, web.DeletionGracePeriodSeconds = &now, &grace
	web.ResourceVersion = "2"
	_, err = client.CoreV1().Pods("default").Update(ctx2, web, metav1.UpdateOptions{})
	require.NoError(t, err)
	u = next()
	pods, _ = names(u)
	require.Equal(t, []string{"second", "web"}, pods)
	require.Nil(t, u.Pods[0].DeletionTimestamp)
	require.Equal(t, &now, u.Pods[1].DeletionTimestamp)
	require.Equal(t, &grace, u.Pods[1].DeletionGracePeriodSeconds)

	require.NoError(t, client.CoreV1().Pods("default").Delete(ctx2, "second", metav1.DeleteOptions{}))
	pods, _ = names(next())
	require.Equal(t, []string{"web"}, pods)
	require.NoError(t, client.CoreV1().Pods("default").Delete(ctx2, "web", metav1.DeleteOptions{}))
	pods, _ = names(next())
	require.Empty(t, pods)
	for _, a := range client.Actions() {
		if d, ok := a.(k8stesting.DeleteAction); ok {
			require.Nil(t, d.GetDeleteOptions().GracePeriodSeconds, "only the test deleted pods (the source deletes with grace 0)")
		}
	}
}

func TestPodSource_NeverBlocksOnItsConsumer(t *testing.T) {
	client := fake.NewClientset()
	src := NewPodSource(fromClientset(client), "node-a", nil)
	synced := make(chan struct{})
	src.synced = func() { close(synced) }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := make(chan source.SourceUpdate)
	go src.Run(ctx, out)
	<-synced
	// Nobody reads while three pods arrive: the consumer then gets the
	// newest set, not a backlog.
	for _, n := range []string{"a", "b", "c"} {
		_, err := client.CoreV1().Pods("default").Create(context.Background(), nodePod(n, "node-a"), metav1.CreateOptions{})
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool {
		select {
		case u := <-out:
			pods, _ := names(u)
			return len(pods) == 3
		default:
			return false
		}
	}, 10*time.Second, 5*time.Millisecond)
}

// A finished pod the agent still holds stays in the set (its stopped
// containers and their logs stay until the object is deleted, as with the
// kubelet); one it does not hold (after an agent restart) stays out, so a
// finished pod never runs again.
func TestPodSource_KeepsFinishedPodsTheAgentHolds(t *testing.T) {
	held := nodePod("held", "node-a")
	held.Status.Phase = v1.PodSucceeded
	gone := nodePod("gone", "node-a")
	gone.Status.Phase = v1.PodFailed
	client := fake.NewClientset(nodePod("web", "node-a"), held, gone)
	src := NewPodSource(fromClientset(client), "node-a", nil, WithHeldPods(func(uid types.UID) bool {
		return uid == held.UID || uid == "uid-web"
	}))
	next := runSource(t, src)
	pods, errs := names(next())
	require.Empty(t, errs)
	require.Equal(t, []string{"held", "web"}, pods)
}

// A scheduled cluster pod with inter-pod (anti-)affinity, as kubeadm's
// CoreDNS Deployment makes it, is run: the scheduler evaluated those terms
// before binding it here, and the kubelet ignores them. The same pod from
// a manifest is refused (no scheduler places it), and a cluster pod's
// other problems are still reported.
func TestPreparePod_InterPodAffinityIsTheSchedulers(t *testing.T) {
	term := v1.PodAffinityTerm{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"k8s-app": "kube-dns"}},
		TopologyKey:   "kubernetes.io/hostname",
	}
	pod := func() *v1.Pod {
		return &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "coredns-1", Namespace: "kube-system", UID: "u-1"},
			Spec: v1.PodSpec{
				NodeName:   "node-a",
				Containers: []v1.Container{{Name: "coredns", Image: "registry.k8s.io/coredns/coredns:v1.15.0"}},
				Affinity: &v1.Affinity{
					PodAntiAffinity: &v1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.WeightedPodAffinityTerm{{Weight: 100, PodAffinityTerm: term}}},
					PodAffinity:     &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{term}},
				},
			},
		}
	}
	got, err := PreparePod(pod(), "node-a")
	require.NoError(t, err)
	require.NotNil(t, got.Spec.Affinity.PodAntiAffinity)

	local := pod()
	manifest.SetPodDefaults(local, "file:coredns.yaml", "node-a")
	errs := manifest.ValidatePod(local)
	require.Len(t, errs, 2, "%v", errs)
	require.Equal(t, "spec.affinity.podAffinity", errs[0].Field)
	require.Equal(t, "spec.affinity.podAntiAffinity", errs[1].Field)

	bad := pod()
	bad.Spec.Containers[0].Name = "Bad_Name"
	_, err = PreparePod(bad, "node-a")
	var me *manifest.ManifestError
	require.ErrorAs(t, err, &me)
	require.Len(t, me.Problems, 1, "%v", me.Problems)
	require.Contains(t, me.Problems[0], "spec.containers[0].name")
}
