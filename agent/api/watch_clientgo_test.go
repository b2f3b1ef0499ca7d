package api_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/minikubelet/minikubelet/agent/api"
)

// listThenWatch makes the reflector list, then watch from the list's
// resourceVersion, instead of its default watch-list.
type listThenWatch struct{ *cache.ListWatch }

func (listThenWatch) IsWatchListSemanticsUnSupported() bool { return true }

// client-go's informer follows the pods through the API, whether its
// reflector uses watch-list (sendInitialEvents, the default of client-go
// 1.35+) or lists then watches from the list's resourceVersion: the initial
// state, then each change and deletion.
func TestServer_WatchServesClientGoInformer(t *testing.T) {
	for name, tt := range map[string]struct {
		listThenWatch bool
		calls         []string
	}{
		"watch-list":      {false, []string{"WatchPods default/"}},
		"list then watch": {true, []string{"ListPods default/", "WatchPods default/"}},
	} {
		t.Run(name, func(t *testing.T) { testInformer(t, tt.listThenWatch, tt.calls) })
	}
}

func testInformer(t *testing.T, useList bool, calls []string) {
	b, srv := newTestServer(t, api.Options{})
	b.SetPod(testPod("default", "web", "app"))
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	require.NoError(t, err)

	var mu sync.Mutex
	var got []string
	record := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, s)
	}
	var lw cache.ListerWatcher = cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "pods", "default", fields.Everything())
	if useList {
		lw = listThenWatch{lw.(*cache.ListWatch)}
	}
	store, ctrl := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: lw,
		ObjectType:    &v1.Pod{},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) { record("add " + obj.(*v1.Pod).Name) },
			UpdateFunc: func(_, obj any) {
				p := obj.(*v1.Pod)
				record("update " + p.Name + " " + string(p.Status.Phase))
			},
			DeleteFunc: func(obj any) {
				if p, ok := obj.(*v1.Pod); ok {
					record("delete " + p.Name)
				}
			},
		},
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go ctrl.RunWithContext(ctx)
	require.Eventually(t, ctrl.HasSynced, 5*time.Second, 5*time.Millisecond)

	web := testPod("default", "web", "app")
	web.Status.Phase = v1.PodRunning
	b.SetPod(web)
	b.SetPod(testPod("default", "db", "app"))
	b.SetPod(testPod("other", "elsewhere", "app"))
	require.True(t, b.RemovePod("default", "web"))
	want := []string{"add web", "update web Running", "add db", "delete web"}
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= len(want)
	}, 5*time.Second, 5*time.Millisecond)
	mu.Lock()
	assert.Equal(t, want, got)
	mu.Unlock()
	assert.Equal(t, []string{"default/db"}, store.ListKeys())
	assert.Equal(t, calls, b.Calls())
}
