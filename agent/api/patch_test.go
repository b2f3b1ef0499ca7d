package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/minikubelet/minikubelet/agent/api"
	"github.com/minikubelet/minikubelet/agent/api/apitest"
)

// updatingBackend is the fake with api.PodUpdater: it records the pods;
// its first conflicts calls answer 409, as the daemon does when the pod
// changed since the resource version the update names.
type updatingBackend struct {
	*apitest.Backend
	mu        sync.Mutex
	updated   []*v1.Pod
	calls     int
	conflicts int
}

func (b *updatingBackend) UpdatePod(ctx context.Context, pod *v1.Pod) (*v1.Pod, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls++
	if b.conflicts > 0 {
		b.conflicts--
		return nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, pod.Name, errors.New("the object has been modified; please apply your changes to the latest version and try again"))
	}
	b.updated = append(b.updated, pod.DeepCopy())
	b.SetPod(pod)
	return pod, nil
}

// applyPatch is what kubectl apply sends when the image of a pod created
// by kubectl apply changes: the new last-applied annotation and the
// container merged by name.
const applyPatch = `{"metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"new\":true}\n"}},` +
	`"spec":{"$setElementOrder/containers":[{"name":"c"}],"containers":[{"image":"nginx","name":"c"}]}}`

func patchTestPod() *v1.Pod {
	p := testPod("default", "web", "c", "side")
	p.UID = "uid-web"
	p.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{}\n"}
	p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "A", Value: "1"}}
	return p
}

func TestPatchPod_WithoutUpdater(t *testing.T) {
	b, srv := newTestServer(t, api.Options{})
	b.SetPod(patchTestPod())
	url := srv.URL + "/api/v1/namespaces/default/pods/web?fieldManager=kubectl-client-side-apply&fieldValidation=Strict"

	code, body, _ := request(t, http.MethodPatch, url, "application/strategic-merge-patch+json", applyPatch)
	require.Equal(t, http.StatusUnprocessableEntity, code, body)
	st := decodeStatus(t, body)
	assert.Equal(t, metav1.StatusReasonInvalid, st.Reason)
	require.NotNil(t, st.Details)
	var fields []string
	for _, c := range st.Details.Causes {
		fields = append(fields, c.Field)
	}
	assert.ElementsMatch(t, []string{"metadata.annotations", "spec.containers[0].image"}, fields, "names the changed fields")

	// A patch that changes nothing answers the pod.
	code, body, _ = request(t, http.MethodPatch, url, "application/strategic-merge-patch+json", `{"spec":{"containers":[{"name":"c","image":"busybox"}]}}`)
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, `"kind":"Pod"`)

	// Strict decoding of the result, immutable identity, unsupported types.
	code, body, _ = request(t, http.MethodPatch, url, "application/merge-patch+json", `{"spec":{"bogus":1}}`)
	assert.Equal(t, http.StatusBadRequest, code, body)
	assert.Contains(t, body, `unknown field \"spec.bogus\"`)
	code, body, _ = request(t, http.MethodPatch, url, "application/merge-patch+json", `{"metadata":{"name":"other"}}`)
	assert.Equal(t, http.StatusUnprocessableEntity, code, body)
	assert.Contains(t, body, "metadata.name")
	code, body, _ = request(t, http.MethodPatch, url, "application/json-patch+json", `[{"op":"replace","path":"/spec/containers/0/image","value":"nginx"}]`)
	assert.Equal(t, http.StatusUnprocessableEntity, code, body)
	assert.Contains(t, body, "spec.containers[0].image", "a JSON patch is applied, then refused naming the field")
	code, body, _ = request(t, http.MethodPut, url, "application/json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`)
	assert.Equal(t, http.StatusUnprocessableEntity, code, body)
	code, body, _ = request(t, http.MethodPatch, url, "application/json", `{}`)
	assert.Equal(t, http.StatusUnsupportedMediaType, code, body)
	code, _, _ = request(t, http.MethodPatch, srv.URL+"/api/v1/namespaces/default/pods/nope", "application/merge-patch+json", `{}`)
	assert.Equal(t, http.StatusNotFound, code)
}

