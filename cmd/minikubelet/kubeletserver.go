package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/minikubelet/minikubelet/agent/api"
	"github.com/minikubelet/minikubelet/agent/daemon"
	"github.com/minikubelet/minikubelet/agent/kubeletserver"
	"github.com/minikubelet/minikubelet/agent/podspec"
	"github.com/minikubelet/minikubelet/agent/stats"
	"github.com/minikubelet/minikubelet/cgroups"
	"github.com/minikubelet/minikubelet/cri"
)

// kubeletServerFlags are the kubelet server's settings (cluster mode only),
// under the kubelet's flag names.
type kubeletServerFlags struct {
	address      string
	port         int
	tlsCertFile  string
	tlsKeyFile   string
	clientCAFile string
	// tokenAudiences is --token-audiences, comma-separated.
	tokenAudiences string
	// anonymousAuth and authorizationMode are the kubelet's
	// --anonymous-auth and --authorization-mode.
	anonymousAuth     bool
	authorizationMode string
	// readOnlyPort serves the kubelet's unauthenticated endpoints (0: off).
	readOnlyPort int
	// healthzPort and healthzBindAddress are the kubelet's healthz
	// endpoint (0: off).
	healthzPort        int
	healthzBindAddress string
	// fs is serve's flag set, read for /configz (the settings in effect).
	fs *flag.FlagSet
}

func (k *kubeletServerFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&k.address, "address", "0.0.0.0", "with --kubeconfig: the IP address the kubelet server (logs, exec, attach, port-forward for the API server) listens on")
	fs.IntVar(&k.port, "port", kubeletserver.DefaultPort, "with --kubeconfig: the kubelet server's port, advertised in the Node status (0: pick a free one)")
	fs.StringVar(&k.tlsCertFile, "tls-cert-file", "", "with --kubeconfig: the kubelet server's certificate (default: a self-signed one under <root-dir>/pki)")
	fs.StringVar(&k.tlsKeyFile, "tls-private-key-file", "", "with --kubeconfig: the key of --tls-cert-file")
	fs.StringVar(&k.clientCAFile, "client-ca-file", "", "with --kubeconfig: clients of the kubelet server may authenticate with a certificate this CA bundle signed (the API server's --kubelet-client-certificate); bearer tokens are checked with TokenReview")
	// Not a kubelet flag: the kubelet leaves the audience to the API
	// server (APIAudiences unset), which is this flag's default.
	fs.BoolVar(&k.anonymousAuth, "anonymous-auth", false, "with --kubeconfig: requests to the kubelet server without credentials are let in as system:anonymous (group system:unauthenticated), for the authorizer to decide; by default they get 401 (KubeletConfiguration authentication.anonymous.enabled)")
	fs.StringVar(&k.authorizationMode, "authorization-mode", kubeletserver.AuthorizationWebhook, "with --kubeconfig: how the kubelet server authorizes requests: Webhook (a SubjectAccessReview to the API server) or AlwaysAllow (every authenticated request, anonymous ones too with --anonymous-auth) (KubeletConfiguration authorization.mode)")
	fs.IntVar(&k.readOnlyPort, "read-only-port", 0, fmt.Sprintf("with --kubeconfig: serve /healthz, /pods, /stats/summary and /metrics on this port of --address over plain HTTP without authentication, as the kubelet's read-only port (%d); 0: off", kubeletserver.DefaultReadOnlyPort))
	fs.IntVar(&k.healthzPort, "healthz-port", kubeletserver.DefaultHealthzPort, "with --kubeconfig: the port of the kubelet's healthz endpoint (http://<healthz-bind-address>:<port>/healthz, which kubeadm join waits on); 0: off")
	fs.StringVar(&k.healthzBindAddress, "healthz-bind-address", kubeletserver.DefaultHealthzBindAddress, "with --kubeconfig: the IP address the healthz endpoint listens on")
	k.fs = fs
	fs.StringVar(&k.tokenAudiences, "token-audiences", "", "with --kubeconfig: comma-separated audiences a bearer token sent to the kubelet server must be for (the TokenReview's spec.audiences; the node also checks the answer's status.audiences). Default: the API server's own (its --api-audiences), as the kubelet")
}

