// Package cluster is minikubelet's cluster mode: the agent's side of a real
// kube-apiserver. NodeAgent registers the Node, keeps its status (the
// kubelet's conditions, capacity, addresses, nodeInfo) and renews its
// coordination.k8s.io Lease, as the kubelet does with a node lease:
//
//	Run ─► register (create, or adopt an existing Node) ─┬─► status loop: every 10 s compute the
//	       retried with back-off until it works          │   status; patch it when it changed, or
//	                                                     │   every 5 min anyway (the heartbeat)
//	                                                     └─► lease loop: renew every 10 s (40 s
//	                                                         lease); on failure retry at 0.2 s
//	                                                         doubling to 7 s
//
// Losing the API server never touches pods: the loops log the loss once,
// keep retrying, and log the recovery.
//
// It lives in its own package so that k8s.io/client-go is needed only here
// and in cmd/minikubelet; it imports agent/node for node.Info, the numbers
// admission uses, so the Node's capacity and allocatable are exactly what
// pods are admitted against.
package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	agentnode "github.com/minikubelet/minikubelet/agent/node"
)

// The kubelet's defaults (kubelet-facts §8.4).
const (
	// DefaultStatusUpdatePeriod is nodeStatusUpdateFrequency: how often the
	// status is computed (and sent if it changed).
	DefaultStatusUpdatePeriod = 10 * time.Second
	// DefaultStatusReportPeriod is nodeStatusReportFrequency: the status is
	// sent at least this often even when nothing changed.
	DefaultStatusReportPeriod = 5 * time.Minute
	// DefaultLeaseDuration is nodeLeaseDurationSeconds.
	DefaultLeaseDuration = 40 * time.Second
	// DefaultLeaseRenewPeriod is the kubelet's renew interval, a quarter of
	// the lease duration.
	DefaultLeaseRenewPeriod = 10 * time.Second

	// fastStatusPeriod is the status period at start, until the node was
	// first sent Ready or fastStatusWindow passed, so that a node becomes
	// Ready about as soon as its runtime and network are (the kubelet's
	// fast node status update at startup does the same).
	fastStatusPeriod = time.Second
	fastStatusWindow = 2 * time.Minute

	// requestTimeout bounds each API request of the loops.
	requestTimeout = 10 * time.Second
	// runtimeTimeout bounds the CRI Status call of the status loop.
	runtimeTimeout = 5 * time.Second
	// retryInitial and retryMax shape the back-off of registration and
	// lease renewal (the kubelet's 200 ms doubling to 7 s).
	retryInitial = 200 * time.Millisecond
	retryMax     = 7 * time.Second
)

// RuntimeStatus is the one CRI call the node status needs (cri.Runtime and
// cri-api's fake satisfy it).
type RuntimeStatus interface {
	Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error)
}

// NodeConfig says what the Node object holds and how often it is updated.
type NodeConfig struct {
	// Node is the agent's description of this node (agentnode.Detect):
	// name, labels, capacity, allocatable.
	Node agentnode.Info
	// NodeIP is the InternalIP address (--node-ip); "" picks the address of
	// the default route's interface.
	NodeIP string
	// RuntimeName and RuntimeVersion come from the CRI handshake
	// ("containerd", "1.6.20~ds1").
	RuntimeName, RuntimeVersion string
	// Version is reported as status.nodeInfo.kubeletVersion.
	Version string
	// RootDir is the agent's root dir; its file system is nodefs for the
	// DiskPressure condition.
	RootDir string
	// KubeletPort is the port of the kubelet server (agent/kubeletserver),
	// advertised as status.daemonEndpoints.kubeletEndpoint.port: the API
	// server reaches the node there for logs, exec, attach, port-forward
	// and the node proxy. 0 advertises none.
	KubeletPort int32
	// Periods; zero values take the Default* constants.
	StatusUpdatePeriod, StatusReportPeriod time.Duration
	LeaseDuration, LeaseRenewPeriod        time.Duration
	// Pressure, when set and ok, gives the pressure conditions: the
	// agent's eviction manager decides them from its thresholds (issue
	// #21); otherwise the node agent applies the kubelet's default hard
	// thresholds itself (pressure.go).
	Pressure func() (memory, disk, pid, ok bool)
	// Events receives the node's events (NodeReady, NodeNotReady), as
	// the kubelet records them; nil records none (EventRecorder).
	Events NodeEventSink
	// Devices, when set, gives the device plugins' resources
	// (agent/deviceplugin), added to the capacity and allocatable as the
	// kubelet's devicePluginResourceCapacityFunc; DevicesChanged, when
	// set, syncs the status at once instead of at the next period.
	Devices        func() (capacity, allocatable v1.ResourceList)
	DevicesChanged <-chan struct{}
}

