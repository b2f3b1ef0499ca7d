package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeRuntime answers CRI Status with what the test sets.
type fakeRuntime struct {
	mu   sync.Mutex
	resp *runtimeapi.StatusResponse
	err  error
}

var _ RuntimeStatus = (*fakeRuntime)(nil)

func (f *fakeRuntime) Status(context.Context, bool) (*runtimeapi.StatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.resp, f.err
}

func (f *fakeRuntime) set(resp *runtimeapi.StatusResponse, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.resp, f.err = resp, err
}

// nodeHarness is a NodeAgent against a fake clientset, a fake clock, a
// fake runtime and a fake host.
type nodeHarness struct {
	client  *fake.Clientset
	clock   *clocktesting.FakeClock
	runtime *fakeRuntime
	node    *NodeAgent
}

var t0 = time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)

func newNodeHarness(t *testing.T, objects ...runtime.Object) *nodeHarness {
	t.Helper()
	h := &nodeHarness{
		client:  fake.NewClientset(objects...),
		clock:   clocktesting.NewFakeClock(t0),
		runtime: &fakeRuntime{resp: criStatus(true, true)},
	}
	// The fake clientset assigns no UIDs; the API server does.
	created := 0
	h.client.PrependReactor("create", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if obj, ok := a.(k8stesting.CreateAction).GetObject().(metav1.Object); ok && obj.GetUID() == "" {
			created++
			obj.SetUID(types.UID(fmt.Sprintf("uid-%s-%d", obj.GetName(), created)))
		}
		return false, nil, nil
	})
	n, err := newNodeAgent(fromClientset(h.client), h.runtime, NodeConfig{
		Node: testNodeInfo(), RuntimeName: "containerd", RuntimeVersion: "1.6.20", Version: "v0.1.0-test", RootDir: "/var/lib/minikubelet",
	}, nil, h.clock, newFakeHost().host())
	require.NoError(t, err)
	h.node = n
	return h
}

func (h *nodeHarness) getNode(t *testing.T) *v1.Node {
	t.Helper()
	n, err := h.client.CoreV1().Nodes().Get(context.Background(), "node-a", metav1.GetOptions{})
	require.NoError(t, err)
	return n
}

func (h *nodeHarness) getLease(t *testing.T) *coordinationv1.Lease {
	t.Helper()
	l, err := h.client.CoordinationV1().Leases(v1.NamespaceNodeLease).Get(context.Background(), "node-a", metav1.GetOptions{})
	require.NoError(t, err)
	return l
}

// writes counts the create, update and patch actions on resource so far.
func (h *nodeHarness) writes(resource string) (n int) {
	for _, a := range h.client.Actions() {
		if a.GetResource().Resource == resource && (a.GetVerb() == "create" || a.GetVerb() == "update" || a.GetVerb() == "patch") {
			n++
		}
	}
	return n
}

func condStatus(t *testing.T, n *v1.Node, typ v1.NodeConditionType) v1.NodeCondition {
	t.Helper()
	c := findCondition(n.Status.Conditions, typ)
	require.NotNil(t, c, "node has no %s condition", typ)
	return *c
}

func TestNodeAgent_RegistersTheNode(t *testing.T) {
	h := newNodeHarness(t)
	uid, err := h.node.register(context.Background())
	require.NoError(t, err)
	require.NoError(t, h.node.syncStatus(context.Background()))

	n := h.getNode(t)
	require.Equal(t, types.UID("uid-node-a-1"), uid)
	require.Equal(t, uid, n.UID)
	require.Equal(t, testNodeInfo().Labels, n.Labels)
	require.Equal(t, testNodeInfo().Capacity, n.Status.Capacity)
	require.Equal(t, testNodeInfo().Allocatable, n.Status.Allocatable)
	require.Equal(t, []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "172.17.0.9"}, {Type: v1.NodeHostName, Address: "node-a"}}, n.Status.Addresses)
	require.Equal(t, "containerd://1.6.20", n.Status.NodeInfo.ContainerRuntimeVersion)
	require.Equal(t, "6.1.0-test-amd64", n.Status.NodeInfo.KernelVersion)
	require.Equal(t, "v0.1.0-test", n.Status.NodeInfo.KubeletVersion)
	require.Equal(t, v1.ConditionTrue, condStatus(t, n, v1.NodeReady).Status)
	require.Equal(t, v1.ConditionFalse, condStatus(t, n, v1.NodeMemoryPressure).Status)
	require.Equal(t, NodeState{
		Ready: v1.ConditionTrue, ReadyMessage: messageReady,
	}, h.node.State(), "the loops record their own outcomes; syncStatus only sets Ready")
}

