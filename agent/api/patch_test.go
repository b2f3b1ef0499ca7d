package api_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/agent/api"
	"github.com/minikubelet/minikubelet/agent/api/apitest"
)

// updatingBackend is the fake with api.PodUpdater: it records the pods.
type updatingBackend struct {
	*apitest.Backend
	mu      sync.Mutex
	updated []*v1.Pod
}

func (b *updatingBackend) UpdatePod(ctx context.Context, pod *v1.Pod) (*v1.Pod, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
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
	code, body, _ = request(t, http.MethodPatch, url, "application/json-patch+json", `[]`)
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
