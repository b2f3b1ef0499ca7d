package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/minikubelet/minikubelet/agent/source"
)

// The daemon's own places on the node (issue #29 findings 5 and 6):
//   - the root dir (--root-dir): durable state, locked for the daemon's
//     life so that a second daemon on it fails at start;
//   - the run dir (--run-dir, /run/minikubelet): state that must not
//     outlive a reboot, the tmpfs of the local API's Secrets; locked too,
//     so two daemons on different root dirs never share Secrets;
//   - the socket (--socket): only the socket. Earlier versions mounted the
//     Secrets' tmpfs beside it, on a directory the user named for
//     something else (--socket /tmp/x.sock mounted /tmp/secrets).

// serveLocks are the locks serve holds until it exits.
type serveLocks []*dirLock

// lockServeDirs locks the root dir, then the run dir (once when both are
// the same directory), without waiting.
func lockServeDirs(rootDir, runDir string) (serveLocks, error) {
	root, err := lockDir(rootDir, "root dir", "--root-dir")
	if err != nil {
		return nil, err
	}
	locks := serveLocks{root}
	ri, rerr := os.Stat(rootDir)
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		locks.release()
		return nil, fmt.Errorf("create the run dir: %w", err)
	}
	if ui, uerr := os.Stat(runDir); rerr == nil && uerr == nil && os.SameFile(ri, ui) {
		return locks, nil
	}
	run, err := lockDir(runDir, "run dir", "--run-dir")
	if err != nil {
		locks.release()
		return nil, err
	}
	return append(locks, run), nil
}

// release drops the locks (the process's exit would anyway).
func (l serveLocks) release() {
	for _, d := range l {
		_ = d.Release()
	}
}

// prepareSecretDir mounts the tmpfs of the local API's Secrets at
// <run-dir>/secrets and adopts the one an earlier version left beside the
// socket (its Secrets copied over, the tmpfs unmounted). It returns the
// secret dir.
func prepareSecretDir(sf serveFlags, logger *slog.Logger) (string, error) {
	secretDir := filepath.Join(sf.runDir, "secrets")
	if mounted, err := source.PrepareSecretDir(secretDir); err != nil {
		return "", err
	} else if !mounted {
		logger.Warn("Secret dir is not a tmpfs: the local API's Secrets are written to the disk under it", "dir", secretDir)
	}
	old := filepath.Join(filepath.Dir(sf.socket), "secrets")
	if adopted, err := source.AdoptOldSecretDir(old, secretDir); err != nil {
		logger.Warn("Secret dir of an earlier version beside the socket", "dir", old, "err", err)
	} else if adopted {
		logger.Info("Moved the local API's Secrets from the tmpfs an earlier version mounted beside the socket, and unmounted it", "from", old, "to", secretDir)
	}
	return secretDir, nil
}

// protectedPaths are the host paths, besides the root dir, that a pod's
// hostPath may not reach without --allow-privileged (agent/volume's
// hostPath guard): whoever writes one of them controls the node through
// the daemon (a static pod manifest runs in the node's scope and reads
// node-local Secrets; the admin kubeconfig and the PKI are root on the
// node's API; the config file and the cluster credentials choose what the
// daemon does).
func (sf *serveFlags) protectedPaths(cf clusterFlags, kf kubeletServerFlags) []string {
	paths := []string{
		filepath.Dir(sf.socket),
		sf.runDir,
		sf.manifestDir,
		filepath.Dir(sf.adminKubecfg),
		sf.config,
		cf.kubeconfig,
		// The node's own key pairs (TLS bootstrapping writes them there;
		// inside the root dir when --cert-dir is not given) and the
		// bootstrap token that can request more.
		cf.certDir,
		cf.bootstrapKubeconfig,
		kf.tlsCertFile,
		kf.tlsKeyFile,
		kf.clientCAFile,
	}
	paths = append(paths, kubeconfigFiles(cf.kubeconfig)...)
	paths = append(paths, kubeconfigFiles(cf.bootstrapKubeconfig)...)
	var abs []string
	for _, p := range paths {
		if p == "" {
			continue
		}
		// The guard compares absolute paths; a relative flag is relative
		// to the daemon's working directory.
		if a, err := filepath.Abs(p); err == nil {
			abs = append(abs, a)
		}
	}
	return abs
}

// kubeconfigFiles are the files a kubeconfig names (certificates, keys,
// token files), resolved against its directory; none when it cannot be
// read (the cluster client reports that).
func kubeconfigFiles(path string) []string {
	if path == "" {
		return nil
	}
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return nil
	}
	if err := clientcmd.ResolveLocalPaths(cfg); err != nil {
		return nil
	}
	var files []string
	for _, c := range cfg.Clusters {
		files = append(files, c.CertificateAuthority)
	}
	for _, a := range cfg.AuthInfos {
		files = append(files, a.ClientCertificate, a.ClientKey, a.TokenFile)
	}
	return files
}
