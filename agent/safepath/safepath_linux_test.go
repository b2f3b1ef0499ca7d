//go:build linux

package safepath

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bothWalks runs f with the kernel's openat2 and with the per-component
// fallback.
func bothWalks(t *testing.T, f func(t *testing.T)) {
	for _, fallback := range []bool{false, true} {
		name := "openat2"
		if fallback {
			name = "fallback"
		}
		t.Run(name, func(t *testing.T) {
			prev := noOpenat2.Load()
			noOpenat2.Store(fallback)
			t.Cleanup(func() { noOpenat2.Store(prev) })
			f(t)
		})
	}
}

// fixture is a volume with a directory, a file, relative symlinks that
// stay inside, and symlinks that leave it for outside, which holds a
// canary.
func fixture(t *testing.T) (vol, outside string) {
	t.Helper()
	vol, outside = t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "canary"), []byte("secret"), 0o600))
	require.NoError(t, os.MkdirAll(filepath.Join(vol, "d/e"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(vol, "d/file"), []byte("hello"), 0o644))
	require.NoError(t, os.Symlink("d", filepath.Join(vol, "in")))
	require.NoError(t, os.Symlink("../file", filepath.Join(vol, "d/e/up")))
	require.NoError(t, os.Symlink(outside, filepath.Join(vol, "abs")))
	require.NoError(t, os.Symlink("../../../../../../../../"+outside, filepath.Join(vol, "climb")))
	require.NoError(t, os.Symlink("loop", filepath.Join(vol, "loop")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(vol, "fifo"), 0o666))
	return vol, outside
}

func TestOpenPath(t *testing.T) {
	bothWalks(t, func(t *testing.T) {
		vol, outside := fixture(t)
		tests := []struct {
			name    string
			rel     string
			want    string // the file found, relative to vol
			wantErr error
		}{
			{name: "directory", rel: "d/e", want: "d/e"},
			{name: "file", rel: "d/file", want: "d/file"},
			{name: "symlink inside", rel: "in/file", want: "d/file"},
			{name: "symlink last, inside", rel: "in", want: "d"},
			{name: "relative symlink up, inside", rel: "d/e/up", want: "d/file"},
			{name: "dot-dot inside", rel: "d/e/../file", want: "d/file"},
			{name: "absolute symlink", rel: "abs", wantErr: ErrEscapes},
			{name: "through absolute symlink", rel: "abs/canary", wantErr: ErrEscapes},
			{name: "climbing symlink", rel: "climb/canary", wantErr: ErrEscapes},
			{name: "dot-dot out", rel: "../x", wantErr: ErrEscapes},
			{name: "absolute path", rel: outside, wantErr: ErrEscapes},
			{name: "symlink loop", rel: "loop", wantErr: ErrSymlink},
			{name: "missing", rel: "nope", wantErr: os.ErrNotExist},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				f, err := OpenPath(vol, tt.rel)
				if tt.wantErr != nil {
					require.ErrorIs(t, err, tt.wantErr)
					return
				}
				require.NoError(t, err)
				defer f.Close()
				assert.True(t, sameFile(t, ProcPath(f), filepath.Join(vol, tt.want)))
			})
		}
	})
}

// sameFile compares the files two paths reach, following symlinks (the
// magic link of a descriptor too).
func sameFile(t *testing.T, a, b string) bool {
	t.Helper()
	fa, err := os.Stat(a)
	require.NoError(t, err)
	fb, err := os.Stat(b)
	require.NoError(t, err)
	return os.SameFile(fa, fb)
}

