//go:build linux

package volume

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// blocksOf is what du counts for path (its allocated blocks).
func blocksOf(t *testing.T, path string) int64 {
	t.Helper()
	var st syscall.Stat_t
	require.NoError(t, syscall.Lstat(path, &st))
	return st.Blocks * 512
}

func writeN(t *testing.T, path string, n int) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, make([]byte, n), 0o644))
}

// Files, directories and hard links: each inode once; what a symlink
// points to is never counted; a FIFO is measured without being opened (a
// walk that opened it would block here); SkipTop leaves out a top entry;
// a missing tree is zero.
func TestDiskUsage(t *testing.T) {
	root := t.TempDir()
	tree := filepath.Join(root, "tree")
	writeN(t, filepath.Join(tree, "a"), 64<<10)
	writeN(t, filepath.Join(tree, "sub", "b"), 32<<10)
	require.NoError(t, os.Link(filepath.Join(tree, "a"), filepath.Join(tree, "sub", "a-again")))
	outside := filepath.Join(root, "outside")
	writeN(t, filepath.Join(outside, "big"), 1<<20)
	require.NoError(t, os.Symlink(outside, filepath.Join(tree, "to-dir")))
	require.NoError(t, os.Symlink(filepath.Join(outside, "big"), filepath.Join(tree, "to-file")))
	require.NoError(t, unix.Mkfifo(filepath.Join(tree, "fifo"), 0o644))
	writeN(t, filepath.Join(tree, "pins", "skipped"), 512<<10)

	want := Usage{Inodes: 7} // tree, a, sub, sub/b, to-dir, to-file, fifo
	for _, p := range []string{"", "a", "sub", "sub/b", "to-dir", "to-file", "fifo"} {
		want.Bytes += blocksOf(t, filepath.Join(tree, p))
	}
	done := make(chan struct{})
	var got Usage
	var err error
	go func() {
		defer close(done)
		got, err = DiskUsage(context.Background(), tree, UsageLimits{MaxDepth: 8, MaxEntries: 100, SkipTop: []string{"pins"}})
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("DiskUsage blocked (on the FIFO?)")
	}
	require.NoError(t, err)
	assert.Equal(t, want, got)

	got, err = DiskUsage(context.Background(), filepath.Join(root, "missing"), DefaultUsageLimits)
	require.NoError(t, err)
	assert.Equal(t, Usage{}, got)
	_, err = DiskUsage(context.Background(), filepath.Join(tree, "to-dir"), DefaultUsageLimits)
	assert.Error(t, err, "the root itself is never a followed link")
}

// One walk measures the whole tree and its subtrees: each subtree's
// figure is what a walk of it alone finds (an inode hard-linked from
// another subtree counted in both, once within each), the total what
// DiskUsage finds; a subtree that does not exist is zero, a file is
// itself.
func TestDiskUsageWithSubtrees(t *testing.T) {
	tree := t.TempDir()
	writeN(t, filepath.Join(tree, "volumes", "e", "a"), 64<<10)
	writeN(t, filepath.Join(tree, "volumes", "e", "sub", "b"), 32<<10)
	require.NoError(t, os.Link(filepath.Join(tree, "volumes", "e", "a"), filepath.Join(tree, "volumes", "e", "sub", "a2")))
	writeN(t, filepath.Join(tree, "volumes", "f", "c"), 16<<10)
	require.NoError(t, os.Link(filepath.Join(tree, "volumes", "e", "a"), filepath.Join(tree, "volumes", "f", "a3")))
	writeN(t, filepath.Join(tree, "etc-hosts"), 4<<10)
	subs := []string{"volumes/e", "volumes/f", "volumes/none", "etc-hosts"}

	total, got, err := DiskUsageWithSubtrees(context.Background(), tree, DefaultUsageLimits, subs)
	require.NoError(t, err)
	want, err := DiskUsage(context.Background(), tree, DefaultUsageLimits)
	require.NoError(t, err)
	assert.Equal(t, want, total)
	require.Len(t, got, len(subs))
	for _, s := range []string{"volumes/e", "volumes/f"} {
		alone, err := DiskUsage(context.Background(), filepath.Join(tree, s), DefaultUsageLimits)
		require.NoError(t, err)
		assert.Equal(t, alone, got[s], s)
	}
	assert.GreaterOrEqual(t, got["volumes/f"].Bytes, int64(64+16)<<10, "the link to another subtree's file counts here too")
	assert.Equal(t, Usage{}, got["volumes/none"])
	assert.Equal(t, Usage{Bytes: blocksOf(t, filepath.Join(tree, "etc-hosts")), Inodes: 1}, got["etc-hosts"])

	_, got, err = DiskUsageWithSubtrees(context.Background(), filepath.Join(tree, "missing"), DefaultUsageLimits, subs)
	require.NoError(t, err)
	assert.Equal(t, Usage{}, got["volumes/e"])
}

