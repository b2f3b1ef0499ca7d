package cni

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikubelet/minikubelet/cni/cnitest"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		// setup prepares the plugin dirs (dirs[0] and dirs[1], both empty).
		setup    func(t *testing.T, dirs []string)
		wantErrs []string // substrings; none means success
	}{
		{
			name:  "all plugins present",
			setup: func(t *testing.T, dirs []string) { cnitest.WritePlugins(t, dirs[0], cnitest.SpecVersions) },
		},
		{
			name: "plugins spread over two dirs",
			setup: func(t *testing.T, dirs []string) {
				cnitest.WritePlugins(t, dirs[0], cnitest.SpecVersions, "bridge", "host-local")
				cnitest.WritePlugins(t, dirs[1], cnitest.SpecVersions, "portmap", "loopback")
			},
		},
		{
			name: "missing plugins",
			setup: func(t *testing.T, dirs []string) {
				cnitest.WritePlugins(t, dirs[0], cnitest.SpecVersions, "bridge", "portmap")
			},
			wantErrs: []string{
				`check CNI plugins for network "minikubelet"`,
				`CNI plugin "host-local" not found in {dir0}, {dir1}: run hack/install-deps.sh to build it there`,
				`CNI plugin "loopback" not found in {dir0}, {dir1}`,
			},
		},
		{
			name: "plugin too old for 1.0.0",
			setup: func(t *testing.T, dirs []string) {
				cnitest.WritePlugins(t, dirs[0], cnitest.SpecVersions, "bridge", "host-local", "loopback")
				cnitest.WritePlugins(t, dirs[0], []string{"0.3.1", "0.4.0"}, "portmap")
			},
			wantErrs: []string{
				`CNI plugin "portmap" at {dir0}/portmap supports spec versions [0.3.1 0.4.0], not 1.0.0 that the conflist uses (searched {dir0}, {dir1}): run hack/install-deps.sh`,
			},
		},
		{
			name: "plugin fails VERSION",
			setup: func(t *testing.T, dirs []string) {
				cnitest.WritePlugins(t, dirs[0], cnitest.SpecVersions, "host-local", "portmap", "loopback")
				require.NoError(t, os.WriteFile(filepath.Join(dirs[0], "bridge"), []byte("#!/bin/sh\necho broken >&2\nexit 3\n"), 0o755))
			},
			wantErrs: []string{`CNI plugin "bridge" at {dir0}/bridge did not answer VERSION (searched {dir0}, {dir1}; run hack/install-deps.sh to reinstall)`},
		},
		{
			name: "plugin not executable",
			setup: func(t *testing.T, dirs []string) {
				cnitest.WritePlugins(t, dirs[0], cnitest.SpecVersions)
				require.NoError(t, os.Chmod(filepath.Join(dirs[0], "loopback"), 0o644))
			},
			wantErrs: []string{`CNI plugin "loopback" at {dir0}/loopback is not executable`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dirs := []string{filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")}
			for _, d := range dirs {
				require.NoError(t, os.MkdirAll(d, 0o755))
			}
			tt.setup(t, dirs)

			err := Validate(context.Background(), Config{BinDirs: dirs})
			if len(tt.wantErrs) == 0 {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			for _, want := range tt.wantErrs {
				want = replaceAll(want, "{dir0}", dirs[0], "{dir1}", dirs[1])
				assert.Contains(t, err.Error(), want)
			}
		})
	}
}

func TestValidate_BadConfig(t *testing.T) {
	err := Validate(context.Background(), Config{PodCIDR: "nope"})
	require.ErrorContains(t, err, `invalid --pod-cidr "nope"`)
}

func TestWaitReady_BecomesReady(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r := &cnitest.Ready{ReadyAfter: 2, Reason: "NetworkPluginNotReady", Message: "cni plugin not initialized"}

	require.NoError(t, WaitReady(ctx, Config{}, r.Check))
	assert.Equal(t, 3, r.Calls())
}

func TestWaitReady_ToleratesRuntimeErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r := &cnitest.Ready{ReadyAfter: 1, Err: errors.New("connection refused")}

	require.NoError(t, WaitReady(ctx, Config{}, r.Check))
	assert.Equal(t, 2, r.Calls())
}

func TestWaitReady_TimesOut(t *testing.T) {
	tests := []struct {
		name     string
		ready    *cnitest.Ready
		wantLast string
	}{
		{
			name:     "runtime says not ready",
			ready:    &cnitest.Ready{ReadyAfter: -1, Reason: "NetworkPluginNotReady", Message: "cni plugin not initialized"},
			wantLast: `runtime reports NetworkReady=false, reason "NetworkPluginNotReady", message "cni plugin not initialized"`,
		},
		{
			name:     "runtime unreachable",
			ready:    &cnitest.Ready{ReadyAfter: -1, Err: errors.New("rpc error: code = Unavailable")},
			wantLast: `last check failed: rpc error: code = Unavailable`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 250*time.Millisecond)
			defer cancel()
			c := Config{ConfDir: "/etc/test/net.d", BinDirs: []string{"/opt/test/bin", "/usr/lib/cni"}}

			err := WaitReady(ctx, c, tt.ready.Check)
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrNetworkNotReady)
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			msg := err.Error()
			assert.Contains(t, msg, "pod network not ready after ")
			assert.Contains(t, msg, tt.wantLast)
			assert.Contains(t, msg, "/etc/test/net.d")
			assert.Contains(t, msg, "/opt/test/bin, /usr/lib/cni")
			assert.Contains(t, msg, "/etc/test/net.d/10-minikubelet.conflist")
			assert.Contains(t, msg, "run hack/install-deps.sh")
			assert.GreaterOrEqual(t, tt.ready.Calls(), 2, "polls more than once")
		})
	}
}

// replaceAll applies old/new pairs to s.
func replaceAll(s string, oldNew ...string) string {
	for i := 0; i+1 < len(oldNew); i += 2 {
		s = strings.ReplaceAll(s, oldNew[i], oldNew[i+1])
	}
	return s
}
