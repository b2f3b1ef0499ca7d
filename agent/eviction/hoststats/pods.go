package hoststats

// The pods' usage: memory and processes (PodStats), disk for ranking
// under disk pressure (PodStats with disk), what their local storage
// limits are checked against (LocalStorage), and the unlinked files they
// hold open (heldDeleted).

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/eviction"
	"github.com/minikubelet/minikubelet/agent/podspec"
	"github.com/minikubelet/minikubelet/agent/volume"
)

// PodStats implements eviction.StatsProvider.
func (h *Provider) PodStats(ctx context.Context, pods []*v1.Pod, disk bool) map[types.UID]*eviction.PodStats {
	out := map[types.UID]*eviction.PodStats{}
	if h.stats == nil {
		return out
	}
	// The walks of the pods' files run in the background, not under the
	// CRI call's deadline: a walk cut short by a deadline that one pod's
	// huge tree used up would count the next pods as unmeasurable (ranked
	// first); each walk is bounded by its own limits instead.
	walkCtx := ctx
	ctx, cancel := context.WithTimeout(ctx, h.cfg.RuntimeTimeout)
	defer cancel()
	cs, err := h.stats.ListContainerStats(ctx, &runtimeapi.ContainerStatsFilter{})
	if err != nil {
		h.logger.Warn("Eviction: container stats failed; pods are ranked without them", "err", err)
		return out
	}
	want := map[types.UID]*v1.Pod{}
	for _, p := range pods {
		want[p.UID] = p
	}
	ids := map[types.UID][]string{}
	listed := map[string]bool{}
	for _, c := range cs {
		labels := c.GetAttributes().GetLabels()
		uid := types.UID(labels[podspec.LabelPodUID])
		listed[c.GetAttributes().GetId()] = true
		if want[uid] == nil {
			continue
		}
		ids[uid] = append(ids[uid], c.GetAttributes().GetId())
		ps := out[uid]
		if ps == nil {
			ps = &eviction.PodStats{ContainerMemory: map[string]int64{}, ContainerDisk: map[string]int64{}}
			out[uid] = ps
		}
		name := labels[podspec.LabelContainerName]
		ws := int64(c.GetMemory().GetWorkingSetBytes().GetValue())
		ps.Memory += ws
		ps.ContainerMemory[name] += ws
		if disk {
			wl := int64(c.GetWritableLayer().GetUsedBytes().GetValue())
			ps.Disk += wl
			ps.Inodes += int64(c.GetWritableLayer().GetInodesUsed().GetValue())
			ps.ContainerDisk[name] += wl
		}
	}
	var files map[types.UID]*podFiles
	if disk {
		files = h.files().get(walkCtx, pods)
	}
	for uid, p := range want {
		ps := out[uid]
		if ps == nil {
			if !disk {
				continue // no stats at all: ranked first, as in the kubelet
			}
			ps = &eviction.PodStats{ContainerMemory: map[string]int64{}, ContainerDisk: map[string]int64{}}
			out[uid] = ps
		}
		if n, ok := h.podProcesses(p); ok {
			ps.Processes = n
		}
		if disk {
			h.addPodFiles(p, ps, files[uid])
			b, n := h.sandboxFileUsage(walkCtx, ids[uid])
			ps.Disk, ps.Inodes = min(ps.Disk+b, unmeasurableUsage), min(ps.Inodes+n, unmeasurableUsage)
		}
	}
	if disk {
		h.sandboxFiles.retain(listed)
	}
	return out
}

// podProcesses is the pod's task count, what PID pressure ranks by: its
// cgroup's pids.current (threads included, as pid.available counts them),
// or where that file cannot be read the processes of its cgroup tree.
// Without it every pod counted 0 and a pod forking until the node ran out
// of PIDs had whichever pod sorted first evicted in its place. The files
// are the kernel's, not the pod's.
func (h *Provider) podProcesses(p *v1.Pod) (int64, bool) {
	cg := h.cfg.Cgroups
	if cg == nil {
		return 0, false
	}
	name := h.eng.PodCgroup(p)
	file := filepath.Join(h.cgroupRoot, "pids", cg.Path(name), "pids.current")
	if cg.Mode().IsV2() {
		file = filepath.Join(h.cgroupRoot, cg.Path(name), "pids.current")
	}
	if b, err := os.ReadFile(file); err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
			return n, true
		}
	}
	pids, err := cg.Pids(name)
	if err != nil {
		return 0, false
	}
	return int64(len(pids)), true
}

