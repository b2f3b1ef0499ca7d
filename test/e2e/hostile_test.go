package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/test/hostile"
)

// hostileHealthyPod runs beside the hostile inputs and must not notice them.
const hostileHealthyPod = "e2e-hostile-healthy"

// Cases also dropped into the manifest directory and given to `minikubelet
// run`: the size, bomb and traversal ones.
var (
	hostileDirCases = []string{"huge-file", "huge-json-string", "billion-laughs", "multi-document-bomb", "empty-document-bomb",
		"deep-nesting", "thousand-containers", "name-traversal", "nul-byte", "memory-1e400", "duplicate-hostports", "huge-env-list"}
	hostileRunCases = []string{"huge-file", "billion-laughs", "thousand-containers", "subpath-traversal", "memory-99999999999999999999Ei"}
)

// TestHostile submits every case of the hostile corpus (test/hostile) to
// one daemon that runs one healthy pod: through the API (each refused with
// its exact status and message, /healthz 200 after each), through
// `minikubelet run` and through the manifest directory (an InvalidManifest
// pod with the exact message) for some. An oversized body is a 413. At the
// end the healthy pod still runs its first container, never restarted, and
// nothing of the hostile inputs exists.
func TestHostile(t *testing.T) {
	cases, err := hostile.Cases()
	require.NoError(t, err)
	byName := map[string]hostile.Case{}
	for _, c := range cases {
		byName[c.Name] = c
	}
	d := newDaemon(t, []string{hostileHealthyPod})
	d.start(t)
	hc := unixHTTPClient(d.sock)

	grace := int64(1)
	c, cancel := shortCtx()
	_, err = d.api().CreatePod(c, &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: hostileHealthyPod, Namespace: "default"},
		Spec: v1.PodSpec{
			TerminationGracePeriodSeconds: &grace,
			Containers: []v1.Container{{Name: "app", Image: suite.registry + "/minikubelet/busybox:1.36",
				Command: []string{"sleep", "3600"}}},
		},
	})
	cancel()
	require.NoError(t, err)
	healthy := d.waitPod(t, hostileHealthyPod, "Running", time.Minute, isRunning)
	require.Len(t, healthy.Status.ContainerStatuses, 1)
	firstID := healthy.Status.ContainerStatuses[0].ContainerID
	require.NotEmpty(t, firstID)

	healthz := func(t *testing.T, after string) {
		t.Helper()
		code, body, err := d.get("/healthz")
		require.NoError(t, err, "the daemon stopped answering after %s", after)
		require.Equal(t, http.StatusOK, code, "healthz after %s: %s", after, body)
	}

	t.Run("API", func(t *testing.T) {
		for _, tc := range cases {
			t.Run(tc.FileName, func(t *testing.T) {
				code, msg := postPod(t, hc, tc.Data, tc.ContentType)
				assert.Equal(t, tc.WantCode, code)
				assert.Equal(t, tc.WantAPI, msg)
				healthz(t, tc.FileName)
			})
		}
	})

	t.Run("OversizedBody", func(t *testing.T) {
		// A valid start, then 2 MiB of padding in a label value.
		body := []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"big","labels":{"a":"` + strings.Repeat("x", 2<<20) + `"}}}`)
		code, msg := postPod(t, hc, body, "application/json")
		assert.Equal(t, http.StatusRequestEntityTooLarge, code)
		assert.Equal(t, "Request entity too large: the request body is larger than 1048576 bytes", msg)
		healthz(t, "an oversized body")
	})

	t.Run("Run", func(t *testing.T) {
		dir := t.TempDir()
		for _, name := range hostileRunCases {
			tc, ok := byName[name]
			require.True(t, ok, "no case %s", name)
			path := filepath.Join(dir, tc.FileName)
			require.NoError(t, os.WriteFile(path, tc.Data, 0o644))
			res := d.cli(t, "run", path)
			assert.Equal(t, 2, res.code, "run %s: %s", name, res)
			want := "invalid manifest (nothing was created):\n" + withSourcePath(tc, path)
			assert.Contains(t, res.stderr, want, "run %s", name)
			healthz(t, "run "+name)
		}
	})

	t.Run("ManifestDir", func(t *testing.T) {
		want := map[string]string{} // pod name in the list → message
		for _, name := range hostileDirCases {
			tc, ok := byName[name]
			require.True(t, ok, "no case %s", name)
			path := filepath.Join(d.manifests, tc.FileName)
			require.NoError(t, os.WriteFile(path, tc.Data, 0o644))
			want["manifest:"+strings.ToLower(name)] = withSourcePath(tc, path)
		}
		t.Cleanup(func() {
			for _, name := range hostileDirCases {
				_ = os.Remove(filepath.Join(d.manifests, byName[name].FileName))
			}
		})
		got := map[string]string{}
		deadline := time.Now().Add(30 * time.Second)
		for len(got) < len(want) && time.Now().Before(deadline) {
			c, cancel := shortCtx()
			list, err := d.api().ListPods(c, "default")
			cancel()
			require.NoError(t, err)
			for _, p := range list.Items {
				if _, ok := want[p.Name]; ok && p.Status.Reason == "InvalidManifest" {
					got[p.Name] = p.Status.Message
				}
			}
			time.Sleep(200 * time.Millisecond)
		}
		for name, msg := range want {
			assert.Equal(t, msg, got[name], "pod %s in the list", name)
		}
		healthz(t, "the manifest directory")
	})

	// The healthy pod did not notice; nothing hostile was created.
	p := d.waitPod(t, hostileHealthyPod, "still Running", 10*time.Second, isRunning)
	require.Len(t, p.Status.ContainerStatuses, 1)
	cs := p.Status.ContainerStatuses[0]
	assert.Equal(t, firstID, cs.ContainerID, "the healthy pod's container was replaced")
	assert.Zero(t, cs.RestartCount, "the healthy pod's container restarted")
	assert.NotNil(t, cs.State.Running, "the healthy pod's container is not running: %+v", cs.State)
	c, cancel = shortCtx()
	list, err := d.api().ListPods(c, "")
	cancel()
	require.NoError(t, err)
	for _, other := range list.Items {
		if other.Name != hostileHealthyPod && other.Status.Reason != "InvalidManifest" {
			t.Errorf("pod %s/%s exists: a hostile input was accepted", other.Namespace, other.Name)
		}
	}
	healthz(t, "the whole corpus")
}

// withSourcePath is the case's file-source message for the file at path:
// each line starts with the path instead of the bare file name.
func withSourcePath(c hostile.Case, path string) string {
	lines := strings.Split(c.WantFile, "\n")
	for i, l := range lines {
		lines[i] = path + strings.TrimPrefix(l, c.FileName)
	}
	return strings.Join(lines, "\n")
}

// unixHTTPClient talks HTTP to the daemon's socket.
func unixHTTPClient(sock string) *http.Client {
	return &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var dl net.Dialer
			return dl.DialContext(ctx, "unix", sock)
		}},
	}
}

// postPod creates a pod from body and returns the status code and, for a
// refusal, the v1.Status message ("ACCEPTED" for a 2xx).
func postPod(t *testing.T, hc *http.Client, body []byte, contentType string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://minikubelet/api/v1/namespaces/default/pods", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", contentType)
	resp, err := hc.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if resp.StatusCode < 300 {
		return resp.StatusCode, "ACCEPTED"
	}
	var st metav1.Status
	require.NoError(t, json.Unmarshal(b, &st), "body: %.500s", b)
	return resp.StatusCode, st.Message
}
