package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"sync"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/agent/certificate"
	"github.com/minikubelet/minikubelet/agent/cluster"
	"github.com/minikubelet/minikubelet/agent/daemon"
	"github.com/minikubelet/minikubelet/agent/deviceplugin"
	agentnode "github.com/minikubelet/minikubelet/agent/node"
	"github.com/minikubelet/minikubelet/agent/podevents"
)

// clusterFlags are serve's cluster-mode settings: with a kubeconfig the
// node joins that cluster.
type clusterFlags struct {
	kubeconfig string
	nodeIP     string
	// TLS bootstrapping and client certificate rotation (the kubelet's
	// flags; agent/certificate).
	bootstrapKubeconfig string
	certDir             string
	rotateCertificates  bool
	// rotateServerCertificates is serverTLSBootstrap: the kubelet
	// server's certificate comes from the CSR API.
	rotateServerCertificates bool
}

func (c *clusterFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "join a Kubernetes cluster: a kubeconfig with this node's credentials (client certificate with CN system:node:<node-name> and O system:nodes, or a token); the node registers there and keeps its Node status and Lease")
	fs.StringVar(&c.nodeIP, "node-ip", "", "with --kubeconfig: the node's InternalIP address (default: the address of the default route's interface)")
	fs.StringVar(&c.bootstrapKubeconfig, "bootstrap-kubeconfig", "", "TLS bootstrapping: when --kubeconfig is missing or its client certificate expired, request one (CertificateSigningRequest for kubernetes.io/kube-apiserver-client-kubelet) with this kubeconfig's credentials (a bootstrap token), store it in --cert-dir and write --kubeconfig")
	fs.StringVar(&c.certDir, "cert-dir", "", "directory of the client certificate pairs (kubelet-client-current.pem) and the kubelet server's self-signed pair (default <root-dir>/pki, as the kubelet's /var/lib/kubelet/pki)")
	fs.BoolVar(&c.rotateServerCertificates, "rotate-server-certificates", false, "serve the kubelet server with a certificate from a CertificateSigningRequest for kubernetes.io/kubelet-serving (the node's addresses as SANs), renewed as --rotate-certificates renews the client's; someone must approve it (KubeletConfiguration serverTLSBootstrap)")
	fs.BoolVar(&c.rotateCertificates, "rotate-certificates", false, "renew the client certificate at 70-90 % of its lifetime with a new CertificateSigningRequest, without a restart (KubeletConfiguration rotateCertificates)")
}

// check refuses the bootstrap flags without --kubeconfig.
func (c *clusterFlags) check() error {
	if c.kubeconfig != "" {
		return nil
	}
	switch {
	case c.bootstrapKubeconfig != "":
		return fmt.Errorf("--bootstrap-kubeconfig needs --kubeconfig (where the node's kubeconfig is written)")
	case c.rotateCertificates:
		return fmt.Errorf("--rotate-certificates needs --kubeconfig (the client certificate it renews)")
	case c.rotateServerCertificates:
		return fmt.Errorf("--rotate-server-certificates needs --kubeconfig (the kubelet server runs in cluster mode only)")
	}
	return nil
}

// pkiDir is --cert-dir, by default <root-dir>/pki: the kubelet's default
// /var/lib/kubelet/pki is its root dir's pki, and this root dir's pki
// already holds the kubelet server's self-signed pair (kubelet.crt, as
// the kubelet's cert dir does) and the local API's CA.
func (c *clusterFlags) pkiDir(rootDir string) string {
	if c.certDir != "" {
		return c.certDir
	}
	return filepath.Join(rootDir, "pki")
}