// unmeasurableUsage is the disk usage (bytes and inodes) of a pod whose
// files could not be measured whole: it ranks first under disk pressure.
// The kubelet's du has no such case (it walks path strings, and a pod
// can hide data below PATH_MAX from it); here the pod that makes its
// usage unmeasurable is the one evicted, never another pod in its place.
// Far below MaxInt64, so that sums cannot overflow.
const unmeasurableUsage = int64(1) << 60

// addPodFiles adds to ps what the pod writes on the node filesystem
// outside its writable layers (but for the runtime's per-sandbox files,
// sandboxFileUsage), as its latest measurement f found (nil:
// none yet): its pod directory (emptyDirs, the termination-message files
// its containers write through /dev/termination-log, its /etc/hosts), its
// log directory and the unlinked files it holds open. The pinned subPath
// mounts under the pod directory are bind mounts of what is counted
// already (or of host paths, which are not the pod's): skipped, and the
// walk never enters a mount anyway.
func (h *Provider) addPodFiles(p *v1.Pod, ps *eviction.PodStats, f *podFiles) {
	if f == nil {
		// Its first walk is still running: ranked by its writable layers
		// alone this cycle, as the kubelet ranks a pod its volume stats
		// calculator has not measured yet.
		h.logger.Info("Eviction: a pod's files are still being measured; ranked without them this cycle", "pod", p.Namespace+"/"+p.Name, "podUID", string(p.UID))
		return
	}
	for _, t := range []struct {
		dir string
		u   volume.Usage
		err error
	}{{h.eng.PodDir(p), f.Files, f.FilesErr}, {h.eng.PodLogDir(p), f.Logs, f.LogsErr}} {
		if t.err != nil {
			h.logger.Warn("Eviction: measuring a pod's files failed", "pod", p.Namespace+"/"+p.Name, "podUID", string(p.UID), "err", t.err)
			continue
		}
		if t.u.Incomplete != "" {
			h.logger.Warn("Eviction: a pod's files cannot be measured whole; it counts as using the whole disk", "pod", p.Namespace+"/"+p.Name,
				"podUID", string(p.UID), "dir", t.dir, "why", t.u.Incomplete)
			ps.Disk, ps.Inodes = unmeasurableUsage, unmeasurableUsage
			return
		}
		ps.Disk += t.u.Bytes
		ps.Inodes += t.u.Inodes
	}
	if f.HeldOK {
		ps.Disk += f.Held // unlinked files still open: no walk sees them
	}
}

