package volume

// Disk usage of a tree a pod writes (its emptyDirs, termination-message
// files, log directory), for the eviction manager's ranking. The pod
// controls every name in it, so the walk is the one place where a du as
// the kubelet's (filepath.Walk over path strings) is not good enough:
//
//   - a directory swapped for a symlink between the listing of its parent
//     and its open sends a path walk to wherever the link points (the
//     whole host filesystem, with the time that takes) and counts that as
//     the pod's; here every directory is opened from its parent's file
//     descriptor with O_NOFOLLOW|O_DIRECTORY, and entries are measured
//     with statx on the parent's descriptor without following them;
//   - a path walk cannot see below PATH_MAX (about 2000 levels of short
//     names), where a pod could hide gigabytes, fill the disk and have
//     another pod evicted in its place; here there is no path, only
//     descriptors, and a tree deeper than MaxDepth, or with more entries
//     than MaxEntries, is reported Incomplete (the caller decides what an
//     unmeasurable pod counts as);
//   - a directory of millions of entries is read in batches, never whole;
//   - a mount under the tree (another filesystem, or a bind mount of the
//     same one: the statx mount ID differs) is neither counted nor
//     entered; a FIFO or device is measured with statx, never opened.

import "context"

// Usage is what a tree takes on its filesystem.
type Usage struct {
	// Bytes are the allocated blocks (512-byte units, as du counts), each
	// hard-linked inode once.
	Bytes int64
	// Inodes counts the tree's inodes, directories included.
	Inodes int64
	// Incomplete, when not empty, says why part of the tree was not
	// measured (too deep, too many entries, the context ended): Bytes and
	// Inodes are then only a lower bound.
	Incomplete string
}

// UsageLimits bound a DiskUsage walk.
type UsageLimits struct {
	// MaxDepth is the deepest directory level entered below the root
	// (each level holds one file descriptor while it is walked).
	MaxDepth int
	// MaxEntries is the number of entries measured before the walk stops.
	MaxEntries int64
	// SkipTop names entries of the root itself that are not measured
	// (the pinned subPath bind mounts of a pod directory).
	SkipTop []string
	// Pace, when set, is called before each batch of directory entries
	// is read, with what the walk found so far (a lower bound of the
	// whole): it may block (the caller's walk-time budget is spent) and
	// the walk carries on where it was when it returns nil; an error
	// stops the walk (Incomplete).
	Pace func(ctx context.Context, sofar Usage) error
}

// DefaultUsageLimits are generous for any real workload: a tree deeper
// than 256 directories or with more than 2 million entries is what a pod
// builds to hide from the measurement.
var DefaultUsageLimits = UsageLimits{MaxDepth: 256, MaxEntries: 2 << 20}

// DiskUsage measures the tree at dir (see the file comment). A missing dir
// is zero usage. ctx ends the walk early (Incomplete).
func DiskUsage(ctx context.Context, dir string, lim UsageLimits) (Usage, error) {
	u, _, err := diskUsage(ctx, dir, lim, nil)
	return u, err
}

// DiskUsageWithSubtrees measures the tree at dir as DiskUsage does and,
// in the same walk, each of subtrees (slash-separated paths relative to
// dir, such as a pod directory's emptyDirs): one walk where a walk of
// the whole and one of each subtree would read the subtrees twice. The
// limits bound the whole walk (MaxDepth counts from dir). Each subtree's
// figure counts a hard-linked inode once within the subtree, as a walk
// of it alone would, whatever else links to it. A subtree that does not
// exist is zero; one the walk did not finish (a limit or ctx stopped it
// before or inside it) or that is a mount point (never entered) is
// Incomplete.
func DiskUsageWithSubtrees(ctx context.Context, dir string, lim UsageLimits, subtrees []string) (Usage, map[string]Usage, error) {
	return diskUsage(ctx, dir, lim, subtrees)
}
