package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/minikubelet/minikubelet/agent/eviction"
	agentnode "github.com/minikubelet/minikubelet/agent/node"
	"github.com/minikubelet/minikubelet/cni"
	"github.com/minikubelet/minikubelet/test/controlplane"
)

// Cluster mode (issue #10) against a real control plane: etcd and
// kube-apiserver built from the Go module proxy (hack/cluster), started on
// loopback by test/controlplane. Each test has its own control plane and
// its own containerd (a cluster-mode daemon collects orphans like any
// other, so it must not share the suite's runtime).

// clusterNode returns the node's Node object, nil while it does not exist.
func clusterNode(t *testing.T, cs kubernetes.Interface, name string) *v1.Node {
	t.Helper()
	ctx, cancel := shortCtx()
	defer cancel()
	n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return n
}

// nodeCondition is the node's condition of type typ (zero when missing).
func nodeCondition(n *v1.Node, typ v1.NodeConditionType) v1.NodeCondition {
	if n != nil {
		for _, c := range n.Status.Conditions {
			if c.Type == typ {
				return c
			}
		}
	}
	return v1.NodeCondition{}
}

// nodeLease is the node's Lease in kube-node-lease (nil when missing).
func nodeLease(t *testing.T, cs kubernetes.Interface, name string) *coordinationv1.Lease {
	t.Helper()
	ctx, cancel := shortCtx()
	defer cancel()
	l, err := cs.CoordinationV1().Leases(v1.NamespaceNodeLease).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return l
}

