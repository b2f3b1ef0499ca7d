package main

// Over 600 lines: the node flags shared by run and serve, the foreground run
// itself and its printer; serve's own wiring is in serve*.go.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent"
	"github.com/minikubelet/minikubelet/agent/api"
	"github.com/minikubelet/minikubelet/agent/eviction"
	"github.com/minikubelet/minikubelet/agent/ipamrepair"
	"github.com/minikubelet/minikubelet/agent/manifest"
	agentnode "github.com/minikubelet/minikubelet/agent/node"
	"github.com/minikubelet/minikubelet/agent/podcgroup"
	"github.com/minikubelet/minikubelet/agent/podevents"
	"github.com/minikubelet/minikubelet/agent/podspec"
	"github.com/minikubelet/minikubelet/agent/userns"
	"github.com/minikubelet/minikubelet/cgroups"
	"github.com/minikubelet/minikubelet/cni"
	"github.com/minikubelet/minikubelet/cri"
)

// nodeFlags are the settings shared by every command that runs pods.
type nodeFlags struct {
	endpoint       string
	rootDir        string
	podLogDir      string
	nodeName       string
	podCIDR        string
	cniConfDir     string
	cniBinDir      string
	cniBridge      string
	cniDataDir     string
	masquerade     bool
	runtimeTimeout time.Duration
	networkTimeout time.Duration
	backoffInitial time.Duration
	backoffMax     time.Duration
	logLevel       string
	logFormat      string
	kubeReserved   string
	cgroupDriver   string
	podPidsLimit   int64
	nodePidsLimit  int64
	cgroupsPerQOS  bool
	allowPriv      bool
	podSecurity    string
	// podSecurityLevel is the level node() settled on from podSecurity
	// and allowPriv; podSecurityNotice the deprecation warning to print.
	podSecurityLevel  agentnode.PodSecurityLevel
	podSecurityNotice string
	// fs is the flag set the flags were registered with (flagGiven).
	fs             *flag.FlagSet
	unsafeSysctls  string
	seccompRoot    string
	systemReserved string
	nodeLabels     string
	clusterDomain  string
	clusterDNS     ipList
	resolvConf     string
	pullSecretFile string
	// usernsIDsPerPod and userns: --userns-ids-per-pod, and the pool node()
	// settled on from it.
	usernsIDsPerPod int64
	userns          userns.Config
	// maxPods is --max-pods, the node's pods capacity.
	maxPods int64
}

