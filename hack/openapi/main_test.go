package main

import (
	"os"
	"testing"
)

// TestGenerated re-runs the generator against the pinned release's
// document and compares with the embedded file; it is skipped when the
// k8s.io/kubernetes module is not in the module cache (hack/cluster/build.sh
// downloads it).
func TestGenerated(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	src, err := sourcePath(root)
	if err != nil {
		t.Skipf("the pinned Kubernetes module is not available: %v", err)
	}
	if _, err := os.Stat(src); err != nil {
		t.Skipf("the pinned Kubernetes module is not available: %v", err)
	}
	if err := run(src, true); err != nil {
		t.Fatal(err)
	}
}
