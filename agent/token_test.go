package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	testclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/agent/node"
	"github.com/minikubelet/minikubelet/agent/source"
	"github.com/minikubelet/minikubelet/agent/volume"
	"github.com/minikubelet/minikubelet/agent/volume/volumetest"
)

// fakeTokens is a TokenSource that issues "token-<n>" valid for the
// requested lifetime from its clock, and records the requests.
type fakeTokens struct {
	clock *testclock.FakeClock
	mu    sync.Mutex
	reqs  []tokenRequestSeen
	err   error // returned while set
}

// tokenRequestSeen is what one Token call asked for.
type tokenRequestSeen struct {
	namespace, pod, serviceAccount, audience string
	podUID                                   types.UID
	expirationSeconds                        int64
}

func (f *fakeTokens) Token(_ context.Context, pod *v1.Pod, src *v1.ServiceAccountTokenProjection) ([]byte, time.Time, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, time.Time{}, f.err
	}
	f.reqs = append(f.reqs, tokenRequestSeen{namespace: pod.Namespace, pod: pod.Name, serviceAccount: pod.Spec.ServiceAccountName,
		audience: src.Audience, podUID: pod.UID, expirationSeconds: *src.ExpirationSeconds})
	return fmt.Appendf(nil, "token-%d", len(f.reqs)), f.clock.Now().Add(time.Duration(*src.ExpirationSeconds) * time.Second), nil
}

func (f *fakeTokens) setErr(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

func (f *fakeTokens) requests() []tokenRequestSeen {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]tokenRequestSeen(nil), f.reqs...)
}

// kubeAPIAccessPod is a pod as the API server's ServiceAccount admission
// leaves it (the kube-api-access volume), from the cluster source.
const kubeAPIAccessPod = `
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop, uid: 0b6d3a0c-6a43-4bd4-9a55-0c3c8a5e1f10, annotations: {kubernetes.io/config.source: cluster}}
spec:
  serviceAccountName: robot
  volumes:
  - name: kube-api-access-x7k2p
    projected:
      defaultMode: 420
      sources:
      - serviceAccountToken: {expirationSeconds: 3607, path: token}
      - configMap: {name: kube-root-ca.crt, items: [{key: ca.crt, path: ca.crt}]}
      - downwardAPI: {items: [{path: namespace, fieldRef: {apiVersion: v1, fieldPath: metadata.namespace}}]}
  containers:
  - name: app
    image: img
    volumeMounts: [{name: kube-api-access-x7k2p, mountPath: /var/run/secrets/kubernetes.io/serviceaccount, readOnly: true}]
`

// tokenAgent is an agent with a fake token source on a fake clock.
func tokenAgent(t *testing.T) (*Agent, *fakeTokens, *testclock.FakeClock, *volumetest.FakeMounter) {
	t.Helper()
	clk := testclock.NewFakeClock(time.Date(2026, 11, 25, 1, 0, 0, 0, time.UTC))
	src := &fakeTokens{clock: clk}
	a := New(Config{NodeName: "node-1", RootDir: t.TempDir(), PodLogDir: t.TempDir(), ResolvConf: "/nonexistent", Network: testNetwork(t), HostIPs: []string{"192.0.2.1"}}, Deps{Clock: clk, Tokens: src})
	m := volumetest.NewFakeMounter()
	a.mounter = m
	a.setConfigScopes(map[string]configSet{sourceCluster: {ConfigMaps: []*v1.ConfigMap{{ObjectMeta: metaNS("shop", "kube-root-ca.crt"), Data: map[string]string{"ca.crt": "CA"}}}}})
	return a, src, clk, m
}