// TestCluster_NodeRegistersBecomesReadyAndRenewsItsLease starts `serve
// --kubeconfig` with a node identity (system:node:<name>, checked by the
// Node authorizer and NodeRestriction): the Node appears with the labels,
// capacity and allocatable admission uses, addresses and nodeInfo; it
// becomes Ready; its Lease is renewed every 10 s; taking the pod network
// away turns it NotReady with the runtime's reason, and giving it back
// makes it Ready again.
func TestCluster_NodeRegistersBecomesReadyAndRenewsItsLease(t *testing.T) {
	t.Parallel()
	const node = "mkl-cluster-node"
	cp := controlplane.Start(t, node)
	r := newPrivateRuntime(t)
	d := r.newDaemon(t, nil,
		"--node-name", node,
		"--kubeconfig", cp.NodeKubeconfig(t, node),
		"--node-labels", "minikubelet.io/e2e=cluster")
	start := time.Now()
	d.start(t)
	cs := cp.Admin

	var n *v1.Node
	waitFor(t, "the node to register and become Ready", scaled(time.Minute), func() string {
		n = clusterNode(t, cs, node)
		if n == nil {
			return "no Node object yet"
		}
		if c := nodeCondition(n, v1.NodeReady); c.Status != v1.ConditionTrue {
			return fmt.Sprintf("Ready=%s %s: %s", c.Status, c.Reason, c.Message)
		}
		return ""
	})
	t.Logf("node Ready %s after the daemon started", time.Since(start).Round(time.Millisecond))

	// What admission uses is what the Node says (same host, same flags).
	// ephemeral-storage: the root dir's filesystem, less the hard
	// nodefs.available threshold of serveHostFlags (1%).
	ths, err := eviction.ParseThresholds("nodefs.available<1%", "", "")
	require.NoError(t, err)
	want, err := agentnode.Detect(node, map[string]string{"minikubelet.io/e2e": "cluster"}, nil, nil, &agentnode.Storage{RootDir: d.root, Thresholds: ths})
	require.NoError(t, err)
	require.Equal(t, want.Labels, n.Labels)
	require.Positive(t, want.Capacity.StorageEphemeral().Value())
	require.Less(t, want.Allocatable.StorageEphemeral().Value(), want.Capacity.StorageEphemeral().Value())
	for _, res := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourcePods, v1.ResourceEphemeralStorage} {
		wc, gc := want.Capacity[res], n.Status.Capacity[res]
		require.Zero(t, wc.Cmp(gc), "capacity %s: want %s, got %s", res, wc.String(), gc.String())
		wa, ga := want.Allocatable[res], n.Status.Allocatable[res]
		require.Zero(t, wa.Cmp(ga), "allocatable %s: want %s, got %s", res, wa.String(), ga.String())
	}
	require.Len(t, n.Status.Addresses, 2)
	require.Equal(t, v1.NodeInternalIP, n.Status.Addresses[0].Type)
	ip, err := netip.ParseAddr(n.Status.Addresses[0].Address)
	require.NoError(t, err)
	require.False(t, ip.IsLoopback(), "InternalIP %s", ip)
	require.Equal(t, v1.NodeAddress{Type: v1.NodeHostName, Address: node}, n.Status.Addresses[1])
	info := n.Status.NodeInfo
	require.True(t, strings.HasPrefix(info.ContainerRuntimeVersion, "containerd://"), info.ContainerRuntimeVersion)
	require.NotEmpty(t, info.KernelVersion)
	require.NotEmpty(t, info.BootID)
	require.NotEmpty(t, info.OSImage)
	require.Equal(t, "linux", info.OperatingSystem)
	for _, typ := range []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure} {
		c := nodeCondition(n, typ)
		require.Equal(t, v1.ConditionFalse, c.Status, "%s: %s %s", typ, c.Reason, c.Message)
	}

	// The lease: held by the node, owned by its Node, renewed every 10 s.
	var l *coordinationv1.Lease
	waitFor(t, "the node lease", scaled(30*time.Second), func() string {
		if l = nodeLease(t, cs, node); l == nil {
			return "no Lease in kube-node-lease yet"
		}
		return ""
	})
	require.Equal(t, node, *l.Spec.HolderIdentity)
	require.Equal(t, int32(40), *l.Spec.LeaseDurationSeconds)
	require.Equal(t, []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node, UID: n.UID}}, l.OwnerReferences)
	first := l.Spec.RenewTime.Time
	var renewals []time.Time
	waitFor(t, "two lease renewals", scaled(35*time.Second), func() string {
		cur := nodeLease(t, cs, node)
		if cur == nil {
			return "the lease is gone"
		}
		if rt := cur.Spec.RenewTime.Time; rt.After(first) && (len(renewals) == 0 || rt.After(renewals[len(renewals)-1])) {
			renewals = append(renewals, rt)
		}
		if len(renewals) < 2 {
			return fmt.Sprintf("renewed %d times since %s", len(renewals), first.Format(time.RFC3339Nano))
		}
		return ""
	})
	gap := renewals[1].Sub(renewals[0])
	t.Logf("lease renewed at +%s and +%s", renewals[0].Sub(first).Round(time.Millisecond), renewals[1].Sub(first).Round(time.Millisecond))
	require.InDelta(t, 10, gap.Seconds(), 2, "the renewal period is 10 s, got %s", gap)

	// No pod network: NotReady with the runtime's reason, sent on change.
	readySince := nodeCondition(clusterNode(t, cs, node), v1.NodeReady).LastTransitionTime
	require.NoError(t, cni.Uninstall(r.network))
	waitFor(t, "the node to turn NotReady without a pod network", scaled(45*time.Second), func() string {
		c := nodeCondition(clusterNode(t, cs, node), v1.NodeReady)
		if c.Status != v1.ConditionFalse {
			return fmt.Sprintf("Ready=%s %s", c.Status, c.Message)
		}
		return ""
	})
	c := nodeCondition(clusterNode(t, cs, node), v1.NodeReady)
	require.Equal(t, "KubeletNotReady", c.Reason)
	require.Contains(t, c.Message, "container runtime network not ready: NetworkReady=false")
	require.True(t, c.LastTransitionTime.After(readySince.Time))

	ctx, cancel := context.WithTimeout(context.Background(), scaled(time.Minute))
	defer cancel()
	_, _, err = cni.Install(ctx, r.network)
	require.NoError(t, err)
	waitFor(t, "the node to be Ready again with its network back", scaled(45*time.Second), func() string {
		c := nodeCondition(clusterNode(t, cs, node), v1.NodeReady)
		if c.Status != v1.ConditionTrue {
			return fmt.Sprintf("Ready=%s %s", c.Status, c.Message)
		}
		return ""
	})
}
