package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

func TestPodOf(t *testing.T) {
	want := map[string]bool{"mdensity-kubelet-0-1": true, "mdensity-kubelet-0-10": true}
	for _, tc := range []struct {
		cri, name string
		ok        bool
	}{
		{"mdensity-kubelet-0-1", "mdensity-kubelet-0-1", true},
		// The kubelet's static pod name: <name>-<node name>.
		{"mdensity-kubelet-0-1-" + kubeletNode, "mdensity-kubelet-0-1", true},
		{"mdensity-kubelet-0-10-" + kubeletNode, "mdensity-kubelet-0-10", true},
		{"mdensity-kubelet-0-2-" + kubeletNode, "", false},
		{"other", "", false},
	} {
		name, ok := podOf(tc.cri, want)
		require.Equal(t, tc.ok, ok, tc.cri)
		require.Equal(t, tc.name, name, tc.cri)
	}
}

func TestWriteManifest(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, writeManifest(dir, "msteady-x-0", kindSteady, "reg/img:v1", 1))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "only the renamed file, no dotfile left")
	require.Equal(t, "msteady-x-0.json", entries[0].Name())
	b, err := os.ReadFile(filepath.Join(dir, "msteady-x-0.json"))
	require.NoError(t, err)
	var p v1.Pod
	require.NoError(t, json.Unmarshal(b, &p))
	require.Equal(t, manifestNS, p.Namespace)
	require.Equal(t, "Pod", p.Kind)
	require.Equal(t, "reg/img:v1", p.Spec.Containers[0].Image)
	require.NotNil(t, p.Spec.Containers[0].LivenessProbe)
	require.NotNil(t, p.Spec.Containers[0].ReadinessProbe)
	require.Equal(t, int64(1), *p.Spec.TerminationGracePeriodSeconds)
}

func TestKubeletConfig(t *testing.T) {
	var cfg map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(kubeletConfig("unix:///c.sock", "/w/kubelet", 10250, 10248, 250)), &cfg))
	for k, v := range map[string]any{
		"kind":                        "KubeletConfiguration",
		"containerRuntimeEndpoint":    "unix:///c.sock",
		"staticPodPath":               "/w/kubelet/manifests",
		"cgroupDriver":                "cgroupfs",
		"cgroupRoot":                  kubeletCgroupRoot,
		"failSwapOn":                  false,
		"address":                     "127.0.0.1",
		"port":                        float64(10250),
		"readOnlyPort":                float64(0),
		"healthzPort":                 float64(10248),
		"maxPods":                     float64(250),
		"imageGCHighThresholdPercent": float64(100),
	} {
		require.Equal(t, v, cfg[k], k)
	}
	// The same eviction thresholds as the bench's minikubelet daemon.
	require.Equal(t, map[string]any{"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%", "nodefs.inodesFree": "1%"}, cfg["evictionHard"])
	require.Equal(t, map[string]any{"anonymous": map[string]any{"enabled": false}, "webhook": map[string]any{"enabled": false}}, cfg["authentication"])
	// Standalone: the periods stated in the report are the kubelet's
	// defaults, so the config must not set them.
	for _, k := range []string{"syncFrequency", "fileCheckFrequency", "housekeepingInterval"} {
		require.NotContains(t, cfg, k)
	}
}

func TestManifestRows(t *testing.T) {
	b := &bench{
		o:   options{scenarios: "manifest-start,manifest-density,manifest-delete,manifest-steady", agents: "minikubelet,kubelet", manifestPods: 10, rounds: 1, grace: 1, steadyDuration: time.Minute},
		rep: &Report{Settings: map[string]string{}},
	}
	raw := &agentRun{started: []time.Duration{100 * time.Millisecond}, total: []time.Duration{5 * time.Second}, down: []time.Duration{4 * time.Second},
		gone: []time.Duration{4 * time.Second}, steadyFloor: &usage{cpu: 1}}
	mkl := &agentRun{started: []time.Duration{110 * time.Millisecond}, total: []time.Duration{4 * time.Second}, down: []time.Duration{3 * time.Second},
		steadyRan: true, steadyTotal: 6 * time.Second, steady: &usage{rss: []float64{30}, anon: []float64{10}, file: []float64{20}, cpu: 2}}
	kub := &agentRun{started: []time.Duration{220 * time.Millisecond}, total: []time.Duration{8 * time.Second}, down: []time.Duration{2 * time.Second},
		gone: []time.Duration{10 * time.Second}, steadyRan: true, steadyTotal: 9 * time.Second, steady: &usage{rss: []float64{60}, anon: []float64{40}, file: []float64{20}, cpu: 4}}
	b.manifestRows(raw, mkl, kub)
	byMetric := map[string]Row{}
	for _, r := range b.rep.Rows {
		require.Equal(t, "5 manifest", r.Scenario)
		byMetric[r.Metric] = r
	}
	start := byMetric["manifest written → container running (raw: StartContainer returned)"]
	require.InDelta(t, 1.1, start.Ratio, 1e-9)
	require.InDelta(t, 0.5, start.KubeletRatio, 1e-9)
	require.Equal(t, "≤ kubelet", start.Target)
	require.True(t, *start.Met)

	tp := byMetric["throughput, 10 pods at once (median of 1 rounds)"]
	require.InDelta(t, 2.5, tp.Minikubelet.Median, 1e-9)
	require.InDelta(t, 1.25, tp.Kubelet.Median, 1e-9)
	require.Equal(t, "≥ kubelet", tp.Target)
	require.True(t, *tp.Met)

	down := byMetric["10 manifests removed, grace 1 s: stopped, not ready, IPs released (median of 1 rounds; raw: gone)"]
	require.InDelta(t, 1.5, down.KubeletRatio, 1e-9)
	require.False(t, *down.Met, "slower than the kubelet is not met")
	// minikubelet's pods were never gone within the wait: no figure, no ratio.
	gone := byMetric["… and the runtime lists none of their objects"]
	require.Nil(t, gone.Minikubelet)
	require.Zero(t, gone.KubeletRatio)

	cpu := byMetric["agent CPU, 10 pods × 2 probes (mean over 1m0s; raw: the probe floor)"]
	require.InDelta(t, 2, cpu.Ratio, 1e-9)
	require.InDelta(t, 0.5, cpu.KubeletRatio, 1e-9)
	require.InDelta(t, 0.25, byMetric["agent RssAnon, 10 pods × 2 probes"].KubeletRatio, 1e-9)
	// No idle window was measured: its rows say n/a, not 0.
	require.Nil(t, byMetric["agent RSS, 0 pods (1 s samples)"].Minikubelet)
	require.Equal(t, "10", b.rep.Settings["manifest pods"])
}
