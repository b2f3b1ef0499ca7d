package agent

import (
	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/agent/podspec"
)

// definitionChanged reports whether the running instance cur was created
// from another definition of c than the current one (resources aside: a
// change of them is a resize, resize.go). An instance a version before
// in-place resize created carries the hash over the whole spec
// (podspec.LegacyContainerHash): it matches that one too.
func definitionChanged(cur *containerInfo, c *v1.Container) bool {
	return cur.hash != podspec.ContainerHash(c) && cur.hash != podspec.LegacyContainerHash(c)
}
