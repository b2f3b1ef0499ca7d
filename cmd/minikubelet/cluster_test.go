package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestClusterFlagsDial(t *testing.T) {
	tests := []struct {
		name    string
		flags   clusterFlags
		wantNil bool
		wantErr string
	}{
		{name: "no kubeconfig: standalone", wantNil: true},
		{name: "--node-ip alone", flags: clusterFlags{nodeIP: "10.0.0.5"}, wantErr: "--node-ip needs --kubeconfig"},
		{name: "a missing kubeconfig", flags: clusterFlags{kubeconfig: filepath.Join(t.TempDir(), "nope")}, wantErr: "--kubeconfig: kubeconfig: stat"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cc, err := tt.flags.dial("node-a")
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.wantNil, cc == nil)
		})
	}
}
