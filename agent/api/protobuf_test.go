package api_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/minikubelet/minikubelet/agent/api"
)

// TestClientGoTypedWritesInProtobuf: client-go's typed clientset sends its
// bodies as protobuf (application/vnd.kubernetes.protobuf); creates and
// deletes go through, and a bad object is refused as from JSON.
func TestClientGoTypedWritesInProtobuf(t *testing.T) {
	b, srv := newTestServer(t, api.Options{})
	cfg := &rest.Config{Host: srv.URL, ContentConfig: rest.ContentConfig{ContentType: "application/vnd.kubernetes.protobuf"}}
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	ctx := context.Background()

	pod, err := cs.CoreV1().Pods("default").Create(ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"app": "web"}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "web", pod.Name)
	assert.Equal(t, map[string]string{"app": "web"}, pod.Labels)
	_, err = cs.CoreV1().ConfigMaps("default").Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}, Data: map[string]string{"a": "1"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cs.CoreV1().Secrets("default").Create(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}, StringData: map[string]string{"u": "x"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, cs.CoreV1().Pods("default").Delete(ctx, "web", metav1.DeleteOptions{GracePeriodSeconds: new(int64(3))}))
	assert.Equal(t, []string{"CreatePod default/web", "CreateConfigMap default/cm", "CreateSecret default/s", "DeletePod default/web"}, b.Calls())

	_, err = cs.CoreV1().Pods("other").Create(ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "default"}}, metav1.CreateOptions{})
	require.Error(t, err)
	assert.True(t, apierrors.IsBadRequest(err), "%v", err)
}
