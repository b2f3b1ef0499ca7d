package volume

// The hostPath guard: minikubelet's own rule, not the kubelet's (the
// kubelet mounts any hostPath a pod asks for and leaves the decision to
// admission policy in the API server). Unless the agent runs with
// --pod-security=privileged, a pod (a cluster pod too) may not mount the
// agent's own state:
//
//   - the root dir (stored API pods, pod volumes, config data): a pod that
//     can write there rewrites the pods the agent runs, as root;
//   - the node's control files (ProtectedPaths, which serve fills in, issue
//     #29 finding 6): the directory of the API socket (the API is root on
//     the node), the run dir (its lock and the tmpfs of the API's
//     Secrets), the static manifest directory (a manifest written there
//     runs in the node's scope and reads node-local Secrets), the admin
//     kubeconfig's directory, the config file, and in cluster mode the
//     kubeconfig, the files it names and the kubelet server's
//     certificates. The PKI is under the root dir;
//   - the pod log dir, writable: the agent reads those files as root when
//     it serves logs, so a pod that can plant a symlink there reads any
//     host file through the log API. Read-only mounts (log shippers) pass.
//
// Paths are compared resolved: symlinks followed as far as the path
// exists (/var/run → /run), "/proc/<pid|self|thread-self>/root" prefixes
// stripped (they name the host root again), and in both directions (a
// hostPath of / or /var contains the root dir). Bind mounts are compared
// by identity (device and inode): a hostPath that is, or lies under, the
// same directory as a guarded path or one of its parents, under another
// name, is refused too.
//
// What it does NOT protect, and cannot:
//   - a privileged pod, or one with CAP_SYS_ADMIN, reaches the host anyway;
//   - a hostPath of /proc, /sys, /dev or a block device reaches the whole
//     host through other names (/proc/1/root/…, mounting the disk);
//   - a symlink swapped after admission by someone who can write a host
//     directory on the way (a pod with another writable hostPath): the
//     check runs when the pod is admitted, the runtime resolves the path
//     again at container start;
//   - any other sensitive host file (/etc/shadow, the containerd socket,
//     the cluster credentials of cluster mode): hostPath is host access,
//     and only who may create pods decides who gets it.

import (
	"fmt"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
)

// ProtectedHostPath refuses hostPath volumes that reach the agent's own
// state (see the file comment). The reason is empty when the pod is fine.
func (a *Manager) ProtectedHostPath(p *v1.Pod) (string, string) {
	if a.cfg.AllowPrivileged {
		return "", ""
	}
	type guarded struct {
		path string
		// readOnlyOK lets read-only mounts of it pass.
		readOnlyOK bool
	}
	var protected []guarded
	for _, pp := range append([]string{a.cfg.RootDir}, a.cfg.ProtectedPaths...) {
		protected = append(protected, guarded{path: pp})
	}
	protected = append(protected, guarded{path: a.cfg.PodLogDir, readOnlyOK: true})
	for i, vol := range p.Spec.Volumes {
		if vol.HostPath == nil {
			continue
		}
		hp := ResolveHostPath(vol.HostPath.Path)
		for _, g := range protected {
			if g.path == "" || !filepath.IsAbs(g.path) {
				continue
			}
			pp := ResolveHostPath(g.path)
			if !PathContains(hp, pp) && !PathContains(pp, hp) && !sameDirOnPath(hp, pp) && !sameDirOnPath(pp, hp) {
				continue
			}
			if g.readOnlyOK && volumeMountedReadOnly(p, vol.Name) {
				continue
			}
			what := ""
			if g.readOnlyOK {
				what = " writable"
			}
			return "HostPathForbidden", fmt.Sprintf("spec.volumes[%d].hostPath.path: volume %q: %s (%s) reaches minikubelet's own state (%s)%s; start the agent with --pod-security=privileged to allow it",
				i, vol.Name, vol.HostPath.Path, hp, g.path, what)
		}
	}
	return "", ""
}

// sameDirOnPath reports whether dir, when it exists, is the same file
// (device and inode) as p or one of p's existing parents: dir is another
// name of p or of a directory containing it, through a bind mount. "/"
// is left out (PathContains covers the host root by name; a bind of it
// elsewhere is the same inode and is caught at that name).
func sameDirOnPath(dir, p string) bool {
	di, err := os.Stat(dir)
	if err != nil || !di.IsDir() {
		return false
	}
	for q := p; q != "/" && q != "."; q = filepath.Dir(q) {
		if qi, err := os.Stat(q); err == nil && os.SameFile(di, qi) {
			return true
		}
	}
	// The host root bound elsewhere (/mnt/host → /) contains everything.
	if ri, err := os.Stat("/"); err == nil && os.SameFile(di, ri) {
		return true
	}
	return false
}

// volumeMountedReadOnly reports whether every mount of the volume, in
// every container, is read-only.
func volumeMountedReadOnly(p *v1.Pod, name string) bool {
	ro := true
	check := func(mounts []v1.VolumeMount) {
		for _, m := range mounts {
			if m.Name == name && !m.ReadOnly {
				ro = false
			}
		}
	}
	for _, c := range p.Spec.InitContainers {
		check(c.VolumeMounts)
	}
	for _, c := range p.Spec.Containers {
		check(c.VolumeMounts)
	}
	for _, c := range p.Spec.EphemeralContainers {
		check(c.VolumeMounts)
	}
	return ro
}
