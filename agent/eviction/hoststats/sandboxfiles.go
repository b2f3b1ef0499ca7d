package hoststats

// The runtime's per-sandbox files in a pod's containers. containerd (1.6
// and 2.x) keeps a hostname and a resolv.conf (and a hosts file) per
// sandbox under its CRI root, <root>/io.containerd.grpc.v1.cri/sandboxes/
// <sandbox id>/, and bind-mounts them into every container at
// /etc/hostname and /etc/resolv.conf (/etc/hosts only where the kubelet
// mounts none: here it always mounts <podDir>/etc-hosts, which the pod
// directory's walk counts), writable unless readOnlyRootFilesystem. None
// of them is in the container's writable layer, the pod directory or the
// log directory, so no figure counted them: a pod wrote 80 MB into
// /etc/hostname and kept running under a 5Mi ephemeral-storage limit.
//
// The kubelet counts its own per-pod file (the stats provider's
// getPodEtcHostsStats adds etc-hosts to the pod's ephemeral storage) and
// not containerd's; here both count. The other way out, read-only files,
// would break what runs on a kubelet: containerd mounts them writable,
// and images do rewrite /etc/resolv.conf and /etc/hostname. Counting
// them keeps every container's view as the kubelet's and closes the gap.
//
// Where they are: ContainerStatus(verbose) of each of the pod's
// containers (containerd's "info": the sandbox ID and the OCI runtime
// spec's mounts), once per container, cached while the container is
// listed. A mount counts when its destination is one of the three files
// and its source is <dir named by the container's sandbox ID>/<same
// name>, containerd's layout: a mount the pod asked for (a volume at
// /etc/resolv.conf) is not one of them, and is counted, or not, as its
// volume. They are measured every eviction cycle, two fstats a sandbox
// (cheap, unlike the walks). The files are the pod's to write: each is
// opened O_PATH|O_NOFOLLOW (a symlink in its place is refused) and must
// be a regular file (never opened for reading otherwise); the
// directories above it are containerd's. Each counts its allocated
// blocks, as du, and one inode.

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/minikubelet/minikubelet/agent/safepath"
)

// sandboxFileNames are the files containerd keeps per sandbox and mounts
// at /etc/<name>.
var sandboxFileNames = map[string]bool{"hostname": true, "resolv.conf": true, "hosts": true}

// sandboxFileCache holds the host paths of the runtime's per-sandbox
// files of each container, by container ID.
type sandboxFileCache struct {
	mu    sync.Mutex
	paths map[string][]string
}

// containerSandboxFiles is the runtime's per-sandbox files mounted into
// the container, as its verbose status shows them (see the file comment);
// ok is false when the runtime could not be asked (asked again next time).
func (h *Provider) containerSandboxFiles(ctx context.Context, id string) (paths []string, ok bool) {
	if h.statuses == nil {
		return nil, false
	}
	ctx, cancel := context.WithTimeout(ctx, h.cfg.RuntimeTimeout)
	defer cancel()
	resp, err := h.statuses.ContainerStatus(ctx, id, true)
	if err != nil {
		return nil, false
	}
	return sandboxFilesOfInfo(resp.GetInfo()["info"]), true
}

// sandboxFilesOfInfo is the per-sandbox files in containerd's verbose
// container info.
func sandboxFilesOfInfo(info string) []string {
	var v struct {
		SandboxID   string `json:"sandboxID"`
		RuntimeSpec struct {
			Mounts []struct {
				Destination string `json:"destination"`
				Source      string `json:"source"`
			} `json:"mounts"`
		} `json:"runtimeSpec"`
	}
	if info == "" || json.Unmarshal([]byte(info), &v) != nil || v.SandboxID == "" {
		return nil
	}
	var out []string
	for _, m := range v.RuntimeSpec.Mounts {
		name := filepath.Base(m.Source)
		if filepath.Clean(m.Destination) != "/etc/"+name || !sandboxFileNames[name] || !filepath.IsAbs(m.Source) ||
			filepath.Base(filepath.Dir(m.Source)) != v.SandboxID {
			continue
		}
		out = append(out, filepath.Clean(m.Source))
	}
	return out
}

// sandboxFileUsage is the disk the runtime's per-sandbox files mounted in
// the containers ids take (each file once), and how many files.
func (h *Provider) sandboxFileUsage(ctx context.Context, ids []string) (bytes, inodes int64) {
	c := &h.sandboxFiles
	seen := map[string]bool{}
	for _, id := range ids {
		if id == "" {
			continue
		}
		c.mu.Lock()
		paths, ok := c.paths[id]
		c.mu.Unlock()
		if !ok {
			if paths, ok = h.containerSandboxFiles(ctx, id); ok {
				c.mu.Lock()
				if c.paths == nil {
					c.paths = map[string][]string{}
				}
				c.paths[id] = paths
				c.mu.Unlock()
			}
		}
		for _, p := range paths {
			if seen[p] {
				continue
			}
			seen[p] = true
			if n, ok := regularFileBlocks(p); ok {
				bytes += n
				inodes++
			}
		}
	}
	return bytes, inodes
}

// retain forgets the containers not in ids (removed).
func (c *sandboxFileCache) retain(ids map[string]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id := range c.paths {
		if !ids[id] {
			delete(c.paths, id)
		}
	}
}

// regularFileBlocks is the allocated bytes of the regular file at path,
// opened without following a symlink in its last component and without
// blocking (safepath.OpenFile); ok is false for anything else.
func regularFileBlocks(path string) (int64, bool) {
	f, err := safepath.OpenFile(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int64(st.Blocks) * 512, true
}
