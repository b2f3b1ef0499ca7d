package agent

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikubelet/minikubelet/agent/node"
)

// TestDetectNode_RealHost_Privileged reads this machine's /proc/meminfo
// through Detect: it has at least one CPU and some memory. It is with
// the privileged tests (hack/e2e.sh runs them) because a unit test does
// not read the host's state (issue #17); TestDetectNode covers the
// parsing and the reserves on a fake host.
func TestDetectNode_RealHost_Privileged(t *testing.T) {
	requiresPrivileged(t)
	n, err := node.Detect("node1", nil, nil, nil, nil)
	require.NoError(t, err)
	assert.Equal(t, int64(runtime.NumCPU())*1000, n.Capacity.Cpu().MilliValue())
	assert.Positive(t, n.Capacity.Memory().Value())
	assert.Equal(t, n.Capacity, n.Allocatable)
}
