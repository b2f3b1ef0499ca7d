package config

import (
	"time"

	"github.com/minikubelet/minikubelet/agent/node"
	"github.com/minikubelet/minikubelet/agent/userns"
	"github.com/minikubelet/minikubelet/cni"
)

// Config holds the node settings the agent needs.
type Config struct {
	// NodeName is this node's name (spec.nodeName, fieldRef spec.nodeName).
	NodeName string
	// RootDir holds pod volumes (<RootDir>/pods/<uid>).
	RootDir string
	// PodLogDir holds the CRI container logs (<PodLogDir>/<ns>_<name>_<uid>).
	PodLogDir string
	// ContainerLogsDir gets the kubelet's symlink per container log
	// (<pod>_<ns>_<container>-<id>.log, agent/logrotate/symlink.go); "" makes none.
	ContainerLogsDir string
	// ResolvConf is the host resolver file: pods on the node's resolver
	// inherit it, pods on cluster DNS its search domains.
	ResolvConf string
	// ClusterDNS are the cluster's nameservers (--cluster-dns) for pods
	// with a ClusterFirst policy; none: they get the node's resolver.
	ClusterDNS []string
	// ClusterDomain is the DNS domain of pod FQDNs
	// (<hostname>.<subdomain>.<ns>.svc.<ClusterDomain>); cluster.local.
	ClusterDomain string
	// PullSecretFile is a docker config file (config.json or .dockercfg)
	// with node-level registry credentials; "" reads <RootDir>/config.json
	// when it exists (the kubelet's first config.json location).
	PullSecretFile string
	// RuntimeName prefixes container IDs in status (containerd://<id>).
	RuntimeName string
	// RuntimeTimeout is the slack added to calls that wait on purpose
	// (StopContainer waits the grace period first).
	RuntimeTimeout time.Duration
	// RelistPeriod is how often the runtime is listed for changes (1 s, the
	// kubelet's PLEG period).
	RelistPeriod time.Duration
	// ResyncPeriod is how often a pod is synced without any change.
	ResyncPeriod time.Duration
	// ErrorBackoff is how long a pod worker waits after a failed sync
	// (the kubelet's backOffPeriod, 10 s).
	ErrorBackoff time.Duration
	// BackoffInitial and BackoffMax shape container restart and image pull
	// back-off (the kubelet's 10 s and 300 s).
	BackoffInitial, BackoffMax time.Duration
	// Network is the node's pod network (conflist owned by package cni).
	Network cni.Config
	// PodSecurity is the Pod Security Standards level local pods are held
	// to (node.AdmitPodSecurity; cluster pods are the API server's to judge).
	// privileged also lets pods mount the agent's own state through
	// hostPath. Empty: node.DefaultPodSecurity.
	PodSecurity node.PodSecurityLevel
	// AgentID names this agent among the minikubelets sharing the runtime
	// (label io.minikubelet.agent): node.ServeAgentID(RootDir) by default, the
	// daemon's; node.ForegroundAgentID for a foreground `run`.
	AgentID string
	// ProtectedPaths are host paths pods may not mount unless PodSecurity
	// is privileged, besides RootDir (e.g. the API socket's directory).
	ProtectedPaths []string
	// AllowedUnsafeSysctls are the sysctls, besides the kubelet's safe set,
	// pods may set: names or prefixes ending in "*" (net.core.*); check
	// them with manifest.ValidateAllowedUnsafeSysctls.
	AllowedUnsafeSysctls []string
	// SeccompProfileRoot holds the Localhost seccomp profiles ("":
	// <RootDir>/seccomp, as the kubelet's <root-dir>/seccomp).
	SeccompProfileRoot string
	// AppArmorEnabled says the host enforces AppArmor
	// (node.AppArmorEnabled); without it, pods asking for a profile are
	// refused (node.AdmitAppArmor).
	AppArmorEnabled bool
	// PodPidsLimit is pids.max of every pod cgroup (-1 or 0: unlimited).
	PodPidsLimit int64
	// NodePidsLimit is pids.max of kubepods (0: unlimited).
	NodePidsLimit int64
	// Node describes this node (node.Detect); new pods are admitted against
	// it (agent/node/admission.go). A nil Node.Allocatable turns admission off (unit
	// tests only).
	Node node.Info
	// HostIPs are the node's addresses, the first its primary one, for
	// status.hostIP(s), the fieldRef of the same paths and the pod IPs of
	// host-network pods (cluster mode: the Node's InternalIP). Empty: the
	// address of the default route's interface (node.HostIPs).
	HostIPs []string
	// UserNamespaces is the pool of host IDs pods with hostUsers: false
	// get their ranges from (agent/userns); zero: the kubelet's defaults.
	UserNamespaces userns.Config
	// Devices is the device plugins' manager (agent/deviceplugin, wired by
	// serve); nil (NoDevices): no extended resource is backed by devices.
	Devices Devices
	// NodeLabels gives the labels the API server's Node object has now
	// (cluster mode: agent/cluster.NodeLabels); nil, or nil labels: Node's.
	NodeLabels func() map[string]string
}

// AdmissionNode is the node new pods are admitted against: Node, with the
// labels of the API server's Node object when NodeLabels gives them, as
// the kubelet admits against its informer's Node (a label added with
// `kubectl label node` counts for node affinity at once).
func (c *Config) AdmissionNode() node.Info {
	n := c.Node
	if c.NodeLabels != nil {
		if l := c.NodeLabels(); l != nil {
			n.Labels = l
		}
	}
	return n
}

// WithDefaults returns c with every unset field set to the kubelet's
// default; agent.New applies it to the Config it is given.
func (c Config) WithDefaults() Config {
	if c.Devices == nil {
		c.Devices = NoDevices{}
	}
	if c.RootDir == "" {
		c.RootDir = "/var/lib/minikubelet"
	}
	if c.PodLogDir == "" {
		c.PodLogDir = "/var/log/pods"
	}
	if c.ResolvConf == "" {
		c.ResolvConf = "/etc/resolv.conf"
	}
	if c.ClusterDomain == "" {
		c.ClusterDomain = "cluster.local"
	}
	if c.RuntimeName == "" {
		c.RuntimeName = "containerd"
	}
	if c.RuntimeTimeout == 0 {
		c.RuntimeTimeout = 30 * time.Second
	}
	if c.RelistPeriod == 0 {
		c.RelistPeriod = time.Second
	}
	if c.ResyncPeriod == 0 {
		c.ResyncPeriod = time.Minute
	}
	if c.ErrorBackoff == 0 {
		c.ErrorBackoff = 10 * time.Second
	}
	if c.BackoffInitial == 0 {
		c.BackoffInitial = 10 * time.Second
	}
	if c.BackoffMax == 0 {
		c.BackoffMax = 300 * time.Second
	}
	c.Network = c.Network.WithDefaults()
	if c.AgentID == "" {
		c.AgentID = node.ServeAgentID(c.RootDir)
	}
	if c.PodSecurity == "" {
		c.PodSecurity = node.DefaultPodSecurity
	}
	return c
}
