package floor

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	critest "k8s.io/cri-api/pkg/apis/testing"
)

// fakeRuntime is cri-api's fakes as the floor's Runtime.
type fakeRuntime struct {
	*critest.FakeRuntimeService
	*critest.FakeImageService
}

var _ Runtime = fakeRuntime{}

const image = "registry.test/testserver:v1"

func newClient(t *testing.T, ns string) (*Client, fakeRuntime) {
	rt := fakeRuntime{critest.NewFakeRuntimeService(), critest.NewFakeImageService()}
	rt.SetFakeImages([]string{image})
	dir := t.TempDir()
	return &Client{RT: rt, LogDir: filepath.Join(dir, "logs"), FileDir: filepath.Join(dir, "files"), Image: image, Args: []string{"--port", "8080"}, Namespace: ns}, rt
}

// Start makes the kubelet's minimum for one pod, in the kubelet's order,
// labelled in the client's namespace; Remove undoes all of it.
func TestClient_StartAndRemove(t *testing.T) {
	for _, tc := range []struct{ name, ns, wantNS string }{
		{name: "default namespace", ns: "", wantNS: DefaultNamespace},
		{name: "run-launch's", ns: "bench-run", wantNS: "bench-run"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, rt := newClient(t, tc.ns)
			ctx := context.Background()
			p, err := c.Start(ctx, "pod-1")
			require.NoError(t, err)
			require.NoError(t, rt.AssertCalls([]string{"RunPodSandbox", "PodSandboxStatus", "CreateContainer", "StartContainer"}))
			assert.Equal(t, tc.wantNS, p.Namespace)
			assert.NotEmpty(t, p.SandboxID)
			assert.NotEmpty(t, p.ContainerID)
			sb := rt.Sandboxes[p.SandboxID]
			require.NotNil(t, sb)
			assert.Equal(t, tc.wantNS, sb.Metadata.Namespace)
			assert.Equal(t, map[string]string{LabelPodName: "pod-1", LabelPodNS: tc.wantNS, LabelPodUID: p.UID, LabelBench: "raw"}, sb.Labels)
			ctr := rt.Containers[p.ContainerID]
			require.NotNil(t, ctr)
			assert.Equal(t, "app", ctr.Labels[LabelCtrName])
			logDir := filepath.Join(c.LogDir, tc.wantNS+"_pod-1_"+p.UID)
			assert.DirExists(t, filepath.Join(logDir, "app"))
			assert.FileExists(t, filepath.Join(c.FileDir, p.UID, "etc-hosts"))

			require.NoError(t, c.Remove(ctx, p))
			assert.Empty(t, rt.Sandboxes)
			assert.NoDirExists(t, logDir)
			_, err = os.Stat(filepath.Join(c.FileDir, p.UID))
			assert.True(t, os.IsNotExist(err))
		})
	}
}

// A missing image fails the start after the sandbox, which Remove then
// takes down.
func TestClient_StartWithoutImage(t *testing.T) {
	c, rt := newClient(t, "")
	c.Image = "registry.test/absent:v1"
	p, err := c.Start(context.Background(), "pod-2")
	require.ErrorContains(t, err, "is not present")
	require.NoError(t, c.Remove(context.Background(), p))
	assert.Empty(t, rt.Sandboxes)
}
