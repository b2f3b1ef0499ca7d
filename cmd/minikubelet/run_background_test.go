package main

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikubelet/minikubelet/cni/cnitest"
	"github.com/minikubelet/minikubelet/cri"
)

// A foreground run starts the runtime handshake and the pod network's
// install (which runs every CNI plugin it names) in the background, beside
// the steps that do not need them: goStep returns while the step still
// runs, and wait hands over its result, to every caller.
func TestGoStep_RunsInTheBackground(t *testing.T) {
	for _, tc := range []struct {
		name    string
		notices []string
		err     error
	}{
		{name: "ok, with a notice", notices: []string{"another CNI config sorts first"}},
		{name: "failed", err: errors.New(`CNI plugin "bridge" not found`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{})
			p := goStep(func() ([]string, error) {
				<-release
				return tc.notices, tc.err
			})
			select {
			case <-p.done:
				t.Fatal("goStep waited for the step")
			default:
			}
			close(release)
			notices, err := p.wait()
			assert.Equal(t, tc.notices, notices)
			assert.Equal(t, tc.err, err)
			// The deferred wait of an early return sees the same.
			notices2, err2 := p.wait()
			assert.Equal(t, notices, notices2)
			require.Equal(t, err, err2)
		})
	}
}

// An early return cancels a handshake still in flight instead of waiting
// for its timeout.
func TestCloseDialed_CancelsTheHandshake(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	dial := goStep(func() (*cri.Client, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	done := make(chan struct{})
	go func() {
		closeDialed(dial, cancel)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("closeDialed did not cancel the handshake")
	}
	_, err := dial.wait()
	require.ErrorIs(t, err, context.Canceled)
}

// With an explicit endpoint the handshake and the pod network's plugin
// check run while the manifest is validated; an invalid manifest is still
// reported as such (exit 2, nothing created: no conflist although the
// plugins answer), at once, even when the runtime never answers.
func TestRunCommand_InvalidManifestWithSilentRuntime(t *testing.T) {
	dir := t.TempDir()
	cnitest.WritePlugins(t, filepath.Join(dir, "cni-bin"), cnitest.SpecVersions)
	sock := filepath.Join(dir, "silent.sock")
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close() // accepted, never answered
		}
	}()
	file := filepath.Join(dir, "pod.yaml")
	require.NoError(t, os.WriteFile(file, []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: []}\n"), 0o600))
	start := time.Now()
	err = runCommand(context.Background(), []string{
		"--runtime-endpoint", "unix://" + sock, "--runtime-request-timeout", "1m",
		"--root-dir", filepath.Join(dir, "root"), "--pod-log-dir", filepath.Join(dir, "logs"),
		"--cni-conf-dir", filepath.Join(dir, "net.d"), "--cni-bin-dir", filepath.Join(dir, "cni-bin"),
		"--socket", filepath.Join(dir, "api.sock"),
		file,
	}, io.Discard, io.Discard)
	var ee *exitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 2, ee.code)
	assert.Contains(t, err.Error(), "invalid manifest (nothing was created)")
	assert.Less(t, time.Since(start), 30*time.Second, "the error waited for the handshake's timeout")
	_, statErr := os.Stat(filepath.Join(dir, "net.d"))
	assert.True(t, os.IsNotExist(statErr), "no conflist before the manifest is valid")
}