func (f *nodeFlags) register(fs *flag.FlagSet) {
	host, _ := os.Hostname()
	fs.StringVar(&f.endpoint, "runtime-endpoint", cri.EndpointFromEnv(), "CRI endpoint of the container runtime (env "+cri.EndpointEnv+")")
	fs.StringVar(&f.rootDir, "root-dir", "/var/lib/minikubelet", "directory for pod volumes and agent state")
	fs.StringVar(&f.podLogDir, "pod-log-dir", "/var/log/pods", "directory for container logs")
	fs.StringVar(&f.nodeName, "node-name", strings.ToLower(host), "this node's name")
	fs.StringVar(&f.podCIDR, "pod-cidr", "10.88.0.0/16", "IPv4 range pod IPs are taken from")
	fs.StringVar(&f.cniConfDir, "cni-conf-dir", "/etc/cni/net.d", "the runtime's CNI config directory (the pod network conflist is written here)")
	fs.StringVar(&f.cniBinDir, "cni-bin-dir", "/opt/cni/bin", "directory of the CNI plugin binaries")
	fs.StringVar(&f.cniBridge, "cni-bridge", "mkl0", "name of the pod network bridge")
	fs.StringVar(&f.cniDataDir, "cni-data-dir", "", "host-local IPAM state directory (default: the plugin's /var/lib/cni/networks)")
	fs.BoolVar(&f.masquerade, "pod-masquerade", true, "masquerade pod traffic leaving the pod CIDR (turn off to keep pods off the network)")
	fs.DurationVar(&f.runtimeTimeout, "runtime-request-timeout", 2*time.Minute, "timeout of ordinary CRI calls")
	fs.DurationVar(&f.networkTimeout, "network-ready-timeout", time.Minute, "how long to wait for the runtime to load the pod network")
	fs.DurationVar(&f.backoffInitial, "backoff-initial", 10*time.Second, "first container restart / image pull back-off")
	fs.DurationVar(&f.backoffMax, "backoff-max", 300*time.Second, "container restart / image pull back-off cap")
	fs.StringVar(&f.logLevel, "log-level", "warn", "log level: debug, info, warn, error")
	fs.StringVar(&f.logFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&f.kubeReserved, "kube-reserved", "", "cpu, memory and ephemeral-storage kept from pods for the agent and the runtime, e.g. cpu=100m,memory=256Mi")
	fs.StringVar(&f.systemReserved, "system-reserved", "", "cpu, memory and ephemeral-storage kept from pods for the OS, e.g. cpu=100m,memory=256Mi")
	fs.StringVar(&f.cgroupDriver, "cgroup-driver", "cgroupfs", "cgroup driver, cgroupfs or systemd; the runtime's answer wins where it gives one (containerd 2.x), and a disagreeing explicit flag is an error")
	fs.Int64Var(&f.podPidsLimit, "pod-max-pids", -1, "pids.max of each pod cgroup (-1: unlimited)")
	fs.Int64Var(&f.nodePidsLimit, "node-max-pids", 0, "pids.max of the kubepods cgroup, all pods together (0: unlimited)")
	fs.BoolVar(&f.cgroupsPerQOS, "cgroups-per-qos", true, "put pods in the kubepods QoS cgroup hierarchy with their resources (kubelet's --cgroups-per-qos)")
	fs.BoolVar(&f.allowPriv, "allow-privileged", false, "deprecated: the same as --pod-security=privileged")
	fs.StringVar(&f.podSecurity, "pod-security", string(agentnode.DefaultPodSecurity), "Pod Security Standards level of local pods (manifest directory, local API, run): privileged, baseline or restricted; privileged also lets pods mount minikubelet's own state (root dir, run dir, API socket, manifest dir, kubeconfigs, config) through hostPath. Cluster pods are left to the API server's Pod Security Admission")
	f.fs = fs
	fs.StringVar(&f.unsafeSysctls, "allowed-unsafe-sysctls", "", "sysctls pods may set beyond the kubelet's safe set, comma-separated names or prefixes ending in * (e.g. net.core.*); namespaced sysctls only")
	fs.StringVar(&f.seccompRoot, "seccomp-profile-root", "", "directory of the Localhost seccomp profiles (default: <root-dir>/seccomp)")
	fs.StringVar(&f.nodeLabels, "node-labels", "", "extra node labels pods' nodeSelector is matched against, k=v,k2=v2")
	fs.StringVar(&f.clusterDomain, "cluster-domain", "cluster.local", "the cluster's DNS domain: pod FQDNs (<hostname>.<subdomain>.<namespace>.svc.<domain>) and, with --cluster-dns, the search list of ClusterFirst pods")
	fs.Var(&f.clusterDNS, "cluster-dns", "IP addresses of the cluster DNS service, comma-separated (the kubelet's --cluster-dns): ClusterFirst pods resolve through them with the search list <ns>.svc.<domain> svc.<domain> <domain> and ndots:5; none: they get the node's resolv.conf")
	fs.StringVar(&f.resolvConf, "resolv-conf", "/etc/resolv.conf", "the node's resolver file: pods with dnsPolicy Default get it, ClusterFirst pods its search domains (empty: none, the kubelet's rule)")
	fs.Int64Var(&f.usernsIDsPerPod, "userns-ids-per-pod", userns.DefaultIDsPerPod, "host user and group IDs given to each pod with hostUsers: false, a multiple of 65536 (the kubelet's userNamespaces.idsPerPod); the ranges start at this ID, above the host's own")
	fs.Int64Var(&f.maxPods, "max-pods", defaultMaxPods, "pods this node runs at once, its pods capacity (the kubelet's maxPods): admission rejects one more with OutOfpods")
	fs.StringVar(&f.pullSecretFile, "pull-secret-file", "", "docker config file (config.json or .dockercfg) with node-level registry credentials for image pulls (default: <root-dir>/config.json if it exists)")
}

// defaultMaxPods is --max-pods' default: the kubelet's maxPods, and the
// pods capacity agent/node's Detect gives a node.
const defaultMaxPods = 110

