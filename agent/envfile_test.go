package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/agent/safepath"
)

// envFilePod is a pod of shop whose app container takes FOO from the file
// path of its emptyDir volume "config".
func envFilePod(path string, optional bool) *v1.Pod {
	pod := &v1.Pod{ObjectMeta: metaNS("shop", "web")}
	pod.UID = "envfile-uid"
	pod.Spec.Volumes = []v1.Volume{{Name: "config", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	pod.Spec.Containers = []v1.Container{{Name: "app", Env: []v1.EnvVar{{Name: "FOO", ValueFrom: &v1.EnvVarSource{
		FileKeyRef: &v1.FileKeySelector{VolumeName: "config", Path: path, Key: "FOO", Optional: &optional}}}}}}
	return pod
}

// TestContainerEnv_FileKeyRef reads the env file of the pod's emptyDir
// volume at the container's start: the value as written, and the
// kubelet's errors for a missing key or file.
func TestContainerEnv_FileKeyRef(t *testing.T) {
	a := envTestAgent(t)
	pod := envFilePod("/conf/config.env", false)
	dir := a.volumes().EmptyDirPath(pod, "config")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "conf"), 0o755))
	file := filepath.Join(dir, "conf", "config.env")
	require.NoError(t, os.WriteFile(file, []byte("# written by init\nFOO='bar baz'\n"), 0o644))

	env, _, _ := envMap(t, a, pod)
	assert.Equal(t, "bar baz", env["FOO"])

	// Read again at each start: a rewritten file gives the new value.
	require.NoError(t, os.WriteFile(file, []byte("OTHER='x'\n"), 0o644))
	_, _, _, err := a.containerEnv(pod, &pod.Spec.Containers[0], "")
	require.EqualError(t, err, `environment variable key "FOO" not found in file "`+file+`"`)
	env, _, _ = envMap(t, a, envFilePod("conf/config.env", true))
	assert.NotContains(t, env, "FOO")

	// A missing file fails the start, optional or not (the kubelet's rule).
	require.NoError(t, os.Remove(file))
	for _, optional := range []bool{false, true} {
		p := envFilePod("conf/config.env", optional)
		_, _, _, err = a.containerEnv(p, &p.Spec.Containers[0], "")
		require.Error(t, err, "optional=%v", optional)
		assert.True(t, strings.HasPrefix(err.Error(), "couldn't parse env file: "), "optional=%v: %v", optional, err)
		assert.ErrorIs(t, err, os.ErrNotExist, "optional=%v", optional)
	}
}

// TestReadEnvFile_Attacks performs what a hostile pod can do to the file
// it writes into its emptyDir: symlinks out of the volume (last component
// or a directory on the way), a FIFO that would block a reader forever, a
// huge file, ".." and absolute paths. Each is refused without following,
// blocking or reading it all; the secret outside never shows, in the value
// or the message.
func TestReadEnvFile_Attacks(t *testing.T) {
	a := envTestAgent(t)
	outside := t.TempDir()
	shadow := filepath.Join(outside, "shadow")
	require.NoError(t, os.WriteFile(shadow, []byte("FOO='root:s3cret-hash'\n"), 0o600))

	pod := envFilePod("x", false)
	dir := a.volumes().EmptyDirPath(pod, "config")
	require.NoError(t, os.MkdirAll(dir, 0o777))
	// What the pod leaves in its volume.
	require.NoError(t, os.Symlink(shadow, filepath.Join(dir, "abs-link.env")))
	require.NoError(t, os.Symlink("../../../../../../../../.."+shadow, filepath.Join(dir, "rel-link.env")))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "linkdir")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ok.env"), []byte("FOO='inside'\n"), 0o644))
	require.NoError(t, os.Symlink("ok.env", filepath.Join(dir, "inside-link.env")))
	require.NoError(t, unix.Mkfifo(filepath.Join(dir, "fifo.env"), 0o666))
	big, err := os.Create(filepath.Join(dir, "big.env"))
	require.NoError(t, err)
	_, err = big.WriteString("FOO='bar'\n")
	require.NoError(t, err)
	require.NoError(t, big.Truncate(100<<20)) // 100 MiB
	require.NoError(t, big.Close())
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))

	for _, tc := range []struct {
		path string
		want error
	}{
		{"abs-link.env", safepath.ErrSymlink},
		{"rel-link.env", safepath.ErrSymlink},
		{"linkdir/shadow", safepath.ErrSymlink},
		{"inside-link.env", safepath.ErrSymlink}, // even one staying inside
		{"fifo.env", safepath.ErrNotRegular},
		{"big.env", safepath.ErrTooLarge},
		{"sub", safepath.ErrNotRegular},
		{"/linkdir/shadow", safepath.ErrSymlink},
		{"sub/../../../../../../.." + shadow, nil}, // cleaned to a path inside: missing
	} {
		t.Run(tc.path, func(t *testing.T) {
			p := envFilePod(tc.path, true)
			done := make(chan error, 1)
			go func() {
				_, _, _, err := a.containerEnv(p, &p.Spec.Containers[0], "")
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("reading the env file blocked")
			}
			require.Error(t, err)
			assert.True(t, strings.HasPrefix(err.Error(), "couldn't parse env file: "), "%v", err)
			if tc.want != nil {
				assert.ErrorIs(t, err, tc.want)
			} else {
				assert.ErrorIs(t, err, os.ErrNotExist)
			}
			assert.NotContains(t, err.Error(), "s3cret")
		})
	}
	// The reader itself, beneath the volume: the same refusals.
	_, err = readEnvFile(dir, "linkdir/shadow")
	assert.ErrorIs(t, err, safepath.ErrSymlink)
	_, err = readEnvFile(dir, "../../"+filepath.Base(outside))
	assert.ErrorIs(t, err, safepath.ErrEscapes)
	data, err := readEnvFile(dir, "ok.env")
	require.NoError(t, err)
	assert.Equal(t, "FOO='inside'\n", string(data))
}
