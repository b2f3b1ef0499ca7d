package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikubelet/minikubelet/test/testutil"
)

// normalizeImage expands an image reference the way containerd does:
// docker.io for a name without a registry, library/ for a single path
// element, tag latest when none is given.
func normalizeImage(ref string) (repo, tag string) {
	repo, tag = ref, "latest"
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		repo, tag = ref[:i], ref[i+1:]
	}
	first, _, _ := strings.Cut(repo, "/")
	if !strings.ContainsAny(first, ".:") || !strings.Contains(repo, "/") {
		if !strings.Contains(repo, "/") {
			repo = "library/" + repo
		}
		repo = "docker.io/" + repo
	}
	return repo, tag
}

// Every image named by the documentation examples has a stand-in with that
// tag, below a mirrored registry.
func TestStandins_CoverDocsExamples(t *testing.T) {
	dir := testutil.DocsExamplesDir(filepath.Join("..", ".."))
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if len(files) == 0 {
		testutil.SkipSuite(t, "no Kubernetes documentation examples at %s (CI checks shared/ out beside the repository, or set MINIKUBELET_DOCS_EXAMPLES)", dir)
	}
	have := map[string]bool{}
	for _, s := range standins {
		for _, tag := range s.tags {
			have[s.upstream+":"+tag] = true
		}
	}
	rx := regexp.MustCompile(`(?m)^\s*-?\s*"?image"?\s*:\s*"?([^",\s]+)"?`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range rx.FindAllStringSubmatch(string(b), -1) {
			repo, tag := normalizeImage(m[1])
			assert.True(t, have[repo+":"+tag], "%s: image %s (%s:%s) has no stand-in", filepath.Base(f), m[1], repo, tag)
		}
	}
}

func TestNormalizeImage(t *testing.T) {
	for in, want := range map[string]string{
		"nginx":                               "docker.io/library/nginx:latest",
		"busybox:1.28":                        "docker.io/library/busybox:1.28",
		"polinux/stress":                      "docker.io/polinux/stress:latest",
		"registry.k8s.io/busybox:1.27.2":      "registry.k8s.io/busybox:1.27.2",
		"gcr.io/google-samples/hello-app:2.0": "gcr.io/google-samples/hello-app:2.0",
	} {
		r, tag := normalizeImage(in)
		assert.Equal(t, want, r+":"+tag, in)
	}
}

// The mirror path of an upstream repository is the path below its host.
func TestStandinSpecs_MirrorPaths(t *testing.T) {
	specs, err := standinSpecs(layerSpec{what: "bb", entries: busyboxEntries([]byte("bb"), []string{"sh"})}, []byte("bin"))
	require.NoError(t, err)
	got := map[string]bool{}
	for _, s := range specs {
		got[s.repo+":"+s.tag] = true
		_, err := buildImage(s, "amd64")
		require.NoError(t, err, "%s:%s", s.repo, s.tag)
	}
	for _, want := range []string{"library/nginx:1.29", "e2e-test-images/agnhost:2.45", "google-samples/hello-app:2.0", "busybox:1.27.2", "vish/stress:latest"} {
		assert.True(t, got[want], want)
	}
}
