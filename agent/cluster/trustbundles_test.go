package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/minikubelet/minikubelet/agent/volume"
)

func testBundle(name, signer string, lbls map[string]string, pem string) *certificatesv1.ClusterTrustBundle {
	return &certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls},
		Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: signer, TrustBundle: pem}}
}

// TestTrustBundleLister_ListsLazilyAndFollowsChanges: the informer starts
// on first use (a node whose pods project no bundle never lists them),
// gets bundles by name and by label, and sees bundles created later.
func TestTrustBundleLister_ListsLazilyAndFollowsChanges(t *testing.T) {
	cs := fake.NewClientset(
		testBundle("named", "", nil, "a"),
		testBundle("example.com:s:x", "example.com/s", map[string]string{"team": "x"}, "b"),
		testBundle("example.com:s:y", "example.com/s", map[string]string{"team": "y"}, "c"),
	)
	l := NewTrustBundleLister(cs.CertificatesV1().ClusterTrustBundles(), cs, nil)
	l.syncWait = 5 * time.Second

	_, err := l.ClusterTrustBundle("named")
	require.ErrorContains(t, err, "does not run yet", "before Run")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go l.Run(ctx)
	waitRunning(t, l)
	for _, a := range cs.Actions() {
		t.Errorf("nothing is asked of the API server before a pod needs a bundle: %s %s", a.GetVerb(), a.GetResource().Resource)
	}

	got, err := l.ClusterTrustBundle("named")
	require.NoError(t, err)
	assert.Equal(t, "a", got.Spec.TrustBundle)
	_, err = l.ClusterTrustBundle("gone")
	require.True(t, errors.Is(err, volume.ErrConfigNotFound), "%v", err)

	sel, err := metav1.LabelSelectorAsSelector(&metav1.LabelSelector{MatchLabels: map[string]string{"team": "x"}})
	require.NoError(t, err)
	list, err := l.ListClusterTrustBundles(sel)
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, "example.com:s:x", list[0].Name)
	all, err := l.ListClusterTrustBundles(labels.Everything())
	require.NoError(t, err)
	assert.Len(t, all, 3)

	lists := 0
	for _, a := range cs.Actions() {
		require.Equal(t, "clustertrustbundles", a.GetResource().Resource)
		require.Contains(t, []string{"list", "watch"}, a.GetVerb(), "lookups are served from the informer")
		if a.GetVerb() == "list" {
			lists++
		}
	}
	assert.Equal(t, 1, lists, "one informer, listed once")

	_, err = cs.CertificatesV1().ClusterTrustBundles().Create(ctx, testBundle("later", "", nil, "d"), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		b, err := l.ClusterTrustBundle("later")
		return err == nil && b.Spec.TrustBundle == "d"
	}, 5*time.Second, 10*time.Millisecond, "a bundle created later is seen through the watch")
}

// TestTrustBundleLister_NotServedSaysWhatToCheck: an API server that does
// not serve the bundles (or forbids the node to list them) fails the
// pod's volume after the wait, saying what to check.
func TestTrustBundleLister_NotServedSaysWhatToCheck(t *testing.T) {
	cs := fake.NewClientset()
	cs.PrependReactor("list", "clustertrustbundles", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("the server could not find the requested resource")
	})
	l := NewTrustBundleLister(cs.CertificatesV1().ClusterTrustBundles(), cs, nil)
	l.syncWait = 100 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go l.Run(ctx)
	waitRunning(t, l)
	_, err := l.ClusterTrustBundle("x")
	require.ErrorContains(t, err, "ClusterTrustBundles (certificates.k8s.io/v1) not listed yet after 100ms: check that the API server serves them")
	require.False(t, errors.Is(err, volume.ErrConfigNotFound), "not a missing bundle: optional sources do not cover it")
}

// waitRunning waits until l's Run took its context.
func waitRunning(t *testing.T, l *TrustBundleLister) {
	t.Helper()
	require.Eventually(t, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.ctx != nil
	}, 5*time.Second, 5*time.Millisecond)
}
