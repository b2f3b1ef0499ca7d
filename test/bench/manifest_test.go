package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

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
