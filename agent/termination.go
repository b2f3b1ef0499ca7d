package agent

// Termination messages (kubelet-facts §6.6): a host file bind-mounted at the
// container's terminationMessagePath before it is created, read back once the
// container has exited (agent/termmsg); with terminationMessagePolicy
// FallbackToLogsOnError a failed container that left the file empty gets the
// tail of its log instead.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/podspec"
	"github.com/minikubelet/minikubelet/agent/termmsg"
)

// createTerminationMessageFile creates an empty, world-writable file
// <podDir>/containers/<container>/<8 hex> for one container instance (the
// container may run as any user) and returns its host path. Each instance
// gets its own file, so a restarted container does not report its
// predecessor's message; the files go with the pod directory.
func (a *Agent) createTerminationMessageFile(pod *v1.Pod, container string) (string, error) {
	dir := filepath.Join(a.podDir(pod), "containers", container)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create termination message directory: %w", err)
	}
	for range 5 {
		p := filepath.Join(dir, fmt.Sprintf("%08x", rand.Uint32()))
		f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o666)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("create termination message file: %w", err)
		}
		if err := f.Close(); err != nil {
			return "", fmt.Errorf("create termination message file: %w", err)
		}
		// The umask trimmed the mode given to open.
		if err := os.Chmod(p, 0o666); err != nil {
			return "", fmt.Errorf("create termination message file: %w", err)
		}
		return p, nil
	}
	return "", fmt.Errorf("create termination message file in %s: no free name", dir)
}

// terminationMessage reads the termination message of an exited container:
// its annotations give the path and policy (nil = the runtime's copy), and
// the runtime's status gives the host file and the log. It costs one
// ContainerStatus call; callers that hold the status use
// terminationMessageFromStatus. The result goes after the runtime's own
// message, see termmsg.Join.
func (a *Agent) terminationMessage(ctx context.Context, containerID string, annotations map[string]string, exitCode int32) string {
	resp, err := a.runtime.ContainerStatus(ctx, containerID, false)
	if err != nil {
		return ""
	}
	s := resp.GetStatus()
	if annotations == nil {
		annotations = s.GetAnnotations()
	}
	return termmsg.Read(annotations[podspec.AnnotationTerminationMessagePath], annotations[podspec.AnnotationTerminationMsgPolicy], exitCode, s.GetMounts(), s.GetLogPath(), a.podsDir())
}

// terminationMessageFromStatus is terminationMessage for a container status
// already at hand (observePod reads one per container); it does no CRI
// call. The status must be of an exited container.
func (a *Agent) terminationMessageFromStatus(s *runtimeapi.ContainerStatus) string {
	an := s.GetAnnotations()
	return termmsg.Read(an[podspec.AnnotationTerminationMessagePath], an[podspec.AnnotationTerminationMsgPolicy], s.GetExitCode(), s.GetMounts(), s.GetLogPath(), a.podsDir())
}

// podsDir is <rootDir>/pods, where every pod directory lives.
func (a *Agent) podsDir() string { return filepath.Join(a.cfg.RootDir, "pods") }