// applyMaxPods sets the node's pods capacity and allocatable to
// --max-pods when it was given (reservations take no pods, as in the
// kubelet). Admission counts against allocatable, so a bench or a user
// can run more than the kubelet's 110 pods, as with the kubelet's maxPods.
func (f *nodeFlags) applyMaxPods(info *agentnode.Info) error {
	if f.fs == nil || !flagGiven(f.fs, "max-pods") {
		return nil
	}
	if f.maxPods < 1 {
		return fmt.Errorf("--max-pods: %d is not a pod count: give 1 or more (the kubelet's default is %d)", f.maxPods, defaultMaxPods)
	}
	q := resource.NewQuantity(f.maxPods, resource.DecimalSI)
	info.Capacity[v1.ResourcePods] = *q
	info.Allocatable[v1.ResourcePods] = q.DeepCopy()
	return nil
}

// allowedUnsafeSysctls splits --allowed-unsafe-sysctls.
func (f *nodeFlags) allowedUnsafeSysctls() []string {
	var out []string
	for _, s := range strings.Split(f.unsafeSysctls, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// node describes this node from the host and the flags (and checks the
// flags that need it). thresholds are the eviction thresholds (none for
// run, which does not evict): the hard nodefs.available one is kept from
// the allocatable ephemeral-storage.
func (f *nodeFlags) node(thresholds []eviction.Threshold) (agentnode.Info, error) {
	kube, err := agentnode.ParseResourceList(f.kubeReserved)
	if err != nil {
		return agentnode.Info{}, fmt.Errorf("--kube-reserved: %w", err)
	}
	system, err := agentnode.ParseResourceList(f.systemReserved)
	if err != nil {
		return agentnode.Info{}, fmt.Errorf("--system-reserved: %w", err)
	}
	labels, err := agentnode.ParseLabels(f.nodeLabels)
	if err != nil {
		return agentnode.Info{}, fmt.Errorf("--node-labels: %w", err)
	}
	if err := manifest.ValidateAllowedUnsafeSysctls(f.allowedUnsafeSysctls()); err != nil {
		return agentnode.Info{}, fmt.Errorf("--allowed-unsafe-sysctls: %w", err)
	}
	if err := f.checkPodSecurity(); err != nil {
		return agentnode.Info{}, err
	}
	info, err := agentnode.Detect(f.nodeName, labels, kube, system, &agentnode.Storage{RootDir: f.rootDir, Thresholds: thresholds})
	if err != nil {
		return info, err
	}
	if err := f.applyMaxPods(&info); err != nil {
		return info, err
	}
	// The user namespace pool must hold a range for every pod the node
	// admits, as the kubelet checks at start.
	if f.usernsIDsPerPod <= 0 || f.usernsIDsPerPod >= 1<<32 {
		return info, fmt.Errorf("--userns-ids-per-pod: %d is not a multiple of 65536 between 65536 and 4294901760", f.usernsIDsPerPod)
	}
	f.userns = userns.Config{IDsPerPod: uint32(f.usernsIDsPerPod), MaxPods: int(info.Allocatable.Pods().Value())}.WithDefaults()
	if err := f.userns.Validate(); err != nil {
		return info, fmt.Errorf("--userns-ids-per-pod: %w", err)
	}
	return info, nil
}

// checkPodSecurity settles the level of local pods from --pod-security and
// the deprecated --allow-privileged, its alias for privileged.
func (f *nodeFlags) checkPodSecurity() error {
	level, err := agentnode.ParsePodSecurityLevel(f.podSecurity)
	if err != nil {
		return fmt.Errorf("--pod-security: %w", err)
	}
	if f.fs != nil && flagGiven(f.fs, "allow-privileged") {
		f.podSecurityNotice = "--allow-privileged is deprecated: use --pod-security=privileged (the Pod Security Standards level of local pods)"
		if f.allowPriv {
			if flagGiven(f.fs, "pod-security") && level != agentnode.PodSecurityPrivileged {
				return fmt.Errorf("--allow-privileged (deprecated, the same as --pod-security=privileged) contradicts --pod-security=%s: give only --pod-security", level)
			}
			level = agentnode.PodSecurityPrivileged
		}
	}
	f.podSecurityLevel = level
	return nil
}

// agentConfig is the agent's configuration from the node flags, shared by
// run and serve.
func (f *nodeFlags) agentConfig(node agentnode.Info, runtimeName string) agent.Config {
	return agent.Config{
		NodeName:  f.nodeName,
		RootDir:   f.rootDir,
		PodLogDir: f.podLogDir,
		// The kubelet's /var/log/containers for the default
		// /var/log/pods. Deviation: the kubelet keeps /var/log/containers
		// whatever its podLogsDir; here it is that directory's sibling,
		// so an instance with a private --pod-log-dir (tests, side by
		// side runs) never writes into the host's.
		ContainerLogsDir: filepath.Join(filepath.Dir(f.podLogDir), "containers"),
		RuntimeName:      runtimeName,
		RuntimeTimeout:   f.runtimeTimeout,
		BackoffInitial:   f.backoffInitial,
		BackoffMax:       f.backoffMax,
		Network:          f.network(),
		Node:             node,
		PodPidsLimit:     f.podPidsLimit,
		NodePidsLimit:    f.nodePidsLimit,
		PodSecurity:      f.podSecurityLevel,
		ClusterDomain:    f.clusterDomain,
		ClusterDNS:       f.clusterDNS,
		ResolvConf:       f.resolvConfFile(),
		PullSecretFile:   f.pullSecretFile,
		// Security contexts (agent/security.go).
		AllowedUnsafeSysctls: f.allowedUnsafeSysctls(),
		SeccompProfileRoot:   f.seccompRoot,
		UserNamespaces:       f.userns,
	}
}

// resolvConfFile is --resolv-conf for the agent: empty means no node
// resolver, as with the kubelet, whose pods on the node's resolver then
// get no nameserver (the resolver library's default, the local host); an
// empty file gives them the same.
func (f *nodeFlags) resolvConfFile() string {
	if f.resolvConf == "" {
		return os.DevNull
	}
	return f.resolvConf
}

// ipList is a flag of IP addresses, comma-separated or repeated.
type ipList []string

func (l *ipList) String() string { return strings.Join(*l, ",") }

// Set appends the comma-separated addresses of one flag (or one config
// file value), refusing what is not an IP address.
func (l *ipList) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if net.ParseIP(s) == nil {
			return fmt.Errorf("%q is not an IP address", s)
		}
		*l = append(*l, s)
	}
	return nil
}

