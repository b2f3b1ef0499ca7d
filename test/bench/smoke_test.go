//go:build benchsmoke

package main

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBenchSmoke is `make test-bench-smoke` (root; built only with the
// benchsmoke tag, so plain unit runs neither see nor skip it): the bench as
// `make bench` runs it (hack/bench.sh: its own containerd, the kubelet
// column), on one repetition of the three single-pod scenarios, the daemon
// route, `minikubelet run` from launch and the manifest route. It checks
// that each scenario ran end to end and that every column it has gave a
// figure. It judges no figure's size: speed is measured by `make bench` on
// a quiet machine, never by a test.
func TestBenchSmoke(t *testing.T) {
	require.Equal(t, 0, os.Geteuid(), "make test-bench-smoke runs as root (hack/bench.sh starts a containerd)")
	// The bench's kubelet must leave the host's fixed kubelet paths as
	// they were (a node agent running here may own them; kubelet.go's
	// kubeletFixedDir).
	devicePlugins := filepath.Join(kubeletFixedDir, "device-plugins")
	before, beforeFixed := dirState(t, devicePlugins), entryState(kubeletFixedDir)
	dir := t.TempDir()
	jsonOut := filepath.Join(dir, "smoke.json")
	cmd := exec.Command("../../hack/bench.sh", "--scenarios", "start,run-launch,manifest-start", "--reps", "1",
		"--json", jsonOut, "--md", filepath.Join(dir, "smoke.md"))
	cmd.Env = append(os.Environ(), "BENCH_FLAGS=") // the smoke's flags only, never --update-docs
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("hack/bench.sh: %v\n%s", err, lastLines(string(out), 60))
	}
	t.Logf("hack/bench.sh (tail):\n%s", lastLines(string(out), 15))
	require.Equal(t, before, dirState(t, devicePlugins), "the bench's kubelet changed %s on the host", devicePlugins)
	require.Equal(t, beforeFixed, entryState(kubeletFixedDir), "the bench left %s made or removed", kubeletFixedDir)

	b, err := os.ReadFile(jsonOut)
	require.NoError(t, err)
	var rep Report
	require.NoError(t, json.Unmarshal(b, &rep))
	figure := func(s *Stat) bool { return s != nil && s.N > 0 && s.Median > 0 }
	for _, want := range []struct {
		scenario, metric string
		kubelet          bool
	}{
		{"1 start", "submit → container started", false},
		{"6 run launch", "`minikubelet run pod.yaml` launch → container running", false},
		{"5 manifest", "manifest written → container running", true},
	} {
		var row *Row
		for i := range rep.Rows {
			if rep.Rows[i].Scenario == want.scenario && strings.HasPrefix(rep.Rows[i].Metric, want.metric) {
				row = &rep.Rows[i]
				break
			}
		}
		require.NotNil(t, row, "no %q row %q in %s", want.scenario, want.metric, jsonOut)
		require.True(t, figure(row.Raw), "%s %q: no raw figure: %+v", want.scenario, row.Metric, row.Raw)
		require.True(t, figure(row.Minikubelet), "%s %q: no minikubelet figure: %+v", want.scenario, row.Metric, row.Minikubelet)
		require.Greater(t, row.Ratio, 0.0, "%s %q: no ratio", want.scenario, row.Metric)
		if want.kubelet {
			require.True(t, figure(row.Kubelet), "%s %q: no kubelet figure: %+v", want.scenario, row.Metric, row.Kubelet)
			require.Greater(t, row.KubeletRatio, 0.0, "%s %q: no ratio to the kubelet", want.scenario, row.Metric)
		}
	}
	require.NotEmpty(t, rep.Machine.Commit, "the run names the commit it measured")
}

// dirState lists what is under dir, dir included (entryState of each;
// "absent" when dir does not exist).
func dirState(t *testing.T, dir string) []string {
	if _, err := os.Lstat(dir); os.IsNotExist(err) {
		return []string{"absent"}
	}
	var out []string
	require.NoError(t, filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		out = append(out, entryState(path))
		return nil
	}))
	return out
}

// entryState is path's mode and inode ("absent" when it does not exist):
// a file removed and made again shows as changed.
func entryState(path string) string {
	fi, err := os.Lstat(path)
	if err != nil {
		return "absent"
	}
	return fmt.Sprintf("%s %s %d", path, fi.Mode(), fi.Sys().(*syscall.Stat_t).Ino)
}
