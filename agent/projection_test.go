package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/agent/manifest"
	"github.com/minikubelet/minikubelet/agent/podspec"
	"github.com/minikubelet/minikubelet/agent/volume"
	"github.com/minikubelet/minikubelet/agent/volume/volumetest"
)

// projectionAgent is an agent with a fake mounter and config data.
func projectionAgent(t *testing.T) (*Agent, *volumetest.FakeMounter) {
	t.Helper()
	a := envTestAgent(t)
	m := volumetest.NewFakeMounter()
	a.mounter = m
	return a, m
}

func TestSetupVolumes_DataVolumes(t *testing.T) {
	a, mounter := projectionAgent(t)
	pod := testPod(t, `
apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: shop
  uid: 11111111-2222-3333-4444-555555555555
  labels: {app: web, tier: front}
  annotations: {note: hi}
spec:
  volumes:
  - name: cfg
    configMap: {name: settings, defaultMode: 0440}
  - name: some
    configMap:
      name: settings
      items: [{key: mode, path: conf/mode.txt, mode: 0600}, {key: nope, path: x}]
      optional: true
  - name: sec
    secret: {secretName: creds, items: [{key: password, path: pw}]}
  - name: none
    secret: {secretName: missing, optional: true}
  - name: info
    downwardAPI:
      items:
      - {path: labels, fieldRef: {fieldPath: metadata.labels}}
      - {path: annotations, fieldRef: {fieldPath: metadata.annotations}}
      - {path: name, fieldRef: {fieldPath: metadata.name}}
      - {path: ns, fieldRef: {fieldPath: metadata.namespace}}
      - {path: uid, fieldRef: {fieldPath: metadata.uid}}
      - {path: tier, fieldRef: {fieldPath: "metadata.labels['tier']"}}
      - {path: mem, resourceFieldRef: {containerName: app, resource: limits.memory, divisor: 1Mi}}
      - {path: cpu, resourceFieldRef: {containerName: app, resource: requests.cpu, divisor: 1m}}
  - name: all
    projected:
      defaultMode: 0400
      sources:
      - configMap: {name: settings, items: [{key: level, path: level}]}
      - secret: {name: creds, items: [{key: user, path: user}]}
      - downwardAPI: {items: [{path: podname, fieldRef: {fieldPath: metadata.name}}]}
  - name: mem
    emptyDir: {medium: Memory, sizeLimit: 16Mi}
  containers:
  - name: app
    image: img
    resources:
      requests: {cpu: 250m}
      limits: {memory: 64Mi}
    volumeMounts:
    - {name: cfg, mountPath: /cfg}
    - {name: sec, mountPath: /sec, readOnly: false}
    - {name: mem, mountPath: /mem}
`)
	paths, err := a.volumes().SetupVolumes(pod)
	require.NoError(t, err)
	base := filepath.Join(a.podDir(pod), "volumes")
	assert.Equal(t, filepath.Join(base, "kubernetes.io~configmap", "cfg"), paths["cfg"])
	assert.Equal(t, filepath.Join(base, "kubernetes.io~secret", "sec"), paths["sec"])
	assert.Equal(t, filepath.Join(base, "kubernetes.io~downward-api", "info"), paths["info"])
	assert.Equal(t, filepath.Join(base, "kubernetes.io~projected", "all"), paths["all"])

	cfg := volumetest.ReadVolume(t, paths["cfg"])
	assert.Equal(t, map[string]string{"mode": "fast", "level": "3", "bad=key": "x", "1st-ok": "y"}, cfg)
	fi, err := os.Stat(filepath.Join(paths["cfg"], "mode"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o440), fi.Mode().Perm())

	assert.Equal(t, map[string]string{"conf/mode.txt": "fast"}, volumetest.ReadVolume(t, paths["some"]))
	fi, err = os.Stat(filepath.Join(paths["some"], "conf", "mode.txt"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	assert.Equal(t, map[string]string{"pw": "s3cret"}, volumetest.ReadVolume(t, paths["sec"]))
	assert.Equal(t, map[string]string{}, volumetest.ReadVolume(t, paths["none"]))
	assert.Equal(t, map[string]string{
		"labels":      "app=\"web\"\ntier=\"front\"",
		"annotations": "note=\"hi\"",
		"name":        "web", "ns": "shop", "uid": "11111111-2222-3333-4444-555555555555",
		"tier": "front", "mem": "64", "cpu": "250",
	}, volumetest.ReadVolume(t, paths["info"]))
	assert.Equal(t, map[string]string{"level": "3", "user": "admin", "podname": "web"}, volumetest.ReadVolume(t, paths["all"]))
	fi, err = os.Stat(filepath.Join(paths["all"], "user"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o400), fi.Mode().Perm())

	// Secrets and memory emptyDirs are tmpfs; the memory one sized by
	// sizeLimit (smaller than the pod's 64Mi limit), secrets by the pod.
	assert.Equal(t, map[string]int64{
		paths["sec"]:  64 << 20,
		paths["none"]: 64 << 20,
		paths["all"]:  64 << 20,
		paths["mem"]:  16 << 20,
	}, mounter.Mounts)

	// Data volumes are mounted read-only whatever the mount says.
	cfgCRI, err := a.generateContainerConfig(pod, &pod.Spec.Containers[0], podspec.ContainerTypeRegular, 0, "img", "", paths, nil)
	require.NoError(t, err)
	ro := map[string]bool{}
	for _, m := range cfgCRI.Mounts {
		ro[m.ContainerPath] = m.Readonly
	}
	assert.Equal(t, map[string]bool{"/cfg": true, "/sec": true, "/mem": false}, ro)

	// Teardown unmounts before removing.
	require.NoError(t, a.cleanupPodDirs(pod))
	assert.Empty(t, mounter.Mounts)
	_, err = os.Stat(a.podDir(pod))
	assert.True(t, os.IsNotExist(err))
}

func TestSetupVolumes_MissingSources(t *testing.T) {
	a, _ := projectionAgent(t)
	for _, tc := range []struct {
		name, volume, want string
	}{
		{"configmap", `configMap: {name: nope}`, `MountVolume.SetUp failed for volume "v" : configmap "nope" not found`},
		{"secret", `secret: {secretName: nope}`, `MountVolume.SetUp failed for volume "v" : secret "nope" not found`},
		{"configmap key", `configMap: {name: settings, items: [{key: nope, path: p}]}`, `MountVolume.SetUp failed for volume "v" : configmap references non-existent config key: nope`},
		{"secret key", `secret: {secretName: creds, items: [{key: nope, path: p}]}`, `MountVolume.SetUp failed for volume "v" : references non-existent secret key: nope`},
		{"projected", "projected: {sources: [{configMap: {name: a}}, {secret: {name: b}}]}", `MountVolume.SetUp failed for volume "v" : [configmap "a" not found, secret "b" not found]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: shop}\nspec:\n  volumes:\n  - name: v\n    "+tc.volume+"\n  containers:\n  - {name: app, image: img}\n")
			_, err := a.volumes().SetupVolumes(pod)
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
		})
	}
}

func TestRefreshDataVolumes_FollowsLabelsAndData(t *testing.T) {
	a, _ := projectionAgent(t)
	pod := testPod(t, `
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop, labels: {app: web}}
spec:
  volumes:
  - name: info
    downwardAPI: {items: [{path: labels, fieldRef: {fieldPath: metadata.labels}}]}
  - name: cfg
    configMap: {name: settings, items: [{key: mode, path: mode}]}
  containers:
  - {name: app, image: img}
`)
	w := &podWorker{logger: a.logger}
	// Nothing set up yet: refresh does nothing.
	a.volumes().RefreshDataVolumes(w.logger, pod)
	_, err := os.Stat(a.podDir(pod))
	assert.True(t, os.IsNotExist(err))

	paths, err := a.volumes().SetupVolumes(pod)
	require.NoError(t, err)
	v1Version, _ := os.Readlink(filepath.Join(paths["info"], volume.DataDirName))

	// Same labels: untouched.
	a.volumes().RefreshDataVolumes(w.logger, pod)
	same, _ := os.Readlink(filepath.Join(paths["info"], volume.DataDirName))
	assert.Equal(t, v1Version, same)

	pod.Labels["version"] = "2"
	a.SetConfigData([]*v1.ConfigMap{{ObjectMeta: metaNS("shop", "settings"), Data: map[string]string{"mode": "slow"}}}, nil)
	a.volumes().RefreshDataVolumes(w.logger, pod)
	assert.Equal(t, map[string]string{"labels": "app=\"web\"\nversion=\"2\""}, volumetest.ReadVolume(t, paths["info"]))
	assert.Equal(t, map[string]string{"mode": "slow"}, volumetest.ReadVolume(t, paths["cfg"]))
}

func TestValidateDataVolumes(t *testing.T) {
	for _, tc := range []struct {
		name, volume string
		want         []string
	}{
		{"configmap without name and bad items", `configMap: {defaultMode: 01000, items: [{key: "a b", path: ../x, mode: -1}]}`, []string{
			`spec.volumes[0].configMap.name: Required value`,
			`spec.volumes[0].configMap.defaultMode: Invalid value: 512: must be a number between 0 and 0777 (octal), both inclusive`,
			`spec.volumes[0].configMap.items[0].key: Invalid value: "a b"`,
			`spec.volumes[0].configMap.items[0].path: Invalid value: "../x": must not contain '..'`,
			`spec.volumes[0].configMap.items[0].mode: Invalid value: -1`,
		}},
		{"downward status field", `downwardAPI: {items: [{path: ip, fieldRef: {fieldPath: status.podIP}}]}`, []string{
			`spec.volumes[0].downwardAPI.items[0].fieldRef.fieldPath: Unsupported value: "status.podIP"`,
		}},
		{"downward resource without container", `downwardAPI: {items: [{path: m, resourceFieldRef: {resource: limits.memory, divisor: 3}}]}`, []string{
			`spec.volumes[0].downwardAPI.items[0].resourceFieldRef.containerName: Required value`,
			`spec.volumes[0].downwardAPI.items[0].resourceFieldRef.divisor: Invalid value: "3": only divisor's values 1, 1k`,
		}},
		{"service account token", `projected: {sources: [{serviceAccountToken: {path: ../token, expirationSeconds: 599, user: 5}}, {downwardAPI: {items: [{path: token, fieldRef: {fieldPath: metadata.name}}]}}, {serviceAccountToken: {path: token}}]}`, []string{
			`spec.volumes[0].projected.sources[0].serviceAccountToken.path: Invalid value: "../token": must not contain '..'`,
			`spec.volumes[0].projected.sources[0].serviceAccountToken.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes`,
			`spec.volumes[0].projected.sources[2].serviceAccountToken.path: Invalid value: "token": conflicting duplicate paths`,
			`spec.volumes[0].projected.sources[0].serviceAccountToken.user: Forbidden: not supported by minikubelet yet: alpha in Kubernetes (AtomicWriteVolumeUserFields)`,
		}},
		{"service account token too long", `projected: {sources: [{serviceAccountToken: {path: token, expirationSeconds: 4294967297}}]}`, []string{
			`spec.volumes[0].projected.sources[0].serviceAccountToken.expirationSeconds: Invalid value: 4294967297: may not specify a duration larger than 2^32 seconds`,
		}},
		{"projected duplicate paths", `projected: {sources: [{configMap: {name: a, items: [{key: k, path: p}]}}, {secret: {name: b, items: [{key: k, path: p}]}}]}`, []string{
			`spec.volumes[0].projected.sources[1].secret.items[0].path: Invalid value: "p": conflicting duplicate paths`,
		}},
		{"item user", `secret: {secretName: s, items: [{key: k, path: p, user: 5}]}`, []string{
			`spec.volumes[0].secret.items[0].user: Forbidden: not supported by minikubelet yet: alpha in Kubernetes (AtomicWriteVolumeUserFields)`,
		}},
		{"hugepages emptyDir", `emptyDir: {medium: HugePages}`, []string{
			`spec.volumes[0].emptyDir.medium: Forbidden: not supported by minikubelet yet: medium "HugePages"`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := manifest.PrepareManifest([]byte("apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  volumes:\n  - name: v\n    "+tc.volume+"\n  containers:\n  - {name: app, image: img}\n"), "x.yaml", "node-1")
			require.Error(t, err)
			lines := strings.Split(err.Error(), "\n")
			require.Len(t, lines, len(tc.want), err.Error())
			for i, w := range tc.want {
				assert.Contains(t, lines[i], w)
			}
		})
	}
}