func (f *nodeFlags) network() cni.Config {
	return cni.Config{
		PodCIDR:    f.podCIDR,
		Bridge:     f.cniBridge,
		ConfDir:    f.cniConfDir,
		BinDirs:    []string{f.cniBinDir},
		DataDir:    f.cniDataDir,
		Masquerade: f.masquerade,
		// The plugins that answered VERSION, not run again while unchanged.
		CheckCache: filepath.Join(f.rootDir, "cni-plugins-checked.json"),
	}.WithDefaults()
}

const runUsage = `Usage: minikubelet run [flags] FILE

Runs the pods of FILE (YAML or JSON, one or more v1 Pod documents) on this
machine's container runtime and stays attached, printing each step of the
startup chain and every status change. Ctrl-C (or SIGTERM) stops the pods
gracefully and removes everything they created. Needs root.

Flags:
`

// runCommand is `minikubelet run FILE`.
func runCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newCommandFlagSet("run")
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, runUsage)
		fs.PrintDefaults()
	}
	var nf nodeFlags
	nf.register(fs)
	var rf runFlags
	fs.BoolVar(&rf.foreground, "foreground", false, "run the pods in this process even when the daemon runs")
	fs.StringVar(&rf.socket, "socket", clientSocket(), "the daemon's API socket (run submits there when the daemon answers)")
	fs.DurationVar(&rf.timeout, "timeout", 5*time.Minute, "with the daemon: give up waiting for Running/Ready after this long (the pod stays)")
	fs.BoolVar(&rf.rm, "rm", false, "with the daemon: delete the pods (and the ConfigMaps and Secrets run created) when run exits")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return &exitError{code: 2, err: errUsageShown}
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return &exitError{code: 2, err: errors.New("run needs exactly one manifest file")}
	}
	logger, err := newLogger(stderr, nf.logLevel, nf.logFormat)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	p := newPrinter(stdout)
	// With --foreground or an explicit endpoint the pods run in this
	// process whatever the daemon does (below): the runtime handshake,
	// which only asks the runtime its version, then runs while the node
	// is detected and the manifest is read and validated (a first
	// validation costs milliseconds of one-time set-up). Every return
	// waits for it and closes what it opened; an early one (an invalid
	// manifest) cancels it first, so its error is not held up by a
	// runtime that does not answer.
	//
	// The pod network's plugin check (each plugin CNI named answers
	// VERSION, a process each, unless it answered before: cni's
	// CheckCache) begins with the handshake: it writes nothing of the
	// runtime's or the node's (only that cache, in the root dir), and it
	// was the longest step between the handshake and the first sandbox.
	// The conflist is written only once the manifest validated and the
	// runtime answered (below).
	var dial *pending[*cri.Client]
	var netCheck *pending[cni.Checked]
	netCfg := nf.network()
	if rf.foreground || flagGiven(fs, "runtime-endpoint") {
		var stop func()
		dial, netCheck, stop = beginRuntimeSteps(ctx, &nf, netCfg)
		defer stop()
	}
	node, err := nf.node(nil)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	if nf.podSecurityNotice != "" {
		p.line("node", "notice", 0, nf.podSecurityNotice)
	}

	// Step: validate. Nothing changes on the runtime before this passes.
	// The UID is derived from the source path among other things: make the
	// same file give the same UID however it is named.
	file, err := filepath.Abs(fs.Arg(0))
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	t0 := time.Now()
	data, err := manifest.ReadManifestFile(file) // refuses a huge file before reading it
	if errors.Is(err, manifest.ErrInvalidManifest) {
		return &exitError{code: 2, err: fmt.Errorf("invalid manifest (nothing was created):\n%w", err)}
	}
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	// ConfigMap and Secret documents may sit next to the pods.
	pods, cms, secrets, err := manifest.PrepareObjects(data, file, nf.nodeName)
	if err != nil {
		return &exitError{code: 2, err: fmt.Errorf("invalid manifest (nothing was created):\n%w", err)}
	}
	if len(pods) == 0 {
		return &exitError{code: 2, err: fmt.Errorf("invalid manifest (nothing was created):\n%s: no Pod found: only ConfigMaps and Secrets", file)}
	}
	// With a daemon answering on its socket, submit and follow instead:
	// the daemon owns the node's pods. Explicit runtime settings mean the
	// user wants this process to run them.
	if !rf.foreground && !flagGiven(fs, "runtime-endpoint") {
		if c := api.NewClient(rf.socket); c.Ready(ctx) == nil || isDaemonUp(ctx, c) {
			// The objects as written: the daemon defaults and validates
			// them again, as it would any API request.
			raw, rawCMs, rawSecrets, err := manifest.DecodeObjects(data, file)
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			if flagGiven(fs, "pod-security") || flagGiven(fs, "allow-privileged") {
				// The daemon's level is the node's: a client cannot lower it.
				p.line("node", "notice", 0, "--pod-security applies to a foreground run only: the daemon runs these pods at its own level (serve --pod-security); add --foreground to run them in this process")
			}
			return runThroughDaemon(ctx, c, daemonObjects{pods: raw, configMaps: rawCMs, secrets: rawSecrets,
				preparedCMs: cms, preparedSecrets: secrets}, rf, p, stderr)
		}
	}
	for _, pod := range pods {
		p.line(podKey(pod), "validated", time.Since(t0), fmt.Sprintf("uid %s, qos %s", pod.UID, qosOf(pod)))
		if n := localStorageNotice(pod); n != "" {
			p.line(podKey(pod), "notice", 0, n)
		}
	}

	// Step: runtime handshake (begun above when the run was sure to be in
	// the foreground).
	if dial == nil {
		var stop func()
		dial, netCheck, stop = beginRuntimeSteps(ctx, &nf, netCfg)
		defer stop()
	}
	client, err := dial.wait()
	if err != nil {
		return err
	}

	// Step: pod network, its plugin check begun with the handshake, the
	// conflist written once the runtime answered, both finished before
	// the agent starts. It asks the runtime nothing, so it runs beside the
	// cgroups, the foreign pods' check and the IP repair; the runtime's
	// NetworkReady is asked once it is done.
	install := goStep(func() ([]string, error) {
		checked, err := netCheck.wait()
		if err != nil {
			return nil, err
		}
		_, notices, err := checked.Install()
		return notices, err
	})
	// Every return below waits for it: the process must not exit while it
	// writes into the runtime's conf dir.
	defer install.wait()
	p.line("node", "runtime", time.Since(dial.began), fmt.Sprintf("%s %s (CRI %s) at %s", client.RuntimeName(), client.RuntimeVersion(), client.RuntimeAPIVersion(), nf.endpoint))
	inst := cri.Instrument(client, client, logger)

	// Step: cgroups (the driver must agree with the runtime's).
	var cg cgroups.Manager
	if nf.cgroupsPerQOS {
		t3 := time.Now()
		var source string
		cg, source, err = newCgroupManager(ctx, client, fs, nf.cgroupDriver, logger)
		if err != nil {
			return err
		}
		detail := fmt.Sprintf("driver %s (%s), %s", cg.Driver(), source, cg.Mode())
		if n := podcgroup.CheckOOMScoreAdj(); n != "" {
			p.line("node", "notice", 0, n)
		}
		p.line("node", "cgroups", time.Since(t3), detail)
	}

	// Its own identity on the runtime: a daemon sharing it leaves this
	// run's pods alone, and this run leaves the daemon's.
	acfg := nf.agentConfig(node, client.RuntimeName())
	acfg.AgentID = agentnode.ForegroundAgentID(os.Getpid())
	acfg.AppArmorEnabled = agentnode.AppArmorEnabled(agentnode.SysDir)
	// A daemon's control files at their default places (the run does not
	// know another's flags): a pod of this run that writes a static
	// manifest or reads the admin kubeconfig controls the daemon.
	acfg.ProtectedPaths = []string{filepath.Dir(rf.socket), defaultRunDir, defaultManifestDir, filepath.Dir(api.DefaultAdminKubeconfig)}
	// The NetworkReady answer that ends the start stands for the pods'
	// first sandboxes within 5 s while the conflist is unchanged
	// (cni.ReadyCache): they do not ask again.
	a := agent.New(acfg, agent.Deps{Runtime: inst, Images: inst, Logger: logger, Observer: p, Cgroups: cg, NetworkReady: &cni.ReadyCache{}})
	path, foreign, err := a.EnsureNodeCgroups()
	for _, n := range foreign {
		p.line("node", "notice", 0, n)
	}
	if err != nil {
		return err
	} else if path != "" {
		p.line("node", "kubepods", 0, fmt.Sprintf("%s (cpu %s, memory %s allocatable)", path, node.Allocatable.Cpu(), node.Allocatable.Memory()))
	}

	// Step: IPs a crash left reserved, before any sandbox is created.
	t4 := time.Now()
	released, err := a.RepairIPLeaks(ctx, ipamrepair.ForegroundIPRepair)
	if err != nil {
		p.line("node", "notice", 0, fmt.Sprintf("IP leak repair incomplete (leaked pod IPs stay reserved until the next start): %v", err))
	} else if len(released) > 0 {
		p.line("node", "ipam", time.Since(t4), fmt.Sprintf("released %d leaked IPs: %s", len(released), ipamrepair.ReleasedIPs(released)))
	}

	// Step: pod network: the install begun above, then the runtime's
	// NetworkReady (what agent.EnsureNetwork does, in two halves).
	notices, err := install.wait()
	for _, n := range notices {
		p.line("node", "notice", 0, n)
	}
	if err != nil {
		return fmt.Errorf("install pod network config: %w", err)
	}
	nctx, cancel := context.WithTimeout(ctx, nf.networkTimeout)
	err = cni.WaitReady(nctx, netCfg, a.NetworkReady)
	cancel()
	if err != nil {
		return err
	}
	p.line("node", "network ready", time.Since(install.began), fmt.Sprintf("%s %s via %s", netCfg.Name, netCfg.PodCIDR, cni.ConfPath(netCfg)))

	// Run until a signal, then tear the pods down.
	actx, stopAgent := context.WithCancel(context.Background())
	defer stopAgent()
	agentDone := make(chan error, 1)
	go func() { agentDone <- a.Run(actx) }()
	// The data first, so that the pods' first start finds it.
	a.SetConfigData(cms, secrets)
	a.SetPods(pods)
	// Admission runs inside SetPods: when every pod was rejected there is
	// nothing to stay attached to.
	rejected := 0
	for _, pod := range pods {
		if p, ok := a.GetPod(pod.UID); ok && p.Status.Phase == v1.PodFailed && p.Status.Reason != "" {
			rejected++
		}
	}
	if rejected == len(pods) {
		stopAgent()
		<-agentDone
		return &exitError{code: 1, err: errors.New("rejected by node admission (see the status lines above); nothing was created")}
	}

	<-ctx.Done()
	p.line("node", "stopping", 0, "signal received: stopping pods (Ctrl-C again to leave them running)")
	var dones []<-chan struct{}
	for _, pod := range pods {
		if ch := a.PodDone(pod.UID); ch != nil {
			dones = append(dones, ch)
		}
	}
	a.SetPods(nil)
	second := make(chan os.Signal, 1)
	notifySignals(second)
	for _, ch := range dones {
		select {
		case <-ch:
		case <-second:
			stopAgent()
			return &exitError{code: 130, err: errors.New("interrupted again: pods left as they are; run again and stop it to clean up")}
		}
	}
	stopAgent()
	<-agentDone
	p.line("node", "done", 0, "all pods stopped and removed")
	return nil
}

