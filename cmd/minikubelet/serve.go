package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/minikubelet/minikubelet/agent"
	"github.com/minikubelet/minikubelet/agent/api"
	"github.com/minikubelet/minikubelet/agent/daemon"
	"github.com/minikubelet/minikubelet/agent/ipamrepair"
	agentnode "github.com/minikubelet/minikubelet/agent/node"
	"github.com/minikubelet/minikubelet/agent/podcgroup"
	"github.com/minikubelet/minikubelet/agent/source"
	"github.com/minikubelet/minikubelet/cgroups"
	"github.com/minikubelet/minikubelet/cmd/minikubelet/earlyinit"
	"github.com/minikubelet/minikubelet/cni"
	"github.com/minikubelet/minikubelet/cri"
)

const serveUsage = `Usage: minikubelet serve [flags]

The minikubelet daemon: owns this node's pods across its own restarts and
reboots. Desired pods come from the static manifest directory (*.yaml,
*.yml, *.json; edits and removals are picked up) and from the local API
(pods submitted with 'minikubelet run' while the daemon runs, persisted
under the root dir). Stopping the daemon leaves pods running; the next
start adopts them.

The API listens on a unix socket (mode 0600, root only), and on TCP only
with --api-address (loopback unless --api-allow-remote): TLS with client
certificates from a CA the daemon creates under <root-dir>/pki; the admin
credentials are in --admin-kubeconfig, which 'minikubelet kubeconfig'
prints (kubectl --kubeconfig /etc/minikubelet/admin.kubeconfig get pods).
Whoever can use the API is root on this node.

With --kubeconfig the node joins that Kubernetes cluster: it registers its
Node object and keeps its status and Lease there, runs the pods the cluster
schedules to it (with their ConfigMaps, Secrets and service-account
tokens), reports their status, and shows its static pods as mirror pods.
It also serves the kubelet API on --port (10250) for the API server:
kubectl logs, exec, attach and port-forward, and the node proxy (/pods,
/healthz, /metrics, /metrics/resource, /configz), to clients with a certificate of --client-ca-file or a
token the API server vouches for, as the API server authorizes them
(--anonymous-auth, --authorization-mode; --read-only-port, --healthz-port).
With --bootstrap-kubeconfig (a bootstrap token, as kubeadm join writes it)
the node first gets its client certificate through a
CertificateSigningRequest and writes --kubeconfig; --rotate-certificates
renews it before it expires. See the README's "Joining a cluster".

Like the kubelet, the daemon removes unused images and dead containers
(--image-gc-*, --container-gc-period) and evicts pods when the node runs
low on memory, disk or PIDs (--eviction-hard, default
memory.available<100Mi,nodefs.available<10%,nodefs.inodesFree<5%,
imagefs.available<15%,imagefs.inodesFree<5%; --eviction-soft with
--eviction-soft-grace-period): dead containers and unused images go first
for disk, then one pod at a time, BestEffort and over-request pods first,
never a static pod; an evicted pod ends Failed with reason Evicted.
'minikubelet describe node' shows the pressure and the last evictions.

A YAML config file (--config) may hold the same settings under the flag
names (e.g. "pod-cidr: 10.88.0.0/16"), or be a kubelet.config.k8s.io/v1beta1
KubeletConfiguration (kubeadm's /var/lib/kubelet/config.yaml): its fields
set the matching flags, the ones not implemented are named in a warning.
Flags given on the command line win.

Flags:
`

// serveFlags are the daemon's own settings beside nodeFlags.
type serveFlags struct {
	config         string
	manifestDir    string
	socket         string
	runDir         string
	apiAddress     string
	apiRemote      bool
	adminKubecfg   string
	logMaxSize     string
	logMaxFiles    int
	dialRetryLimit time.Duration
	profiling      bool
}

