package hostile_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/agent"
	"github.com/minikubelet/minikubelet/agent/api"
	"github.com/minikubelet/minikubelet/agent/daemon"
	"github.com/minikubelet/minikubelet/agent/manifest"
	"github.com/minikubelet/minikubelet/agent/source"
	"github.com/minikubelet/minikubelet/cni"
	"github.com/minikubelet/minikubelet/cri/critest"
	"github.com/minikubelet/minikubelet/test/hostile"
)

// update rewrites the expected messages: go test ./test/hostile -update.
// Review the diff: every message must name the field and say why.
var update = flag.Bool("update", false, "rewrite cases/*.err and cases/*.api")

// nodeName is the node of the unit test; no expected message names it.
const nodeName = "hostile-node"

// required are the cases the issue names, by category: each must exist.
var required = []string{
	"huge-file", "huge-json-string", "deep-nesting", "deep-nesting-arrays", "billion-laughs",
	"wrong-kind-deployment", "wrong-apiversion-v2", "name-traversal", "name-slash", "namespace-traversal",
	"container-name-traversal", "volume-name-traversal", "hostpath-traversal", "subpath-traversal",
	"cpu-negative", "memory-1e400", "memory-99999999999999999999Ei", "duplicate-hostports",
	"thousand-containers", "nul-byte", "invalid-utf8", "multi-document-bomb", "json-number-overflow",
	"duplicate-keys", "huge-label-value", "huge-env-list",
}

func TestCorpus_Complete(t *testing.T) {
	cases, err := hostile.Cases()
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(cases), 50, "the issue asks for at least 50 hostile manifests")
	names := map[string]bool{}
	for _, c := range cases {
		names[c.Name] = true
		names[c.FileName] = true
	}
	for _, r := range required {
		assert.True(t, names[r], "case %s is missing", r)
	}
	assert.Equal(t, hostile.MaxManifestBytes, manifest.MaxManifestBytes)
}

// TestCorpus_FileSources refuses every case as `minikubelet run` and the
// manifest directory do (ReadManifestFile, then PrepareObjects), with
// exactly the expected message.
func TestCorpus_FileSources(t *testing.T) {
	cases := loadCases(t)
	dir := t.TempDir()
	for _, c := range cases {
		t.Run(c.FileName, func(t *testing.T) {
			path := filepath.Join(dir, c.FileName)
			require.NoError(t, os.WriteFile(path, c.Data, 0o600))
			data, err := manifest.ReadManifestFile(path)
			if err == nil {
				var pods []*v1.Pod
				pods, _, _, err = manifest.PrepareObjects(data, path, nodeName)
				require.Error(t, err, "accepted: %d pods", len(pods))
			}
			require.ErrorIs(t, err, manifest.ErrInvalidManifest)
			got := strings.ReplaceAll(err.Error(), dir+"/", "")
			if *update {
				require.NoError(t, os.WriteFile(filepath.Join("cases", c.Name+".err"), []byte(got+"\n"), 0o644))
				return
			}
			assert.Equal(t, c.WantFile, got)
			for _, line := range strings.Split(got, "\n") {
				assert.True(t, strings.HasPrefix(line, c.FileName+": "), "every problem names the file: %q", line)
				assert.LessOrEqual(t, len(line), 2048, "a problem must not echo a huge input")
			}
		})
	}
}

// TestCorpus_API refuses every case through the API (the real server and
// daemon over a fake runtime): the expected status code and message, and
// no pod is created.
func TestCorpus_API(t *testing.T) {
	cases := loadCases(t)
	fake := critest.New()
	// Nothing of the machine's: private CNI dirs, a documentation address
	// (a unit test does not read the host's state, issue #17).
	network := cni.Config{ConfDir: t.TempDir(), BinDirs: []string{t.TempDir()}, DataDir: t.TempDir(), CacheDir: t.TempDir()}
	a := agent.New(agent.Config{NodeName: nodeName, RootDir: t.TempDir(), PodLogDir: t.TempDir(), ResolvConf: "/nonexistent", Network: network, HostIPs: []string{"192.0.2.1"}},
		agent.Deps{Runtime: fake.Runtime, Images: fake.Images})
	store, err := source.NewPodStore(t.TempDir(), nodeName)
	require.NoError(t, err)
	d := daemon.New(a, store, nil, daemon.Config{})
	srv := httptest.NewServer(api.NewServer(d, slog.New(slog.DiscardHandler), api.Options{}).Handler())
	t.Cleanup(srv.Close)

	for _, c := range cases {
		t.Run(c.FileName, func(t *testing.T) {
			code, msg := Post(t, srv.URL, c)
			if *update {
				require.NoError(t, os.WriteFile(filepath.Join("cases", c.Name+".api"), []byte(hostile.APIMessage(code, msg)), 0o644))
				return
			}
			assert.Equal(t, c.WantCode, code)
			assert.Equal(t, c.WantAPI, msg)
			assert.GreaterOrEqual(t, code, 400)
			assert.Less(t, code, 500, "a bad input is the client's error")
			assert.LessOrEqual(t, len(msg), 8192, "a refusal must not echo a huge input")
		})
	}
	var names []string
	for _, p := range d.ListPods("") {
		names = append(names, p.Namespace+"/"+p.Name)
	}
	assert.Empty(t, names, "no pod may be created")
	sandboxes, err := fake.Runtime.ListPodSandbox(context.Background(), nil)
	require.NoError(t, err)
	assert.Empty(t, len(sandboxes), "no sandbox may be created")
}

// loadCases loads the corpus (tolerating missing messages with -update).
func loadCases(t *testing.T) []hostile.Case {
	t.Helper()
	load := hostile.Cases
	if *update {
		load = hostile.CasesForUpdate
	}
	cases, err := load()
	require.NoError(t, err)
	return slices.Clip(cases)
}

// Post sends a case as the body of a pod creation and returns the status
// code and the v1.Status message.
func Post(t *testing.T, base string, c hostile.Case) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/api/v1/namespaces/default/pods", bytes.NewReader(c.Data))
	require.NoError(t, err)
	req.Header.Set("Content-Type", c.ContentType)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if resp.StatusCode < 300 {
		return resp.StatusCode, "ACCEPTED"
	}
	var st metav1.Status
	require.NoError(t, json.Unmarshal(body, &st), "body: %.500s", body)
	return resp.StatusCode, st.Message
}
