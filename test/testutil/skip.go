// Package testutil holds what tests in several packages share (STYLE.md's
// test/testutil). Only tests import it.
package testutil

import (
	"fmt"
	"os"
	"strconv"
)

// TB is the part of testing.TB that SkipSuite uses (a fake records it in
// this package's tests).
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
}

// InCI reports whether the tests run in CI: CI set to a true value, as CI
// services and `CI=true make test` set it.
func InCI() bool {
	v, err := strconv.ParseBool(os.Getenv("CI"))
	return err == nil && v
}

// SkipSuite is for a test that cannot run because something it needs is
// missing, when the README says CI runs it (the documentation examples, a
// cgroup mode, a host facility): outside CI it skips with the reason, and
// under CI=true the same reason fails the test, so a missing checkout or
// host feature cannot quietly hide a whole suite (issue #17). The reason
// becomes the skip line that `make test` counts (hack/skipsummary).
func SkipSuite(t TB, format string, args ...any) {
	t.Helper()
	reason := fmt.Sprintf(format, args...)
	if InCI() {
		t.Fatalf("CI=true and this suite cannot run: %s (CI must run it: provide what it needs)", reason)
		return
	}
	t.Skipf("%s", reason)
}

// DocsExamplesDir is the Kubernetes documentation examples' directory:
// $MINIKUBELET_DOCS_EXAMPLES if set, else ../shared/k8s-docs-examples
// beside the repository root repo, where CI checks them out.
func DocsExamplesDir(repo string) string {
	if d := os.Getenv("MINIKUBELET_DOCS_EXAMPLES"); d != "" {
		return d
	}
	return repo + "/../shared/k8s-docs-examples"
}