// LocalStorage implements eviction.StatsProvider: for each pod, what its local
// storage limits are checked against (eviction.LocalStorageViolation):
// the disk emptyDirs that have a sizeLimit; the writable layer and log
// directory of the containers with an ephemeral-storage limit; the pod's
// whole usage (writable layers, its log directory, its pod directory,
// the unlinked files it holds open) when any container has one. The
// files are each pod's latest background measurement (podfs.go:
// a walk per directory, volume.DiskUsageWithSubtrees, by descriptor, never
// following a link or entering a mount). A tree the walk cannot measure
// whole counts as unmeasurableUsage, over any limit: the pod that hides
// its usage from the measurement is the one evicted. A pod missing from
// the map (no container stats) is not checked this cycle, as the kubelet
// skips a pod without stats; one whose first measurement is not done yet
// is checked on its writable layers and sandbox files alone. The pod's
// total also counts the runtime's per-sandbox files (/etc/hostname,
// /etc/resolv.conf: sandboxfiles.go), read every call; what could
// not be measured counts 0 in it, a lower bound.
func (h *Provider) LocalStorage(ctx context.Context, pods []*v1.Pod) map[types.UID]*eviction.LocalStorageUsage {
	out := map[types.UID]*eviction.LocalStorageUsage{}
	if h.stats == nil || len(pods) == 0 {
		return out
	}
	cctx, cancel := context.WithTimeout(ctx, h.cfg.RuntimeTimeout)
	cs, err := h.stats.ListContainerStats(cctx, &runtimeapi.ContainerStatsFilter{})
	cancel()
	if err != nil {
		h.logger.Warn("Eviction: container stats failed; local storage limits are not checked this cycle", "err", err)
		return out
	}
	// The newest instance (highest attempt) of each container, as the
	// kubelet's stats keep only the latest container of each name: a
	// restarted container's old writable layer is the garbage collector's.
	type key struct {
		uid  types.UID
		name string
	}
	newest := map[key]*runtimeapi.ContainerStats{}
	started := map[types.UID]bool{}
	ids := map[types.UID][]string{} // every instance: each may hold a sandbox's files
	listed := map[string]bool{}
	for _, c := range cs {
		labels := c.GetAttributes().GetLabels()
		k := key{types.UID(labels[podspec.LabelPodUID]), labels[podspec.LabelContainerName]}
		started[k.uid] = true
		ids[k.uid] = append(ids[k.uid], c.GetAttributes().GetId())
		listed[c.GetAttributes().GetId()] = true
		if old, ok := newest[k]; !ok || c.GetAttributes().GetMetadata().GetAttempt() >= old.GetAttributes().GetMetadata().GetAttempt() {
			newest[k] = c
		}
	}
	var measured []*v1.Pod
	for _, p := range pods {
		if started[p.UID] {
			measured = append(measured, p)
		}
	}
	files := h.files().get(ctx, measured)
	defer h.sandboxFiles.retain(listed)
	for _, p := range measured {
		u := &eviction.LocalStorageUsage{EmptyDirs: map[string]int64{}, ContainerRootfs: map[string]int64{}, ContainerLogs: map[string]int64{}}
		out[p.UID] = u
		var layers int64
		for k, c := range newest {
			if k.uid == p.UID {
				wl := int64(c.GetWritableLayer().GetUsedBytes().GetValue())
				u.ContainerRootfs[k.name] = wl
				layers += wl
			}
		}
		// The runtime's per-sandbox files (/etc/hostname, /etc/resolv.conf),
		// pod-writable and in none of the walked directories
		// (sandboxfiles.go): the pod's, measured every cycle.
		sandbox, _ := h.sandboxFileUsage(ctx, ids[p.UID])
		f := files[p.UID]
		if f == nil {
			h.logger.Info("Eviction: a pod's files are still being measured; its limits are checked on its writable layers and sandbox files alone this cycle",
				"pod", p.Namespace+"/"+p.Name, "podUID", string(p.UID))
			if hasEphemeralStorageLimit(p) {
				// A lower bound: over the limit already is over it.
				u.Pod, u.PodMeasured = layers+sandbox, true
			}
			continue
		}
		figure := func(dir string, got volume.Usage, err error) (int64, bool) {
			if err != nil {
				h.logger.Warn("Eviction: measuring a pod's files failed", "pod", p.Namespace+"/"+p.Name, "podUID", string(p.UID), "dir", dir, "err", err)
				return 0, false
			}
			if got.Incomplete != "" {
				h.logger.Warn("Eviction: a pod's files cannot be measured whole; they count as over any limit", "pod", p.Namespace+"/"+p.Name,
					"podUID", string(p.UID), "dir", dir, "why", got.Incomplete)
				return unmeasurableUsage, true
			}
			return got.Bytes, true
		}
		for i := range p.Spec.Volumes {
			vol := &p.Spec.Volumes[i]
			ed := vol.EmptyDir
			if ed == nil || ed.Medium == v1.StorageMediumMemory || ed.SizeLimit == nil || ed.SizeLimit.Sign() != 1 {
				continue
			}
			if n, ok := figure(h.eng.EmptyDirPath(p, vol.Name), f.EmptyDirs[vol.Name], f.FilesErr); ok {
				u.EmptyDirs[vol.Name] = n
			}
		}
		anyLimit := false
		for _, list := range [][]v1.Container{p.Spec.InitContainers, p.Spec.Containers} {
			for i := range list {
				c := &list[i]
				if _, ok := c.Resources.Limits[v1.ResourceEphemeralStorage]; !ok {
					continue
				}
				anyLimit = true
				// The container's log directory (every attempt's log and
				// the rotated ones), the kubelet's container log stats.
				if n, ok := figure(filepath.Join(h.eng.PodLogDir(p), c.Name), f.ContainerLogs[c.Name], f.LogsErr); ok {
					u.ContainerLogs[c.Name] = n
				}
			}
		}
		if anyLimit {
			// What could not be measured counts 0 (logged): the total is
			// then a lower bound, and over the limit already is over it.
			// f.Held: unlinked files still open, which no walk sees.
			podDir, _ := figure(h.eng.PodDir(p), f.Files, f.FilesErr)
			logs, _ := figure(h.eng.PodLogDir(p), f.Logs, f.LogsErr)
			u.Pod, u.PodMeasured = min(layers+podDir+logs+f.Held+sandbox, unmeasurableUsage), true
		}
	}
	return out
}