// pending is a step of a foreground run's start running in the
// background (goStep): the runtime handshake, the pod network's install.
type pending[T any] struct {
	// began is when the step started.
	began time.Time
	// done is closed when the step returned; val and err are its
	// results, set before done is closed.
	done chan struct{}
	val  T
	err  error
}

// goStep runs f in the background and returns at once.
func goStep[T any](f func() (T, error)) *pending[T] {
	p := &pending[T]{began: time.Now(), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.val, p.err = f()
	}()
	return p
}

// wait returns the step's results once it is done; any number of calls
// return the same.
func (p *pending[T]) wait() (T, error) {
	<-p.done
	return p.val, p.err
}

// beginRuntimeSteps starts a foreground run's runtime handshake and its
// pod network's plugin check (which writes only its cache in the root
// dir) in the background.
// stop cancels both if still in flight, closes the client the handshake
// made, and waits for the check: every return of the run defers it.
func beginRuntimeSteps(ctx context.Context, nf *nodeFlags, netCfg cni.Config) (dial *pending[*cri.Client], check *pending[cni.Checked], stop func()) {
	dctx, cancel := context.WithCancel(ctx)
	check = goStep(func() (cni.Checked, error) { return cni.Check(dctx, netCfg) })
	dial = goStep(func() (*cri.Client, error) {
		return cri.Dial(dctx, nf.endpoint, cri.Options{Timeout: nf.runtimeTimeout})
	})
	return dial, check, func() {
		closeDialed(dial, cancel)
		_, _ = check.wait()
	}
}