func TestNodeAgent_AdoptsAnExistingNode(t *testing.T) {
	existing := &v1.Node{ObjectMeta: metav1.ObjectMeta{
		Name: "node-a", UID: "old-uid",
		Labels: map[string]string{"team": "blue", v1.LabelHostname: "node-a", "tier": "core"},
	}}
	h := newNodeHarness(t, existing)
	uid, err := h.node.register(context.Background())
	require.NoError(t, err)
	require.Equal(t, "old-uid", string(uid), "the existing object is kept, not recreated")
	n := h.getNode(t)
	require.Equal(t, "blue", n.Labels["team"], "labels set by others stay")
	require.Equal(t, "edge", n.Labels["tier"], "the agent's labels win")
	require.Equal(t, "linux", n.Labels[v1.LabelOSStable])

	// Labels already right: nothing is written.
	before := h.writes("nodes")
	_, err = h.node.register(context.Background())
	require.NoError(t, err)
	require.Equal(t, before+1, h.writes("nodes"), "only the create attempt, which fails with AlreadyExists")
}

func TestNodeAgent_StatusIsSentOnChangeAndEveryReportPeriod(t *testing.T) {
	h := newNodeHarness(t)
	ctx := context.Background()
	_, err := h.node.register(ctx)
	require.NoError(t, err)
	require.NoError(t, h.node.syncStatus(ctx))
	patches := func() (n int) {
		for _, a := range h.client.Actions() {
			if a.GetVerb() == "patch" && a.GetSubresource() == "status" {
				n++
			}
		}
		return n
	}
	require.Equal(t, 1, patches(), "the first sync sends the status")
	readyAt := condStatus(t, h.getNode(t), v1.NodeReady).LastTransitionTime

	// Nothing changed: no patch for the next minutes.
	for range 5 {
		h.clock.Step(DefaultStatusUpdatePeriod)
		require.NoError(t, h.node.syncStatus(ctx))
	}
	require.Equal(t, 1, patches(), "an unchanged status is not sent")

	// The network goes away: sent at once, Ready false with the reason.
	h.clock.Step(DefaultStatusUpdatePeriod)
	h.runtime.set(criStatus(true, false), nil)
	require.NoError(t, h.node.syncStatus(ctx))
	require.Equal(t, 2, patches())
	ready := condStatus(t, h.getNode(t), v1.NodeReady)
	require.Equal(t, v1.ConditionFalse, ready.Status)
	require.Equal(t, reasonNotReady, ready.Reason)
	require.Contains(t, ready.Message, "NetworkReady=false reason:NetworkPluginNotReady")
	requireTime(t, h.clock.Now(), ready.LastTransitionTime.Time)
	require.Equal(t, v1.ConditionFalse, h.node.State().Ready)

	// The runtime is down altogether.
	h.clock.Step(DefaultStatusUpdatePeriod)
	h.runtime.set(nil, errors.New("rpc error: connection refused"))
	require.NoError(t, h.node.syncStatus(ctx))
	require.Equal(t, 3, patches())
	require.Contains(t, condStatus(t, h.getNode(t), v1.NodeReady).Message, "container runtime is down")

	// Back: Ready again, a new transition time.
	h.clock.Step(DefaultStatusUpdatePeriod)
	h.runtime.set(criStatus(true, true), nil)
	require.NoError(t, h.node.syncStatus(ctx))
	require.Equal(t, 4, patches())
	ready = condStatus(t, h.getNode(t), v1.NodeReady)
	require.Equal(t, v1.ConditionTrue, ready.Status)
	require.True(t, ready.LastTransitionTime.After(readyAt.Time))
	lastPatch := h.clock.Now()

	// Unchanged for the report period: sent once more as a heartbeat.
	for h.clock.Since(lastPatch) < DefaultStatusReportPeriod-DefaultStatusUpdatePeriod {
		h.clock.Step(DefaultStatusUpdatePeriod)
		require.NoError(t, h.node.syncStatus(ctx))
	}
	require.Equal(t, 4, patches())
	h.clock.Step(DefaultStatusUpdatePeriod)
	require.NoError(t, h.node.syncStatus(ctx))
	require.Equal(t, 5, patches())
	ready = condStatus(t, h.getNode(t), v1.NodeReady)
	requireTime(t, h.clock.Now(), ready.LastHeartbeatTime.Time)
	requireTime(t, lastPatch, ready.LastTransitionTime.Time)
}