func TestPatchPod_WithUpdater(t *testing.T) {
	b := &updatingBackend{Backend: apitest.New()}
	b.SetPod(patchTestPod())
	srv := httptest.NewServer(api.NewServer(b, slog.New(slog.NewTextHandler(io.Discard, nil)), api.Options{}).Handler())
	t.Cleanup(srv.Close)
	url := srv.URL + "/api/v1/namespaces/default/pods/web"

	code, body, _ := request(t, http.MethodPatch, url, "application/strategic-merge-patch+json", applyPatch)
	require.Equal(t, http.StatusOK, code, body)
	require.Len(t, b.updated, 1)
	got := b.updated[0]
	require.Len(t, got.Spec.Containers, 2, "merged by name, not replaced")
	assert.Equal(t, "nginx", got.Spec.Containers[0].Image)
	assert.Equal(t, []v1.EnvVar{{Name: "A", Value: "1"}}, got.Spec.Containers[0].Env, "fields the patch does not name stay")
	assert.Equal(t, "side", got.Spec.Containers[1].Name)
	assert.Equal(t, "{\"new\":true}\n", got.Annotations["kubectl.kubernetes.io/last-applied-configuration"])
	assert.Empty(t, got.Status.Phase, "status is the node's")

	// A list item deleted by its merge key; a merge patch of labels only.
	code, body, _ = request(t, http.MethodPatch, url, "application/strategic-merge-patch+json",
		`{"spec":{"containers":[{"name":"c","env":[{"name":"A","$patch":"delete"}]}]}}`)
	require.Equal(t, http.StatusOK, code, body)
	require.Len(t, b.updated, 2)
	assert.Empty(t, b.updated[1].Spec.Containers[0].Env)
	code, body, _ = request(t, http.MethodPatch, url, "application/merge-patch+json", `{"metadata":{"labels":{"tier":"web"}}}`)
	require.Equal(t, http.StatusOK, code, body)
	require.Len(t, b.updated, 3)
	assert.Equal(t, map[string]string{"tier": "web"}, b.updated[2].Labels)
	var out v1.Pod
	require.NoError(t, json.Unmarshal([]byte(body), &out))
	assert.Equal(t, "web", out.Labels["tier"])
}

// TestPatchPod_JSONPatch: an RFC 6902 patch (kubectl patch --type json) is
// applied to the pod; a failed "test" or a path that is not there is a 422
// with the library's message, as on the API server; a malformed one a 400.
func TestPatchPod_JSONPatch(t *testing.T) {
	b := &updatingBackend{Backend: apitest.New()}
	b.SetPod(patchTestPod())
	srv := httptest.NewServer(api.NewServer(b, slog.New(slog.NewTextHandler(io.Discard, nil)), api.Options{}).Handler())
	t.Cleanup(srv.Close)
	url := srv.URL + "/api/v1/namespaces/default/pods/web"
	const jp = "application/json-patch+json"

	code, body, _ := request(t, http.MethodPatch, url, jp,
		`[{"op":"test","path":"/spec/containers/1/name","value":"side"},{"op":"replace","path":"/spec/containers/1/image","value":"busybox:1.37"},{"op":"add","path":"/metadata/labels","value":{"a":"b"}}]`)
	require.Equal(t, http.StatusOK, code, body)
	require.Len(t, b.updated, 1)
	assert.Equal(t, "busybox:1.37", b.updated[0].Spec.Containers[1].Image)
	assert.Equal(t, "busybox", b.updated[0].Spec.Containers[0].Image)
	assert.Equal(t, map[string]string{"a": "b"}, b.updated[0].Labels)

	code, body, _ = request(t, http.MethodPatch, url, jp, `[{"op":"test","path":"/spec/containers/1/name","value":"other"}]`)
	assert.Equal(t, http.StatusUnprocessableEntity, code, body)
	assert.Contains(t, body, "test failed")
	code, body, _ = request(t, http.MethodPatch, url, jp, `[{"op":"remove","path":"/spec/nodeSelector/nope"}]`)
	assert.Equal(t, http.StatusUnprocessableEntity, code, body)
	code, body, _ = request(t, http.MethodPatch, url, jp, `{"op":"add"}`)
	assert.Equal(t, http.StatusBadRequest, code, body)
	code, body, _ = request(t, http.MethodPatch, url, jp, `[{"op":"add","path":"/spec/bogus","value":1}]`)
	assert.Equal(t, http.StatusBadRequest, code, body)
	assert.Contains(t, body, `unknown field \"spec.bogus\"`)
	assert.Len(t, b.updated, 1, "nothing else changed")
}

// TestPatchPod_RetriesConflicts: a patch is applied again when the pod
// changed before it was stored (409 from the backend), as the API server
// retries; a patch naming a resourceVersion is a precondition: its 409 is
// the answer.
func TestPatchPod_RetriesConflicts(t *testing.T) {
	b := &updatingBackend{Backend: apitest.New(), conflicts: 2}
	b.SetPod(patchTestPod())
	srv := httptest.NewServer(api.NewServer(b, slog.New(slog.NewTextHandler(io.Discard, nil)), api.Options{}).Handler())
	t.Cleanup(srv.Close)
	url := srv.URL + "/api/v1/namespaces/default/pods/web"

	code, body, _ := request(t, http.MethodPatch, url, "application/merge-patch+json", `{"metadata":{"labels":{"x":"y"}}}`)
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, 3, b.calls, "two conflicts, then the update")

	b.mu.Lock()
	b.calls, b.conflicts = 0, 1
	b.mu.Unlock()
	code, body, _ = request(t, http.MethodPatch, url, "application/merge-patch+json", `{"metadata":{"resourceVersion":"41","labels":{"x":"z"}}}`)
	assert.Equal(t, http.StatusConflict, code, body)
	assert.Equal(t, 1, b.calls, "a precondition is not retried")

	// Always conflicting: the retries end with the 409.
	b.mu.Lock()
	b.calls, b.conflicts = 0, 100
	b.mu.Unlock()
	code, body, _ = request(t, http.MethodPatch, url, "application/merge-patch+json", `{"metadata":{"labels":{"x":"w"}}}`)
	assert.Equal(t, http.StatusConflict, code, body)
	assert.Equal(t, 5, b.calls)
}