// maxHeldFds bounds the open file descriptors heldDeleted looks at for
// one pod per measurement (a readlink each, a stat for the unlinked ones:
// about a second for the whole bound).
const maxHeldFds = 1 << 20

// Filesystems whose files are memory, not disk (statfs f_type): tmpfs
// (memfd_create's too), ramfs, hugetlbfs. A pod's memory cgroup counts
// them.
var memoryFsTypes = map[int64]bool{0x01021994: true, 0x858458f6: true, 0x958458f6: true}

// heldDeleted is the disk the pod's processes hold in regular files they
// unlinked but keep open: a container that opens a file, removes it and
// writes on keeps using the node filesystem (its writable layer or an
// emptyDir) while no walk of a directory, the runtime's writable-layer
// figure included, can see it any more. The kubelet (du and cadvisor)
// misses it too, and a pod escaped its ephemeral-storage limit so (e2e
// TestEviction_DeletedOpenFileCounts) and, under disk pressure, had a
// bystander evicted in its place. The pod's processes are its cgroup's;
// each /proc/<pid>/fd/<n> is the kernel's link to the open file, stat'ed
// through it (never a path the pod wrote). Files on memory filesystems
// are left out, each inode is counted once, and the count stops at
// maxHeldFds descriptors (a lower bound then). ok is false when the pod's
// processes cannot be listed.
func (h *Provider) heldDeleted(p *v1.Pod) (int64, bool) {
	cg := h.cfg.Cgroups
	if cg == nil {
		return 0, false
	}
	pids, err := cg.Pids(h.eng.PodCgroup(p))
	if err != nil {
		return 0, false
	}
	uid := string(p.UID)
	belongs := func(pid int) bool {
		// A PID listed from the cgroup may have exited and been reused by
		// another process while its descriptors were read: its cgroup,
		// read after them, must still name the pod (pod<uid> for cgroupfs,
		// pod<uid with underscores>.slice for systemd).
		b, err := os.ReadFile(filepath.Join(h.procRoot, strconv.Itoa(pid), "cgroup"))
		return err == nil && (bytes.Contains(b, []byte("pod"+uid)) || bytes.Contains(b, []byte("pod"+strings.ReplaceAll(uid, "-", "_"))))
	}
	return heldDeletedBytes(h.procRoot, pids, maxHeldFds, belongs), true
}

// heldDeletedBytes sums the allocated bytes of the unlinked regular files
// on disk filesystems that the processes pids hold open (see heldDeleted),
// looking at maxFds descriptors at most. A process for which belongs,
// asked after its descriptors were read, says false counts nothing.
func heldDeletedBytes(procRoot string, pids []int, maxFds int, belongs func(pid int) bool) int64 {
	type inode struct{ dev, ino uint64 }
	seen := map[inode]bool{}
	var total int64
	left := maxFds
	for _, pid := range pids {
		if left <= 0 {
			break
		}
		dir := filepath.Join(procRoot, strconv.Itoa(pid), "fd")
		f, err := os.Open(dir)
		if err != nil {
			continue // exited meanwhile
		}
		var own int64
		found := map[inode]bool{} // this process's, counted once it belongs
		for left > 0 {
			names, err := f.Readdirnames(min(1024, left))
			left -= len(names)
			for _, n := range names {
				fd := filepath.Join(dir, n)
				target, err := os.Readlink(fd)
				if err != nil || !strings.HasSuffix(target, " (deleted)") {
					continue
				}
				var st syscall.Stat_t
				if syscall.Stat(fd, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG || st.Nlink != 0 {
					continue
				}
				var sfs syscall.Statfs_t
				if syscall.Statfs(fd, &sfs) != nil || memoryFsTypes[int64(sfs.Type)] {
					continue
				}
				k := inode{uint64(st.Dev), uint64(st.Ino)}
				if seen[k] || found[k] {
					continue
				}
				found[k] = true
				own += int64(st.Blocks) * 512
			}
			if err != nil {
				break // io.EOF: all read
			}
		}
		f.Close()
		if own > 0 && belongs(pid) {
			for k := range found {
				seen[k] = true
			}
			total += own
		}
	}
	return total
}

// hasEphemeralStorageLimit reports whether a container of p has an
// ephemeral-storage limit (the pod's total is then checked).
func hasEphemeralStorageLimit(p *v1.Pod) bool {
	for _, list := range [][]v1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range list {
			if _, ok := list[i].Resources.Limits[v1.ResourceEphemeralStorage]; ok {
				return true
			}
		}
	}
	return false
}
