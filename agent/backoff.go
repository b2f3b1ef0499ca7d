package agent

import (
	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/agent/podspec"
)

func (a *Agent) imageInBackoff(pod *v1.Pod, c *v1.Container) bool {
	in, _ := a.imageBackoff.InBackoffSinceUpdate(podspec.ImageBackoffKey(pod, c.Image), a.clock.Now())
	return in
}
