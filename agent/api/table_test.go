package api_test

import (
	"bufio"
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

// tableAccept is what kubectl get sends.
const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"

func decodeTable(t *testing.T, body string) metav1.Table {
	t.Helper()
	var tab metav1.Table
	require.NoError(t, json.Unmarshal([]byte(body), &tab), body)
	require.Equal(t, "Table", tab.Kind)
	require.Equal(t, "meta.k8s.io/v1", tab.APIVersion)
	return tab
}

func columns(tab metav1.Table, wide bool) []string {
	var out []string
	for _, c := range tab.ColumnDefinitions {
		if c.Priority == 0 || wide {
			out = append(out, c.Name)
		}
	}
	return out
}

func TestTable_Pods(t *testing.T) {
	b, srv := newTestServer(t, api.Options{})
	// Ages whose printed form holds for a minute ("10m", "30m ago", "30m"):
	// one of whole seconds ("2m", "60s") turns into "2m1s" or "61s" when a
	// loaded machine stalls the test for a second before the request.
	created := metav1.NewTime(time.Now().Add(-10 * time.Minute))
	running := testPod("default", "running", "c")
	running.CreationTimestamp = created
	running.Spec.NodeName = "node1"
	running.Status.Phase, running.Status.PodIP = v1.PodRunning, "10.0.0.7"
	running.Status.ContainerStatuses[0].Ready = true

	pending := testPod("default", "pending", "c")
	pending.Status.Phase = v1.PodPending
	pending.Status.ContainerStatuses[0].State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}

	crash := testPod("default", "crash", "c")
	crash.Status.Phase = v1.PodRunning
	crash.Status.ContainerStatuses[0].RestartCount = 4
	crash.Status.ContainerStatuses[0].State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
	crash.Status.ContainerStatuses[0].LastTerminationState = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
		ExitCode: 1, Reason: "Error", FinishedAt: metav1.NewTime(time.Now().Add(-30 * time.Minute)),
	}}

	terminating := testPod("default", "terminating", "c")
	terminating.Status.Phase = v1.PodRunning
	terminating.Status.ContainerStatuses[0].Ready = true
	now := metav1.Now()
	terminating.DeletionTimestamp = &now

	completed := testPod("default", "completed", "c")
	completed.Status.Phase = v1.PodSucceeded
	completed.Status.ContainerStatuses[0].State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}

	for _, p := range []*v1.Pod{running, pending, crash, terminating, completed} {
		b.SetPod(p)
	}

	code, body, _ := get(t, srv.URL+"/api/v1/namespaces/default/pods?limit=500", tableAccept)
	require.Equal(t, http.StatusOK, code, body)
	tab := decodeTable(t, body)
	assert.Equal(t, []string{"Name", "Ready", "Status", "Restarts", "Age"}, columns(tab, false))
	assert.Equal(t, []string{"Name", "Ready", "Status", "Restarts", "Age", "IP", "Node", "Nominated Node", "Readiness Gates"}, columns(tab, true))
	rows := map[string][]any{}
	for _, r := range tab.Rows {
		rows[r.Cells[0].(string)] = r.Cells
		var meta metav1.PartialObjectMetadata
		require.NoError(t, json.Unmarshal(r.Object.Raw, &meta), "the row carries the object's metadata")
		assert.Equal(t, "default", meta.Namespace)
	}
	assert.Equal(t, []any{"running", "1/1", "Running", "0", "10m", "10.0.0.7", "node1", "<none>", "<none>"}, rows["running"])
	assert.Equal(t, []any{"0/1", "ContainerCreating", "0"}, rows["pending"][1:4])
	assert.Equal(t, []any{"0/1", "CrashLoopBackOff", "4 (30m ago)"}, rows["crash"][1:4])
	assert.Equal(t, []any{"1/1", "Terminating"}, rows["terminating"][1:3])
	assert.Equal(t, []any{"0/1", "Completed"}, rows["completed"][1:3])

	// A get, and includeObject=Object.
	code, body, _ = get(t, srv.URL+"/api/v1/namespaces/default/pods/running?includeObject=Object", tableAccept)
	require.Equal(t, http.StatusOK, code, body)
	tab = decodeTable(t, body)
	require.Len(t, tab.Rows, 1)
	var pod v1.Pod
	require.NoError(t, json.Unmarshal(tab.Rows[0].Object.Raw, &pod))
	assert.Equal(t, "Pod", pod.Kind)
	assert.Equal(t, "10.0.0.7", pod.Status.PodIP)

	// Without the Table media type: the object, as before.
	code, body, _ = get(t, srv.URL+"/api/v1/namespaces/default/pods/running", "application/json")
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, `"kind":"Pod"`)
}

func TestTable_Watch(t *testing.T) {
	b, srv := newTestServer(t, api.Options{})
	p := testPod("default", "w", "c")
	p.Status.Phase = v1.PodRunning
	b.SetPod(p)
	// timeoutSeconds as kubectl sends it, long enough that a stalled
	// server's expiry cannot race the first event: after a stall of 1 s
	// (the value here once) both were ready and either could win.
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/api/v1/namespaces/default/pods?watch=true&timeoutSeconds=30", nil)
	require.NoError(t, err)
	req.Header.Set("Accept", tableAccept)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	require.True(t, sc.Scan(), "an event")
	var ev struct {
		Type   string       `json:"type"`
		Object metav1.Table `json:"object"`
	}
	require.NoError(t, json.Unmarshal(sc.Bytes(), &ev), sc.Text())
	assert.Equal(t, "ADDED", ev.Type)
	assert.Equal(t, "Table", ev.Object.Kind)
	require.Len(t, ev.Object.Rows, 1)
	assert.Equal(t, "w", ev.Object.Rows[0].Cells[0])
	assert.Equal(t, "Running", ev.Object.Rows[0].Cells[2])
}

