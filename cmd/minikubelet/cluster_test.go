package main

import (
	"context"
	"log/slog"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/minikubelet/minikubelet/agent/cluster/clustertest"
	"github.com/minikubelet/minikubelet/agent/source"
)

func TestClusterFlagsDial(t *testing.T) {
	tests := []struct {
		name    string
		flags   clusterFlags
		wantNil bool
		wantErr string
	}{
		{name: "no kubeconfig: standalone", wantNil: true},
		{name: "--node-ip alone", flags: clusterFlags{nodeIP: "10.0.0.5"}, wantErr: "--node-ip needs --kubeconfig"},
		{name: "a missing kubeconfig", flags: clusterFlags{kubeconfig: filepath.Join(t.TempDir(), "nope")}, wantErr: "--kubeconfig: kubeconfig: stat"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cc, mgr, err := tt.flags.dial("node-a", t.TempDir(), slog.New(slog.DiscardHandler))
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.wantNil, cc == nil)
			require.Nil(t, mgr, "no rotation without --rotate-certificates")
		})
	}
}

// The bootstrap and rotation flags need --kubeconfig (where the node's
// kubeconfig is written, the certificate renewed); --cert-dir defaults to
// <root-dir>/pki.
func TestClusterFlagsCheck(t *testing.T) {
	require.NoError(t, (&clusterFlags{}).check())
	require.ErrorContains(t, (&clusterFlags{bootstrapKubeconfig: "/b"}).check(), "--bootstrap-kubeconfig needs --kubeconfig")
	require.ErrorContains(t, (&clusterFlags{rotateCertificates: true}).check(), "--rotate-certificates needs --kubeconfig")
	require.ErrorContains(t, (&clusterFlags{rotateServerCertificates: true}).check(), "--rotate-server-certificates needs --kubeconfig")
	require.NoError(t, (&clusterFlags{kubeconfig: "/k", bootstrapKubeconfig: "/b", rotateCertificates: true}).check())
	require.Equal(t, "/var/lib/minikubelet/pki", (&clusterFlags{}).pkiDir("/var/lib/minikubelet"))
	require.Equal(t, "/etc/pki", (&clusterFlags{certDir: "/etc/pki"}).pkiDir("/var/lib/minikubelet"))
}

// TestBinaryLinksNoFullClientset guards issue #8's findings: client-go's
// full clientset, its informer factory, listers and apply configurations
// doubled the binary and its idle RSS; client-go's generic typed clients
// (gentype, which links the fake-clientset machinery) and strategicpatch
// (kube-openapi's schemas and the gnostic models) were 2.5 MB more of it.
// The binary talks to the API server through cluster.API (small typed
// clients over client-go's REST client and a small scheme).
func TestBinaryLinksNoFullClientset(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	out, err := exec.Command(goBin, "list", "-deps", ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	var bad []string
	for _, pkg := range strings.Fields(string(out)) {
		for _, p := range []string{"k8s.io/client-go/kubernetes", "k8s.io/client-go/informers", "k8s.io/client-go/listers", "k8s.io/client-go/applyconfigurations",
			"k8s.io/client-go/gentype", "k8s.io/client-go/testing", "k8s.io/apimachinery/pkg/util/strategicpatch", "github.com/google/gnostic-models"} {
			if pkg == p || strings.HasPrefix(pkg, p+"/") {
				bad = append(bad, pkg)
			}
		}
	}
	require.Empty(t, bad, "the binary must not link these client-go packages (see agent/cluster.API)")
	require.Contains(t, strings.Fields(string(out)), "k8s.io/client-go/rest", "the check looks at the real dependency list")
}

// TestNewClusterPods checks serve's cluster wiring against the fake
// clientset: static pods get mirrors (the mirror loop runs and learns the
// server's mirrors from the source), and a pod deleted on the API server
// is deleted once the agent says it is done.
func TestNewClusterPods(t *testing.T) {
	f := false
	clusterPod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "api-pod", Namespace: "default", UID: "uid-api-pod", ResourceVersion: "1"},
		Spec: v1.PodSpec{NodeName: "node-a", AutomountServiceAccountToken: &f,
			Containers: []v1.Container{{Name: "c", Image: "127.0.0.1:5000/minikubelet/busybox:1.36"}}},
	}
	cs := fake.NewClientset(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "node-uid"}}, clusterPod)
	done := make(chan struct{})
	cp := newClusterPods(&clusterClient{client: clustertest.FromClientset(cs)}, func(uid types.UID) <-chan struct{} {
		if uid == "uid-api-pod" {
			return done
		}
		return nil
	}, func(types.UID) bool { return false }, "node-a", nil)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{}, 2)
	defer func() {
		cancel()
		<-stopped
		<-stopped
	}()
	out := make(chan source.SourceUpdate)
	go func() { cp.source.Run(ctx, out); stopped <- struct{}{} }()
	go func() { cp.run(ctx); stopped <- struct{}{} }()
	// The daemon's loop: it reads and applies every set.
	go func() {
		for {
			select {
			case u := <-out:
				if u.Applied != nil {
					close(u.Applied)
				}
			case <-ctx.Done():
				return
			}
		}
	}()

	static := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "static-uid",
		Annotations: map[string]string{"kubernetes.io/config.source": "file"}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox"}}}}
	cp.staticPods([]*v1.Pod{static})
	require.Eventually(t, func() bool {
		m, err := cs.CoreV1().Pods("default").Get(ctx, "web-node-a", metav1.GetOptions{})
		return err == nil && m.Annotations["kubernetes.io/config.mirror"] != ""
	}, 10*time.Second, 5*time.Millisecond, "the static pod's mirror is created")

	running := static.DeepCopy()
	running.Status.Phase = v1.PodRunning
	cp.observer.PodStatus(running)
	require.Eventually(t, func() bool {
		m, err := cs.CoreV1().Pods("default").Get(ctx, "web-node-a", metav1.GetOptions{})
		return err == nil && m.Status.Phase == v1.PodRunning
	}, 10*time.Second, 5*time.Millisecond, "the static pod's status reaches its mirror")

	now := metav1.Now()
	clusterPod.DeletionTimestamp, clusterPod.ResourceVersion = &now, "2"
	_, err := cs.CoreV1().Pods("default").Update(ctx, clusterPod, metav1.UpdateOptions{})
	require.NoError(t, err)
	close(done)
	require.Eventually(t, func() bool {
		_, err := cs.CoreV1().Pods("default").Get(ctx, "api-pod", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, 10*time.Second, 5*time.Millisecond, "the deleted pod's object goes once the agent is done")
}