func TestNodeAgent_StatusPatchKeepsWhatOthersWrote(t *testing.T) {
	h := newNodeHarness(t)
	ctx := context.Background()
	_, err := h.node.register(ctx)
	require.NoError(t, err)
	require.NoError(t, h.node.syncStatus(ctx))

	// A controller adds its own condition, and the node lifecycle
	// controller marks the node Unknown (as after missed heartbeats).
	n := h.getNode(t)
	n.Status.Conditions = append(n.Status.Conditions, v1.NodeCondition{Type: v1.NodeNetworkUnavailable, Status: v1.ConditionFalse, Reason: "RouteCreated"})
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == v1.NodeReady {
			n.Status.Conditions[i].Status = v1.ConditionUnknown
			n.Status.Conditions[i].Reason = "NodeStatusUnknown"
		}
	}
	_, err = h.client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	require.NoError(t, err)

	h.clock.Step(DefaultStatusUpdatePeriod)
	require.NoError(t, h.node.syncStatus(ctx))
	n = h.getNode(t)
	require.Equal(t, v1.ConditionTrue, condStatus(t, n, v1.NodeReady).Status, "the server's Unknown is corrected at the next check")
	require.Equal(t, "RouteCreated", condStatus(t, n, v1.NodeNetworkUnavailable).Reason)
}

func TestNodeAgent_ReRegistersADeletedNode(t *testing.T) {
	h := newNodeHarness(t)
	ctx := context.Background()
	_, err := h.node.register(ctx)
	require.NoError(t, err)
	require.NoError(t, h.node.syncStatus(ctx))
	require.NoError(t, h.client.CoreV1().Nodes().Delete(ctx, "node-a", metav1.DeleteOptions{}))

	h.clock.Step(DefaultStatusUpdatePeriod)
	require.NoError(t, h.node.syncStatus(ctx))
	n := h.getNode(t)
	require.Equal(t, v1.ConditionTrue, condStatus(t, n, v1.NodeReady).Status)
	require.Equal(t, testNodeInfo().Labels, n.Labels)
}

func TestNodeAgent_StatusErrorsAreReturned(t *testing.T) {
	h := newNodeHarness(t)
	ctx := context.Background()
	_, err := h.node.register(ctx)
	require.NoError(t, err)
	h.client.PrependReactor("patch", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("etcd is down")
	})
	err = h.node.syncStatus(ctx)
	require.ErrorContains(t, err, `patch status of node "node-a": etcd is down`)
}

func TestNodeAgent_Lease(t *testing.T) {
	h := newNodeHarness(t)
	ctx := context.Background()
	uid, err := h.node.register(ctx)
	require.NoError(t, err)
	h.node.state.UID = uid // what Run records after registering

	require.NoError(t, h.node.renewLease(ctx))
	l := h.getLease(t)
	require.Equal(t, "node-a", *l.Spec.HolderIdentity)
	require.Equal(t, int32(40), *l.Spec.LeaseDurationSeconds)
	requireTime(t, t0, l.Spec.RenewTime.Time)
	require.Equal(t, []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "node-a", UID: uid}}, l.OwnerReferences)

	t.Run("renewed", func(t *testing.T) {
		h.clock.Step(DefaultLeaseRenewPeriod)
		require.NoError(t, h.node.renewLease(ctx))
		requireTime(t, t0.Add(DefaultLeaseRenewPeriod), h.getLease(t).Spec.RenewTime.Time)
	})
	t.Run("someone else updated it: read again, then renewed", func(t *testing.T) {
		other := h.getLease(t)
		other.Labels = map[string]string{"touched": "yes"}
		other.ResourceVersion = "999"
		_, err := h.client.CoordinationV1().Leases(v1.NamespaceNodeLease).Update(ctx, other, metav1.UpdateOptions{})
		require.NoError(t, err)
		h.client.PrependReactor("update", "leases", conflictOnce())
		h.clock.Step(DefaultLeaseRenewPeriod)
		require.NoError(t, h.node.renewLease(ctx))
		l := h.getLease(t)
		requireTime(t, h.clock.Now(), l.Spec.RenewTime.Time)
		require.Equal(t, "yes", l.Labels["touched"])
	})
	t.Run("deleted: created again", func(t *testing.T) {
		require.NoError(t, h.client.CoordinationV1().Leases(v1.NamespaceNodeLease).Delete(ctx, "node-a", metav1.DeleteOptions{}))
		h.clock.Step(DefaultLeaseRenewPeriod)
		require.NoError(t, h.node.renewLease(ctx))
		requireTime(t, h.clock.Now(), h.getLease(t).Spec.RenewTime.Time)
	})
	t.Run("the API server fails: an error, and the next renewal reads first", func(t *testing.T) {
		h.client.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewServiceUnavailable("down")
		})
		require.ErrorContains(t, h.node.renewLease(ctx), "down")
		require.Nil(t, h.node.lease)
	})
}