// audiences is --token-audiences as a list (nil when empty).
func (k *kubeletServerFlags) audiences() []string {
	var out []string
	for _, a := range strings.Split(k.tokenAudiences, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// check refuses a bad --authorization-mode, and the server's flags
// outside cluster mode.
func (k *kubeletServerFlags) check(fs *flag.FlagSet, cluster bool) error {
	if err := k.validate(); err != nil {
		return err
	}
	if cluster {
		return nil
	}
	for _, name := range []string{"tls-cert-file", "tls-private-key-file", "client-ca-file", "token-audiences"} {
		if flagGiven(fs, name) {
			return fmt.Errorf("--%s needs --kubeconfig (the kubelet server runs in cluster mode only)", name)
		}
	}
	// These only when they leave their defaults: a KubeletConfiguration
	// (kubeadm's) names them with their default values.
	for _, name := range []string{"anonymous-auth", "authorization-mode", "read-only-port", "healthz-port", "healthz-bind-address"} {
		if f := fs.Lookup(name); f != nil && f.Value.String() != f.DefValue {
			return fmt.Errorf("--%s=%s needs --kubeconfig (the kubelet server runs in cluster mode only)", name, f.Value)
		}
	}
	return nil
}

// validate refuses a bad --authorization-mode before anything starts.
func (k *kubeletServerFlags) validate() error {
	switch k.authorizationMode {
	case kubeletserver.AuthorizationWebhook, kubeletserver.AuthorizationAlwaysAllow:
		return nil
	}
	return fmt.Errorf("--authorization-mode (KubeletConfiguration authorization.mode) %q: use %s or %s", k.authorizationMode, kubeletserver.AuthorizationWebhook, kubeletserver.AuthorizationAlwaysAllow)
}

// warnings are the lines logged at start for each setting that weakens
// the kubelet server's defaults.
func (k *kubeletServerFlags) warnings() []string {
	var out []string
	if k.anonymousAuth {
		out = append(out, "--anonymous-auth: requests to the kubelet server without credentials are served as system:anonymous")
	}
	if k.authorizationMode == kubeletserver.AuthorizationAlwaysAllow {
		who := "every authenticated request"
		if k.anonymousAuth {
			who = "every request, anonymous ones included,"
		}
		out = append(out, "--authorization-mode=AlwaysAllow: "+who+" to the kubelet server is allowed (exec, attach, port-forward, logs) without asking the API server")
	}
	if k.readOnlyPort > 0 {
		out = append(out, fmt.Sprintf("--read-only-port=%d: /pods, /stats/summary and /metrics are served on %s without authentication (pod specs and environment variables included)", k.readOnlyPort, net.JoinHostPort(k.address, strconv.Itoa(k.readOnlyPort))))
	}
	if k.healthzPort > 0 {
		if ip := net.ParseIP(k.healthzBindAddress); ip == nil || !ip.IsLoopback() {
			out = append(out, fmt.Sprintf("--healthz-bind-address=%s: the healthz endpoint answers other machines, not only this one", k.healthzBindAddress))
		}
	}
	return out
}

// startKubeletServer binds the kubelet server and records its port in cc
// (the Node status advertises it), then serves until ctx ends; wait blocks
// until it stopped.
func startKubeletServer(ctx context.Context, cc *clusterClient, kf kubeletServerFlags, nodeIP string, d *daemon.Daemon,
	rt *cri.Instrumented, cg cgroups.Manager, rootDir, certDir, nodeName string, logger *slog.Logger) (wait func(), err error) {
	reviewer, err := kubeletserver.NewReviewer(cc.rest)
	if err != nil {
		return nil, err
	}
	var ips []net.IP
	if ip := net.ParseIP(nodeIP); ip != nil {
		ips = append(ips, ip)
	}
	// The pods under the API server's names: never the local API's, and
	// a static pod under its mirror's name (daemon.ClusterView).
	view := d.ClusterView(nodeName)
	logs := daemonLogs{view: view}
	for _, w := range kf.warnings() {
		logger.Warn(w)
	}
	// /configz: the settings in effect, once the port is known.
	var configz *kubeletv1beta1.KubeletConfiguration
	srv, err := kubeletserver.New(kubeletserver.Config{
		Address:           kf.address,
		Port:              kf.port,
		TLSCertFile:       kf.tlsCertFile,
		TLSKeyFile:        kf.tlsKeyFile,
		CertDir:           certDir,
		GetCertificate:    cc.servingCert,
		ClientCAFile:      kf.clientCAFile,
		NodeName:          nodeName,
		NodeIPs:           ips,
		TokenAudiences:    kf.audiences(),
		AnonymousAuth:     kf.anonymousAuth,
		AuthorizationMode: kf.authorizationMode,
	}, kubeletserver.Deps{
		Pods:     view,
		Logs:     logs,
		Runtime:  rt,
		Metrics:  d,
		Reviewer: reviewer,
		Logger:   logger,
		// /metrics/resource: what metrics-server (kubectl top) scrapes.
		ContainerStats: rt,
		NodeUsage:      procNodeUsage,
		// /stats/summary: the Summary API, of the pods of the view only.
		Summary: clusterSummary(view, rt, stats.NewHostFS(cg), rootDir, nodeName, logger),
		Configz: func() any { return configz },
	})
	if err != nil {
		return nil, err
	}
	if err := srv.Listen(); err != nil {
		return nil, err
	}
	cc.kubeletPort = int32(srv.Addr().(*net.TCPAddr).Port)
	if configz, err = effectiveKubeletConfiguration(kf.fs); err != nil {
		return nil, err
	}
	configz.Port = cc.kubeletPort
	var wg sync.WaitGroup
	// The read-only port: a failure to bind stops the start, as the
	// kubelet exits when it cannot serve it.
	if kf.readOnlyPort > 0 {
		ln, err := kubeletserver.ListenPlain(kf.address, kf.readOnlyPort)
		if err != nil {
			return nil, fmt.Errorf("--read-only-port: %w", err)
		}
		wg.Go(func() {
			if err := srv.ServeReadOnly(ctx, ln); err != nil {
				logger.Warn("Read-only port stopped with an error", "err", err)
			}
		})
	}
	if kf.healthzPort > 0 {
		wg.Go(func() { serveHealthz(ctx, srv, kf.healthzBindAddress, kf.healthzPort, logger) })
	}
	wg.Go(func() {
		if err := srv.Serve(ctx); err != nil {
			logger.Warn("Kubelet server stopped with an error", "err", err)
		}
	})
	return wg.Wait, nil
}

// serveHealthz serves the healthz endpoint until ctx ends. A port it
// cannot bind is tried again every 5 seconds, as the kubelet does (a
// failure there does not stop the node agent); the first failure is a
// warning, the others debug lines.
func serveHealthz(ctx context.Context, srv *kubeletserver.Server, address string, port int, logger *slog.Logger) {
	warned := false
	for ctx.Err() == nil {
		ln, err := kubeletserver.ListenPlain(address, port)
		if err == nil {
			if err := srv.ServeHealthz(ctx, ln); err != nil {
				logger.Warn("Healthz endpoint stopped with an error", "err", err)
			}
		} else if !warned {
			logger.Warn("Healthz endpoint cannot listen; retrying every 5s (set --healthz-port, or 0 to turn it off)", "err", err)
			warned = true
		} else {
			logger.Debug("Healthz endpoint cannot listen", "err", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
		}
	}
}

// Compile-time check: the instrumented CRI client has the streaming and
// stats calls (logged and counted like every CRI call).
var (
	_ kubeletserver.Runtime        = (*cri.Instrumented)(nil)
	_ kubeletserver.ContainerStats = (*cri.Instrumented)(nil)
	_ stats.Runtime                = (*cri.Instrumented)(nil)
	_ kubeletserver.Summary        = (*stats.Collector)(nil)
)

// clusterSummary is the kubelet server's /stats/summary: the Summary API
// as a cluster caller (metrics-server, a user with nodes/stats or
// nodes/proxy) may see it. Its pods are view's: the cluster's pods, and the
// static pods under their mirror pods' namespace and name, <name>-<node>,
// which is how the API server and metrics-server know them; never the pods
// of the local API (`minikubelet run`, the local socket), which the
// cluster does not see and whose names, UIDs and usage are the node's own.
// The node's totals stay whole: node CPU, memory and filesystems, and the
// "pods" system container (the kubepods cgroup), count every pod the node
// runs, as the kubelet's count whatever runs on the machine.
//
// The kubelet lists every pod sandbox the runtime runs for it
// (pkg/kubelet/stats, cri_stats_provider's buildPodStats: the PodRef is
// the sandbox metadata's name, namespace and UID). All of those are pods
// the cluster sees, and its file source has already named a static pod
// <name>-<node>, so the kubelet's summary is exactly this view; it differs
// from the node's full list here only because minikubelet also runs pods
// for the node itself and keeps a static pod's own name. A static pod's
// UID is the static pod's, as in the kubelet's summary and /pods (the
// mirror carries it as its kubernetes.io/config.hash annotation), not the
// UID the API server gave the mirror object: that one changes whenever the
// mirror is created again, is unknown until it exists, and metrics-server
// keys pods by namespace and name.
//
// Nothing else reads this Collector: eviction measures the node through
// eviction.StatsProvider (agent.NewEvictionStats) over the daemon's full set of pods, and the local
// API and CLI serve the node's own names.
func clusterSummary(view *daemon.ClusterView, rt stats.Runtime, host stats.Host, rootDir, nodeName string, logger *slog.Logger) *stats.Collector {
	return stats.New(stats.Config{
		NodeName: nodeName,
		Pods:     view,
		Runtime:  rt,
		Host:     host,
		RootDir:  rootDir,
		LogUsage: daemonLogs{view: view}.usage,
		QOSClass: podspec.QOSClass,
		Logger:   logger,
	})
}

// daemonLogs reads a container's log for the kubelet server with the local
// API's reader (api.ReadLog) at the daemon's log path of the pod the API
// server names (view): the kubelet server never reaches a pod by the
// node's own names.
type daemonLogs struct {
	view *daemon.ClusterView
}

func (l daemonLogs) WriteLog(ctx context.Context, ns, pod, container string, o kubeletserver.LogOptions, w io.Writer) error {
	path, err := l.view.LogPath(ns, pod, container, o.Previous)
	if err != nil {
		return err
	}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return apierrors.NewBadRequest(fmt.Sprintf("container %q in pod %q has no log yet", container, pod))
	}
	opts := api.LogOptions{Follow: o.Follow, TailLines: o.TailLines, Timestamps: o.Timestamps, Since: o.Since}
	if o.Follow {
		p, err := l.view.GetPod(ns, pod)
		if err != nil {
			return err
		}
		opts.Done = l.containerGone(ns, pod, container, runningID(p, container))
	}
	return api.ReadLog(ctx, path, opts, w)
}

// usage is the size of the container's current log file (for the stats
// summary's logs entry of a pod of the view: a static pod under its
// mirror's name); Lstat: a log path is the agent's, never followed.
func (l daemonLogs) usage(pod *v1.Pod, container string) (uint64, bool) {
	path, err := l.view.LogPath(pod.Namespace, pod.Name, container, false)
	if err != nil {
		return 0, false
	}
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return 0, false
	}
	return uint64(fi.Size()), true
}

// containerGone reports when the followed instance is no longer the
// running one (the pod is gone, the container stopped or was replaced).
func (l daemonLogs) containerGone(ns, pod, container, id string) func() bool {
	return func() bool {
		p, err := l.view.GetPod(ns, pod)
		if apierrors.IsNotFound(err) {
			return true
		}
		if err != nil {
			return false
		}
		for _, cs := range append(p.Status.ContainerStatuses, p.Status.InitContainerStatuses...) {
			if cs.Name == container {
				return cs.State.Running == nil || (id != "" && cs.ContainerID != id)
			}
		}
		return false
	}
}

// runningID is the ID of the container's current instance ("" if none).
func runningID(p *v1.Pod, container string) string {
	for _, cs := range append(p.Status.ContainerStatuses, p.Status.InitContainerStatuses...) {
		if cs.Name == container {
			return cs.ContainerID
		}
	}
	return ""
}

// procNodeUsage reads the node's usage for /metrics/resource from /proc:
// CPU time from /proc/stat's cpu line (user, nice, system, irq, softirq,
// steal; USER_HZ is 100 on Linux), and as working set MemTotal minus
// MemAvailable from /proc/meminfo (the kubelet reads the root cgroup's
// usage minus inactive file pages; MemAvailable counts those as free too).
func procNodeUsage() (float64, uint64, time.Time, error) {
	now := time.Now()
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, now, err
	}
	meminfo, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, 0, now, err
	}
	cpu, err := parseProcStatCPU(string(stat))
	if err != nil {
		return 0, 0, now, err
	}
	mem, err := parseMeminfoWorkingSet(string(meminfo))
	return cpu, mem, now, err
}

