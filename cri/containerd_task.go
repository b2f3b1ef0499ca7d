package cri

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"time"

	tasks "github.com/containerd/containerd/api/services/tasks/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// A stuck task is a containerd bug the CRI cannot get out of: containerd
// 2.x (seen on 2.4.2) creates the task of a container in StartContainer,
// and when the caller goes away between the shim creating the task and
// containerd asking the shim for its PID, StartContainer fails ("failed to
// create containerd task: failed to get task pid: context canceled"), the
// container is recorded as exited with a StartError, and the task is left
// behind: the CRI plugin deletes tasks only from the exit monitor that a
// successful start sets up (since containerd 1.7 its event monitor no
// longer handles TaskExit). From then on RemoveContainer and
// RemovePodSandbox fail with "cannot delete running task" for good, and
// StopContainer does nothing for a container the CRI believes exited. The
// kubelet has no answer either; minikubelet reaches past the CRI to
// containerd's own task service, which containerd serves on the same
// socket, and deletes that one task.

// criNamespace is the containerd namespace the CRI plugin keeps its
// containers in (containerd's constants.K8sContainerdNamespace).
const criNamespace = "k8s.io"

// namespaceHeader is the gRPC metadata key containerd reads the namespace
// from (containerd's namespaces.GRPCHeader).
const namespaceHeader = "containerd-namespace"

// IsStuckTask reports whether err is containerd refusing to remove a
// container, or a sandbox holding one, because a task is left that the CRI
// does not know about (see above): the case RemoveStuckTask repairs. A
// container the CRI itself believes running is refused with another
// message ("container is running, please stop it first"), so this never
// matches a container that merely needs stopping.
func IsStuckTask(err error) bool {
	return err != nil && codeOf(err) == codes.FailedPrecondition && strings.Contains(Message(err), "cannot delete running task")
}

// TaskRemover is implemented by a client that can reach containerd's own
// task service; the agent type-asserts its Runtime to it.
type TaskRemover interface {
	// RemoveStuckTask kills every process of containerID's containerd task
	// and deletes the task, so that the CRI can then remove the container.
	// It returns nil when there is no such task any more, and an error
	// satisfying IsUnimplemented when the runtime is not containerd.
	RemoveStuckTask(ctx context.Context, containerID string) error
}

var _ TaskRemover = (*Client)(nil)

// stuckTaskWait bounds how long RemoveStuckTask waits for the killed
// process to be reaped before deleting the task.
const stuckTaskWait = 10 * time.Second

// RemoveStuckTask implements TaskRemover through containerd's
// containerd.services.tasks.v1.Tasks service in the CRI namespace: Kill
// (SIGKILL, all processes), Wait for the exit, Delete.
func (c *Client) RemoveStuckTask(ctx context.Context, containerID string) error {
	ctx = metadata.AppendToOutgoingContext(ctx, namespaceHeader, criNamespace)
	tc := tasks.NewTasksClient(c.conn)
	gone := func(err error) bool { return codeOf(err) == codes.NotFound }
	err := call(ctx, "containerd Tasks.Kill", c.opts.Timeout, func(ctx context.Context) error {
		_, err := tc.Kill(ctx, &tasks.KillRequest{ContainerID: containerID, Signal: uint32(syscall.SIGKILL), All: true})
		return err
	})
	switch {
	case gone(err):
		return nil
	case isUnimplemented(err):
		return err
	case err != nil && codeOf(err) != codes.FailedPrecondition:
		// FailedPrecondition: the process has exited already.
		return fmt.Errorf("kill task: %w", err)
	}
	err = call(ctx, "containerd Tasks.Wait", stuckTaskWait, func(ctx context.Context) error {
		_, err := tc.Wait(ctx, &tasks.WaitRequest{ContainerID: containerID})
		return err
	})
	if err != nil && !gone(err) {
		return fmt.Errorf("wait for the killed task: %w", err)
	}
	err = call(ctx, "containerd Tasks.Delete", c.opts.Timeout, func(ctx context.Context) error {
		_, err := tc.Delete(ctx, &tasks.DeleteTaskRequest{ContainerID: containerID})
		return err
	})
	if err != nil && !gone(err) {
		return fmt.Errorf("delete task: %w", err)
	}
	return nil
}

// RemoveStuckTask implements TaskRemover when the decorated runtime does,
// and answers Unimplemented otherwise (a fake runtime, another CRI
// runtime).
func (x *Instrumented) RemoveStuckTask(ctx context.Context, containerID string) error {
	start := time.Now()
	var err error
	if tr, ok := x.rt.(TaskRemover); ok {
		err = tr.RemoveStuckTask(ctx, containerID)
	} else {
		err = status.Error(codes.Unimplemented, "the runtime client cannot reach containerd's task service")
	}
	x.record(ctx, "RemoveStuckTask", start, err, "containerID", containerID)
	return err
}

var _ TaskRemover = (*Instrumented)(nil)