// closeDialed ends a background handshake when the run returns: cancel
// stops it if still in flight, and the client it made, if any, is closed.
func closeDialed(dial *pending[*cri.Client], cancel context.CancelFunc) {
	cancel()
	if c, err := dial.wait(); err == nil {
		_ = c.Close()
	}
}

func podKey(pod *v1.Pod) string { return pod.Namespace + "/" + pod.Name }

// localStorageNotice is what a foreground run says of a pod with local
// storage limits (an ephemeral-storage limit, a disk emptyDir's
// sizeLimit), or "": a foreground run has no eviction manager, so they are
// accepted (the same file runs under serve) but nothing holds the pod to
// them. Said once at the start rather than left to the support table: a
// limit silently not enforced is a disk the user believes bounded.
func localStorageNotice(pod *v1.Pod) string {
	if !eviction.HasLocalStorageLimits(pod) {
		return ""
	}
	return "ephemeral-storage limits and emptyDir sizeLimit are not enforced by a foreground run (it evicts nothing); " +
		"submit the pod to `minikubelet serve` to have a pod past them evicted"
}

func qosOf(pod *v1.Pod) string {
	p := pod.DeepCopy()
	p.Status = v1.PodStatus{}
	return string(podspec.QOSClass(p))
}

// printer is the run command's Observer: it prints the startup chain,
// warnings and status changes as aligned lines.
type printer struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
	// last holds the last printed status summary per pod.
	last map[string]string
}

