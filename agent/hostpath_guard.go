package agent

// The hostPath guard: minikubelet's own rule, not the kubelet's (the
// kubelet mounts any hostPath a pod asks for and leaves the decision to
// admission policy in the API server). Without --allow-privileged a pod
// may not mount the agent's own state:
//
//   - the root dir (stored API pods, pod volumes, config data): a pod that
//     can write there rewrites the pods the agent runs, as root;
//   - the directory of the API socket (ProtectedPaths; the API is root on
//     the node) and the tmpfs of the API's Secrets beside it;
//   - the pod log dir, writable: the agent reads those files as root when
//     it serves logs, so a pod that can plant a symlink there reads any
//     host file through the log API. Read-only mounts (log shippers) pass.
//
// Paths are compared resolved: symlinks followed as far as the path
// exists (/var/run → /run), "/proc/<pid|self|thread-self>/root" prefixes
// stripped (they name the host root again), and in both directions (a
// hostPath of / or /var contains the root dir).
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
	"regexp"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// protectedHostPath refuses hostPath volumes that reach the agent's own
// state (see the file comment). The reason is empty when the pod is fine.
func (a *Agent) protectedHostPath(p *v1.Pod) (string, string) {
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
	for _, vol := range p.Spec.Volumes {
		if vol.HostPath == nil {
			continue
		}
		hp := resolveHostPath(vol.HostPath.Path)
		for _, g := range protected {
			if g.path == "" || !filepath.IsAbs(g.path) {
				continue
			}
			pp := resolveHostPath(g.path)
			if !pathContains(hp, pp) && !pathContains(pp, hp) {
				continue
			}
			if g.readOnlyOK && volumeMountedReadOnly(p, vol.Name) {
				continue
			}
			what := ""
			if g.readOnlyOK {
				what = " writable"
			}
			return "HostPathForbidden", fmt.Sprintf("volume %q: hostPath %s (%s) reaches minikubelet's own state (%s)%s; start the agent with --allow-privileged to allow it",
				vol.Name, vol.HostPath.Path, hp, g.path, what)
		}
	}
	return "", ""
}

// pathContains reports whether the clean absolute path dir is p or one of
// its parents.
func pathContains(dir, p string) bool {
	return dir == p || dir == "/" || strings.HasPrefix(p, dir+"/")
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

// procRoot matches a /proc path that names a process's root directory:
// /proc/self/root, /proc/thread-self/root, /proc/<pid>/root and
// /proc/<pid>/task/<tid>/root. Whatever process it is, the guard takes it
// for the host's root (the agent's processes and most others have it).
var procRoot = regexp.MustCompile(`^/proc/(self|thread-self|[0-9]+)(/task/[0-9]+)?/root$`)

// maxHostPathLinks bounds the symlinks followed (the kernel's 40): a
// longer chain fails to mount anyway.
const maxHostPathLinks = 40

// resolveHostPath returns the clean absolute path p names on the host: each
// existing component's symlink followed (relative and absolute targets),
// a /proc/…/root component replaced by /, and the part that does not
// exist yet taken literally (the runtime or a *OrCreate type would create
// it there). It reads the file system but never fails: a component it
// cannot read is taken as it is.
func resolveHostPath(p string) string {
	rest := strings.Split(filepath.Clean("/"+p), "/")
	resolved, links := "/", 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			resolved = filepath.Dir(resolved)
			continue
		}
		next := filepath.Join(resolved, c)
		if procRoot.MatchString(next) {
			resolved = "/"
			continue
		}
		// /proc/self/root and the like before following /proc/self: the
		// answer does not depend on which process reads it.
		if n := procRootAhead(next, rest); n > 0 {
			resolved, rest = "/", rest[n:]
			continue
		}
		fi, err := os.Lstat(next)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 || links >= maxHostPathLinks {
			resolved = next
			continue
		}
		target, err := os.Readlink(next)
		if err != nil {
			resolved = next
			continue
		}
		links++
		if filepath.IsAbs(target) {
			resolved = "/"
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	return resolved
}

// procRootAhead returns how many components of rest complete next into a
// /proc/…/root path (0: none).
func procRootAhead(next string, rest []string) int {
	if next != "/proc" && !strings.HasPrefix(next, "/proc/") {
		return 0
	}
	for n := 1; n <= 4; n++ {
		if len(rest) >= n && procRoot.MatchString(next+"/"+strings.Join(rest[:n], "/")) {
			return n
		}
	}
	return 0
}
