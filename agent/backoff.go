package agent

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/agent/podspec"
)

func (a *Agent) imageInBackoff(pod *v1.Pod, c *v1.Container) bool {
	in, _ := a.imageBackoff.InBackoffSinceUpdate(imageBackoffKey(pod, c), a.clock.Now())
	return in
}

// crashBackoffKey is the kubelet's stable key: a spec change gets a fresh
// back-off.
func crashBackoffKey(pod *v1.Pod, c *v1.Container) string {
	return fmt.Sprintf("%s_%s_%s_%s_%s", pod.Name, pod.Namespace, pod.UID, c.Name, podspec.ContainerHash(c))
}

func imageBackoffKey(pod *v1.Pod, c *v1.Container) string {
	return imageRefBackoffKey(pod, c.Image)
}

// imageRefBackoffKey is the kubelet's image pull back-off key, the pod and
// the image: a container's and an image volume's pulls of the same image
// share it.
func imageRefBackoffKey(pod *v1.Pod, image string) string {
	return fmt.Sprintf("%s_%s", pod.UID, image)
}
