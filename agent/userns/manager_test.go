package userns

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"
)

func usernsPod(uid string, hostUsers *bool) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)}, Spec: v1.PodSpec{HostUsers: hostUsers}}
}

// A pod in the node's user namespace asks nothing of the Manager, not
// even of a nil one; a pod with hostUsers: false gets the pod's range,
// recorded in its directory, and frees it on Release.
func TestManagerPodNamespace(t *testing.T) {
	var none *Manager
	ns, err := none.PodNamespace(usernsPod("host", nil))
	assert.NoError(t, err)
	assert.Nil(t, ns)
	assert.NoError(t, none.Release(usernsPod("host", ptr.To(true))))

	dir := t.TempDir()
	asked := 0
	m := NewManager(Inputs{PodsDir: dir, Config: func() (Config, v1.ResourceList) {
		asked++
		return Config{}, nil
	}})
	pod := usernsPod("u1", ptr.To(false))
	ns, err = m.PodNamespace(pod)
	require.NoError(t, err)
	assert.Equal(t, Mapping{HostID: 65536, Length: 65536}.CRI().String(), ns.String())
	_, err = os.Stat(filepath.Join(dir, "u1", MappingsFile))
	require.NoError(t, err)
	ns, err = m.PodNamespace(pod)
	require.NoError(t, err)
	assert.Equal(t, Mapping{HostID: 65536, Length: 65536}.CRI().String(), ns.String(), "the recorded range again")
	require.NoError(t, m.Release(pod))
	_, err = os.Stat(filepath.Join(dir, "u1", MappingsFile))
	assert.True(t, os.IsNotExist(err))
	assert.Equal(t, 1, asked, "the config is read once, for the allocator")
}

// A pool too small for the node's pods (its allocatable pod count when
// the pool names none) fails the pod's range; Release has nothing to do.
func TestManagerPoolTooSmallForNode(t *testing.T) {
	m := NewManager(Inputs{PodsDir: t.TempDir(), Config: func() (Config, v1.ResourceList) {
		return Config{Length: 2 * DefaultIDsPerPod}, v1.ResourceList{v1.ResourcePods: resource.MustParse("3")}
	}})
	pod := usernsPod("u1", ptr.To(false))
	_, err := m.PodNamespace(pod)
	assert.ErrorContains(t, err, "fewer than the node's 3 pods")
	assert.NoError(t, m.Release(pod))
}

// The runtime is asked once whether it supports user namespaces; a
// refusal names its version; a Status failure lets the pod go on and is
// asked again.
func TestManagerRefusal(t *testing.T) {
	ctx := context.Background()
	statusCalls := 0
	var handlers []*runtimeapi.RuntimeHandler
	var statusErr error
	m := NewManager(Inputs{
		Handlers: func(context.Context) ([]*runtimeapi.RuntimeHandler, error) {
			statusCalls++
			return handlers, statusErr
		},
		Version: func(context.Context) (string, string, error) { return "containerd", "v1.6.38", nil },
	})
	msg, err := m.Refusal(ctx, usernsPod("host", nil))
	assert.NoError(t, err)
	assert.Empty(t, msg)
	assert.Equal(t, 0, statusCalls, "a pod in the node's user namespace asks nothing")

	statusErr = errors.New("unavailable")
	msg, err = m.Refusal(ctx, usernsPod("u1", ptr.To(false)))
	assert.Equal(t, statusErr, err)
	assert.Empty(t, msg)

	statusErr = nil
	msg, err = m.Refusal(ctx, usernsPod("u1", ptr.To(false)))
	assert.NoError(t, err)
	assert.Equal(t, Refusal("containerd", "v1.6.38"), msg)
	_, _ = m.Refusal(ctx, usernsPod("u2", ptr.To(false)))
	assert.Equal(t, 2, statusCalls, "the answer is kept")

	ok := NewManager(Inputs{Handlers: func(context.Context) ([]*runtimeapi.RuntimeHandler, error) {
		return []*runtimeapi.RuntimeHandler{{Features: &runtimeapi.RuntimeHandlerFeatures{UserNamespaces: true}}}, nil
	}})
	msg, err = ok.Refusal(ctx, usernsPod("u1", ptr.To(false)))
	assert.NoError(t, err)
	assert.Empty(t, msg)

	unknown := NewManager(Inputs{
		Handlers: func(context.Context) ([]*runtimeapi.RuntimeHandler, error) { return nil, nil },
		Version:  func(context.Context) (string, string, error) { return "", "", errors.New("no") },
	})
	msg, _ = unknown.Refusal(ctx, usernsPod("u1", ptr.To(false)))
	assert.Equal(t, Refusal("the runtime", "(version unknown)"), msg)
}
