package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/minikubelet/minikubelet/agent"
)

var _ agent.ServiceLister = (*ServiceLister)(nil)

// TestServiceLister_ListsAndFollowsServices checks the informer: not
// synced before Run (the first question waits, then says no), every
// namespace's Services after, and a new Service seen without a restart.
func TestServiceLister_ListsAndFollowsServices(t *testing.T) {
	master := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes"},
		Spec: v1.ServiceSpec{ClusterIP: "10.96.0.1", Ports: []v1.ServicePort{{Name: "https", Port: 443}}}}
	cs := fake.NewClientset(master)
	l := NewServiceLister(fromClientset(cs), nil)
	l.syncWait = 10 * time.Millisecond
	require.False(t, l.HasSynced(), "nothing was listed before Run")
	require.Empty(t, l.ListServices())

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); l.Run(ctx) }()
	defer func() { cancel(); <-done }()
	require.Eventually(t, l.HasSynced, 10*time.Second, 5*time.Millisecond)
	require.Len(t, l.ListServices(), 1)

	_, err := cs.CoreV1().Services("shop").Create(ctx, &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db"},
		Spec: v1.ServiceSpec{ClusterIP: "10.96.0.20", Ports: []v1.ServicePort{{Port: 5432}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(l.ListServices()) == 2 }, 10*time.Second, 5*time.Millisecond)
}

// TestServiceLister_FirstQuestionWaitsForTheList checks that a pod asking
// just after the start gets its variables rather than a retry.
func TestServiceLister_FirstQuestionWaitsForTheList(t *testing.T) {
	cs := fake.NewClientset()
	l := NewServiceLister(fromClientset(cs), nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); l.Run(ctx) }()
	defer func() { cancel(); <-done }()
	require.True(t, l.HasSynced(), "the first question waits up to serviceSyncWait for the list")
}