func newPrinter(w io.Writer) *printer {
	return &printer{w: w, start: time.Now(), last: map[string]string{}}
}

func (p *printer) line(who, what string, d time.Duration, detail string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	dur := ""
	if d > 0 {
		dur = d.Round(time.Millisecond).String()
	}
	fmt.Fprintf(p.w, "[%7.3fs] %-20s %-14s %-8s %s\n", time.Since(p.start).Seconds(), who, what, dur, detail)
}

// PodEvent prints warnings (normal events are covered by steps).
func (p *printer) PodEvent(pod *v1.Pod, ev podevents.Event) {
	if ev.Type != v1.EventTypeWarning {
		return
	}
	msg := ev.Reason + ": " + ev.Message
	if ev.Count > 1 {
		msg += fmt.Sprintf(" (x%d)", ev.Count)
	}
	p.line(podKey(pod), "warning", 0, msg)
}

// PodStep prints one completed step of the startup chain.
func (p *printer) PodStep(pod *v1.Pod, s podevents.Step) {
	p.line(podKey(pod), s.Name, s.Duration, s.Detail)
}

// PodStatus prints the status when its summary changed.
func (p *printer) PodStatus(pod *v1.Pod) {
	sum := statusSummary(pod)
	p.mu.Lock()
	same := p.last[podKey(pod)] == sum
	p.last[podKey(pod)] = sum
	p.mu.Unlock()
	if !same {
		p.line(podKey(pod), "status", 0, sum)
	}
}