func TestServiceAccountToken_ProjectedAndRefreshed(t *testing.T) {
	a, src, clk, mounter := tokenAgent(t)
	pod := testPod(t, kubeAPIAccessPod)
	w := &podWorker{logger: a.logger}

	paths, err := a.volumes().SetupVolumes(pod)
	require.NoError(t, err)
	dir := paths["kube-api-access-x7k2p"]
	assert.Equal(t, map[string]string{"token": "token-1", "ca.crt": "CA", "namespace": "shop"}, volumetest.ReadVolume(t, dir))
	assert.Equal(t, []tokenRequestSeen{{namespace: "shop", pod: "web", serviceAccount: "robot", podUID: pod.UID, expirationSeconds: 3607}}, src.requests(),
		"one request: the pod's service account, bound to the pod, the API server's audience, the projection's lifetime")
	fi, err := os.Stat(filepath.Join(dir, "token"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), fi.Mode().Perm(), "the volume's defaultMode")
	assert.Contains(t, mounter.Mounts, dir, "a token is a secret: the volume is a tmpfs")

	// Every sync rebuilds the volume: the cached token is used until 80 %
	// of its lifetime (2885.6 s of 3607 s) has passed.
	version := func() string { v, _ := os.Readlink(filepath.Join(dir, volume.DataDirName)); return v }
	first := version()
	clk.Step(2885 * time.Second)
	a.volumes().RefreshDataVolumes(w.logger, pod)
	assert.Len(t, src.requests(), 1, "not due yet")
	assert.Equal(t, first, version(), "an unchanged payload is not rewritten")

	clk.Step(time.Second)
	a.volumes().RefreshDataVolumes(w.logger, pod)
	require.Len(t, src.requests(), 2, "due at 80 %")
	assert.Equal(t, "token-2", volumetest.ReadVolume(t, dir)["token"], "the running pod's file holds the new token")
	assert.NotEqual(t, first, version(), "written as a new ..data version")

	// A refresh that fails keeps the valid token; once it has expired
	// the volume keeps its last content and the error is logged.
	src.setErr(errors.New("connection refused"))
	clk.Step(3000 * time.Second)
	a.volumes().RefreshDataVolumes(w.logger, pod)
	assert.Equal(t, "token-2", volumetest.ReadVolume(t, dir)["token"])
	_, err = a.volumes().SetupVolumes(pod)
	require.NoError(t, err, "token-2 is valid until 3607 s after it was issued")
	// Within 10 s of a failed refresh no request is made; after, one is.
	src.setErr(nil)
	clk.Step(9 * time.Second)
	a.volumes().RefreshDataVolumes(w.logger, pod)
	assert.Len(t, src.requests(), 2, "no retry within 10 s of a failure")
	clk.Step(time.Second)
	a.volumes().RefreshDataVolumes(w.logger, pod)
	require.Len(t, src.requests(), 3, "retried 10 s after the failure")
	assert.Equal(t, "token-3", volumetest.ReadVolume(t, dir)["token"])
	src.setErr(errors.New("connection refused"))
	clk.Step(3000 * time.Second)
	a.volumes().RefreshDataVolumes(w.logger, pod)
	assert.Equal(t, "token-3", volumetest.ReadVolume(t, dir)["token"], "refresh due, failed: the valid token stays")
	clk.Step(700 * time.Second)
	_, err = a.volumes().SetupVolumes(pod)
	require.EqualError(t, err, `MountVolume.SetUp failed for volume "kube-api-access-x7k2p" : cannot get a token for service account shop/robot (the pod waits and retries): connection refused`)
	assert.Equal(t, "token-3", volumetest.ReadVolume(t, dir)["token"])

	// The teardown drops the pod's tokens.
	src.setErr(nil)
	_, err = a.volumes().SetupVolumes(pod)
	require.NoError(t, err)
	require.Equal(t, 1, a.tokens.Size())
	require.NoError(t, a.cleanupPodDirs(pod))
	assert.Equal(t, 0, a.tokens.Size())
}

