package agent

// User namespaces (spec.hostUsers: false) are agent/userns's (Manager):
// the engine passes it its config and runtime and fails a pod the runtime
// cannot run in one.

import (
	"context"
	"path/filepath"
	"sync"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/userns"
)

// reasonUserNamespacesNotSupported is the pod's status reason and event
// reason when the runtime cannot run it in a user namespace.
const reasonUserNamespacesNotSupported = "UserNamespacesNotSupported"

// userNSState is the agent's user namespace manager, made on first use.
type userNSState struct {
	once sync.Once
	m    *userns.Manager
}

// userNSManager returns the agent's user namespace manager: the pool read
// from the config when the first pod wants a range, the runtime asked
// through a.runtime as it is then.
func (a *Agent) userNSManager() *userns.Manager {
	a.userNS.once.Do(func() {
		a.userNS.m = userns.NewManager(userns.Inputs{
			PodsDir: filepath.Join(a.cfg.RootDir, "pods"),
			Config:  func() (userns.Config, v1.ResourceList) { return a.cfg.UserNamespaces, a.cfg.Node.Allocatable },
			Handlers: func(ctx context.Context) ([]*runtimeapi.RuntimeHandler, error) {
				st, err := a.runtime.Status(ctx, false)
				return st.GetRuntimeHandlers(), err
			},
			Version: a.runtimeVersion, // imagevolume.go
		})
	})
	return a.userNS.m
}

// refuseUserNamespaces fails the pod for good (phase Failed, reason
// UserNamespacesNotSupported, a Warning event) when it asks for a user
// namespace the runtime cannot give it (userns.Manager.Refusal), and
// reports whether it did.
func (a *Agent) refuseUserNamespaces(ctx context.Context, w *podWorker, pod *v1.Pod) bool {
	msg, err := a.userNSManager().Refusal(ctx, pod)
	if err != nil {
		w.logger.Warn("Ask the runtime for its status failed", "err", err)
	}
	if msg == "" {
		return false
	}
	if w.setFailed(reasonUserNamespacesNotSupported, msg) {
		w.event(v1.EventTypeWarning, reasonUserNamespacesNotSupported, "%s", msg)
	}
	return true
}
