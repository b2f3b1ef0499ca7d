package agent

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/agent/podspec"
	"github.com/minikubelet/minikubelet/cri"
	"github.com/minikubelet/minikubelet/cri/critest"
)

// logPathRuntime is critest's runtime with the log paths containerd would
// report (critest's ContainerStatus carries none).
type logPathRuntime struct {
	cri.Runtime
	// paths maps a container ID to its log path; set before the agent
	// runs.
	paths map[string]string
}

var _ cri.Runtime = (*logPathRuntime)(nil)

// ContainerStatus adds the log path.
func (r *logPathRuntime) ContainerStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.ContainerStatusResponse, error) {
	resp, err := r.Runtime.ContainerStatus(ctx, id, verbose)
	if err == nil {
		resp.Status.LogPath = r.paths[id]
	}
	return resp, err
}

// The engine's log rotator (agent/logrotate, wired in logrotate.go) takes
// this agent's running containers only, not another minikubelet's nor one
// without the managed-by label, and names the rotated file by the agent's
// clock.
func TestAgent_RotateLogs_OwnContainersOnly(t *testing.T) {
	ctx := context.Background()
	fake := critest.New()
	clk := testclock.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC))
	fake.Now = clk.Now
	rt := &logPathRuntime{Runtime: fake.Runtime, paths: map[string]string{}}
	dir := t.TempDir()
	a := New(Config{NodeName: "node-1", RootDir: t.TempDir(), PodLogDir: dir, AgentID: "agent-a", ResolvConf: "/nonexistent", Network: testNetwork(t), HostIPs: []string{"192.0.2.1"}},
		Deps{Runtime: rt, Images: fake.Images, Clock: clk})
	logOf := map[string]string{}
	for name, labels := range map[string]map[string]string{
		"ours":        {podspec.LabelManagedBy: podspec.ManagedByValue, podspec.LabelAgent: "agent-a"},
		"other-agent": {podspec.LabelManagedBy: podspec.ManagedByValue, podspec.LabelAgent: "agent-b"},
		"unmanaged":   {},
	} {
		sb, err := fake.Runtime.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{
			Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: name + "-uid"},
		}, "")
		require.NoError(t, err)
		labels[podspec.LabelContainerName] = name
		id, err := fake.Runtime.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: name},
			Image:    &runtimeapi.ImageSpec{Image: "registry.example/app:1.0"},
			Labels:   labels,
		}, nil)
		require.NoError(t, err)
		require.NoError(t, fake.Runtime.StartContainer(ctx, id))
		path := filepath.Join(dir, name, "0.log")
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, make([]byte, 101), 0o640))
		rt.paths[id] = path
		logOf[name] = path
	}

	require.NoError(t, a.newLogRotator().Pass(ctx, LogRotationConfig{MaxSize: 100, MaxFiles: 2}))
	for name, path := range logOf {
		_, err := os.Stat(path + ".20260102-030405.123456")
		assert.Equal(t, name == "ours", err == nil, "%s's log rotated", name)
	}
}