// NodeEventSink records an event about the node (EventRecorder.NodeEvent).
type NodeEventSink interface {
	NodeEvent(typ, reason, message string)
}

func (c NodeConfig) withDefaults() NodeConfig {
	if c.StatusUpdatePeriod <= 0 {
		c.StatusUpdatePeriod = DefaultStatusUpdatePeriod
	}
	if c.StatusReportPeriod <= 0 {
		c.StatusReportPeriod = DefaultStatusReportPeriod
	}
	if c.LeaseDuration <= 0 {
		c.LeaseDuration = DefaultLeaseDuration
	}
	if c.LeaseRenewPeriod <= 0 {
		c.LeaseRenewPeriod = DefaultLeaseRenewPeriod
	}
	if c.RootDir == "" {
		c.RootDir = "/"
	}
	return c
}

// LoopStatus is the record every reconcile loop keeps (house style 18).
type LoopStatus struct {
	Successes, Failures int
	// ConsecutiveFailures is reset by a success.
	ConsecutiveFailures int
	LastError           string
	LastErrorTime       time.Time
	LastSuccess         time.Time
}

// record counts one attempt's outcome.
func (s *LoopStatus) record(err error, now time.Time) {
	if err == nil {
		s.Successes++
		s.ConsecutiveFailures = 0
		s.LastSuccess = now
		return
	}
	s.Failures++
	s.ConsecutiveFailures++
	s.LastError = err.Error()
	s.LastErrorTime = now
}

// NodeState is a snapshot of the node agent, for status output and tests.
type NodeState struct {
	// Registered is set once the Node exists on the API server.
	Registered bool
	// UID is the Node object's UID (empty before registration).
	UID types.UID
	// Ready is the Ready condition last sent, with its message.
	Ready        v1.ConditionStatus
	ReadyMessage string
	// Registration, Status and Lease are the loops' records.
	Registration, Status, Lease LoopStatus
}

// NodeAgent keeps this node's Node object and Lease on the API server.
type NodeAgent struct {
	client  API
	runtime RuntimeStatus
	cfg     NodeConfig
	logger  *slog.Logger
	clock   clock.WithTicker
	host    host

	// addresses and system are computed once by NewNodeAgent.
	addresses []v1.NodeAddress
	system    v1.NodeSystemInfo

	// pressure is used by the status loop only.
	pressure pressureTracker
	// lastReport is when the status was last sent; status loop only.
	lastReport time.Time
	// registeredAt is when the registration succeeded, and everReady is
	// set once Ready=True was sent; status loop only (nextStatusDelay).
	registeredAt time.Time
	everReady    bool
	// lease is the Lease as last written or read; lease loop only. nil
	// makes the next renewal read it first.
	lease *coordinationv1.Lease

	// mu guards state.
	mu    sync.Mutex
	state NodeState
}

// NewNodeAgent prepares the node agent; nothing is sent before Run. It
// fails when the node's address cannot be found (give NodeConfig.NodeIP).
// clk may be nil (the real clock).
func NewNodeAgent(client API, rt RuntimeStatus, cfg NodeConfig, logger *slog.Logger, clk clock.WithTicker) (*NodeAgent, error) {
	return newNodeAgent(client, rt, cfg, logger, clk, realHost)
}

// newNodeAgent is NewNodeAgent reading the host through h.
func newNodeAgent(client API, rt RuntimeStatus, cfg NodeConfig, logger *slog.Logger, clk clock.WithTicker, h host) (*NodeAgent, error) {
	cfg = cfg.withDefaults()
	if cfg.Node.Name == "" {
		return nil, errors.New("cluster node: no node name")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	addrs, err := h.addresses(cfg.NodeIP, cfg.Node.Name)
	if err != nil {
		return nil, fmt.Errorf("node addresses: %w", err)
	}
	return &NodeAgent{
		client:    client,
		runtime:   rt,
		cfg:       cfg,
		logger:    logger.With("component", "cluster-node", "node", cfg.Node.Name),
		clock:     clk,
		host:      h,
		addresses: addrs,
		system:    h.systemInfo(cfg.RuntimeName, cfg.RuntimeVersion, cfg.Version),
	}, nil
}

// State returns a snapshot of the node agent's state.
func (n *NodeAgent) State() NodeState {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.state
}

// Run registers the node, then keeps its status and lease until ctx ends.
// It returns nil when ctx ends; nothing it meets stops it earlier.
func (n *NodeAgent) Run(ctx context.Context) error {
	uid, ok := n.registerLoop(ctx)
	if !ok {
		return nil
	}
	n.logger.Info("Node registered with the API server", "uid", uid, "addresses", n.addresses)
	n.registeredAt = n.clock.Now()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		n.leaseLoop(ctx)
	}()
	n.statusLoop(ctx)
	wg.Wait()
	return nil
}

