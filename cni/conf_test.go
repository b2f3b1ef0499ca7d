package cni

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/containernetworking/cni/libcni"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikubelet/minikubelet/cni/cnitest"
)

// testConfig returns a config whose dirs are private to t, with fake plugins
// that pass Validate.
func testConfig(t *testing.T) Config {
	t.Helper()
	root := t.TempDir()
	c := Config{
		ConfDir: filepath.Join(root, "etc", "cni", "net.d"), // does not exist yet
		BinDirs: []string{filepath.Join(root, "bin")},
		DataDir: filepath.Join(root, "networks"),
	}.WithDefaults()
	cnitest.WritePlugins(t, c.BinDirs[0], cnitest.SpecVersions)
	return c
}

func TestWithDefaults(t *testing.T) {
	c := Config{}.WithDefaults()
	assert.Equal(t, Config{
		Name:    "minikubelet",
		PodCIDR: "10.88.0.0/16",
		Bridge:  "mkl0",
		ConfDir: "/etc/cni/net.d",
		BinDirs: []string{"/opt/cni/bin"},
	}, c)

	set := Config{Name: "n", PodCIDR: "10.1.0.0/24", Bridge: "b", ConfDir: "/c", BinDirs: []string{"/x"}}
	assert.Equal(t, set, set.WithDefaults())
}

func TestRender(t *testing.T) {
	c := Config{PodCIDR: "10.89.0.0/24", DataDir: "/tmp/ipam", Masquerade: true, MTU: 1400}
	b, err := Render(c)
	require.NoError(t, err)

	again, err := Render(c)
	require.NoError(t, err)
	assert.Equal(t, string(b), string(again), "Render must be deterministic")

	var got map[string]any
	require.NoError(t, json.Unmarshal(b, &got))
	want := map[string]any{
		"cniVersion": "1.0.0",
		"name":       "minikubelet",
		"plugins": []any{
			map[string]any{
				"type":        "bridge",
				"bridge":      "mkl0",
				"isGateway":   true,
				"ipMasq":      true,
				"hairpinMode": true,
				"mtu":         float64(1400),
				"ipam": map[string]any{
					"type":    "host-local",
					"ranges":  []any{[]any{map[string]any{"subnet": "10.89.0.0/24"}}},
					"routes":  []any{map[string]any{"dst": "0.0.0.0/0"}},
					"dataDir": "/tmp/ipam",
				},
			},
			map[string]any{
				"type":         "portmap",
				"capabilities": map[string]any{"portMappings": true},
				"snat":         true,
			},
		},
	}
	assert.Equal(t, want, got)

	// libcni, as containerd uses it, reads the same thing back.
	list, err := libcni.ConfListFromBytes(b)
	require.NoError(t, err)
	assert.Equal(t, "minikubelet", list.Name)
	assert.Equal(t, "1.0.0", list.CNIVersion)
	require.Len(t, list.Plugins, 2)
	assert.Equal(t, "bridge", list.Plugins[0].Network.Type)
	assert.Equal(t, "host-local", list.Plugins[0].Network.IPAM.Type)
	assert.Equal(t, "portmap", list.Plugins[1].Network.Type)
	assert.Equal(t, map[string]bool{"portMappings": true}, list.Plugins[1].Network.Capabilities)
}

func TestRender_OmitsUnsetOptions(t *testing.T) {
	b, err := Render(Config{})
	require.NoError(t, err)
	var got struct {
		Plugins []map[string]any `json:"plugins"`
	}
	require.NoError(t, json.Unmarshal(b, &got))
	bridge := got.Plugins[0]
	assert.Equal(t, false, bridge["ipMasq"])
	assert.NotContains(t, bridge, "mtu")
	assert.NotContains(t, bridge["ipam"], "dataDir")
	assert.Equal(t, []any{[]any{map[string]any{"subnet": "10.88.0.0/16"}}}, bridge["ipam"].(map[string]any)["ranges"])
}

