package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCI_MissingDocsExamplesFailTheRun removes the Kubernetes documentation
// examples as a CI checkout without shared/ would (MINIKUBELET_DOCS_EXAMPLES
// names a directory that does not exist) and runs, with CI=true, every test
// of make test that reads them, each through its real entry (its package's
// test binary, TestMain included): each must fail and name the directory
// (issue #17: a removed docs directory under CI=true fails the run). Without
// CI the unit tests skip instead, with the reason. The e2e suite fails in
// its TestMain (docsPreflight), before it needs root or builds and starts
// anything, so this runs in make test's unit step as any user.
func TestCI_MissingDocsExamplesFailTheRun(t *testing.T) {
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	missing := filepath.Join(t.TempDir(), "k8s-docs-examples")
	for _, tc := range []struct {
		name, pkg, run string
		env            []string
		ciOnly         bool // without CI the suite would run for real
	}{
		{name: "e2e", pkg: "./test/e2e", run: "^TestDocsExamples$", env: []string{"MINIKUBELET_E2E=1"}, ciOnly: true},
		{name: "agent", pkg: "./agent", run: "^TestQOSClass_DocsExamples$"},
		{name: "images", pkg: "./hack/images", run: "^TestStandins_CoverDocsExamples$"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			bin := filepath.Join(t.TempDir(), tc.name+".test")
			args := []string{"test", "-c", "-o", bin}
			if raceBuild {
				args = append(args, "-race")
			}
			build := exec.Command("go", append(args, tc.pkg)...)
			build.Dir = repo
			out, err := build.CombinedOutput()
			require.NoError(t, err, "go %s:\n%s", strings.Join(args, " "), out)

			run := func(ci string) (string, error) {
				cmd := exec.Command(bin, "-test.run", tc.run, "-test.count=1", "-test.v")
				cmd.Dir = filepath.Join(repo, tc.pkg)
				// Later entries win: these replace any of the caller's.
				cmd.Env = append(os.Environ(), append([]string{"CI=" + ci, "MINIKUBELET_DOCS_EXAMPLES=" + missing}, tc.env...)...)
				out, err := cmd.CombinedOutput()
				return string(out), err
			}
			out2, err := run("true")
			require.Error(t, err, "CI=true with the docs examples missing must fail %s:\n%s", tc.pkg, out2)
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, "%s", out2)
			assert.Contains(t, out2, "CI=true and")
			assert.Contains(t, out2, "no Kubernetes documentation examples at "+missing)
			if tc.ciOnly {
				assert.Contains(t, out2, "e2e setup: ", "the e2e suite fails in its TestMain")
				assert.NotContains(t, out2, "start containerd")
				return
			}
			assert.Contains(t, out2, "--- FAIL: "+strings.Trim(tc.run, "^$"))

			out3, err := run("")
			require.NoError(t, err, "without CI the suite skips:\n%s", out3)
			assert.Contains(t, out3, "--- SKIP: "+strings.Trim(tc.run, "^$"))
		})
	}
}
