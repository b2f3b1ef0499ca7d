package logrotate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestContainerLogSymlink_KubeletName(t *testing.T) {
	id := strings.Repeat("a", 64)
	require.Equal(t, "/var/log/containers/web_default_nginx-"+id+".log",
		ContainerLogSymlink("/var/log/containers", "web", "default", "nginx", id))
	// ext4's 255: the name before ".log" is cut to 251 characters.
	long := ContainerLogSymlink("/d", strings.Repeat("p", 200), "ns", "c", id)
	require.Len(t, filepath.Base(long), 255)
	require.True(t, strings.HasSuffix(long, ".log"))
}

func TestLinkAndUnlinkContainerLog(t *testing.T) {
	pods, links := t.TempDir(), filepath.Join(t.TempDir(), "containers")
	id, other := strings.Repeat("1", 64), strings.Repeat("2", 64)
	logPath := filepath.Join(pods, "default_web_uid", "nginx", "0.log")

	// No log file yet: no link (the kubelet links only an existing log).
	require.NoError(t, LinkContainerLog(links, "web", "default", "nginx", id, logPath))
	_, err := os.Stat(links)
	require.True(t, os.IsNotExist(err), "no link directory without a log: %v", err)

	require.NoError(t, os.MkdirAll(filepath.Dir(logPath), 0o755))
	require.NoError(t, os.WriteFile(logPath, []byte("hello\n"), 0o640))
	require.NoError(t, LinkContainerLog(links, "web", "default", "nginx", id, logPath))
	link := filepath.Join(links, "web_default_nginx-"+id+".log")
	target, err := os.Readlink(link)
	require.NoError(t, err)
	require.Equal(t, logPath, target)
	b, err := os.ReadFile(link)
	require.NoError(t, err)
	require.Equal(t, "hello\n", string(b))
	// Again (a restart of the agent): replaced, not an error.
	require.NoError(t, LinkContainerLog(links, "web", "default", "nginx", id, logPath))

	// Another container's link, a regular file named like a link, and a
	// truncated link of this container.
	otherLink := filepath.Join(links, "web_default_sidecar-"+other+".log")
	require.NoError(t, os.Symlink(logPath, otherLink))
	regular := filepath.Join(links, "notes-"+id+".log")
	require.NoError(t, os.WriteFile(regular, nil, 0o644))
	truncated := ContainerLogSymlink(links, strings.Repeat("p", 200), "ns", "c", id)
	require.NoError(t, os.Symlink(logPath, truncated))

	require.NoError(t, UnlinkContainerLog(links, id))
	for _, gone := range []string{link, truncated} {
		_, err := os.Lstat(gone)
		require.True(t, os.IsNotExist(err), "%s: %v", gone, err)
	}
	for _, kept := range []string{otherLink, regular, logPath} {
		_, err := os.Lstat(kept)
		require.NoError(t, err, kept)
	}
	// Off, and a missing directory: nothing to do.
	require.NoError(t, LinkContainerLog("", "web", "default", "nginx", id, logPath))
	require.NoError(t, UnlinkContainerLog(filepath.Join(t.TempDir(), "none"), id))
}