// serveGCPercent is the daemon's garbage collection target unless GOGC is
// set: collect when the heap grew by 15 % instead of Go's default
// doubling. The daemon's live heap is small (about 7 MiB with 100 pods)
// but probes allocate steadily; with the default the garbage between
// collections is as large as the live heap. make bench, 100 pods with two
// probes each, against the probes' floor prober in the same run: at 25 the
// daemon's anonymous memory was 16.2 MiB and its CPU 1.34x the floor's; at
// 15, 15.0 MiB and 1.38x (about 0.15 % of a core more).
const serveGCPercent = 15

// setServeGC applies serveGCPercent unless the user chose with GOGC.
func setServeGC(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(serveGCPercent)
	}
}

// serveCommand is `minikubelet serve`.
func serveCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newCommandFlagSet("serve")
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, serveUsage)
		fs.PrintDefaults()
	}
	var nf nodeFlags
	nf.register(fs)
	var gf gcFlags
	gf.register(fs)
	var ef evictFlags
	ef.register(fs)
	var sf serveFlags
	var cf clusterFlags
	cf.register(fs)
	var kf kubeletServerFlags
	kf.register(fs)
	var ka kubeadmAliases
	ka.register(fs)
	fs.StringVar(&sf.config, "config", "", "YAML file with settings under the flag names, or a kubelet.config.k8s.io/v1beta1 KubeletConfiguration; command-line flags win")
	fs.StringVar(&sf.manifestDir, "manifest-dir", defaultManifestDir, "static pod manifest directory")
	fs.StringVar(&sf.socket, "socket", defaultSocket, "the local API's unix socket")
	fs.StringVar(&sf.runDir, "run-dir", defaultRunDir, "directory of the daemon's state that must not outlive a reboot: its lock and the tmpfs of the local API's Secrets")
	fs.StringVar(&sf.apiAddress, "api-address", "", "also serve the API on this TCP address with TLS and client certificates, e.g. 127.0.0.1:6443 (loopback only without --api-allow-remote)")
	fs.BoolVar(&sf.apiRemote, "api-allow-remote", false, "allow a non-loopback --api-address (anyone with the admin certificate is root on this node)")
	fs.StringVar(&sf.adminKubecfg, "admin-kubeconfig", api.DefaultAdminKubeconfig, "where --api-address writes the admin kubeconfig (0600)")
	fs.StringVar(&sf.logMaxSize, "container-log-max-size", "10Mi", "rotate a container log above this size")
	fs.IntVar(&sf.logMaxFiles, "container-log-max-files", 5, "log files kept per container, the current one included")
	fs.DurationVar(&sf.dialRetryLimit, "runtime-wait", 0, "how long to wait for the runtime at start (0: forever)")
	fs.BoolVar(&sf.profiling, "enable-profiling", false, "serve Go runtime profiles at /debug/pprof/ on the API socket (go tool pprof; for debugging and make bench)")
	var err error
	if err = fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return &exitError{code: 2, err: errUsageShown}
	}
	if fs.NArg() != 0 {
		return &exitError{code: 2, err: fmt.Errorf("serve takes no arguments, got %q", fs.Args())}
	}
	var configWarning string
	if sf.config != "" {
		if configWarning, err = applyConfigFile(fs, sf.config); err != nil {
			return &exitError{code: 2, err: err}
		}
	}
	if nf.logLevel == "warn" && !flagGiven(fs, "log-level") {
		nf.logLevel = "info" // a daemon logs what it does
	}
	logger, err := newLogger(stderr, nf.logLevel, nf.logFormat)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	if configWarning != "" {
		logger.Warn("--config " + sf.config + ": KubeletConfiguration fields " + configWarning)
	}
	for _, n := range ka.notices {
		logger.Warn(n)
	}
	maxSize, err := parseBytes(sf.logMaxSize)
	if err != nil {
		return &exitError{code: 2, err: fmt.Errorf("--container-log-max-size: %w", err)}
	}
	if sf.apiAddress != "" {
		if err := api.CheckListenAddress(sf.apiAddress, sf.apiRemote); err != nil {
			return &exitError{code: 2, err: err}
		}
	}
	ecfg, err := ef.config()
	if err != nil {
		return err
	}
	node, err := nf.node(ecfg.Thresholds)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	if nf.podSecurityNotice != "" {
		logger.Warn(nf.podSecurityNotice)
	}
	logger.Info("Pod Security level of local pods", "level", string(nf.podSecurityLevel))
	if err := cf.check(); err != nil {
		return &exitError{code: 2, err: err}
	}
	if err := kf.check(fs, cf.kubeconfig != ""); err != nil {
		return &exitError{code: 2, err: err}
	}
	// One daemon per root dir and per run dir, before anything touches
	// the runtime or the node (or asks the cluster for a certificate).
	locks, err := lockServeDirs(nf.rootDir, sf.runDir)
	if err != nil {
		return err
	}
	defer locks.release()
	if err := cf.bootstrap(ctx, node.Name, nf.rootDir, logger); err != nil {
		return err
	}
	cc, certs, err := cf.dial(node.Name, nf.rootDir, logger)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	if certs != nil {
		go certs.Run(ctx)
	}
	if cf.rotateServerCertificates {
		if kf.tlsCertFile != "" {
			return &exitError{code: 2, err: errors.New("--rotate-server-certificates and --tls-cert-file: give one (the serving certificate comes from the CSR API, or from the file)")}
		}
		serving, err := cf.servingCertificates(cc, node.Name, nf.rootDir, logger)
		if err != nil {
			return fmt.Errorf("--rotate-server-certificates: %w", err)
		}
		cc.servingCert = serving.GetCertificate
		go serving.Run(ctx)
	}
	setServeGC(os.Getenv)
	defer startProcsGovernor(ctx, logger)()
	if sf.profiling {
		// The heap profile samples from here on (earlyinit).
		earlyinit.Restore()
	}

	client, err := dialWithRetry(ctx, nf, sf.dialRetryLimit, logger)
	if err != nil {
		return err
	}
	defer client.Close()
	logger.Info("Connected to the container runtime", "endpoint", nf.endpoint, "runtime", client.RuntimeName(), "version", client.RuntimeVersion())
	inst := cri.Instrument(client, client, logger)

	var cg cgroups.Manager
	if nf.cgroupsPerQOS {
		var source string
		if cg, source, err = newCgroupManager(ctx, client, fs, nf.cgroupDriver, logger); err != nil {
			return err
		}
		logger.Info("Cgroup driver", "driver", cg.Driver(), "from", source, "mode", cg.Mode())
		if n := podcgroup.CheckOOMScoreAdj(); n != "" {
			logger.Warn("OOM scores", "notice", n)
		}
	}
	acfg := nf.agentConfig(node, client.RuntimeName())
	acfg.ProtectedPaths = sf.protectedPaths(cf, kf)
	acfg.AppArmorEnabled = agentnode.AppArmorEnabled(agentnode.SysDir)
	if cf.nodeIP != "" {
		// Pods report the Node's InternalIP as their hostIP.
		acfg.HostIPs = []string{cf.nodeIP}
	}
	devices := startDevicePlugins(nf.rootDir, logger) // serve_devices.go; nil: off
	if devices != nil {
		defer devices.Stop()
		acfg.Devices = devices
	}
	deps := agent.Deps{Runtime: inst, Images: inst, Logger: logger, Cgroups: cg, NetworkReady: &cni.ReadyCache{}}
	if cc != nil && cc.nodeLabels != nil {
		// Admission checks node affinity against the Node's labels as the
		// API server has them (agent/cluster/nodelabels.go).
		acfg.NodeLabels = cc.nodeLabels.Labels
	}
	if cc != nil {
		// Cluster pods get their projected service account tokens, and
		// every pod the service link variables.
		deps.Tokens, deps.Services = cc.tokens, cc.services
		if cc.trustBundles != nil {
			// ... the ClusterTrustBundles they project, and their
			// certificates.
			deps.TrustBundles, deps.PodCertificates = cc.trustBundles, cc.podCerts
		}
	}
	a := agent.New(acfg, deps)
	if devices != nil {
		devices.SetPodDone(a.PodDone)
	}
	inst.OnCall(a.ObserveRuntimeOp)
	reclaim, err := gf.start(ctx, a, inst, logger)
	if err != nil {
		return err
	}
	if err := ef.start(ctx, a, inst, reclaim, logger); err != nil {
		return err
	}
	if path, _, err := a.EnsureNodeCgroups(); err != nil { // foreign pods: logged at orphan collection
		return err
	} else if path != "" {
		logger.Info("QoS cgroups ready", "kubepods", path, "driver", cg.Driver(), "mode", cg.Mode())
	}
	// IPs a crash left reserved, before anything creates a sandbox (the
	// API and the sources start below).
	rctx, rcancel := context.WithTimeout(ctx, time.Minute)
	released, err := a.RepairIPLeaks(rctx, ipamrepair.DaemonIPRepair)
	rcancel()
	if err != nil {
		logger.Warn("IP leak repair incomplete; leaked pod IPs stay reserved until the next start", "err", err)
	} else if len(released) > 0 {
		logger.Info(fmt.Sprintf("Released %d leaked pod IPs", len(released)), "ips", ipamrepair.ReleasedIPs(released))
	}
	// The pod network may come up later (a conflist edited by hand, a
	// runtime still starting): pods wait for it with a reason, the daemon
	// keeps serving.
	go ensureNetworkLoop(ctx, a, logger)

	// The local API's Secrets: on a tmpfs under the run dir, never under
	// the root dir (they survive a daemon restart, not a reboot), and never
	// beside a socket the user named (serve_dirs.go).
	secretDir, err := prepareSecretDir(sf, logger)
	if err != nil {
		return err
	}
	store, err := source.NewPodStoreWithSecretDir(filepath.Join(nf.rootDir, "api-pods"), secretDir, nf.nodeName)
	if err != nil {
		return err
	}
	var dir *source.DirSource
	if sf.manifestDir != "" {
		dir = source.NewDirSource(sf.manifestDir, nf.nodeName, logger, nil)
	}
	// In cluster mode the API server is a pod source beside the directory
	// and the local API, and the pods' statuses go back to it.
	var sources []daemon.Source
	var cp clusterPodWiring
	if cc != nil {
		cp = newClusterPods(cc, a.PodDone, a.Holds, node.Name, logger)
		sources = append(sources, cp.source)
		a.AddObserver(cp.observer)
		go cp.run(ctx)
	}
	d := daemon.New(a, store, dir, daemon.Config{
		Version:           version,
		RuntimeName:       client.RuntimeName(),
		RuntimeVersion:    client.RuntimeVersion(),
		RuntimeAPIVersion: client.RuntimeAPIVersion(),
		LogRotation:       agent.LogRotationConfig{MaxSize: maxSize, MaxFiles: sf.logMaxFiles, Period: 10 * time.Second},
		Sources:           sources,
		StaticPods:        cp.staticPods,
	})

	// The kubelet server listens before the Node is registered, so that
	// the Node status advertises its port.
	waitKubeletServer := func() {}
	if cc != nil {
		if waitKubeletServer, err = startKubeletServer(ctx, cc, kf, cf.nodeIP, d, inst, cg, nf.rootDir, cf.pkiDir(nf.rootDir), node.Name, logger); err != nil {
			return err
		}
	}
	waitCluster, err := startCluster(ctx, cc, cf, node, nf.rootDir, inst, client.RuntimeName(), client.RuntimeVersion(), a.NodePressure, devices, logger)
	if err != nil {
		return err
	}

	srv := api.NewServer(d, logger, api.Options{Profiling: sf.profiling, Streams: inst})
	ul, err := api.ListenUnix(sf.socket)
	if err != nil {
		return err
	}
	var tl net.Listener
	var apiCerts *api.Renewer
	if sf.apiAddress != "" {
		if tl, apiCerts, err = listenTLS(sf.apiAddress, filepath.Join(nf.rootDir, "pki"), sf.adminKubecfg, logger); err != nil {
			return err
		}
	}
	// The listeners exist before the daemon loop starts (a failure to
	// listen starts no pod), and the API is served once the loop applied
	// the stored pods, ConfigMaps and Secrets: a client connecting earlier
	// waits in the backlog instead of getting "not found" for a stored
	// Secret (a GET right after start did).
	runDone := make(chan error, 1)
	go func() { runDone <- d.Run(ctx) }()
	select {
	case <-d.Loaded():
	case err := <-runDone:
		return err
	}
	serveErr := make(chan error, 2)
	go func() { serveErr <- srv.Serve(ctx, ul) }()
	if tl != nil {
		logger.Info("Serving the API over TLS with client certificates", "address", tl.Addr().String(), "pki", apiCerts.Current().Dir, "kubeconfig", sf.adminKubecfg)
		go apiCerts.Run(ctx)
		go func() { serveErr <- srv.ServeTLS(ctx, tl, apiCerts) }()
	}
	logger.Info("Serving the local API", "socket", sf.socket, "tcp", sf.apiAddress, "manifestDir", sf.manifestDir)
	// Started: what start-up alone touched of the binary leaves the
	// daemon's resident memory (serve_pages.go; the governor drops again
	// after bursts).
	dropBinaryPagesLogged(logger, "start-up", false)

	runErr := <-runDone
	waitCluster()
	waitKubeletServer()
	logger.Info("Stopping; pods keep running and are adopted at the next start")
	for range 1 + boolInt(sf.apiAddress != "") {
		if err := <-serveErr; err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Warn("API server stopped with an error", "err", err)
		}
	}
	// Closing removes the socket only if it is still this daemon's.
	_ = ul.Close()
	return runErr
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// dialWithRetry connects to the runtime, retrying while it is not up yet
// (the daemon may start before containerd at boot).
func dialWithRetry(ctx context.Context, nf nodeFlags, limit time.Duration, logger *slog.Logger) (*cri.Client, error) {
	start := time.Now()
	delay := 500 * time.Millisecond
	for {
		client, err := cri.Dial(ctx, nf.endpoint, cri.Options{Timeout: nf.runtimeTimeout})
		if err == nil {
			return client, nil
		}
		if ctx.Err() != nil || (limit > 0 && time.Since(start) > limit) {
			return nil, err
		}
		logger.Warn("Container runtime not reachable; retrying", "err", err, "in", delay)
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return nil, err
		}
		delay = min(2*delay, 10*time.Second)
	}
}