// parseProcStatCPU is the busy CPU time of /proc/stat's "cpu" line in
// seconds.
func parseProcStatCPU(stat string) (float64, error) {
	for line := range strings.Lines(stat) {
		f := strings.Fields(line)
		if len(f) < 9 || f[0] != "cpu" {
			continue
		}
		var ticks uint64
		for _, i := range []int{1, 2, 3, 6, 7, 8} { // user nice system irq softirq steal
			n, err := strconv.ParseUint(f[i], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/stat: %q: %w", f[i], err)
			}
			ticks += n
		}
		return float64(ticks) / 100, nil
	}
	return 0, errors.New("/proc/stat has no cpu line")
}

// parseMeminfoWorkingSet is MemTotal minus MemAvailable in bytes.
func parseMeminfoWorkingSet(meminfo string) (uint64, error) {
	var total, avail uint64
	var haveTotal, haveAvail bool
	for line := range strings.Lines(meminfo) {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		n, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "MemTotal:":
			total, haveTotal = n*1024, true
		case "MemAvailable:":
			avail, haveAvail = n*1024, true
		}
	}
	if !haveTotal || !haveAvail || avail > total {
		return 0, errors.New("/proc/meminfo: no MemTotal and MemAvailable")
	}
	return total - avail, nil
}