// wait returns after d, or false when ctx ended first.
func (n *NodeAgent) wait(ctx context.Context, d time.Duration) bool {
	return n.waitOr(ctx, d, nil)
}

// waitOr is wait, cut short when early receives (nil: never).
func (n *NodeAgent) waitOr(ctx context.Context, d time.Duration, early <-chan struct{}) bool {
	t := n.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
	case <-early:
	}
	return true
}

// retryDelay is the back-off after the n-th consecutive failure (n ≥ 1).
func retryDelay(n int) time.Duration {
	d := retryInitial
	for i := 1; i < n && d < retryMax; i++ {
		d *= 2
	}
	return min(d, retryMax)
}

// registerLoop registers the node, retrying with back-off; false when ctx
// ended first.
func (n *NodeAgent) registerLoop(ctx context.Context) (types.UID, bool) {
	for {
		uid, err := n.register(ctx)
		n.mu.Lock()
		n.state.Registration.record(err, n.clock.Now())
		failures := n.state.Registration.ConsecutiveFailures
		if err == nil {
			n.state.Registered, n.state.UID = true, uid
		}
		n.mu.Unlock()
		if err == nil {
			return uid, true
		}
		// The first failure and then every 10th, so an outage does not
		// flood the log.
		if failures%10 == 1 {
			n.logger.Warn("Cannot register the node with the API server; retrying (check the kubeconfig's server and credentials)", "err", err, "failures", failures)
		}
		if !n.wait(ctx, retryDelay(failures)) {
			return "", false
		}
	}
}

// initialNode is the Node object registration creates.
func (n *NodeAgent) initialNode() *v1.Node {
	node := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.cfg.Node.Name, Labels: maps.Clone(n.cfg.Node.Labels)},
	}
	node.Status = buildStatus(n.inputs(runtimeState{}, readings{}), nil, n.clock.Now())
	return node
}