func TestTable_ConfigAndEvents(t *testing.T) {
	b, srv := newTestServer(t, api.Options{})
	code, body, _ := request(t, http.MethodPost, srv.URL+"/api/v1/namespaces/default/configmaps", "application/json",
		`{"metadata":{"name":"cfg"},"data":{"a":"1","b":"2"}}`)
	require.Equal(t, http.StatusCreated, code, body)
	code, body, _ = request(t, http.MethodPost, srv.URL+"/api/v1/namespaces/default/secrets", "application/json",
		`{"metadata":{"name":"sec"},"type":"Opaque","data":{"a":"MQ=="}}`)
	require.Equal(t, http.StatusCreated, code, body)

	code, body, _ = get(t, srv.URL+"/api/v1/namespaces/default/configmaps", tableAccept)
	require.Equal(t, http.StatusOK, code, body)
	tab := decodeTable(t, body)
	assert.Equal(t, []string{"Name", "Data", "Age"}, columns(tab, false))
	require.Len(t, tab.Rows, 1)
	assert.Equal(t, []any{"cfg", float64(2)}, tab.Rows[0].Cells[:2])

	code, body, _ = get(t, srv.URL+"/api/v1/namespaces/default/secrets/sec", tableAccept)
	require.Equal(t, http.StatusOK, code, body)
	tab = decodeTable(t, body)
	assert.Equal(t, []string{"Name", "Type", "Data", "Age"}, columns(tab, false))
	assert.Equal(t, []any{"sec", "Opaque", float64(1)}, tab.Rows[0].Cells[:3])

	b.SetPod(testPod("default", "web", "c"))
	// Seen 30m ago, not 1m: "60s" became "61s" when the request came a
	// second late.
	b.SetEvents("default", "web", []v1.Event{{
		ObjectMeta:     metav1.ObjectMeta{Name: "web.1", Namespace: "default"},
		InvolvedObject: v1.ObjectReference{Kind: "Pod", Name: "web", Namespace: "default", FieldPath: "spec.containers{c}"},
		Reason:         "Started", Message: "Started container c", Type: v1.EventTypeNormal, Count: 1,
		Source:        v1.EventSource{Component: "kubelet", Host: "node1"},
		LastTimestamp: metav1.NewTime(time.Now().Add(-30 * time.Minute)), FirstTimestamp: metav1.NewTime(time.Now().Add(-30 * time.Minute)),
	}})
	code, body, _ = get(t, srv.URL+"/api/v1/namespaces/default/events", tableAccept)
	require.Equal(t, http.StatusOK, code, body)
	tab = decodeTable(t, body)
	assert.Equal(t, []string{"Last Seen", "Type", "Reason", "Object", "Message"}, columns(tab, false))
	require.Len(t, tab.Rows, 1)
	assert.Equal(t, []any{"30m", "Normal", "Started", "pod/web", "spec.containers{c}", "kubelet, node1", "Started container c"}, tab.Rows[0].Cells[:7])

	code, body, _ = get(t, srv.URL+"/api/v1/nodes", tableAccept)
	require.Equal(t, http.StatusOK, code, body)
	tab = decodeTable(t, body)
	assert.Equal(t, []string{"Name", "Status", "Roles", "Age", "Version"}, columns(tab, false))
	assert.Equal(t, "Ready", tab.Rows[0].Cells[1])

	code, body, _ = get(t, srv.URL+"/api/v1/namespaces", tableAccept)
	require.Equal(t, http.StatusOK, code, body)
	tab = decodeTable(t, body)
	assert.Equal(t, []string{"Name", "Status", "Age"}, columns(tab, false))
	assert.Equal(t, []any{"default", "Active"}, tab.Rows[0].Cells[:2])
}

// TestListPods_FieldSelector: the pod fields kubectl describe node selects
// by (spec.nodeName, status.phase with !=).
func TestListPods_FieldSelector(t *testing.T) {
	b, srv := newTestServer(t, api.Options{})
	for name, phase := range map[string]v1.PodPhase{"run": v1.PodRunning, "done": v1.PodSucceeded, "failed": v1.PodFailed} {
		p := testPod("default", name, "c")
		p.Spec.NodeName, p.Status.Phase = "node1", phase
		b.SetPod(p)
	}
	code, body, _ := get(t, srv.URL+"/api/v1/pods?fieldSelector=spec.nodeName%3Dnode1%2Cstatus.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed", "")
	require.Equal(t, http.StatusOK, code, body)
	var list v1.PodList
	require.NoError(t, json.Unmarshal([]byte(body), &list))
	require.Len(t, list.Items, 1)
	assert.Equal(t, "run", list.Items[0].Name)
	code, _, _ = get(t, srv.URL+"/api/v1/pods?fieldSelector=spec.nodeName%3Dother", "")
	assert.Equal(t, http.StatusOK, code)
	code, body, _ = get(t, srv.URL+"/api/v1/pods?fieldSelector=spec.bogus%3Dx", "")
	assert.Equal(t, http.StatusBadRequest, code, body)
}