func TestRender_Invalid(t *testing.T) {
	tests := []struct {
		name    string
		config  Config
		wantErr string
	}{
		{"not a CIDR", Config{PodCIDR: "10.88.0.0"}, `invalid --pod-cidr "10.88.0.0": not a CIDR such as 10.88.0.0/16`},
		{"garbage", Config{PodCIDR: "pods"}, `invalid --pod-cidr "pods": not a CIDR`},
		{"IPv6", Config{PodCIDR: "fd00:88::/64"}, `invalid --pod-cidr "fd00:88::/64": only IPv4 is supported`},
		{"prefix too long", Config{PodCIDR: "10.88.0.0/31"}, `invalid --pod-cidr "10.88.0.0/31": prefix /31 is too small for pods, use /30 or shorter`},
		{"host bits", Config{PodCIDR: "10.88.1.7/16"}, `invalid --pod-cidr "10.88.1.7/16": host bits set, did you mean 10.88.0.0/16?`},
		{"name with slash", Config{Name: "../x"}, `invalid network name "../x"`},
		{"bridge too long", Config{Bridge: "a-very-long-bridge"}, `invalid bridge name "a-very-long-bridge": at most 15 characters`},
		{"negative MTU", Config{MTU: -1}, `invalid MTU -1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Render(tt.config)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
	_, err := Render(Config{PodCIDR: "10.88.0.0/30"})
	assert.NoError(t, err, "/30 is the smallest allowed")
}

func TestConfPath(t *testing.T) {
	assert.Equal(t, "/etc/cni/net.d/10-minikubelet.conflist", ConfPath(Config{}))
	assert.Equal(t, "/c/10-other.conflist", ConfPath(Config{ConfDir: "/c", Name: "other"}))
}

func TestInstall_AtomicAndIdempotent(t *testing.T) {
	ctx := context.Background()
	c := testConfig(t)

	changed, notices, err := Install(ctx, c)
	require.NoError(t, err)
	assert.True(t, changed)
	assert.Empty(t, notices)

	want, err := Render(c)
	require.NoError(t, err)
	got, err := os.ReadFile(ConfPath(c))
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got))

	fi, err := os.Stat(ConfPath(c))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), fi.Mode().Perm())
	di, err := os.Stat(c.ConfDir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), di.Mode().Perm())
	assertOnlyFiles(t, c.ConfDir, "10-minikubelet.conflist")

	// Same content: nothing is rewritten, so containerd sees no event.
	before := fi.ModTime()
	changed, notices, err = Install(ctx, c)
	require.NoError(t, err)
	assert.False(t, changed)
	assert.Empty(t, notices)
	fi, err = os.Stat(ConfPath(c))
	require.NoError(t, err)
	assert.Equal(t, before, fi.ModTime())

	// A different config replaces the file in place.
	c.Masquerade = true
	changed, _, err = Install(ctx, c)
	require.NoError(t, err)
	assert.True(t, changed)
	got, err = os.ReadFile(ConfPath(c))
	require.NoError(t, err)
	assert.Contains(t, string(got), `"ipMasq": true`)
	assertOnlyFiles(t, c.ConfDir, "10-minikubelet.conflist")
}

func TestInstall_NoticeWhenAnotherConfigSortsFirst(t *testing.T) {
	c := testConfig(t)
	require.NoError(t, os.MkdirAll(c.ConfDir, 0o755))
	for _, name := range []string{"05-foo.conflist", "00-notes.txt", "99-late.conf", ".hidden.tmp"} {
		require.NoError(t, os.WriteFile(filepath.Join(c.ConfDir, name), []byte("{}"), 0o644))
	}
	require.NoError(t, os.Mkdir(filepath.Join(c.ConfDir, "01-dir.conf"), 0o755))

	changed, notices, err := Install(context.Background(), c)
	require.NoError(t, err)
	assert.True(t, changed)
	require.Len(t, notices, 1, "only CNI config files sorting before ours count: %q", notices)
	assert.Contains(t, notices[0], "another CNI config 05-foo.conflist in "+c.ConfDir+" sorts first; containerd will use it, not ours")

	// The notice repeats on an unchanged install: the problem is still there.
	changed, notices, err = Install(context.Background(), c)
	require.NoError(t, err)
	assert.False(t, changed)
	assert.Len(t, notices, 1)
}

func TestInstall_RefusesWithoutPlugins(t *testing.T) {
	c := testConfig(t)
	require.NoError(t, os.Remove(filepath.Join(c.BinDirs[0], "portmap")))

	_, _, err := Install(context.Background(), c)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `CNI plugin "portmap" not found`)
	assert.NoFileExists(t, ConfPath(c))
}

func TestInstall_InvalidConfig(t *testing.T) {
	c := testConfig(t)
	c.PodCIDR = "10.0.0.0/32"
	_, _, err := Install(context.Background(), c)
	require.ErrorContains(t, err, "--pod-cidr")
	assert.NoDirExists(t, c.ConfDir)
}

func TestUninstall(t *testing.T) {
	c := testConfig(t)
	_, _, err := Install(context.Background(), c)
	require.NoError(t, err)

	require.NoError(t, Uninstall(c))
	assert.NoFileExists(t, ConfPath(c))
	require.NoError(t, Uninstall(c), "uninstalling twice is fine")
}

// assertOnlyFiles checks that dir holds exactly names (no temp files left).
func assertOnlyFiles(t *testing.T, dir string, names ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	assert.Equal(t, names, got)
}

// Check runs the plugins but writes nothing, not even the conf dir (a
// foreground run checks before its manifest is validated); the Checked
// conflist installs what Install would; an unchecked one refuses.
func TestCheck_WritesNothingUntilInstall(t *testing.T) {
	c := testConfig(t)
	checked, err := Check(context.Background(), c)
	require.NoError(t, err)
	_, err = os.Stat(c.ConfDir)
	require.True(t, os.IsNotExist(err), "Check created %s", c.ConfDir)

	changed, _, err := checked.Install()
	require.NoError(t, err)
	assert.True(t, changed)
	want, err := Render(c.WithDefaults())
	require.NoError(t, err)
	got, err := os.ReadFile(ConfPath(c))
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got))

	_, _, err = Checked{}.Install()
	require.ErrorContains(t, err, "not checked")
}
