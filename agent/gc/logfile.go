package gc

import (
	"path/filepath"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ContainerLogFile is a ContainerGCConfig.LogFile for an agent whose
// containers write <container>/<restart>.log below their pod log
// directory, the container's name in its label nameLabel and its restart
// count in its annotation restartAnnotation; "" when either is missing.
// The agent passes its own keys, which this package cannot import.
func ContainerLogFile(nameLabel, restartAnnotation string) func(c *runtimeapi.Container) string {
	return func(c *runtimeapi.Container) string {
		name, restart := c.GetLabels()[nameLabel], c.GetAnnotations()[restartAnnotation]
		if name == "" || restart == "" {
			return ""
		}
		return filepath.Join(name, restart+".log")
	}
}
