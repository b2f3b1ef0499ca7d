package podspec

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The back-off keys are the kubelet's: a container's restart key changes
// with its spec (a fresh back-off after an update), a pull key is the pod
// and the image only; a teardown forgets those of every container.
func TestBackoffKeys(t *testing.T) {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "u1"},
		Spec: v1.PodSpec{
			InitContainers: []v1.Container{{Name: "init", Image: "busybox"}},
			Containers:     []v1.Container{{Name: "app", Image: "nginx"}},
		},
	}
	app := &pod.Spec.Containers[0]
	key := CrashBackoffKey(pod, app)
	assert.Equal(t, "web_shop_u1_app_"+ContainerHash(app), key)
	changed := app.DeepCopy()
	changed.Image = "nginx:2"
	assert.NotEqual(t, key, CrashBackoffKey(pod, changed), "a changed spec starts a fresh back-off")
	assert.Equal(t, "u1_nginx", ImageBackoffKey(pod, "nginx"))

	crash, image := BackoffKeys(pod)
	assert.Equal(t, []string{CrashBackoffKey(pod, &pod.Spec.InitContainers[0]), key}, crash)
	assert.Equal(t, []string{"u1_busybox", "u1_nginx"}, image)
}
