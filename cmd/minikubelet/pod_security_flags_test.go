package main

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	agentnode "github.com/minikubelet/minikubelet/agent/node"
)

// --pod-security sets the level of local pods (baseline by default);
// the deprecated --allow-privileged is its alias for privileged, with a
// notice, and contradicting it is a usage error. The config file takes
// the same names.
func TestPodSecurityFlags(t *testing.T) {
	for _, tc := range []struct {
		name       string
		args       []string
		config     string
		want       agentnode.PodSecurityLevel
		wantNotice bool
		wantErr    string
	}{
		{name: "default", want: agentnode.PodSecurityBaseline},
		{name: "restricted", args: []string{"--pod-security=restricted"}, want: agentnode.PodSecurityRestricted},
		{name: "privileged", args: []string{"--pod-security", "privileged"}, want: agentnode.PodSecurityPrivileged},
		{name: "allow-privileged alias", args: []string{"--allow-privileged"}, want: agentnode.PodSecurityPrivileged, wantNotice: true},
		{name: "allow-privileged=false", args: []string{"--allow-privileged=false"}, want: agentnode.PodSecurityBaseline, wantNotice: true},
		{name: "both, agreeing", args: []string{"--allow-privileged", "--pod-security=privileged"}, want: agentnode.PodSecurityPrivileged, wantNotice: true},
		{name: "both, contradicting", args: []string{"--allow-privileged", "--pod-security=baseline"}, wantErr: "contradicts --pod-security=baseline"},
		{name: "unknown level", args: []string{"--pod-security=none"}, wantErr: `--pod-security: "none" is not a Pod Security Standards level`},
		{name: "config file", config: "pod-security: restricted\n", want: agentnode.PodSecurityRestricted},
		{name: "config file, alias", config: "allow-privileged: true\n", want: agentnode.PodSecurityPrivileged, wantNotice: true},
		{name: "command line wins", args: []string{"--pod-security=baseline"}, config: "pod-security: privileged\n", want: agentnode.PodSecurityBaseline},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			var f nodeFlags
			f.register(fs)
			require.NoError(t, fs.Parse(tc.args))
			if tc.config != "" {
				path := filepath.Join(t.TempDir(), "config.yaml")
				require.NoError(t, os.WriteFile(path, []byte(tc.config), 0o600))
				_, err := applyConfigFile(fs, path)
				require.NoError(t, err)
			}
			err := f.checkPodSecurity()
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, f.podSecurityLevel)
			assert.Equal(t, tc.want, f.agentConfig(agentnode.Info{}, "containerd").PodSecurity)
			if tc.wantNotice {
				assert.Contains(t, f.podSecurityNotice, "--allow-privileged is deprecated: use --pod-security=privileged")
			} else {
				assert.Empty(t, f.podSecurityNotice)
			}
		})
	}
}