// TestReplacePod: PUT hands the whole pod to the backend (its resource
// version too: the backend's precondition); the URL's name and namespace
// must match the body's; a pod that does not exist is a 404 (PUT creates
// no pod); the status is the node's.
func TestReplacePod(t *testing.T) {
	b := &updatingBackend{Backend: apitest.New()}
	b.SetPod(patchTestPod())
	srv := httptest.NewServer(api.NewServer(b, slog.New(slog.NewTextHandler(io.Discard, nil)), api.Options{}).Handler())
	t.Cleanup(srv.Close)
	url := srv.URL + "/api/v1/namespaces/default/pods/web"

	code, body, _ := request(t, http.MethodPut, url, "application/yaml",
		"apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  resourceVersion: \"7\"\n  labels: {tier: web}\nspec:\n  containers:\n  - {name: c, image: nginx}\nstatus:\n  phase: Failed\n")
	require.Equal(t, http.StatusOK, code, body)
	require.Len(t, b.updated, 1)
	got := b.updated[0]
	assert.Equal(t, "7", got.ResourceVersion, "the precondition reaches the backend")
	assert.Equal(t, "default", got.Namespace, "the URL's namespace")
	assert.Equal(t, map[string]string{"tier": "web"}, got.Labels)
	assert.Empty(t, got.Status.Phase, "the status is the node's")

	b.mu.Lock()
	b.conflicts = 1
	b.mu.Unlock()
	code, body, _ = request(t, http.MethodPut, url, "application/json", `{"metadata":{"name":"web","resourceVersion":"6"},"spec":{"containers":[{"name":"c","image":"x"}]}}`)
	assert.Equal(t, http.StatusConflict, code, body)
	assert.Contains(t, body, "the object has been modified")

	for _, tc := range []struct {
		url, body string
		code      int
		want      string
	}{
		{url, `{"metadata":{"name":"other"},"spec":{"containers":[{"name":"c","image":"x"}]}}`, 400, "does not match the name on the URL"},
		{url, `{"metadata":{"name":"web","namespace":"prod"},"spec":{"containers":[{"name":"c","image":"x"}]}}`, 400, "does not match the namespace"},
		{url, `{"kind":"ConfigMap","metadata":{"name":"web"}}`, 400, "takes apiVersion v1, kind Pod"},
		{url, `{"metadata":{"name":"web"},"spec":{"bogus":1}}`, 400, `unknown field \"spec.bogus\"`},
		{url, ``, 400, "empty"},
		{srv.URL + "/api/v1/namespaces/default/pods/nope", `{"metadata":{"name":"nope"},"spec":{"containers":[{"name":"c","image":"x"}]}}`, 404, "not found"},
	} {
		code, body, _ := request(t, http.MethodPut, tc.url, "application/json", tc.body)
		assert.Equal(t, tc.code, code, "%s: %s", tc.body, body)
		assert.Contains(t, body, tc.want, tc.body)
	}
	assert.Len(t, b.updated, 1, "nothing else changed")
}

// TestPatchPod_JSONPatchCopyBound: the "copy" operations of one JSON patch
// may copy 3 MiB in all: a 4 KB patch that copies a 100 KB annotation 40
// times (4 MB) is refused before the pod reaches the backend (a patch
// copying a part of the pod into itself would double it at each step).
func TestPatchPod_JSONPatchCopyBound(t *testing.T) {
	b := &updatingBackend{Backend: apitest.New()}
	p := patchTestPod()
	p.Annotations["big"] = strings.Repeat("x", 100<<10)
	b.SetPod(p)
	srv := httptest.NewServer(api.NewServer(b, slog.New(slog.NewTextHandler(io.Discard, nil)), api.Options{}).Handler())
	t.Cleanup(srv.Close)
	var ops []string
	for i := range 40 {
		ops = append(ops, fmt.Sprintf(`{"op":"copy","from":"/metadata/annotations/big","path":"/metadata/annotations/b%d"}`, i))
	}
	code, body, _ := request(t, http.MethodPatch, srv.URL+"/api/v1/namespaces/default/pods/web", "application/json-patch+json", "["+strings.Join(ops, ",")+"]")
	assert.Equal(t, http.StatusUnprocessableEntity, code, body)
	assert.Contains(t, body, "exceeding the limit")
	assert.Empty(t, b.updated)

	// A few copies are fine.
	code, body, _ = request(t, http.MethodPatch, srv.URL+"/api/v1/namespaces/default/pods/web", "application/json-patch+json", "["+strings.Join(ops[:3], ",")+"]")
	assert.Equal(t, http.StatusOK, code, body)
}