// conflictOnce is a reactor that answers the first call with a conflict
// and lets later ones through.
func conflictOnce() k8stesting.ReactionFunc {
	done := false
	return func(k8stesting.Action) (bool, runtime.Object, error) {
		if done {
			return false, nil, nil
		}
		done = true
		return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "node-a", errors.New("the object has been modified"))
	}
}

func TestRetryDelay(t *testing.T) {
	got := []time.Duration{}
	for n := 1; n <= 8; n++ {
		got = append(got, retryDelay(n))
	}
	ms := time.Millisecond
	require.Equal(t, []time.Duration{200 * ms, 400 * ms, 800 * ms, 1600 * ms, 3200 * ms, 6400 * ms, 7 * time.Second, 7 * time.Second}, got)
}

// TestNodeAgent_Run drives the whole agent with the fake clock: it retries
// registration while the API server refuses, then keeps the lease renewed
// every 10 s and the status current.
func TestNodeAgent_Run(t *testing.T) {
	h := newNodeHarness(t)
	refusals := 2
	var mu sync.Mutex
	h.client.PrependReactor("create", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		if refusals == 0 {
			return false, nil, nil
		}
		refusals--
		return true, nil, apierrors.NewServiceUnavailable("starting")
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		require.NoError(t, h.node.Run(ctx))
	}()
	// stepWhenWaiting advances the clock by d once n goroutines wait on it.
	stepWhenWaiting := func(n int, d time.Duration) {
		require.Eventually(t, func() bool { return h.clock.Waiters() == n }, 10*time.Second, time.Millisecond)
		h.clock.Step(d)
	}
	stepWhenWaiting(1, retryDelay(1))
	stepWhenWaiting(1, retryDelay(2))
	// Registered: both loops wait for their period.
	require.Eventually(t, func() bool { return h.clock.Waiters() == 2 }, 10*time.Second, time.Millisecond)
	st := h.node.State()
	require.True(t, st.Registered)
	require.Equal(t, 3, st.Registration.Successes+st.Registration.Failures)
	require.Equal(t, 2, st.Registration.Failures)
	require.Equal(t, `create node "node-a": starting`, st.Registration.LastError)
	first := h.getLease(t).Spec.RenewTime.Time
	require.Equal(t, v1.ConditionTrue, condStatus(t, h.getNode(t), v1.NodeReady).Status)

	for i := 1; i <= 3; i++ {
		stepWhenWaiting(2, DefaultLeaseRenewPeriod)
		require.Eventually(t, func() bool {
			return h.getLease(t).Spec.RenewTime.Time.Equal(first.Add(time.Duration(i) * DefaultLeaseRenewPeriod))
		}, 10*time.Second, time.Millisecond)
	}
	require.Eventually(t, func() bool { return h.node.State().Lease.Successes == 4 && h.node.State().Status.Successes == 4 }, 10*time.Second, time.Millisecond)
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}

// requireTime checks that got is the instant want (the API round trip
// turns UTC into local time).
func requireTime(t *testing.T, want, got time.Time) {
	t.Helper()
	require.True(t, want.Equal(got), "want %s, got %s", want, got)
}