// register creates the Node; when it exists already (a restart, or a node
// re-joining), it adopts it and sets the agent's labels on it, keeping the
// others, as the kubelet's reconcile of an existing Node does. The status
// follows from the status loop.
func (n *NodeAgent) register(ctx context.Context) (types.UID, error) {
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	nodes := n.client.Nodes()
	created, err := nodes.Create(rctx, n.initialNode(), metav1.CreateOptions{})
	if err == nil {
		return created.UID, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("create node %q: %w", n.cfg.Node.Name, err)
	}
	existing, err := nodes.Get(rctx, n.cfg.Node.Name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("get existing node %q: %w", n.cfg.Node.Name, err)
	}
	missing := false
	for k, v := range n.cfg.Node.Labels {
		if existing.Labels[k] != v {
			missing = true
		}
	}
	if !missing {
		return existing.UID, nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": n.cfg.Node.Labels}})
	if err != nil {
		return "", fmt.Errorf("encode node labels: %w", err)
	}
	updated, err := nodes.Patch(rctx, n.cfg.Node.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return "", fmt.Errorf("set the labels of existing node %q: %w", n.cfg.Node.Name, err)
	}
	n.logger.Info("Adopted the existing Node object", "uid", updated.UID)
	return updated.UID, nil
}

// inputs gathers what buildStatus needs, given the runtime's state and the
// host readings (observed into the pressure conditions).
func (n *NodeAgent) inputs(rt runtimeState, r readings) statusInputs {
	mem, disk, pid := n.pressure.observe(r, n.clock.Now())
	if n.cfg.Pressure != nil {
		if m, d, p, ok := n.cfg.Pressure(); ok {
			mem, disk, pid = m, d, p
		}
	}
	node := n.cfg.Node
	if n.cfg.Devices != nil {
		node.Capacity, node.Allocatable = v1.ResourceList{}, v1.ResourceList{}
		c, a := n.cfg.Devices()
		for _, m := range []v1.ResourceList{n.cfg.Node.Capacity, c} {
			maps.Copy(node.Capacity, m)
		}
		for _, m := range []v1.ResourceList{n.cfg.Node.Allocatable, a} {
			maps.Copy(node.Allocatable, m)
		}
	}
	return statusInputs{
		node:           node,
		addresses:      n.addresses,
		kubeletPort:    n.cfg.KubeletPort,
		system:         n.system,
		runtime:        rt,
		memoryPressure: mem,
		diskPressure:   disk,
		pidPressure:    pid,
	}
}

// statusLoop syncs the status now and every StatusUpdatePeriod.
func (n *NodeAgent) statusLoop(ctx context.Context) {
	for {
		err := n.syncStatus(ctx)
		if ctx.Err() != nil {
			return
		}
		n.mu.Lock()
		wasFailing := n.state.Status.ConsecutiveFailures > 0
		n.state.Status.record(err, n.clock.Now())
		failures := n.state.Status.ConsecutiveFailures
		n.mu.Unlock()
		switch {
		case err != nil && failures%30 == 1:
			n.logger.Warn("Cannot update the node status on the API server; pods keep running, retrying", "err", err, "failures", failures)
		case err == nil && wasFailing:
			n.logger.Info("Node status reaches the API server again")
		}
		if !n.waitOr(ctx, n.nextStatusDelay(), n.cfg.DevicesChanged) {
			return
		}
	}
}

// nextStatusDelay is StatusUpdatePeriod, or fastStatusPeriod while the
// node starts (see fastStatusPeriod).
func (n *NodeAgent) nextStatusDelay() time.Duration {
	if !n.everReady && n.clock.Since(n.registeredAt) < fastStatusWindow {
		return min(fastStatusPeriod, n.cfg.StatusUpdatePeriod)
	}
	return n.cfg.StatusUpdatePeriod
}

// syncStatus computes the node's status and sends it when it differs from
// the API server's (heartbeat times aside) or the report period is over,
// as the kubelet's tryUpdateNodeStatus does: the server's copy is read from
// its cache (resourceVersion 0), and the change is sent as a strategic
// merge patch of the status subresource, so fields and conditions other
// writers own are kept. A Node deleted behind the agent's back is
// registered again.
func (n *NodeAgent) syncStatus(ctx context.Context) error {
	rtx, cancel := context.WithTimeout(ctx, runtimeTimeout)
	rt := runtimeStateFrom(n.runtime.Status(rtx, false))
	cancel()
	in := n.inputs(rt, n.host.read(n.cfg.RootDir))

	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	nodes := n.client.Nodes()
	current, err := nodes.Get(rctx, n.cfg.Node.Name, metav1.GetOptions{ResourceVersion: "0"})
	if apierrors.IsNotFound(err) {
		n.logger.Warn("The Node object is gone from the API server; registering it again")
		uid, err := n.register(ctx)
		if err != nil {
			return err
		}
		n.mu.Lock()
		n.state.UID = uid
		n.mu.Unlock()
		if current, err = nodes.Get(rctx, n.cfg.Node.Name, metav1.GetOptions{}); err != nil {
			return fmt.Errorf("get node %q: %w", n.cfg.Node.Name, err)
		}
	} else if err != nil {
		return fmt.Errorf("get node %q: %w", n.cfg.Node.Name, err)
	}

	now := n.clock.Now()
	want := buildStatus(in, &current.Status, now)
	due := n.lastReport.IsZero() || now.Sub(n.lastReport) >= n.cfg.StatusReportPeriod
	if !due && !statusChanged(&current.Status, &want) {
		return nil
	}
	patch, err := statusPatch(current, want)
	if err != nil {
		return err
	}
	if _, err := nodes.Patch(rctx, n.cfg.Node.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		return fmt.Errorf("patch status of node %q: %w", n.cfg.Node.Name, err)
	}
	n.lastReport = now

	ready, msg := readyCondition(&want)
	n.everReady = n.everReady || ready == v1.ConditionTrue
	n.mu.Lock()
	was := n.state.Ready
	n.state.Ready, n.state.ReadyMessage = ready, msg
	n.mu.Unlock()
	if ready != was {
		event := "NodeNotReady"
		if ready == v1.ConditionTrue {
			event = "NodeReady"
			n.logger.Info("Node is Ready")
		} else {
			n.logger.Warn("Node is not Ready", "reason", msg)
		}
		if n.cfg.Events != nil && (was != "" || ready == v1.ConditionTrue) {
			// The kubelet's recordNodeStatusEvent: Normal either way.
			n.cfg.Events.NodeEvent(v1.EventTypeNormal, event, fmt.Sprintf("Node %s status is now: %s", n.cfg.Node.Name, event))
		}
	}
	return nil
}

// statusPatch is the strategic merge patch taking node's status to want.
func statusPatch(node *v1.Node, want v1.NodeStatus) ([]byte, error) {
	oldJSON, err := json.Marshal(v1.Node{Status: node.Status})
	if err != nil {
		return nil, fmt.Errorf("encode node status: %w", err)
	}
	newJSON, err := json.Marshal(v1.Node{Status: want})
	if err != nil {
		return nil, fmt.Errorf("encode node status: %w", err)
	}
	patch, err := twoWayMergePatch(oldJSON, newJSON, v1.Node{})
	if err != nil {
		return nil, fmt.Errorf("compute node status patch: %w", err)
	}
	return patch, nil
}
