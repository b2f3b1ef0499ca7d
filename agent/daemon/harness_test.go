package daemon

// The engine's test harness (agent/agent_test.go), as this package needs
// it: the agent over the fake runtime and a fake clock, built through
// agent's exported API only.

import (
	"context"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/agent"
	"github.com/minikubelet/minikubelet/agent/manifest"
	"github.com/minikubelet/minikubelet/cni"
	"github.com/minikubelet/minikubelet/cri/critest"
)

// testNetwork is a pod network whose every host directory is private to
// the test (agent's testNetwork: a unit test reads no host state).
func testNetwork(tb testing.TB) cni.Config {
	return cni.Config{ConfDir: tb.TempDir(), BinDirs: []string{tb.TempDir()}, DataDir: tb.TempDir(), CacheDir: tb.TempDir()}
}

type harness struct {
	fake  *critest.Fake
	clock *testclock.FakeClock
	// cfg is the agent's configuration (a restart builds a new agent
	// with it).
	cfg   agent.Config
	agent *agent.Agent
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{fake: critest.New(), clock: testclock.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))}
	h.fake.Now = h.clock.Now
	h.cfg = agent.Config{
		NodeName:   "node-1",
		RootDir:    t.TempDir(),
		PodLogDir:  t.TempDir(),
		ResolvConf: "/nonexistent",
		Network:    testNetwork(t),
		// Never the host's own addresses.
		HostIPs: []string{"192.0.2.1"},
	}
	h.agent = agent.New(h.cfg, agent.Deps{Runtime: h.fake.Runtime, Images: h.fake.Images, Clock: h.clock})
	t.Cleanup(h.agent.StopWorkers)
	return h
}

// testPod decodes a manifest with the real loader, so fixtures carry the
// API-server defaults.
func testPod(t *testing.T, text string) *v1.Pod {
	t.Helper()
	pods, err := manifest.PrepareManifest([]byte(text), "test.yaml", "node-1")
	require.NoError(t, err)
	require.Len(t, pods, 1)
	return pods[0]
}

// assertNoFileContains fails when a file under dir holds needle.
func assertNoFileContains(t *testing.T, dir, needle string) {
	t.Helper()
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		assert.NotContains(t, string(data), needle, "%s holds the secret", p)
		return nil
	}))
}

// scriptedRuntime is the fake runtime giving named containers extra
// annotations (critest's exit scripts), as agent's prompt_sync_test.go.
type scriptedRuntime struct {
	*critest.FakeRuntime
	// annotate maps a container name to the annotations it gets.
	annotate map[string]map[string]string
}

func (r scriptedRuntime) CreateContainer(ctx context.Context, sandboxID string, cfg *runtimeapi.ContainerConfig, sbCfg *runtimeapi.PodSandboxConfig) (string, error) {
	if extra, ok := r.annotate[cfg.GetMetadata().GetName()]; ok {
		cfg = proto.Clone(cfg).(*runtimeapi.ContainerConfig)
		maps.Copy(cfg.Annotations, extra)
	}
	return r.FakeRuntime.CreateContainer(ctx, sandboxID, cfg, sbCfg)
}