func TestTokenCache_Keys(t *testing.T) {
	a, src, clk, _ := tokenAgent(t)
	pod := testPod(t, kubeAPIAccessPod)
	other := pod.DeepCopy()
	other.UID = "another-uid"
	exp := int64(3607)
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		src  v1.ServiceAccountTokenProjection
		want int // requests so far
	}{
		{"first", pod, v1.ServiceAccountTokenProjection{ExpirationSeconds: &exp, Path: "token"}, 1},
		{"same key, other path", pod, v1.ServiceAccountTokenProjection{ExpirationSeconds: &exp, Path: "again"}, 1},
		{"audience", pod, v1.ServiceAccountTokenProjection{Audience: "vault", ExpirationSeconds: &exp, Path: "token"}, 2},
		{"expiration defaults to 3600", pod, v1.ServiceAccountTokenProjection{Path: "token"}, 3},
		{"another pod", other, v1.ServiceAccountTokenProjection{ExpirationSeconds: &exp, Path: "token"}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := a.tokens.Token(tc.pod, &tc.src)
			require.NoError(t, err)
			require.Len(t, src.requests(), tc.want)
		})
	}
	reqs := src.requests()
	assert.Equal(t, "vault", reqs[1].audience)
	assert.Equal(t, int64(3600), reqs[2].expirationSeconds)
	assert.Equal(t, types.UID("another-uid"), reqs[3].podUID)

	a.tokens.Forget(pod.UID)
	assert.Equal(t, 1, a.tokens.Size(), "only the other pod's token is left")
	clk.Step(3608 * time.Second)
	_, err := a.tokens.Token(pod, &v1.ServiceAccountTokenProjection{ExpirationSeconds: &exp, Path: "token"})
	require.NoError(t, err)
	assert.Equal(t, 1, a.tokens.Size(), "the other pod's expired token was pruned")
}

// TestTokenCache_ConcurrentRequestsShareOne: the containers of a pod set
// up its volumes concurrently; they wait for one request.
func TestTokenCache_ConcurrentRequestsShareOne(t *testing.T) {
	a, src, _, _ := tokenAgent(t)
	pod := testPod(t, kubeAPIAccessPod)
	exp := int64(3607)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			tok, err := a.tokens.Token(pod, &v1.ServiceAccountTokenProjection{ExpirationSeconds: &exp, Path: "token"})
			assert.NoError(t, err)
			assert.Equal(t, "token-1", string(tok))
		})
	}
	wg.Wait()
	assert.Len(t, src.requests(), 1)
}

func TestServiceAccountToken_ModeAndOwner(t *testing.T) {
	a, _, _, _ := tokenAgent(t)
	i64 := func(v int64) *int64 { return &v }
	for _, tc := range []struct {
		name    string
		podSC   *v1.PodSecurityContext
		appUser *int64 // the second container's runAsUser
		mode    os.FileMode
		uid     *int64
	}{
		{"defaultMode", nil, nil, 0o644, nil},
		{"one user for all containers owns it", &v1.PodSecurityContext{RunAsUser: i64(1000)}, nil, 0o600, i64(1000)},
		{"containers differ: no owner", &v1.PodSecurityContext{RunAsUser: i64(1000)}, i64(2000), 0o644, nil},
		{"fsGroup: 0600, then g+r", &v1.PodSecurityContext{FSGroup: i64(3000)}, nil, 0o600, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod(t, kubeAPIAccessPod)
			pod.Spec.SecurityContext = tc.podSC
			pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: "side", Image: "img"})
			if tc.appUser != nil {
				pod.Spec.Containers[1].SecurityContext = &v1.SecurityContext{RunAsUser: tc.appUser}
			}
			payload, err := a.volumes().VolumePayload(pod, &pod.Spec.Volumes[0]) // defaultMode 0644
			require.NoError(t, err)
			f := payload["token"]
			assert.Equal(t, tc.mode, f.Mode)
			assert.Equal(t, tc.uid, f.UID)
		})
	}
	if os.Geteuid() != 0 {
		return
	}
	// As root the owner is set on disk too.
	pod := testPod(t, kubeAPIAccessPod)
	u := int64(1234)
	pod.Spec.SecurityContext = &v1.PodSecurityContext{RunAsUser: &u}
	paths, err := a.volumes().SetupVolumes(pod)
	require.NoError(t, err)
	fi, err := os.Stat(filepath.Join(paths["kube-api-access-x7k2p"], "token"))
	require.NoError(t, err)
	assert.Equal(t, uint32(1234), fi.Sys().(*syscall.Stat_t).Uid)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
}

