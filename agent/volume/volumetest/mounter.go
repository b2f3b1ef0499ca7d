package volumetest

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikubelet/minikubelet/agent/volume"
)

var _ volume.VolumeMounter = (*FakeMounter)(nil)

// FakeMounter records tmpfs mounts instead of mounting (house style rule
// 12); the directories stay plain. Its methods may be called concurrently
// (pod workers tear pods down at the same time); read Mounts and Binds
// once no call is running.
type FakeMounter struct {
	mu     sync.Mutex
	Mounts map[string]int64 // dir → size
	// binds maps bind targets to what their source reached at mount time.
	Binds map[string]os.FileInfo
}

func NewFakeMounter() *FakeMounter {
	return &FakeMounter{Mounts: map[string]int64{}, Binds: map[string]os.FileInfo{}}
}

func (f *FakeMounter) BindMount(source, target string) error {
	fi, err := os.Stat(source)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Binds[target] = fi
	return nil
}

func (f *FakeMounter) MountTmpfs(dir string, size int64) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Mounts[dir] = size
	return true, nil
}

func (f *FakeMounter) Unmount(dir string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.Mounts, dir)
	delete(f.Binds, dir)
	return nil
}

func (f *FakeMounter) IsMountPoint(dir string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.Mounts[dir]
	return ok
}

// ReadVolume returns the user-visible files of a volume dir (following
// the symlinks) and checks the kubelet layout on the way.
func ReadVolume(t testing.TB, dir string) map[string]string {
	t.Helper()
	target, err := os.Readlink(filepath.Join(dir, volume.DataDirName))
	require.NoError(t, err, "..data symlink")
	assert.True(t, strings.HasPrefix(target, "..20"), "version dir %q is timestamped", target)
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "..") {
			continue
		}
		link, err := os.Readlink(filepath.Join(dir, e.Name()))
		require.NoError(t, err, "%s is a symlink", e.Name())
		assert.Equal(t, filepath.Join(volume.DataDirName, e.Name()), link)
		_ = filepath.Walk(filepath.Join(dir, volume.DataDirName, e.Name()), func(p string, fi os.FileInfo, err error) error {
			require.NoError(t, err)
			if fi.IsDir() {
				return nil
			}
			data, err := os.ReadFile(p)
			require.NoError(t, err)
			rel, _ := filepath.Rel(filepath.Join(dir, volume.DataDirName), p)
			out[rel] = string(data)
			return nil
		})
	}
	return out
}
