package manifest

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
)

// updateGolden rewrites the expected .err files of the invalid manifests:
// go test ./agent/manifest -run TestPrepareManifest_Invalid -update. Review the diff.
var updateGolden = flag.Bool("update", false, "rewrite testdata/manifests/invalid/*.err")

// testNode is the node name used by the manifest tests.
const testNode = "node1"

// manifestFiles returns the fixtures of one testdata/manifests directory.
func manifestFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	for _, ext := range []string{"*.yaml", "*.json"} {
		m, err := filepath.Glob(filepath.Join("testdata", "manifests", dir, ext))
		require.NoError(t, err)
		files = append(files, m...)
	}
	require.NotEmpty(t, files)
	return files
}

// TestPrepareManifest_Invalid checks that every invalid fixture is refused
// with exactly the text of its sibling .err file (source = base name).
func TestPrepareManifest_Invalid(t *testing.T) {
	files := manifestFiles(t, "invalid")
	require.GreaterOrEqual(t, len(files), 30, "the issue asks for at least 25 invalid manifests")
	for _, path := range files {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(path)
			require.NoError(t, err)

			pods, err := PrepareManifest(data, name, testNode)
			require.Error(t, err)
			assert.Nil(t, pods)
			assert.ErrorIs(t, err, ErrInvalidManifest)

			golden := strings.TrimSuffix(path, filepath.Ext(path)) + ".err"
			if *updateGolden {
				require.NoError(t, os.WriteFile(golden, []byte(err.Error()+"\n"), 0o644))
			}
			want, readErr := os.ReadFile(golden)
			require.NoError(t, readErr, "missing expected error file; run with -update and review it")
			assert.Equal(t, strings.TrimSuffix(string(want), "\n"), err.Error())
		})
	}
}

// TestPrepareManifest_Valid checks that every valid fixture decodes,
// defaults and validates without error.
func TestPrepareManifest_Valid(t *testing.T) {
	for _, path := range manifestFiles(t, "valid") {
		t.Run(filepath.Base(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			pods, err := PrepareManifest(data, path, testNode)
			require.NoError(t, err)
			require.NotEmpty(t, pods)
			for _, pod := range pods {
				assert.NotEmpty(t, pod.UID)
				assert.Equal(t, testNode, pod.Spec.NodeName)
			}
		})
	}
}

func TestDecodeManifest(t *testing.T) {
	tests := []struct {
		name      string
		data      string
		wantNames []string
		wantErr   string
	}{
		{
			name:      "single YAML pod",
			data:      "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: c, image: busybox}]}\n",
			wantNames: []string{"a"},
		},
		{
			name: "multi-document YAML with empty documents",
			data: "---\n# comment only\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: a}\n--- # next\n" +
				"apiVersion: v1\nkind: Pod\nmetadata: {name: b}\n---\n",
			wantNames: []string{"a", "b"},
		},
		{
			name:      "JSON object",
			data:      `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"j"}}`,
			wantNames: []string{"j"},
		},
		{
			name:      "JSON v1 List",
			data:      `{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"}},{"apiVersion":"v1","kind":"Pod","metadata":{"name":"y"}}]}`,
			wantNames: []string{"x", "y"},
		},
		{
			name:      "YAML flow mapping that is not JSON",
			data:      "{apiVersion: v1, kind: Pod, metadata: {name: f}}\n",
			wantNames: []string{"f"},
		},
		{
			name:      "byte order mark",
			data:      "\xef\xbb\xbfapiVersion: v1\nkind: Pod\nmetadata: {name: bom}\n",
			wantNames: []string{"bom"},
		},
		{
			name:    "empty input",
			data:    "",
			wantErr: "src: no Pod found: the manifest is empty",
		},
		{
			name:    "empty List",
			data:    "apiVersion: v1\nkind: List\nitems: []\n",
			wantErr: "src: no Pod found: the List has no items",
		},
		{
			name:    "unknown field in JSON names its path",
			data:    `{"apiVersion":"v1","kind":"Pod","spec":{"containers":[{"name":"c","imagePullPolicyy":"Always"}]}}`,
			wantErr: "src: spec.containers[0].imagePullPolicyy: unknown field",
		},
		{
			name:    "duplicate field in YAML names path and line",
			data:    "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  name: b\n",
			wantErr: "src: metadata.name: duplicate field (line 5)",
		},
		{
			name:    "second document is bad",
			data:    "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Pod\nmetadata: {nmae: b}\n",
			wantErr: "src: document 2: metadata.nmae: unknown field",
		},
		{
			name:    "syntax error line counts from the start of the file",
			data:    "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: [b\n",
			wantErr: "src: document 2: yaml: line 8: did not find expected ',' or ']'",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pods, err := DecodeManifest([]byte(tc.data), "src")
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Equal(t, tc.wantErr, err.Error())
				assert.True(t, errors.Is(err, ErrInvalidManifest))
				var me *ManifestError
				require.ErrorAs(t, err, &me)
				assert.Equal(t, "src", me.Source)
				return
			}
			require.NoError(t, err)
			var names []string
			for _, p := range pods {
				names = append(names, p.Name)
			}
			assert.Equal(t, tc.wantNames, names)
		})
	}
}

func TestDecodeManifest_NoSourcePrefix(t *testing.T) {
	_, err := DecodeManifest([]byte("apiVersion: v1\nkind: Pod\nmetdata: {}\n"), "")
	require.Error(t, err)
	assert.Equal(t, "metdata: unknown field", err.Error())
}

func TestLoadManifestFile(t *testing.T) {
	pods, err := LoadManifestFile(filepath.Join("testdata", "manifests", "valid", "multi-doc.yaml"))
	require.NoError(t, err)
	require.Len(t, pods, 2)
	assert.Equal(t, "one", pods[0].Name)
	assert.Equal(t, "two", pods[1].Name)

	path := filepath.Join("testdata", "manifests", "invalid", "unknown-field-nested.yaml")
	_, err = LoadManifestFile(path)
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), path+": spec.containers[0].imagePullPolicyy: unknown field"), err.Error())

	_, err = LoadManifestFile(filepath.Join(t.TempDir(), "missing.yaml"))
	require.Error(t, err)
	assert.ErrorIs(t, err, os.ErrNotExist)
	assert.NotErrorIs(t, err, ErrInvalidManifest)
}

// TestPrepareManifest_Defaults checks a fixture end to end: decoded,
// defaulted, validated.
func TestPrepareManifest_Defaults(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "manifests", "valid", "two-containers.yaml"))
	require.NoError(t, err)
	pods, err := PrepareManifest(data, "two-containers.yaml", testNode)
	require.NoError(t, err)
	require.Len(t, pods, 1)
	pod := pods[0]
	assert.Equal(t, "default", pod.Namespace)
	assert.Equal(t, v1.RestartPolicyAlways, pod.Spec.RestartPolicy)
	assert.Equal(t, v1.PullIfNotPresent, pod.Spec.Containers[0].ImagePullPolicy)
	assert.Equal(t, v1.PullAlways, pod.Spec.Containers[1].ImagePullPolicy)
	assert.Equal(t, v1.ProtocolTCP, pod.Spec.Containers[0].Ports[0].Protocol)
	assert.Equal(t, "100m", pod.Spec.Containers[1].Resources.Requests.Cpu().String())

	again, err := PrepareManifest(data, "two-containers.yaml", testNode)
	require.NoError(t, err)
	assert.Equal(t, pod.UID, again[0].UID, "same file, same node: same UID")
}