func TestNodeAgent_FastStatusUntilFirstReady(t *testing.T) {
	h := newNodeHarness(t)
	ctx := context.Background()
	_, err := h.node.register(ctx)
	require.NoError(t, err)
	h.node.registeredAt = h.clock.Now()

	// No network yet: checked every second, so Ready follows the network
	// within a second rather than ten.
	h.runtime.set(criStatus(true, false), nil)
	require.NoError(t, h.node.syncStatus(ctx))
	require.Equal(t, fastStatusPeriod, h.node.nextStatusDelay())
	h.clock.Step(fastStatusPeriod)
	h.runtime.set(criStatus(true, true), nil)
	require.NoError(t, h.node.syncStatus(ctx))
	require.Equal(t, v1.ConditionTrue, condStatus(t, h.getNode(t), v1.NodeReady).Status)
	require.Equal(t, DefaultStatusUpdatePeriod, h.node.nextStatusDelay(), "Ready once: back to the normal period")

	// Later NotReady spells do not bring the fast period back.
	h.clock.Step(DefaultStatusUpdatePeriod)
	h.runtime.set(criStatus(true, false), nil)
	require.NoError(t, h.node.syncStatus(ctx))
	require.Equal(t, DefaultStatusUpdatePeriod, h.node.nextStatusDelay())

	// A node that never becomes Ready leaves the fast period after the window.
	h2 := newNodeHarness(t)
	h2.runtime.set(criStatus(true, false), nil)
	h2.node.registeredAt = h2.clock.Now()
	require.Equal(t, fastStatusPeriod, h2.node.nextStatusDelay())
	h2.clock.Step(fastStatusWindow)
	require.Equal(t, DefaultStatusUpdatePeriod, h2.node.nextStatusDelay())
}

// nodeEvents records the node's events.
type nodeEvents struct{ got []string }

var _ NodeEventSink = (*nodeEvents)(nil)

func (e *nodeEvents) NodeEvent(typ, reason, message string) {
	e.got = append(e.got, typ+" "+reason+" "+message)
}

// TestNodeAgent_RecordsReadyTransitions checks the kubelet's NodeReady and
// NodeNotReady events: one per transition, none for an unchanged status.
func TestNodeAgent_RecordsReadyTransitions(t *testing.T) {
	h := newNodeHarness(t)
	evs := &nodeEvents{}
	h.node.cfg.Events = evs
	ctx := context.Background()
	_, err := h.node.register(ctx)
	require.NoError(t, err)
	require.NoError(t, h.node.syncStatus(ctx))
	h.clock.Step(DefaultStatusUpdatePeriod)
	require.NoError(t, h.node.syncStatus(ctx))
	h.clock.Step(DefaultStatusUpdatePeriod)
	h.runtime.set(criStatus(true, false), nil)
	require.NoError(t, h.node.syncStatus(ctx))
	h.clock.Step(DefaultStatusUpdatePeriod)
	h.runtime.set(criStatus(true, true), nil)
	require.NoError(t, h.node.syncStatus(ctx))
	name := h.node.cfg.Node.Name
	require.Equal(t, []string{
		"Normal NodeReady Node " + name + " status is now: NodeReady",
		"Normal NodeNotReady Node " + name + " status is now: NodeNotReady",
		"Normal NodeReady Node " + name + " status is now: NodeReady",
	}, evs.got)
}

// With NodeConfig.Pressure (serve's eviction manager), the pressure
// conditions are the manager's, not this package's own readings.
func TestNodeAgent_PressureFromTheEvictionManager(t *testing.T) {
	h := newNodeHarness(t)
	h.node.cfg.Pressure = func() (memory, disk, pid, ok bool) { return false, true, false, true }
	_, err := h.node.register(context.Background())
	require.NoError(t, err)
	require.NoError(t, h.node.syncStatus(context.Background()))
	n := h.getNode(t)
	require.Equal(t, v1.ConditionTrue, condStatus(t, n, v1.NodeDiskPressure).Status)
	require.Equal(t, reasonDiskPressure, condStatus(t, n, v1.NodeDiskPressure).Reason)
	require.Equal(t, v1.ConditionFalse, condStatus(t, n, v1.NodeMemoryPressure).Status)

	// No manager (ok false): the package's own readings again.
	h.node.cfg.Pressure = func() (memory, disk, pid, ok bool) { return true, true, true, false }
	require.NoError(t, h.node.syncStatus(context.Background()))
	require.Equal(t, v1.ConditionFalse, condStatus(t, h.getNode(t), v1.NodeMemoryPressure).Status)
}
