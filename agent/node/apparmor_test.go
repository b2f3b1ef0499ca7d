package node

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAppArmorEnabled(t *testing.T) {
	sys := func(t *testing.T, securityfs bool, enabled string) string {
		t.Helper()
		dir := t.TempDir()
		if securityfs {
			require.NoError(t, os.MkdirAll(filepath.Join(dir, "kernel", "security", "apparmor"), 0o755))
		}
		if enabled != "" {
			p := filepath.Join(dir, "module", "apparmor", "parameters")
			require.NoError(t, os.MkdirAll(p, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(p, "enabled"), []byte(enabled), 0o644))
		}
		return dir
	}
	assert.True(t, AppArmorEnabled(sys(t, true, "Y\n")))
	assert.False(t, AppArmorEnabled(sys(t, true, "N\n")), "module loaded, disabled")
	assert.False(t, AppArmorEnabled(sys(t, false, "Y\n")), "no securityfs directory")
	assert.False(t, AppArmorEnabled(sys(t, true, "")), "no module")
	assert.False(t, AppArmorEnabled(sys(t, true, "Y")), "the kubelet wants more than one byte")
}
