//go:build linux

package volume

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The mount table is read whole or not at all: a mount listed after a
// line longer than bufio.Scanner's 64 KiB (an overlay with many layers,
// a mount with many options) is still found, and a read error is an
// error, never a shorter table. UnmountUnder relies on it: what it does
// not find stays mounted, and its callers then remove the directory.
func TestParseMountInfo(t *testing.T) {
	long := "lowerdir=" + strings.Repeat("/var/lib/containerd/snapshots/1/fs:", 3000)
	table := "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n" +
		"90 22 0:50 / /run/containerd/x/rootfs rw shared:50 - overlay overlay rw," + long + "\n" +
		"91 22 8:1 /data /var/lib/minikubelet/pods/u/volume-subpaths/v/c/0 rw shared:1 - ext4 /dev/sda1 rw\n" +
		"92 22 0:51 / /var/lib/minikubelet/pods/u/volumes/kubernetes.io~empty-dir/with\\040space rw - tmpfs tmpfs rw"
	require.Greater(t, len(long), 64<<10)
	got, err := parseMountInfo(strings.NewReader(table))
	require.NoError(t, err)
	var points []string
	for _, m := range got {
		points = append(points, m.Point)
	}
	assert.Equal(t, []string{"/", "/run/containerd/x/rootfs", "/var/lib/minikubelet/pods/u/volume-subpaths/v/c/0",
		"/var/lib/minikubelet/pods/u/volumes/kubernetes.io~empty-dir/with space"}, points)
	assert.Equal(t, "shared:1", got[0].optional)

	_, err = parseMountInfo(io.MultiReader(strings.NewReader(table[:100]), iotest.ErrReader(errors.New("EIO"))))
	assert.ErrorContains(t, err, "EIO")
}