// bootstrap runs TLS bootstrapping when --bootstrap-kubeconfig is given
// (certificate.Bootstrap: nothing to do while --kubeconfig's certificate
// is valid).
func (c *clusterFlags) bootstrap(ctx context.Context, nodeName, rootDir string, logger *slog.Logger) error {
	if c.bootstrapKubeconfig == "" {
		return nil
	}
	_, err := certificate.Bootstrap(ctx, certificate.BootstrapConfig{
		Kubeconfig:          c.kubeconfig,
		BootstrapKubeconfig: c.bootstrapKubeconfig,
		CertDir:             c.pkiDir(rootDir),
		NodeName:            nodeName,
		NewCSRClient: func(cfg *rest.Config) (certificate.CSRClient, error) {
			return cluster.NewCSRClient(cfg, "minikubelet/"+version)
		},
		Logger: logger,
	})
	return err
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
	// nodeLabels keeps the Node object's labels for admission
	// (config.Config.NodeLabels); nil in tests that build a clusterClient
	// by hand.
	nodeLabels *cluster.NodeLabels
	// trustBundles reads the ClusterTrustBundles the pods project
	// (Deps.TrustBundles); newClusterPods' run runs it (nil in tests that
	// build a clusterClient by hand).
	trustBundles *cluster.TrustBundleLister
	// podCerts requests the pods' certificates (Deps.PodCertificates; nil
	// in tests that build a clusterClient by hand).
	podCerts *cluster.PodCertificateSource
	// events posts the node's and its pods' events; newClusterPods' run
	// runs it (nil in tests that build a clusterClient by hand).
	events *cluster.EventRecorder
	// rest is the node's API server configuration (the kubelet server's
	// TokenReviews and SubjectAccessReviews use it).
	rest *rest.Config
	// kubeletPort is the kubelet server's bound port, advertised in the
	// Node status (0 before it listens).
	kubeletPort int32
	// servingCert gives the kubelet server's certificate when it comes
	// from the CSR API (--rotate-server-certificates); nil otherwise.
	servingCert func(*tls.ClientHelloInfo) (*tls.Certificate, error)
}

// dial reads the kubeconfig and checks it against the node name; nil when
// no kubeconfig was given. With --rotate-certificates the client's
// transport presents the certificate the returned manager renews (nil
// without).
func (c *clusterFlags) dial(nodeName, rootDir string, logger *slog.Logger) (*clusterClient, *certificate.Manager, error) {
	if c.kubeconfig == "" {
		if c.nodeIP != "" {
			return nil, nil, fmt.Errorf("--node-ip needs --kubeconfig (it is the address of the Node object)")
		}
		return nil, nil, nil
	}
	cfg, err := cluster.LoadConfig(c.kubeconfig)
	if err != nil {
		return nil, nil, fmt.Errorf("--kubeconfig: %w", err)
	}
	if err := cluster.CheckNodeIdentity(cfg, nodeName); err != nil {
		return nil, nil, fmt.Errorf("--kubeconfig: %w", err)
	}
	var mgr *certificate.Manager
	if c.rotateCertificates {
		if mgr, err = c.rotation(cfg, nodeName, rootDir, logger); err != nil {
			return nil, nil, fmt.Errorf("--rotate-certificates: %w", err)
		}
	}
	cs, err := cluster.NewClientForConfig(cfg, "minikubelet/"+version)
	if err != nil {
		return nil, nil, fmt.Errorf("--kubeconfig %s: %w", c.kubeconfig, err)
	}
	tokens, err := cluster.NewTokenSource(cs)
	if err != nil {
		return nil, nil, fmt.Errorf("--kubeconfig: %w", err)
	}
	ctbs, err := cluster.NewClusterTrustBundleClient(cfg, "minikubelet/"+version)
	if err != nil {
		return nil, nil, fmt.Errorf("--kubeconfig %s: %w", c.kubeconfig, err)
	}
	podCerts, err := cluster.NewPodCertificateSource(cs, cfg, "minikubelet/"+version, nodeName)
	if err != nil {
		return nil, nil, fmt.Errorf("--kubeconfig %s: %w", c.kubeconfig, err)
	}
	return &clusterClient{client: cs, server: cfg.Host, tokens: tokens, rest: cfg, services: cluster.NewServiceLister(cs, nil),
		events:       cluster.NewEventRecorder(cs, nodeName, nil, nil),
		trustBundles: cluster.NewTrustBundleLister(ctbs, nil, logger), podCerts: podCerts,
		nodeLabels: cluster.NewNodeLabels(cs, nodeName, logger)}, mgr, nil
}

