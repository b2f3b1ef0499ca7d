// Package safepath opens, creates and reads files beneath a directory that
// someone else controls: a pod's volume, or a file a container can write
// through a bind mount. Everything a pod can write is hostile to the agent,
// which runs as root: a symlink swapped in at the right moment, a path
// through "..", a FIFO where a file was expected, or a file of gigabytes.
//
// It owns four things and nothing else:
//
//   - resolving a relative path beneath a root directory without ever
//     leaving it: every lookup starts from a file descriptor of the root,
//     through openat2(RESOLVE_BENEATH|RESOLVE_NO_MAGICLINKS) where the
//     kernel has it, else one component at a time with O_NOFOLLOW, symlinks
//     interpreted here and refused when they would leave the root
//     (absolute targets, ".." above the root); the result is an open file
//     descriptor, so a later swap of the path cannot redirect it (the
//     kubelet's pkg/volume/util/subpath does the same for subPath mounts);
//   - creating missing directories the same way (mkdirat on the parent's
//     descriptor, then an O_NOFOLLOW open of what was made);
//   - bounded reads: regular files only (fstat on the opened descriptor),
//     opened O_NOFOLLOW|O_NONBLOCK so a FIFO can never block the caller,
//     and never more than the caller's byte limit in memory;
//   - removing a tree a pod wrote (RemoveAll) without following its
//     symlinks or crossing a mount point, so a bind mount that is still
//     there (a pinned subPath of a hostPath volume) is never emptied.
//
// It imports nothing from the agent; mounting what it opened is the
// caller's business.
package safepath
