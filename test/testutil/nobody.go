package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// AsNobody runs the current test again in a copy of the test binary
// started as nobody (uid and gid 65534, no groups), for checks that root
// would pass whatever the permissions (a socket root connects to). The copy
// runs in dir, which must be one nobody may enter (go test's own directory
// is root's alone), with env added; it must pass. The test recognises its
// copy by env (os.Getenv of one of its variables).
func AsNobody(t *testing.T, dir string, env ...string) {
	t.Helper()
	require.NoError(t, os.Chmod(dir, 0o755))
	self, err := os.ReadFile(os.Args[0])
	require.NoError(t, err)
	bin := filepath.Join(dir, filepath.Base(os.Args[0]))
	require.NoError(t, os.WriteFile(bin, self, 0o755))
	cmd := exec.Command(bin, "-test.run=^"+t.Name()+"$", "-test.v", "-test.count=1")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s as nobody:\n%s", t.Name(), out)
	assert.Contains(t, string(out), "--- PASS: "+t.Name())
}