// ensureNetworkLoop installs the pod network conflist and waits for it,
// retrying until it works.
func ensureNetworkLoop(ctx context.Context, a *agent.Agent, logger *slog.Logger) {
	for ctx.Err() == nil {
		nctx, cancel := context.WithTimeout(ctx, time.Minute)
		notices, err := a.EnsureNetwork(nctx)
		cancel()
		for _, n := range notices {
			logger.Warn("Pod network", "notice", n)
		}
		if err == nil {
			logger.Info("Pod network ready")
			return
		}
		logger.Warn("Pod network not ready; retrying", "err", err)
	}
}

// applyConfigFile sets every flag named in the YAML file that was not
// given on the command line. Unknown keys are errors. A
// KubeletConfiguration (kubeletconfig.go) is mapped onto the flags
// instead; the returned warning names its fields that are not used.
func applyConfigFile(fs *flag.FlagSet, path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("--config: %w", err)
	}
	var m map[string]any
	if err := yaml.UnmarshalStrict(data, &m); err != nil {
		return "", fmt.Errorf("--config %s: %w", path, err)
	}
	if kc, err := isKubeletConfiguration(m); err != nil {
		return "", fmt.Errorf("--config %s: %w", path, err)
	} else if kc {
		warning, err := applyKubeletConfiguration(fs, data)
		if err != nil {
			return "", fmt.Errorf("--config %s: %w", path, err)
		}
		return warning, nil
	}
	for k, v := range m {
		if fs.Lookup(k) == nil {
			return "", fmt.Errorf("--config %s: unknown setting %q (settings are the flag names or a %s KubeletConfiguration, see 'minikubelet serve -h')", path, k, kubeletConfigAPIVersion)
		}
		if flagGiven(fs, k) || k == "config" {
			continue
		}
		if err := fs.Set(k, configValue(v)); err != nil {
			return "", fmt.Errorf("--config %s: %s: %w", path, k, err)
		}
	}
	return "", nil
}

