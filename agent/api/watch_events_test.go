package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/agent/api"
)

// TestWatchEvents: a watch from the list's resource version sends the
// events recorded after it (ADDED), and a repeated one's new count
// (MODIFIED); without a resource version it first sends those present.
func TestWatchEvents(t *testing.T) {
	b, srv := newTestServer(t, api.Options{EventPollInterval: 10 * time.Millisecond})
	b.SetPod(testPod("default", "web", "c"))
	t0 := metav1.NewTime(time.Now().Add(-time.Minute).Truncate(time.Second))
	ev := func(reason string, count int32) v1.Event {
		return v1.Event{ObjectMeta: metav1.ObjectMeta{Name: "web." + reason, Namespace: "default"},
			InvolvedObject: v1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web", UID: "uid-web"},
			Reason:         reason, Message: reason, Type: v1.EventTypeNormal, Count: count, FirstTimestamp: t0, LastTimestamp: t0}
	}
	b.SetEvents("default", "web", []v1.Event{ev("Scheduled", 1)})

	code, body, _ := request(t, http.MethodGet, srv.URL+"/api/v1/namespaces/default/events", "", "")
	require.Equal(t, http.StatusOK, code, body)
	var list v1.EventList
	require.NoError(t, json.Unmarshal([]byte(body), &list))
	require.Len(t, list.Items, 1)
	require.NotEmpty(t, list.ResourceVersion)

	watchFrom := func(rv string) (*bufio.Scanner, func()) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/api/v1/namespaces/default/events?watch=true&resourceVersion="+rv, nil)
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		return bufio.NewScanner(resp.Body), func() { cancel(); resp.Body.Close() }
	}
	next := func(sc *bufio.Scanner) (string, v1.Event) {
		require.True(t, sc.Scan(), "a watch event")
		var we struct {
			Type   string   `json:"type"`
			Object v1.Event `json:"object"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &we), sc.Text())
		return we.Type, we.Object
	}

	sc, stop := watchFrom(list.ResourceVersion)
	defer stop()
	b.SetEvents("default", "web", []v1.Event{ev("Scheduled", 1), ev("Pulled", 1)})
	typ, got := next(sc)
	assert.Equal(t, "ADDED", typ)
	assert.Equal(t, "Pulled", got.Reason, "only what came after the list")
	assert.Equal(t, "Event", got.Kind)
	b.SetEvents("default", "web", []v1.Event{ev("Scheduled", 1), ev("Pulled", 2)})
	typ, got = next(sc)
	assert.Equal(t, "MODIFIED", typ)
	assert.Equal(t, int32(2), got.Count)

	sc2, stop2 := watchFrom("")
	defer stop2()
	_, a := next(sc2)
	_, c := next(sc2)
	assert.ElementsMatch(t, []string{"Scheduled", "Pulled"}, []string{a.Reason, c.Reason})
}
