package e2e

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	containers "github.com/containerd/containerd/api/services/containers/v1"
	snapshots "github.com/containerd/containerd/api/services/snapshots/v1"
	tasks "github.com/containerd/containerd/api/services/tasks/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/cri"
)

// A container start cut short on containerd 2.x can leave the container's
// task behind under a record the CRI shows as exited with a StartError,
// and from then on containerd refuses to remove the container or its
// sandbox ("cannot delete running task"). When it happens depends on where
// the cancellation lands, so this test makes the same state on purpose:
// it creates the container's task through containerd's own task service,
// so that the CRI's StartContainer fails (the task exists already) and
// records the StartError, with the task left. The CRI removal is then
// refused exactly as in the chaos suite (cri.IsStuckTask), and
// cri.Client.RemoveStuckTask, what the agent calls in that case, gets the
// container and the sandbox removed. Both containerd 1.6 and 2.x.
func TestRuntime_StuckTaskRemoved(t *testing.T) {
	t.Parallel()
	c := ctx(t)
	image := suite.registry + "/minikubelet/busybox:1.36"
	_, err := suite.rt.PullImage(c, &runtimeapi.ImageSpec{Image: image}, nil, nil)
	require.NoError(t, err, "pull %s", image)

	uid := fmt.Sprintf("e2e-stuck-%d", time.Now().UnixNano())
	sbConfig := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "e2e-stuck-task", Namespace: "e2e", Uid: uid},
		LogDirectory: t.TempDir(),
		Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE},
		}},
	}
	sb, err := suite.rt.RunPodSandbox(c, sbConfig, "")
	require.NoError(t, err, "RunPodSandbox")
	t.Cleanup(func() {
		// Best effort if the test failed half-way: delete a stuck task
		// first, so the sandbox can go.
		ctrs, _ := suite.rt.ListContainers(ctx(t), &runtimeapi.ContainerFilter{PodSandboxId: sb})
		for _, ct := range ctrs {
			_ = suite.rt.RemoveStuckTask(ctx(t), ct.Id)
		}
		_ = suite.rt.StopPodSandbox(ctx(t), sb)
		_ = suite.rt.RemovePodSandbox(ctx(t), sb)
	})
	id, err := suite.rt.CreateContainer(c, sb, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "stuck"},
		Image:    &runtimeapi.ImageSpec{Image: image},
		Command:  []string{"sleep", "3600"},
		LogPath:  "stuck.log",
	}, sbConfig)
	require.NoError(t, err, "CreateContainer")

	// The task, created past the CRI as containerd's CRI plugin would
	// create it in StartContainer.
	sock := strings.TrimPrefix(suite.endpoint, "unix://")
	conn, err := grpc.NewClient("passthrough:///"+sock,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}),
		grpc.WithAuthority("localhost"))
	require.NoError(t, err)
	defer conn.Close()
	nc := metadata.AppendToOutgoingContext(c, "containerd-namespace", "k8s.io")
	ctr, err := containers.NewContainersClient(conn).Get(nc, &containers.GetContainerRequest{ID: id})
	require.NoError(t, err, "containerd Containers.Get")
	mounts, err := snapshots.NewSnapshotsClient(conn).Mounts(nc, &snapshots.MountsRequest{
		Snapshotter: ctr.GetContainer().GetSnapshotter(), Key: ctr.GetContainer().GetSnapshotKey(),
	})
	require.NoError(t, err, "containerd Snapshots.Mounts")
	_, err = tasks.NewTasksClient(conn).Create(nc, &tasks.CreateTaskRequest{ContainerID: id, Rootfs: mounts.GetMounts()})
	require.NoError(t, err, "containerd Tasks.Create")

	err = suite.rt.StartContainer(c, id)
	require.Error(t, err, "StartContainer over an existing task")
	st, err := suite.rt.ContainerStatus(c, id, false)
	require.NoError(t, err)
	assert.Equal(t, runtimeapi.ContainerState_CONTAINER_EXITED, st.GetStatus().GetState(), "the CRI records the failed start as exited")
	assert.Equal(t, "StartError", st.GetStatus().GetReason())

	err = suite.rt.RemoveContainer(c, id)
	require.Error(t, err, "RemoveContainer of a container whose task is left")
	require.True(t, cri.IsStuckTask(err), "the refusal is recognised as a stuck task: %v", err)
	err = suite.rt.RemovePodSandbox(c, sb)
	if err != nil {
		// containerd 2.x stops the sandbox and refuses; 1.6 may remove
		// the sandbox record first; either way the task is what blocks.
		require.True(t, cri.IsStuckTask(err), "RemovePodSandbox refused for another reason: %v", err)
	}

	require.NoError(t, suite.rt.RemoveStuckTask(c, id), "RemoveStuckTask")
	require.NoError(t, suite.rt.RemoveContainer(c, id), "RemoveContainer after RemoveStuckTask")
	if err := suite.rt.StopPodSandbox(c, sb); !cri.IsNotFound(err) {
		require.NoError(t, err, "StopPodSandbox")
	}
	if err := suite.rt.RemovePodSandbox(c, sb); !cri.IsNotFound(err) {
		require.NoError(t, err, "RemovePodSandbox")
	}
	_, err = tasks.NewTasksClient(conn).Get(nc, &tasks.GetRequest{ContainerID: id})
	assert.True(t, cri.IsNotFound(err), "no task is left: %v", err)
	// A second call finds nothing and is no error.
	require.NoError(t, suite.rt.RemoveStuckTask(c, id))
}
