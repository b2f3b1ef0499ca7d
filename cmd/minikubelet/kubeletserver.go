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
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/minikubelet/minikubelet/agent"
	"github.com/minikubelet/minikubelet/agent/api"
	"github.com/minikubelet/minikubelet/agent/kubeletserver"
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
}

func (k *kubeletServerFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&k.address, "address", "0.0.0.0", "with --kubeconfig: the IP address the kubelet server (logs, exec, attach, port-forward for the API server) listens on")
	fs.IntVar(&k.port, "port", kubeletserver.DefaultPort, "with --kubeconfig: the kubelet server's port, advertised in the Node status (0: pick a free one)")
	fs.StringVar(&k.tlsCertFile, "tls-cert-file", "", "with --kubeconfig: the kubelet server's certificate (default: a self-signed one under <root-dir>/pki)")
	fs.StringVar(&k.tlsKeyFile, "tls-private-key-file", "", "with --kubeconfig: the key of --tls-cert-file")
	fs.StringVar(&k.clientCAFile, "client-ca-file", "", "with --kubeconfig: clients of the kubelet server may authenticate with a certificate this CA bundle signed (the API server's --kubelet-client-certificate); bearer tokens are checked with TokenReview")
}

// check refuses the server's file flags outside cluster mode.
func (k *kubeletServerFlags) check(fs *flag.FlagSet, cluster bool) error {
	if cluster {
		return nil
	}
	for _, name := range []string{"tls-cert-file", "tls-private-key-file", "client-ca-file"} {
		if flagGiven(fs, name) {
			return fmt.Errorf("--%s needs --kubeconfig (the kubelet server runs in cluster mode only)", name)
		}
	}
	return nil
}

// startKubeletServer binds the kubelet server and records its port in cc
// (the Node status advertises it), then serves until ctx ends; wait blocks
// until it stopped.
func startKubeletServer(ctx context.Context, cc *clusterClient, kf kubeletServerFlags, nodeIP string, d *agent.Daemon,
	rt kubeletserver.Runtime, rootDir, nodeName string, logger *slog.Logger) (wait func(), err error) {
	reviewer, err := kubeletserver.NewReviewer(cc.rest)
	if err != nil {
		return nil, err
	}
	var ips []net.IP
	if ip := net.ParseIP(nodeIP); ip != nil {
		ips = append(ips, ip)
	}
	srv, err := kubeletserver.New(kubeletserver.Config{
		Address:      kf.address,
		Port:         kf.port,
		TLSCertFile:  kf.tlsCertFile,
		TLSKeyFile:   kf.tlsKeyFile,
		CertDir:      filepath.Join(rootDir, "pki"),
		ClientCAFile: kf.clientCAFile,
		NodeName:     nodeName,
		NodeIPs:      ips,
	}, kubeletserver.Deps{
		Pods:     d,
		Logs:     daemonLogs{d},
		Runtime:  rt,
		Metrics:  d,
		Reviewer: reviewer,
		Logger:   logger,
	})
	if err != nil {
		return nil, err
	}
	if err := srv.Listen(); err != nil {
		return nil, err
	}
	cc.kubeletPort = int32(srv.Addr().(*net.TCPAddr).Port)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ctx); err != nil {
			logger.Warn("Kubelet server stopped with an error", "err", err)
		}
	}()
	return func() { <-done }, nil
}

// Compile-time check: the instrumented CRI client has the streaming calls
// (logged and counted like every CRI call).
var _ kubeletserver.Runtime = (*cri.Instrumented)(nil)

// daemonLogs reads a container's log for the kubelet server with the local
// API's reader (api.ReadLog) at the daemon's log path.
type daemonLogs struct{ d *agent.Daemon }

func (l daemonLogs) WriteLog(ctx context.Context, ns, pod, container string, o kubeletserver.LogOptions, w io.Writer) error {
	path, err := l.d.LogPath(ns, pod, container, o.Previous)
	if err != nil {
		return err
	}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return apierrors.NewBadRequest(fmt.Sprintf("container %q in pod %q has no log yet", container, pod))
	}
	opts := api.LogOptions{Follow: o.Follow, TailLines: o.TailLines, Timestamps: o.Timestamps, Since: o.Since}
	if o.Follow {
		p, err := l.d.GetPod(ns, pod)
		if err != nil {
			return err
		}
		opts.Done = l.containerGone(ns, pod, container, runningID(p, container))
	}
	return api.ReadLog(ctx, path, opts, w)
}

// containerGone reports when the followed instance is no longer the
// running one (the pod is gone, the container stopped or was replaced).
func (l daemonLogs) containerGone(ns, pod, container, id string) func() bool {
	return func() bool {
		p, err := l.d.GetPod(ns, pod)
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
