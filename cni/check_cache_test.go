package cni

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikubelet/minikubelet/cni/cnitest"
)

// countingPlugins writes the fake plugins into dir, each appending its name
// to runs (a file) whenever it is run.
func countingPlugins(t *testing.T, dir, runs string) {
	t.Helper()
	cnitest.WritePlugins(t, dir, cnitest.SpecVersions)
	for _, n := range cnitest.Plugins {
		p := filepath.Join(dir, n)
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		s := strings.Replace(string(b), "#!/bin/sh\n", "#!/bin/sh\necho "+n+" >> "+runs+"\n", 1)
		require.NoError(t, os.WriteFile(p, []byte(s), 0o755))
	}
}

func runsOf(t *testing.T, runs string) []string {
	t.Helper()
	b, err := os.ReadFile(runs)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	return strings.Fields(string(b))
}

// A plugin that answered VERSION is not run again while its file is
// unchanged; one changed since, or a cache that went bad, is.
func TestValidate_CheckCache(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	runs := filepath.Join(dir, "runs")
	countingPlugins(t, bin, runs)
	cfg := Config{BinDirs: []string{bin}, CheckCache: filepath.Join(dir, "state", "cni-plugins-checked.json")}
	require.NoError(t, os.MkdirAll(filepath.Dir(cfg.CheckCache), 0o700))

	require.NoError(t, Validate(context.Background(), cfg))
	assert.ElementsMatch(t, cnitest.Plugins, runsOf(t, runs), "the first check runs every plugin")

	require.NoError(t, os.Remove(runs))
	require.NoError(t, Validate(context.Background(), cfg))
	assert.Empty(t, runsOf(t, runs), "unchanged plugins are not run again")

	// A plugin rewritten (a reinstall) is run again, and only that one.
	bridge := filepath.Join(bin, "bridge")
	b, err := os.ReadFile(bridge)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(bridge, append(b, '\n'), 0o755))
	require.NoError(t, Validate(context.Background(), cfg))
	assert.Equal(t, []string{"bridge"}, runsOf(t, runs))

	// A plugin replaced by a broken one fails the check, cache or not, and
	// its failure is not remembered.
	require.NoError(t, os.Remove(runs))
	require.NoError(t, os.Rename(bridge, bridge+".good"))
	require.NoError(t, os.WriteFile(bridge, []byte("#!/bin/sh\necho bridge >> "+runs+"\nexit 3\n"), 0o755))
	require.ErrorContains(t, Validate(context.Background(), cfg), `CNI plugin "bridge" at `+bridge+` did not answer VERSION`)
	require.ErrorContains(t, Validate(context.Background(), cfg), `did not answer VERSION`)
	assert.Equal(t, []string{"bridge", "bridge"}, runsOf(t, runs), "a failed plugin is run at every check")

	// A missing plugin is found missing whatever the cache says.
	require.NoError(t, os.Remove(bridge))
	require.ErrorContains(t, Validate(context.Background(), cfg), `CNI plugin "bridge" not found`)

	// The good one back (a new inode): run once, then remembered again.
	require.NoError(t, os.Rename(bridge+".good", bridge))
	require.NoError(t, os.Remove(runs))
	require.NoError(t, Validate(context.Background(), cfg))
	require.NoError(t, Validate(context.Background(), cfg))
	assert.Equal(t, []string{"bridge"}, runsOf(t, runs))

	// A cache that does not parse is no cache.
	require.NoError(t, os.WriteFile(cfg.CheckCache, []byte("{not json"), 0o600))
	require.NoError(t, os.Remove(runs))
	require.NoError(t, Validate(context.Background(), cfg))
	assert.ElementsMatch(t, cnitest.Plugins, runsOf(t, runs))
}

// The cache is kept per spec version: a plugin checked for one version is
// run again for another.
func TestValidate_CheckCacheKeyedByVersion(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	runs := filepath.Join(dir, "runs")
	countingPlugins(t, bin, runs)
	cache := filepath.Join(dir, "cache.json")
	key := checkCacheKey(filepath.Join(bin, "bridge"), "0.4.0")
	fi, err := os.Stat(filepath.Join(bin, "bridge"))
	require.NoError(t, err)
	writeCheckCache(cache, nil, map[string]string{key: fileStamp(fi)})
	assert.Equal(t, map[string]string{key: fileStamp(fi)}, readCheckCache(cache))

	require.NoError(t, Validate(context.Background(), Config{BinDirs: []string{bin}, CheckCache: cache}))
	assert.ElementsMatch(t, cnitest.Plugins, runsOf(t, runs), "bridge was checked for 0.4.0 only")
}
