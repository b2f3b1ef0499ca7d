package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/cni"
)

// runtimeNetworkReady asks the runtime for its NetworkReady condition.
func runtimeNetworkReady(t *testing.T, r *privateRuntime) bool {
	t.Helper()
	ctx, cancel := shortCtx()
	defer cancel()
	st, err := r.rt.Status(ctx, false)
	require.NoError(t, err)
	for _, c := range st.GetStatus().GetConditions() {
		if c.Type == "NetworkReady" {
			return c.Status
		}
	}
	return false
}

// TestChaosCNIConflistRemoved removes the pod network's conflist while the
// daemon runs: a running pod keeps running; a new pod waits in
// ContainerCreating with a message that names the network and the missing
// file, and nothing is created for it; once the conflist is back (the
// operator restores it: the daemon, like the kubelet, does not rewrite the
// runtime's CNI config behind its back) the pod starts.
func TestChaosCNIConflistRemoved(t *testing.T) {
	t.Parallel()
	r := newPrivateRuntime(t)
	d := r.newDaemon(t, []string{"chaos-cni-old", "chaos-cni-new"})
	d.start(t)
	c := d.api()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	_, err := c.CreatePod(ctx, chaosPod("chaos-cni-old"))
	require.NoError(t, err)
	old := d.waitPod(t, "chaos-cni-old", "Running", 2*time.Minute, isRunning)
	oldID := old.Status.ContainerStatuses[0].ContainerID

	require.NoError(t, cni.Uninstall(r.network))
	waitFor(t, "the runtime to drop the pod network", 30*time.Second, func() string {
		if runtimeNetworkReady(t, r) {
			return "NetworkReady is still true"
		}
		return ""
	})

	_, err = c.CreatePod(ctx, chaosPod("chaos-cni-new"))
	require.NoError(t, err)
	p := d.waitPod(t, "chaos-cni-new", "waiting for the network, naming it", 30*time.Second, func(p *v1.Pod) bool {
		if p == nil || len(p.Status.ContainerStatuses) == 0 {
			return false
		}
		w := p.Status.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == "ContainerCreating" && strings.Contains(w.Message, `pod network "minikubelet" (`+r.network.PodCIDR+`) has no conflist`)
	})
	require.Equal(t, v1.PodPending, p.Status.Phase)
	msg := p.Status.ContainerStatuses[0].State.Waiting.Message
	require.Contains(t, msg, "network is not ready: container runtime network not ready: NetworkReady=false", "the kubelet's words first")
	require.Contains(t, msg, cni.ConfPath(r.network), "names the missing file")
	require.Contains(t, msg, "restore it or restart minikubelet", "says what to do")
	t.Logf("waiting pod's message: %s", msg)
	ev, err := c.Events(ctx, "default", "chaos-cni-new")
	require.NoError(t, err)
	var reasons []string
	for _, e := range ev.Items {
		reasons = append(reasons, e.Reason)
	}
	require.Contains(t, reasons, "NetworkNotReady")
	v, err := observeRuntime(r)
	require.NoError(t, err)
	require.Empty(t, v.ready[string(p.UID)], "no sandbox while the network is missing")
	require.Empty(t, v.notReady[string(p.UID)], "no sandbox while the network is missing")

	// The old pod is untouched.
	cur, err := c.GetPod(ctx, "default", "chaos-cni-old")
	require.NoError(t, err)
	require.True(t, isRunning(cur), podSummary(cur))
	require.Equal(t, oldID, cur.Status.ContainerStatuses[0].ContainerID)

	// The operator puts it back: the pod starts.
	_, _, err = cni.Install(ctx, r.network)
	require.NoError(t, err)
	back := time.Now()
	d.waitPod(t, "chaos-cni-new", "Running once the conflist is back", time.Minute, isRunning)
	t.Logf("started %s after the conflist came back", time.Since(back).Round(time.Millisecond))
	cur, err = c.GetPod(ctx, "default", "chaos-cni-old")
	require.NoError(t, err)
	require.Equal(t, oldID, cur.Status.ContainerStatuses[0].ContainerID)
	require.Zero(t, cur.Status.ContainerStatuses[0].RestartCount)
	v, err = observeRuntime(r)
	require.NoError(t, err)
	require.Empty(t, ipLeaks(r.reservations(t), v))
}
