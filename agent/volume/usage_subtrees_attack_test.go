//go:build linux

package volume

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDiskUsageWithSubtrees_ManySubtreesLinear: the subtrees are a pod's
// emptyDir volumes, as many as its manifest lists (nothing bounds their
// number but the manifest's size: tens of thousands). Each entry of a
// directory on the way to a subtree was compared with every subtree, so
// the walk of a pod with N emptyDirs cost N² (and N per file in each
// emptyDir's top directory): a walk that did not end within the eviction
// cycles left the pod with no figure, unmeasured. A subtree with ".."
// stays inside dir (never matched: a directory entry is never "..").
func TestDiskUsageWithSubtrees_ManySubtreesLinear(t *testing.T) {
	const n = 20000
	root := t.TempDir()
	vols := filepath.Join(root, "volumes", "kubernetes.io~empty-dir")
	subs := make([]string, 0, n+2)
	for i := range n {
		require.NoError(t, os.MkdirAll(filepath.Join(vols, fmt.Sprintf("v%d", i)), 0o755))
		subs = append(subs, fmt.Sprintf("volumes/kubernetes.io~empty-dir/v%d", i))
	}
	writeN(t, filepath.Join(vols, "v7", "f"), 4096)
	writeN(t, filepath.Join(filepath.Dir(root), "outside"), 64<<10)
	t.Cleanup(func() { _ = os.Remove(filepath.Join(filepath.Dir(root), "outside")) })
	subs = append(subs, "..", "../outside")

	// Linear, not quadratic: measured against a walk of the same tree
	// asking for no subtree, interleaved and the best of three each, so
	// that the machine's load cancels out (a quadratic walk would be
	// thousands of times slower, not a few).
	var total Usage
	var got map[string]Usage
	best := func(subs []string) time.Duration {
		var min time.Duration
		for range 3 {
			start := time.Now()
			tot, g, err := DiskUsageWithSubtrees(context.Background(), root, DefaultUsageLimits, subs)
			took := time.Since(start)
			require.NoError(t, err)
			if subs != nil {
				total, got = tot, g
			}
			if min == 0 || took < min {
				min = took
			}
		}
		return min
	}
	plain, withSubs := best(nil), best(subs)
	t.Logf("walk: %s plain, %s with %d subtrees", plain, withSubs, n)
	assert.Empty(t, total.Incomplete)
	assert.Less(t, withSubs, 5*plain+100*time.Millisecond, "a walk of %d subtrees must cost about what a walk of the tree does", n)
	assert.Equal(t, blocksOf(t, filepath.Join(vols, "v7", "f"))+blocksOf(t, filepath.Join(vols, "v7")), got["volumes/kubernetes.io~empty-dir/v7"].Bytes)
	assert.Equal(t, int64(1), got["volumes/kubernetes.io~empty-dir/v8"].Inodes)
	assert.Equal(t, Usage{}, got[".."], "never outside dir")
	assert.Equal(t, Usage{}, got["../outside"], "never outside dir")
}