// rotation sets up the renewal of the kubeconfig's client certificate:
// the manager starts from <cert-dir>/kubelet-client-current.pem, or the
// kubeconfig's own pair, and cfg's transport presents its current one.
// Renewals are requested with the current certificate, as the kubelet's
// once it has one.
func (c *clusterFlags) rotation(cfg *rest.Config, nodeName, rootDir string, logger *slog.Logger) (*certificate.Manager, error) {
	store, err := certificate.NewStore(c.pkiDir(rootDir), certificate.ClientPrefix)
	if err != nil {
		return nil, err
	}
	var initial *tls.Certificate
	if tc, err := cfg.TransportConfig(); err == nil {
		if _, err := transport.TLSConfigFor(tc); err == nil && len(tc.TLS.CertData) > 0 { // loads the files
			if pair, err := tls.X509KeyPair(tc.TLS.CertData, tc.TLS.KeyData); err == nil {
				initial = &pair
			}
		}
	}
	mgr, err := certificate.NewManager(certificate.ManagerConfig{
		Store:   store,
		Initial: initial,
		Subject: certificate.NodeSubject(nodeName),
		Signer:  certificatesv1.KubeAPIServerClientKubeletSignerName,
		Usages:  certificate.ClientUsages,
		Logger:  logger.With("component", "certificate"),
	})
	if err != nil {
		return nil, err
	}
	if err := certificate.UseRotatingCertificate(cfg, mgr); err != nil {
		return nil, err
	}
	csrs, err := cluster.NewCSRClient(cfg, "minikubelet/"+version)
	if err != nil {
		return nil, err
	}
	mgr.SetClient(csrs)
	return mgr, nil
}

// startCluster starts the node agent (Node registration, status, lease) in
// the background; the returned wait blocks until it stopped after ctx
// ended. With cc nil it does nothing.
func startCluster(ctx context.Context, cc *clusterClient, cf clusterFlags, node agentnode.Info, rootDir string,
	rt cluster.RuntimeStatus, runtimeName, runtimeVersion string, pressure func() (memory, disk, pid, ok bool), devices *deviceplugin.Manager, logger *slog.Logger) (wait func(), err error) {
	if cc == nil {
		return func() {}, nil
	}
	// client-go logs through klog; send it where everything else goes.
	klog.SetSlogLogger(logger.With("component", "client-go"))
	na, err := cluster.NewNodeAgent(cc.client, rt, withDevices(cluster.NodeConfig{
		Node:           node,
		NodeIP:         cf.nodeIP,
		RuntimeName:    runtimeName,
		RuntimeVersion: runtimeVersion,
		Version:        version,
		RootDir:        rootDir,
		Events:         cc.events,
		KubeletPort:    cc.kubeletPort,
		Pressure:       pressure,
	}, devices), logger, nil)
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
	// source is the API server pod source (daemon.Config.Sources).
	source daemon.Source
	// observer sends pod statuses to the API server: the cluster pods'
	// to their objects, the static pods' to their mirrors; and the pods'
	// events (agent.Agent.AddObserver).
	observer podevents.Observer
	// staticPods keeps the static pods' mirror pods
	// (daemon.Config.StaticPods).
	staticPods func([]*v1.Pod)
	// run sends statuses and events, keeps the mirror pods and lists the
	// Services until ctx ends.
	run func(ctx context.Context)
}