// A subtree the walk could not finish is Incomplete; every other one is
// either whole (walked before the walk stopped) or Incomplete (not
// reached), never a lower bound passed off as whole.
func TestDiskUsageWithSubtrees_Incomplete(t *testing.T) {
	tree := t.TempDir()
	deep := filepath.Join(tree, "volumes", "deep")
	for range 10 {
		deep = filepath.Join(deep, "d")
	}
	writeN(t, filepath.Join(deep, "f"), 4096)
	for _, n := range []string{"a", "b", "c", "d"} {
		writeN(t, filepath.Join(tree, "volumes", n, "f"), 8<<10)
	}
	subs := []string{"volumes/deep", "volumes/a", "volumes/b", "volumes/c", "volumes/d"}
	total, got, err := DiskUsageWithSubtrees(context.Background(), tree, UsageLimits{MaxDepth: 6, MaxEntries: 1000}, subs)
	require.NoError(t, err)
	assert.Contains(t, total.Incomplete, "deeper than 6")
	assert.Contains(t, got["volumes/deep"].Incomplete, "deeper than 6")
	for _, s := range subs[1:] {
		if got[s].Incomplete != "" {
			continue
		}
		alone, err := DiskUsage(context.Background(), filepath.Join(tree, s), DefaultUsageLimits)
		require.NoError(t, err)
		assert.Equal(t, alone, got[s], s)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, got, err = DiskUsageWithSubtrees(ctx, tree, DefaultUsageLimits, subs)
	require.NoError(t, err)
	for _, s := range subs {
		assert.Contains(t, got[s].Incomplete, "cut short", s)
	}
}

// A tree deeper than MaxDepth, one with more entries than MaxEntries, and
// a walk whose context ended are Incomplete: what was measured is a lower
// bound, and the caller must not take it for the pod's usage.
func TestDiskUsage_Incomplete(t *testing.T) {
	tree := t.TempDir()
	deep := tree
	for range 10 {
		deep = filepath.Join(deep, "d")
	}
	writeN(t, filepath.Join(deep, "f"), 4096)
	for i := range 20 {
		writeN(t, filepath.Join(tree, "wide", strings.Repeat("x", i+1)), 0)
	}

	u, err := DiskUsage(context.Background(), tree, UsageLimits{MaxDepth: 5, MaxEntries: 1000})
	require.NoError(t, err)
	assert.Contains(t, u.Incomplete, "deeper than 5")

	u, err = DiskUsage(context.Background(), tree, UsageLimits{MaxDepth: 50, MaxEntries: 15})
	require.NoError(t, err)
	assert.Contains(t, u.Incomplete, "more than 15 entries")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	u, err = DiskUsage(ctx, tree, DefaultUsageLimits)
	require.NoError(t, err)
	assert.Contains(t, u.Incomplete, "cut short")

	u, err = DiskUsage(context.Background(), tree, DefaultUsageLimits)
	require.NoError(t, err)
	assert.Empty(t, u.Incomplete)
	assert.Equal(t, int64(1+10+1+1+20), u.Inodes) // root, 10 dirs, f, wide, 20 files
}

// A mount under the tree, here a bind mount of a host directory on the
// same filesystem (what a privileged pod with Bidirectional propagation
// can make), is neither entered nor counted: the bind mount has the same
// device number, only the statx mount ID tells it apart.
func TestDiskUsage_BindMountNotEntered_Privileged(t *testing.T) {
	if os.Geteuid() != 0 || os.Getenv("MINIKUBELET_PRIVILEGED") != "1" {
		t.Skip("privileged test: run as root with MINIKUBELET_PRIVILEGED=1")
	}
	root := t.TempDir()
	tree, host := filepath.Join(root, "tree"), filepath.Join(root, "host")
	writeN(t, filepath.Join(host, "big"), 1<<20)
	require.NoError(t, os.MkdirAll(filepath.Join(tree, "mnt"), 0o755))
	require.NoError(t, unix.Mount(host, filepath.Join(tree, "mnt"), "", unix.MS_BIND, ""))
	t.Cleanup(func() { _ = unix.Unmount(filepath.Join(tree, "mnt"), unix.MNT_DETACH) })

	u, err := DiskUsage(context.Background(), tree, DefaultUsageLimits)
	require.NoError(t, err)
	assert.Less(t, u.Bytes, int64(1<<20), "the bind-mounted host directory was counted")
	assert.Equal(t, int64(1), u.Inodes, "only the tree's root: the mount point is a mount")
}

// Pace is called before each batch of entries with a growing lower bound
// of the figure; a walk it blocks carries on where it was (the figure is
// the same as an unpaced walk's), and an error from it stops the walk
// Incomplete.
func TestDiskUsage_Pace(t *testing.T) {
	dir := t.TempDir()
	for i := range 3000 { // several getdents batches
		writeN(t, filepath.Join(dir, "d", "f"+strings.Repeat("x", 40)+string(rune('a'+i%26))+filepath.Base(t.Name())+itoa(i)), 0)
	}
	writeN(t, filepath.Join(dir, "big"), 64<<10)
	whole, err := DiskUsage(context.Background(), dir, DefaultUsageLimits)
	require.NoError(t, err)

	var calls int
	var last Usage
	lim := DefaultUsageLimits
	lim.Pace = func(_ context.Context, sofar Usage) error {
		calls++
		assert.GreaterOrEqual(t, sofar.Inodes, last.Inodes, "the figure so far only grows")
		last = sofar
		time.Sleep(time.Millisecond) // a pause
		return nil
	}
	paced, err := DiskUsage(context.Background(), dir, lim)
	require.NoError(t, err)
	assert.Equal(t, whole, paced, "a paced walk finds what an unpaced one does")
	assert.Greater(t, calls, 3, "called batch by batch")
	assert.LessOrEqual(t, last.Inodes, whole.Inodes)

	calls = 0
	lim.Pace = func(_ context.Context, sofar Usage) error {
		calls++
		if calls == 3 {
			return context.DeadlineExceeded
		}
		return nil
	}
	cut, err := DiskUsage(context.Background(), dir, lim)
	require.NoError(t, err)
	assert.Contains(t, cut.Incomplete, "cut short")
	assert.Less(t, cut.Inodes, whole.Inodes)
}

func itoa(i int) string { return strconv.Itoa(i) }
