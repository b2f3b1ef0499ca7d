package testutil

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

// recordTB records what SkipSuite asked of its test.
type recordTB struct {
	fatal, skip string
}

func (r *recordTB) Helper()                      {}
func (r *recordTB) Fatalf(f string, args ...any) { r.fatal = fmt.Sprintf(f, args...) }
func (r *recordTB) Skipf(f string, args ...any)  { r.skip = fmt.Sprintf(f, args...) }

var _ TB = (*recordTB)(nil)

func TestSkipSuite(t *testing.T) {
	for _, tc := range []struct {
		name, ci    string
		fatal, skip bool
	}{
		{name: "not in CI", ci: "", skip: true},
		{name: "CI=false", ci: "false", skip: true},
		{name: "CI=true", ci: "true", fatal: true},
		{name: "CI=1", ci: "1", fatal: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("CI", tc.ci)
			r := &recordTB{}
			SkipSuite(r, "no examples at %s", "/nowhere")
			if tc.fatal {
				assert.Contains(t, r.fatal, "no examples at /nowhere")
				assert.Empty(t, r.skip)
			} else {
				assert.Equal(t, "no examples at /nowhere", r.skip)
				assert.Empty(t, r.fatal)
			}
		})
	}
}

func TestDocsExamplesDir(t *testing.T) {
	t.Setenv("MINIKUBELET_DOCS_EXAMPLES", "")
	assert.Equal(t, "/r/../shared/k8s-docs-examples", DocsExamplesDir("/r"))
	t.Setenv("MINIKUBELET_DOCS_EXAMPLES", "/elsewhere")
	assert.Equal(t, "/elsewhere", DocsExamplesDir("/r"))
}
