package agent

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/podspec"
)

func testAgent(t *testing.T, resolv string) *Agent {
	t.Helper()
	path := filepath.Join(t.TempDir(), "resolv.conf")
	require.NoError(t, os.WriteFile(path, []byte(resolv), 0o644))
	return New(Config{NodeName: "node-1", RootDir: t.TempDir(), PodLogDir: t.TempDir(), ResolvConf: path, Network: testNetwork(t), HostIPs: []string{"192.0.2.1"}}, Deps{})
}

func TestGenerateContainerConfig(t *testing.T) {
	a := testAgent(t, "")
	pod := testPod(t, `
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop, uid: 11111111-2222-3333-4444-555555555555}
spec:
  terminationGracePeriodSeconds: 7
  volumes:
  - {name: scratch, emptyDir: {}}
  - {name: host, hostPath: {path: /srv/data}}
  containers:
  - name: app
    image: reg/app:1
    command: [/app]
    args: [--port, "8080"]
    workingDir: /work
    ports: [{containerPort: 8080, name: http}]
    env:
    - {name: A, value: "1"}
    - {name: NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
    - {name: NS, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
    - {name: UID, valueFrom: {fieldRef: {fieldPath: metadata.uid}}}
    - {name: IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
    - {name: NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
    volumeMounts:
    - {name: scratch, mountPath: /scratch}
    - {name: host, mountPath: /data, readOnly: true}
    resources:
      requests: {cpu: 250m, memory: 64Mi}
      limits: {cpu: 500m, memory: 128Mi}
`)
	c := &pod.Spec.Containers[0]
	vols := map[string]string{"scratch": "/var/lib/mkl/pods/u/volumes/kubernetes.io~empty-dir/scratch", "host": "/srv/data"}
	cfg, err := a.generateContainerConfig(pod, c, podspec.ContainerTypeRegular, 2, "sha256:abc", "10.88.0.9", vols, nil)
	require.NoError(t, err)
	assert.Equal(t, &runtimeapi.ContainerMetadata{Name: "app", Attempt: 2}, cfg.Metadata)
	assert.Equal(t, "sha256:abc", cfg.Image.Image)
	assert.Equal(t, "reg/app:1", cfg.Image.UserSpecifiedImage)
	assert.Equal(t, []string{"/app"}, cfg.Command)
	assert.Equal(t, []string{"--port", "8080"}, cfg.Args)
	assert.Equal(t, "/work", cfg.WorkingDir)
	assert.Equal(t, "app/2.log", cfg.LogPath)
	env := map[string]string{}
	for _, kv := range cfg.Envs {
		env[kv.Key] = string(kv.Value)
	}
	assert.Equal(t, map[string]string{"A": "1", "NAME": "web", "NS": "shop", "UID": "11111111-2222-3333-4444-555555555555", "IP": "10.88.0.9", "NODE": "node-1"}, env)
	assert.Equal(t, []*runtimeapi.Mount{
		{ContainerPath: "/scratch", HostPath: vols["scratch"]},
		{ContainerPath: "/data", HostPath: "/srv/data", Readonly: true},
	}, cfg.Mounts)
	r := cfg.Linux.Resources
	assert.Equal(t, int64(256), r.CpuShares)
	assert.Equal(t, int64(100000), r.CpuPeriod)
	assert.Equal(t, int64(50000), r.CpuQuota)
	assert.Equal(t, int64(128<<20), r.MemoryLimitInBytes)
	assert.Equal(t, "2", cfg.Annotations[podspec.AnnotationRestartCount])
	assert.Equal(t, "7", cfg.Annotations[podspec.AnnotationPodTerminationGrace])
	assert.Equal(t, podspec.ContainerHash(c), cfg.Annotations[podspec.AnnotationContainerHash])
	assert.Equal(t, `[{"name":"http","containerPort":8080,"protocol":"TCP"}]`, cfg.Annotations[podspec.AnnotationContainerPorts])
	assert.Equal(t, map[string]string{
		podspec.LabelPodName: "web", podspec.LabelPodNamespace: "shop", podspec.LabelPodUID: "11111111-2222-3333-4444-555555555555",
		podspec.LabelContainerName: "app", podspec.LabelManagedBy: "minikubelet", podspec.LabelAgent: a.cfg.AgentID,
	}, cfg.Labels)
}