func TestAdmitServiceAccountTokens(t *testing.T) {
	withSource := func(src string) *v1.Pod {
		p := testPod(t, kubeAPIAccessPod)
		p.Annotations[source.AnnotationConfigSource] = src
		return p
	}
	clk := testclock.NewFakeClock(time.Now())
	cluster := New(Config{NodeName: "node-1", RootDir: t.TempDir(), PodLogDir: t.TempDir(), ResolvConf: "/nonexistent", Network: testNetwork(t), HostIPs: []string{"192.0.2.1"}}, Deps{Tokens: &fakeTokens{clock: clk}})
	lone := New(Config{NodeName: "node-1", RootDir: t.TempDir(), PodLogDir: t.TempDir(), ResolvConf: "/nonexistent", Network: testNetwork(t), HostIPs: []string{"192.0.2.1"}}, Deps{})
	noToken := testPod(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: plain}\nspec:\n  containers:\n  - {name: app, image: img}\n")
	for _, tc := range []struct {
		name string
		a    *Agent
		pod  *v1.Pod
		want string // message fragment; "" admitted
	}{
		{"cluster pod in cluster mode", cluster, withSource(sourceCluster), ""},
		{"pod without a token", lone, noToken, ""},
		{"not in cluster mode", lone, withSource(sourceCluster), "which needs cluster mode: minikubelet requests tokens from the API server only when it runs as a cluster node (serve --kubeconfig)"},
		{"local API pod in cluster mode", cluster, withSource(source.SourceAPI), `only pods from the cluster's API server get tokens: this pod comes from the "api" source`},
		{"static pod in cluster mode", cluster, withSource(source.SourceFile), `comes from the "file" source`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reason, msg := tc.a.admitServiceAccountTokens(tc.pod)
			if tc.want == "" {
				assert.Empty(t, reason, msg)
				return
			}
			assert.Equal(t, node.AdmitReasonServiceAccountToken, reason)
			assert.Contains(t, msg, `volume "kube-api-access-x7k2p" projects a service account token (spec.volumes[0].projected.sources[0].serviceAccountToken)`)
			assert.Contains(t, msg, tc.want)
		})
	}
}

// TestAgent_TokenFailureWaitsAndRetries runs a cluster pod whose token
// cannot be had: it is rejected by nothing, waits with the reason naming
// the service account, and starts once the token source answers.
func TestAgent_TokenFailureWaitsAndRetries(t *testing.T) {
	h := newHarness(t)
	h.agent.mounter = volumetest.NewFakeMounter()
	src := &fakeTokens{clock: h.clock}
	src.setErr(errors.New(`serviceaccounts "robot" is forbidden: give the node create serviceaccounts/token`))
	h.agent.tokens = volume.NewTokenCache(src, h.clock, h.agent.logger)
	h.agent.setConfigScopes(map[string]configSet{sourceCluster: {ConfigMaps: []*v1.ConfigMap{{ObjectMeta: metaNS("shop", "kube-root-ca.crt"), Data: map[string]string{"ca.crt": "CA"}}}}})
	go func() { _ = h.agent.Run(t.Context()) }()
	h.agent.SetPods([]*v1.Pod{testPod(t, kubeAPIAccessPod)})
	got := h.rec.waitStatus(t, "CreateContainerConfigError", func(p *v1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Waiting != nil &&
			p.Status.ContainerStatuses[0].State.Waiting.Reason == "CreateContainerConfigError"
	})
	assert.Equal(t, v1.PodPending, got.Status.Phase)
	assert.Equal(t, `MountVolume.SetUp failed for volume "kube-api-access-x7k2p" : cannot get a token for service account shop/robot (the pod waits and retries): serviceaccounts "robot" is forbidden: give the node create serviceaccounts/token`,
		got.Status.ContainerStatuses[0].State.Waiting.Message)
	assert.Contains(t, h.rec.reasons(), "FailedMount")

	src.setErr(nil)
	h.stepUntil(t, "running", time.Minute, func(p *v1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil
	})
	assert.Len(t, src.requests(), 1)
}

// TestAgent_TokenPodRejectedWithoutClusterMode: SetPods refuses the pod
// (Failed, reason and message) and creates nothing.
func TestAgent_TokenPodRejectedWithoutClusterMode(t *testing.T) {
	h := newHarness(t)
	pod := testPod(t, kubeAPIAccessPod)
	h.agent.SetPods([]*v1.Pod{pod})
	got, ok := h.agent.GetPod(pod.UID)
	require.True(t, ok)
	assert.Equal(t, v1.PodFailed, got.Status.Phase)
	assert.Equal(t, node.AdmitReasonServiceAccountToken, got.Status.Reason)
	assert.Contains(t, got.Status.Message, "serve --kubeconfig")
	assert.Empty(t, h.fake.Calls(), "nothing was created")
}
