package hoststats

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/agent/podspec"
	"github.com/minikubelet/minikubelet/cgroups"
)

const mi = 1 << 20

// testEngine is the engine as the provider sees it (Engine), on temporary
// directories laid out as the agent's: <root>/pods/<uid> with its
// emptyDirs under volumes/kubernetes.io~empty-dir, and the log directories
// under their own root. It runs the pods marked running.
type testEngine struct {
	root, logRoot string
	// cgroups and timeout are the provider's Config.Cgroups (nil: none)
	// and Config.RuntimeTimeout.
	cgroups cgroups.Manager
	timeout time.Duration

	mu      sync.Mutex
	running map[types.UID]bool
}

func newTestEngine(t *testing.T) *testEngine {
	t.Helper()
	return &testEngine{root: t.TempDir(), logRoot: t.TempDir(), timeout: 30 * time.Second, running: map[types.UID]bool{}}
}

// run marks the pods running (Has).
func (e *testEngine) run(pods ...*v1.Pod) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, p := range pods {
		e.running[p.UID] = true
	}
}

func (e *testEngine) Has(uid types.UID) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.running[uid]
}

func (e *testEngine) PodDir(p *v1.Pod) string    { return filepath.Join(e.root, "pods", string(p.UID)) }
func (e *testEngine) PodLogDir(p *v1.Pod) string { return podspec.LogDir(e.logRoot, p) }
func (e *testEngine) EmptyDirPath(p *v1.Pod, name string) string {
	return filepath.Join(e.PodDir(p), "volumes", "kubernetes.io~empty-dir", name)
}
func (e *testEngine) PodCgroup(p *v1.Pod) cgroups.Name {
	return cgroups.PodName(cgroups.KubepodsBestEffort, string(p.UID))
}

// provider is the stats provider over e, with the runtime's container
// stats stats.
func (e *testEngine) provider(stats ContainerStatsLister) *Provider {
	return New(Config{RootDir: e.root, Cgroups: e.cgroups, RuntimeTimeout: e.timeout, Stats: stats}, e)
}
