package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/agent"
	"github.com/minikubelet/minikubelet/agent/cluster"
)

// clusterFlags are serve's cluster-mode settings: with a kubeconfig the
// node joins that cluster.
type clusterFlags struct {
	kubeconfig string
	nodeIP     string
}

func (c *clusterFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "join a Kubernetes cluster: a kubeconfig with this node's credentials (client certificate with CN system:node:<node-name> and O system:nodes, or a token); the node registers there and keeps its Node status and Lease")
	fs.StringVar(&c.nodeIP, "node-ip", "", "with --kubeconfig: the node's InternalIP address (default: the address of the default route's interface)")
}

// clusterClient is the API server connection serve prepared before
// anything started, so that a bad kubeconfig is a usage error.
type clusterClient struct {
	client cluster.API
	server string
	// tokens requests the pods' service account tokens (Deps.Tokens).
	tokens *cluster.TokenSource
	// services lists the cluster's Services for the containers' service
	// link variables (Deps.Services); newClusterPods' run runs it.
	services *cluster.ServiceLister
	// events posts the node's and its pods' events; newClusterPods' run
	// runs it (nil in tests that build a clusterClient by hand).
	events *cluster.EventRecorder
	// rest is the node's API server configuration (the kubelet server's
	// TokenReviews and SubjectAccessReviews use it).
	rest *rest.Config
	// kubeletPort is the kubelet server's bound port, advertised in the
	// Node status (0 before it listens).
	kubeletPort int32
}

// dial reads the kubeconfig and checks it against the node name; nil when
// no kubeconfig was given.
func (c *clusterFlags) dial(nodeName string) (*clusterClient, error) {
	if c.kubeconfig == "" {
		if c.nodeIP != "" {
			return nil, fmt.Errorf("--node-ip needs --kubeconfig (it is the address of the Node object)")
		}
		return nil, nil
	}
	cs, cfg, err := cluster.NewClient(c.kubeconfig, "minikubelet/"+version)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig: %w", err)
	}
	if err := cluster.CheckNodeIdentity(cfg, nodeName); err != nil {
		return nil, fmt.Errorf("--kubeconfig: %w", err)
	}
	tokens, err := cluster.NewTokenSource(cs)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig: %w", err)
	}
	return &clusterClient{client: cs, server: cfg.Host, tokens: tokens, rest: cfg, services: cluster.NewServiceLister(cs, nil),
		events: cluster.NewEventRecorder(cs, nodeName, nil, nil)}, nil
}

// startCluster starts the node agent (Node registration, status, lease) in
// the background; the returned wait blocks until it stopped after ctx
// ended. With cc nil it does nothing.
func startCluster(ctx context.Context, cc *clusterClient, cf clusterFlags, node agent.NodeInfo, rootDir string,
	rt cluster.RuntimeStatus, runtimeName, runtimeVersion string, pressure func() (memory, disk, pid, ok bool), logger *slog.Logger) (wait func(), err error) {
	if cc == nil {
		return func() {}, nil
	}
	// client-go logs through klog; send it where everything else goes.
	klog.SetSlogLogger(logger.With("component", "client-go"))
	na, err := cluster.NewNodeAgent(cc.client, rt, cluster.NodeConfig{
		Node:           node,
		NodeIP:         cf.nodeIP,
		RuntimeName:    runtimeName,
		RuntimeVersion: runtimeVersion,
		Version:        version,
		RootDir:        rootDir,
		Events:         cc.events,
		KubeletPort:    cc.kubeletPort,
		Pressure:       pressure,
	}, logger, nil)
	if err != nil {
		return nil, err
	}
	logger.Info("Joining the cluster", "server", cc.server, "node", node.Name, "kubeconfig", cf.kubeconfig)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = na.Run(ctx)
	}()
	return func() { <-done }, nil
}

// clusterPodWiring is what serve wires for the cluster's pods.
type clusterPodWiring struct {
	// source is the API server pod source (agent.DaemonConfig.Sources).
	source agent.Source
	// observer sends pod statuses to the API server: the cluster pods'
	// to their objects, the static pods' to their mirrors; and the pods'
	// events (agent.Agent.AddObserver).
	observer agent.Observer
	// staticPods keeps the static pods' mirror pods
	// (agent.DaemonConfig.StaticPods).
	staticPods func([]*v1.Pod)
	// run sends statuses and events, keeps the mirror pods and lists the
	// Services until ctx ends.
	run func(ctx context.Context)
}

// newClusterPods builds the cluster's pod source (which deletes the
// objects of pods deleted on the API server once podDone, the agent's
// PodDone, says their teardown finished), the status writer, the mirror
// pods and the event recorder.
func newClusterPods(cc *clusterClient, podDone func(types.UID) <-chan struct{}, holds func(types.UID) bool, nodeName string, logger *slog.Logger) clusterPodWiring {
	sw := cluster.NewStatusWriter(cc.client, logger, nil)
	mirrors := cluster.NewMirrorPods(cc.client, nodeName, sw, logger)
	src := cluster.NewPodSource(cc.client, nodeName, logger, cluster.WithPodDone(podDone), cluster.WithMirrorPods(mirrors),
		cluster.WithHeldPods(holds))
	events := cc.events
	if events == nil {
		events = cluster.NewEventRecorder(cc.client, nodeName, logger, nil)
	}
	events.SetLogger(logger)
	return clusterPodWiring{
		source:     src,
		observer:   agent.Observers(sw, mirrors, events),
		staticPods: mirrors.SetStaticPods,
		run: func(ctx context.Context) {
			var wg sync.WaitGroup
			for _, run := range []func(context.Context){mirrors.Run, events.Run, cc.runServices} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					run(ctx)
				}()
			}
			events.NodeEvent(v1.EventTypeNormal, "Starting", "Starting kubelet.")
			sw.Run(ctx)
			wg.Wait()
		},
	}
}

// runServices runs the Services informer (none in tests that build a
// clusterClient by hand).
func (cc *clusterClient) runServices(ctx context.Context) {
	if cc.services != nil {
		cc.services.Run(ctx)
	}
}