// TestAgent_MissingConfigMapWaits runs a pod whose ConfigMap is missing:
// the container waits with CreateContainerConfigError and a FailedMount
// event, and starts once the ConfigMap arrives.
func TestAgent_MissingConfigMapWaits(t *testing.T) {
	h := newHarness(t)
	h.agent.mounter = volumetest.NewFakeMounter()
	go func() { _ = h.agent.Run(t.Context()) }()
	pod := testPod(t, `
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  volumes:
  - {name: cfg, configMap: {name: settings}}
  containers:
  - name: app
    image: img
    volumeMounts: [{name: cfg, mountPath: /cfg}]
`)
	h.agent.SetPods([]*v1.Pod{pod})
	got := h.rec.waitStatus(t, "CreateContainerConfigError", func(p *v1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Waiting != nil &&
			p.Status.ContainerStatuses[0].State.Waiting.Reason == "CreateContainerConfigError"
	})
	assert.Equal(t, `MountVolume.SetUp failed for volume "cfg" : configmap "settings" not found`, got.Status.ContainerStatuses[0].State.Waiting.Message)
	assert.Contains(t, h.rec.reasons(), "FailedMount")

	h.agent.SetConfigData([]*v1.ConfigMap{{ObjectMeta: metaNS("default", "settings"), Data: map[string]string{"k": "v"}}}, nil)
	h.stepUntil(t, "running", time.Minute, func(p *v1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil
	})
}
