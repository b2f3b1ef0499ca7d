package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/agent/api"
	"github.com/minikubelet/minikubelet/agent/manifest"
)

const configManifest = `apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {mode: fast}
---
apiVersion: v1
kind: Secret
metadata: {name: creds}
stringData: {password: pw}
---
apiVersion: v1
kind: Pod
metadata: {name: app}
spec:
  containers: [{name: c, image: reg/c:1}]
`

// daemonObjectsOf decodes a manifest as run does.
func daemonObjectsOf(t *testing.T, data string) daemonObjects {
	t.Helper()
	pods, cms, secrets, err := manifest.DecodeObjects([]byte(data), "m.yaml")
	require.NoError(t, err)
	_, pcms, psecrets, err := manifest.PrepareObjects([]byte(data), "m.yaml", "")
	require.NoError(t, err)
	return daemonObjects{pods: pods, configMaps: cms, secrets: secrets, preparedCMs: pcms, preparedSecrets: psecrets}
}

// run submits a file's ConfigMaps and Secrets before its pods; one the
// daemon holds with the same content is "unchanged", with other content
// run stops; a failed submission takes back what it created.
func TestRunThroughDaemon_ConfigData(t *testing.T) {
	b, sock := startDaemon(t)
	c := api.NewClient(sock)
	ctx := context.Background()
	var out bytes.Buffer

	objs := daemonObjectsOf(t, configManifest)
	created, err := submitConfigData(ctx, c, objs, newPrinter(&out))
	require.NoError(t, err)
	assert.Equal(t, []configRef{{"ConfigMap", "default", "settings"}, {"Secret", "default", "creds"}}, created)
	assert.Contains(t, out.String(), "default/creds")
	assert.Contains(t, out.String(), "secret, type Opaque, 1 keys")

	// The same file again: nothing to create.
	created, err = submitConfigData(ctx, c, daemonObjectsOf(t, configManifest), newPrinter(&out))
	require.NoError(t, err)
	assert.Empty(t, created)
	assert.Contains(t, out.String(), "unchanged")

	// Other content: refused, naming the object.
	_, err = submitConfigData(ctx, c, daemonObjectsOf(t, `apiVersion: v1
kind: Secret
metadata: {name: creds}
stringData: {password: other}
`), newPrinter(io.Discard))
	assert.ErrorContains(t, err, "Secret default/creds already exists with other content")

	// A pod the daemon refuses: the ConfigMaps and Secrets this run
	// created are deleted again.
	require.NoError(t, c.DeleteConfigMap(ctx, "default", "settings"))
	require.NoError(t, c.DeleteSecret(ctx, "default", "creds"))
	bad := daemonObjectsOf(t, configManifest)
	bad.pods[0].Spec.Containers = nil
	err = runThroughDaemon(ctx, c, bad, runFlags{timeout: time.Second}, newPrinter(&out), io.Discard)
	require.ErrorContains(t, err, "submit pod default/app")
	assert.Empty(t, b.ListConfigMaps(""), "rolled back")
	assert.Empty(t, b.ListSecrets(""), "rolled back")
	assert.Contains(t, b.Calls(), "CreateConfigMap default/settings")
}

// delete -f deletes the pods, then the ConfigMaps and Secrets of the file.
func TestDeleteCommand_FileConfigData(t *testing.T) {
	b, sock := startDaemon(t)
	ctx := context.Background()
	b.SetPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default"}})
	_, err := b.CreateConfigMap(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "default"}})
	require.NoError(t, err)
	_, err = b.CreateSecret(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "default"}})
	require.NoError(t, err)
	manifest := filepath.Join(t.TempDir(), "app.yaml")
	require.NoError(t, os.WriteFile(manifest, []byte(configManifest), 0o644))

	out, _, err := cli(t, ctx, sock, "delete", "-f", manifest)
	require.NoError(t, err)
	assert.Equal(t, "pod \"app\" deleted\nconfigmap \"settings\" deleted\nsecret \"creds\" deleted\n", out)
	assert.Empty(t, b.ListConfigMaps(""))
	assert.Empty(t, b.ListSecrets(""))

	_, _, err = cli(t, ctx, sock, "delete", "-f", manifest)
	assert.ErrorContains(t, err, `configmaps "settings" not found`)
}

// TestReached: a container without a readiness probe counts as up only
// after stableAfter, measured from the later of its StartedAt and when run
// first saw it running.
func TestReached(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pod := func(startedAt time.Time) *v1.Pod {
		return &v1.Pod{
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}},
			Status: v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{{
				Name: "c", ContainerID: "containerd://abc",
				State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(startedAt)}},
			}}},
		}
	}
	for _, tc := range []struct {
		name      string
		startedAt time.Time
		firstSeen time.Duration // after t0; <0: not seen before
		now       time.Duration // after t0
		want      bool
	}{
		{name: "just started", startedAt: t0, firstSeen: -1, now: time.Second, want: false},
		{name: "started long ago, first seen now", startedAt: t0, firstSeen: -1, now: 10 * time.Second, want: false},
		{name: "started long ago, seen long enough", startedAt: t0, firstSeen: 6 * time.Second, now: 10 * time.Second, want: true},
		{name: "seen early, not yet stable", startedAt: t0, firstSeen: 0, now: 2 * time.Second, want: false},
		{name: "seen early, stable", startedAt: t0, firstSeen: 0, now: stableAfter, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seen := map[string]time.Time{}
			if tc.firstSeen >= 0 {
				seen["containerd://abc"] = t0.Add(tc.firstSeen)
			}
			require.Equal(t, tc.want, reached(pod(tc.startedAt), seen, t0.Add(tc.now)))
		})
	}
	// A pod not Running never counts, whatever the times.
	p := pod(t0)
	p.Status.Phase = v1.PodPending
	require.False(t, reached(p, map[string]time.Time{}, t0.Add(time.Hour)))
}