// statusSummary renders phase, IP and each container's state in one line.
func statusSummary(pod *v1.Pod) string {
	st := pod.Status
	parts := []string{string(st.Phase)}
	if st.Reason != "" {
		parts = append(parts, fmt.Sprintf("reason=%s (%s)", st.Reason, st.Message))
	}
	if st.PodIP != "" {
		parts = append(parts, "ip="+st.PodIP)
	}
	if n := len(st.ContainerStatuses); n > 0 {
		ready := 0
		for _, c := range st.ContainerStatuses {
			if c.Ready {
				ready++
			}
		}
		parts = append(parts, fmt.Sprintf("ready=%d/%d", ready, n)) // kubectl's READY column
	}
	var cs []string
	for _, list := range [][]v1.ContainerStatus{st.InitContainerStatuses, st.ContainerStatuses} {
		for _, c := range list {
			cs = append(cs, c.Name+":"+containerSummary(c))
		}
	}
	return strings.Join(append(parts, cs...), " ")
}

func containerSummary(c v1.ContainerStatus) string {
	restarts := ""
	if c.RestartCount > 0 {
		restarts = fmt.Sprintf(",restarts=%d", c.RestartCount)
	}
	switch {
	case c.State.Running != nil && !c.Ready:
		return "running,unready" + restarts
	case c.State.Running != nil:
		return "running" + restarts
	case c.State.Terminated != nil:
		t := c.State.Terminated
		if t.Message != "" {
			return fmt.Sprintf("terminated(%s,exit=%d: %s)%s", t.Reason, t.ExitCode, strings.TrimSpace(t.Message), restarts)
		}
		return fmt.Sprintf("terminated(%s,exit=%d)%s", t.Reason, t.ExitCode, restarts)
	case c.State.Waiting != nil:
		w := c.State.Waiting
		if w.Message != "" {
			return fmt.Sprintf("waiting(%s: %s)%s", w.Reason, w.Message, restarts)
		}
		return fmt.Sprintf("waiting(%s)%s", w.Reason, restarts)
	}
	return "unknown"
}

// newCgroupManager picks the cgroup driver (the runtime's, via CRI
// RuntimeConfig, where it answers; else the flag) and builds the manager.
// It also says where the driver came from, for the startup report.
func newCgroupManager(ctx context.Context, rt cri.Runtime, fs *flag.FlagSet, flagDriver string, logger *slog.Logger) (cgroups.Manager, string, error) {
	want, err := cgroups.ParseDriver(flagDriver)
	if err != nil {
		return nil, "", &exitError{code: 2, err: fmt.Errorf("--cgroup-driver: %w", err)}
	}
	flagSet := false
	fs.Visit(func(f *flag.Flag) { flagSet = flagSet || f.Name == "cgroup-driver" })
	var fromRuntime cgroups.Driver
	resp, err := rt.RuntimeConfig(ctx)
	switch {
	case err == nil:
		switch resp.GetLinux().GetCgroupDriver() {
		case runtimeapi.CgroupDriver_SYSTEMD:
			fromRuntime = cgroups.DriverSystemd
		case runtimeapi.CgroupDriver_CGROUPFS:
			fromRuntime = cgroups.DriverCgroupfs
		}
	case cri.IsUnimplemented(err):
		// containerd 1.6: the flag decides.
	default:
		return nil, "", fmt.Errorf("ask the runtime for its cgroup driver: %w", err)
	}
	drv, err := cgroups.ChooseDriver(fromRuntime, want, flagSet)
	if err != nil {
		return nil, "", &exitError{code: 2, err: err}
	}
	source := "the runtime's, from CRI RuntimeConfig"
	if fromRuntime == "" {
		source = "--cgroup-driver; the runtime does not report its own"
	}
	m, err := cgroups.New(cgroups.Config{Driver: drv, Logger: logger})
	return m, source, err
}
