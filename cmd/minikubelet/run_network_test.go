package main

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikubelet/minikubelet/cni"
)

// A foreground run installs the pod network's conflist (which runs every
// CNI plugin it names) in the background once the runtime answered,
// beside the node steps, and waits for it before the agent starts: startNetworkInstall returns
// while the install is still running, and wait hands over its result, to
// every caller.
func TestNetworkInstall_RunsInTheBackground(t *testing.T) {
	for _, tc := range []struct {
		name        string
		notices     []string
		err         error
		wantNotices []string
	}{
		{name: "ok, with a notice", notices: []string{"another CNI config sorts first"}, wantNotices: []string{"another CNI config sorts first"}},
		{name: "a plugin missing", err: errors.New(`CNI plugin "bridge" not found`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{})
			var got cni.Config
			install := func(_ context.Context, c cni.Config) (bool, []string, error) {
				got = c
				<-release
				return true, tc.notices, tc.err
			}
			cfg := cni.Config{PodCIDR: "10.89.1.0/24", Bridge: "mklb1", ConfDir: t.TempDir()}
			n := startNetworkInstall(context.Background(), cfg, install)
			select {
			case <-n.done:
				t.Fatal("startNetworkInstall waited for the install")
			default:
			}
			close(release)
			notices, err := n.wait()
			assert.Equal(t, tc.wantNotices, notices)
			assert.Equal(t, tc.err, err)
			assert.Equal(t, cfg, got)
			// The deferred wait of an early return sees the same.
			notices2, err2 := n.wait()
			assert.Equal(t, notices, notices2)
			require.Equal(t, err, err2)
		})
	}
}
