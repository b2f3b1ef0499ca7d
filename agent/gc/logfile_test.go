package gc

import (
	"testing"

	"github.com/stretchr/testify/assert"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The log file is <container>/<restart>.log from the keys the agent names;
// without either, none.
func TestContainerLogFile(t *testing.T) {
	logFile := ContainerLogFile("name", "restart")
	c := &runtimeapi.Container{
		Labels:      map[string]string{"name": "web"},
		Annotations: map[string]string{"restart": "3"},
	}
	assert.Equal(t, "web/3.log", logFile(c))
	assert.Empty(t, logFile(&runtimeapi.Container{}))
	assert.Empty(t, logFile(&runtimeapi.Container{Labels: c.Labels}))
}