func TestMkdirAll(t *testing.T) {
	bothWalks(t, func(t *testing.T) {
		vol, outside := fixture(t)
		f, err := MkdirAll(vol, "new/a/b", 0o750)
		require.NoError(t, err)
		f.Close()
		fi, err := os.Stat(filepath.Join(vol, "new/a/b"))
		require.NoError(t, err)
		assert.True(t, fi.IsDir())

		f, err = MkdirAll(vol, "in/made", 0o755)
		require.NoError(t, err, "through a symlink that stays inside")
		f.Close()
		assert.DirExists(t, filepath.Join(vol, "d/made"))

		f, err = MkdirAll(vol, "d/file", 0o755)
		require.NoError(t, err, "an existing file is what it is")
		f.Close()

		for _, rel := range []string{"abs/made", "climb/made", "../made", "abs"} {
			_, err := MkdirAll(vol, rel, 0o755)
			require.ErrorIs(t, err, ErrEscapes, rel)
		}
		_, err = MkdirAll(vol, "d/file/x", 0o755)
		require.Error(t, err, "a file is no directory")
		entries, err := os.ReadDir(outside)
		require.NoError(t, err)
		assert.Len(t, entries, 1, "nothing created outside the volume")
	})
}

// TestMkdirAllMode: directories MkdirAll makes get exactly the mode asked
// for, special bits included, whatever the umask (the kubelet's
// doSafeMakeDir fchmods them); an existing directory keeps its own.
func TestMkdirAllMode(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	bothWalks(t, func(t *testing.T) {
		vol, _ := fixture(t)
		require.NoError(t, os.Mkdir(filepath.Join(vol, "kept"), 0o700))
		perm := os.ModeSetgid | os.ModeSticky | 0o777
		f, err := MkdirAll(vol, "kept/new/deeper", perm)
		require.NoError(t, err)
		f.Close()
		for _, rel := range []string{"kept/new", "kept/new/deeper"} {
			fi, err := os.Stat(filepath.Join(vol, rel))
			require.NoError(t, err)
			assert.Equal(t, os.ModeDir|perm, fi.Mode(), rel)
		}
		fi, err := os.Stat(filepath.Join(vol, "kept"))
		require.NoError(t, err)
		assert.Equal(t, os.ModeDir|0o700, fi.Mode(), "an existing directory is not chmodded")
	})
}

func TestOpenBeneath(t *testing.T) {
	bothWalks(t, func(t *testing.T) {
		vol, _ := fixture(t)
		data, err := ReadFileBeneath(vol, "d/file", 100)
		require.NoError(t, err)
		assert.Equal(t, "hello", string(data))

		for _, tt := range []struct {
			rel  string
			want error
		}{
			{"in/file", ErrSymlink},
			{"d/e/up", ErrSymlink},
			{"abs/canary", ErrSymlink},
			{"d", ErrNotRegular},
			{"fifo", ErrNotRegular},
			{"../x", ErrEscapes},
		} {
			done := make(chan error, 1)
			go func() { _, err := ReadFileBeneath(vol, tt.rel, 100); done <- err }()
			select {
			case err := <-done:
				require.ErrorIs(t, err, tt.want, tt.rel)
			case <-time.After(5 * time.Second):
				t.Fatalf("reading %s blocked", tt.rel)
			}
		}
	})
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(p, []byte(strings.Repeat("x", 100)), 0o644))
	data, err := ReadFile(p, 100)
	require.NoError(t, err)
	assert.Len(t, data, 100)
	data, err = ReadFile(p, 10)
	require.ErrorIs(t, err, ErrTooLarge)
	assert.Len(t, data, 10)

	require.NoError(t, os.Symlink(p, filepath.Join(dir, "link")))
	_, err = ReadFile(filepath.Join(dir, "link"), 100)
	require.ErrorIs(t, err, ErrSymlink)

	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o666))
	_, err = ReadFile(filepath.Join(dir, "fifo"), 100)
	require.ErrorIs(t, err, ErrNotRegular, "a FIFO is refused without blocking")
}

func TestReadTail(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(p, []byte("0123456789"), 0o644))
	f, err := OpenFile(p)
	require.NoError(t, err)
	defer f.Close()
	data, err := ReadTail(f, 4)
	require.NoError(t, err)
	assert.Equal(t, "6789", string(data))
	_, err = f.Seek(0, 0)
	require.NoError(t, err)
	data, err = ReadTail(f, 40)
	require.NoError(t, err)
	assert.Equal(t, "0123456789", string(data))
}