// newClusterPods builds the cluster's pod source (which deletes the
// objects of pods deleted on the API server once podDone, the agent's
// PodDone, says their teardown finished), the status writer, the mirror
// pods (which keep a leaving static pod's mirror until podDone says so)
// and the event recorder.
func newClusterPods(cc *clusterClient, podDone func(types.UID) <-chan struct{}, holds func(types.UID) bool, nodeName string, logger *slog.Logger) clusterPodWiring {
	sw := cluster.NewStatusWriter(cc.client, logger, nil)
	mirrors := cluster.NewMirrorPods(cc.client, nodeName, sw, logger, cluster.WithStaticPodDone(podDone))
	src := cluster.NewPodSource(cc.client, nodeName, logger, cluster.WithPodDone(podDone), cluster.WithMirrorPods(mirrors),
		cluster.WithHeldPods(holds), cluster.WithStatusFlush(sw.Flush))
	events := cc.events
	if events == nil {
		events = cluster.NewEventRecorder(cc.client, nodeName, logger, nil)
	}
	events.SetLogger(logger)
	return clusterPodWiring{
		source:     src,
		observer:   podevents.Observers(sw, mirrors, events),
		staticPods: mirrors.SetStaticPods,
		run: func(ctx context.Context) {
			var wg sync.WaitGroup
			for _, run := range []func(context.Context){mirrors.Run, events.Run, cc.runServices, cc.runTrustBundles, cc.runNodeLabels} {
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

// runNodeLabels runs the Node object's informer (none in tests that build
// a clusterClient by hand).
func (cc *clusterClient) runNodeLabels(ctx context.Context) {
	if cc.nodeLabels != nil {
		cc.nodeLabels.Run(ctx)
	}
}

// runTrustBundles lets the ClusterTrustBundle informer start on first use
// (none in tests that build a clusterClient by hand).
func (cc *clusterClient) runTrustBundles(ctx context.Context) {
	if cc.trustBundles != nil {
		cc.trustBundles.Run(ctx)
	}
}

// servingCertificates sets up the kubelet server's certificate from the
// CSR API, as the kubelet's serverTLSBootstrap: signer
// kubernetes.io/kubelet-serving, CN system:node:<node>, O system:nodes,
// the node's addresses as SANs (its InternalIP as an IP, its host name as
// a DNS name), requested with the node's credentials, stored as
// <cert-dir>/kubelet-server-current.pem and renewed at 70-90 % of its
// lifetime. The kubelet takes the addresses from its Node status; here
// they are the ones the Node is registered with (cluster.NodeAddresses).
func (c *clusterFlags) servingCertificates(cc *clusterClient, nodeName, rootDir string, logger *slog.Logger) (*certificate.Manager, error) {
	addrs, err := cluster.NodeAddresses(c.nodeIP, nodeName)
	if err != nil {
		return nil, err
	}
	sans := &x509.CertificateRequest{}
	for _, a := range addrs {
		switch a.Type {
		case v1.NodeInternalIP, v1.NodeExternalIP:
			if ip := net.ParseIP(a.Address); ip != nil {
				sans.IPAddresses = append(sans.IPAddresses, ip)
			}
		case v1.NodeHostName, v1.NodeInternalDNS, v1.NodeExternalDNS:
			sans.DNSNames = append(sans.DNSNames, a.Address)
		}
	}
	store, err := certificate.NewStore(c.pkiDir(rootDir), certificate.ServerPrefix)
	if err != nil {
		return nil, err
	}
	csrs, err := cluster.NewCSRClient(cc.rest, "minikubelet/"+version)
	if err != nil {
		return nil, err
	}
	return certificate.NewManager(certificate.ManagerConfig{
		Store:      store,
		Subject:    certificate.NodeSubject(nodeName),
		Signer:     certificatesv1.KubeletServingSignerName,
		Usages:     certificate.ServingUsages,
		SANs:       sans,
		StartEmpty: true,
		Name:       "serving",
		Client:     csrs,
		Logger:     logger.With("component", "certificate"),
	})
}
