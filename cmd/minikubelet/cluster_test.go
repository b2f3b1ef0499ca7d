package main

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
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

// TestBinaryLinksNoFullClientset guards issue #8's finding: client-go's
// full clientset, its informer factory, listers and apply configurations
// doubled the binary and its idle RSS. The binary talks to the API server
// through cluster.API (client-go's generic clients over a small scheme).
func TestBinaryLinksNoFullClientset(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	out, err := exec.Command(goBin, "list", "-deps", ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	var bad []string
	for _, pkg := range strings.Fields(string(out)) {
		for _, p := range []string{"k8s.io/client-go/kubernetes", "k8s.io/client-go/informers", "k8s.io/client-go/listers", "k8s.io/client-go/applyconfigurations"} {
			if pkg == p || strings.HasPrefix(pkg, p+"/") {
				bad = append(bad, pkg)
			}
		}
	}
	require.Empty(t, bad, "the binary must not link these client-go packages (see agent/cluster.API)")
	require.Contains(t, strings.Fields(string(out)), "k8s.io/client-go/gentype", "the check looks at the real dependency list")
}