// configValue is a config file value as a flag's text: a YAML list (of
// --cluster-dns addresses, say) becomes its items comma-separated.
func configValue(v any) string {
	if list, ok := v.([]any); ok {
		items := make([]string, len(list))
		for i, item := range list {
			items[i] = fmt.Sprint(item)
		}
		return strings.Join(items, ",")
	}
	return fmt.Sprint(v)
}

// flagGiven reports whether the flag was set on the command line.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// listenTLS listens on addr for the TCP API, then makes sure of its PKI
// under pkiDir (created on first start, the serving certificate issued
// again when the address changed) and writes the admin kubeconfig; the
// Renewer it returns renews them while the daemon runs.
func listenTLS(addr, pkiDir, kubeconfig string, logger *slog.Logger) (l net.Listener, r *api.Renewer, retErr error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("--api-address: %w", err)
	}
	defer func() {
		if retErr != nil {
			l.Close()
		}
	}()
	// Port 0 picks one: the certificate and kubeconfig name the real one.
	host, _, _ := net.SplitHostPort(addr)
	_, port, _ := net.SplitHostPort(l.Addr().String())
	addr = net.JoinHostPort(host, port)
	hosts := machineHosts(host)
	p, err := api.EnsurePKI(pkiDir, addr, hosts, time.Now())
	if err != nil {
		return nil, nil, fmt.Errorf("API certificates in %s: %w", pkiDir, err)
	}
	if err := api.WriteKubeconfig(kubeconfig, p); err != nil {
		return nil, nil, fmt.Errorf("--admin-kubeconfig: %w", err)
	}
	return l, api.NewRenewer(p, hosts, kubeconfig, nil, logger), nil
}

// machineHosts are the names a client may dial the API by when it listens
// on every address (host 0.0.0.0 or ::): the host name and the interface
// IPs; nil for any other host.
func machineHosts(host string) []string {
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsUnspecified() {
		return nil
	}
	var hosts []string
	if h, err := os.Hostname(); err == nil && h != "" {
		hosts = append(hosts, h)
	}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLinkLocalUnicast() {
			hosts = append(hosts, n.IP.String())
		}
	}
	return hosts
}

// parseBytes parses sizes like 10Mi, 512Ki, 1G, 1048576.
func parseBytes(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"K", 1e3}, {"M", 1e6}, {"G", 1e9}}
	for _, u := range units {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			var v int64
			if _, err := fmt.Sscan(n, &v); err != nil || v <= 0 {
				return 0, fmt.Errorf("bad size %q", s)
			}
			return v * u.mult, nil
		}
	}
	var v int64
	if _, err := fmt.Sscan(s, &v); err != nil || v <= 0 {
		return 0, fmt.Errorf("bad size %q (use e.g. 10Mi)", s)
	}
	return v, nil
}
