package docs

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// maxEngineLines is issue #30's bound on the root package agent, the
// engine: non-blank lines (comments count) in its Go files outside tests.
// What decides without the engine's state belongs in a package below it
// (docs/architecture.md); this keeps the engine from growing back.
const maxEngineLines = 6000

func TestEnginePackageStaysWithinItsBound(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(repoRoot, "agent", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	type file struct {
		name  string
		lines int
	}
	var counted []file
	total := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		n := nonBlankLines(b)
		counted = append(counted, file{filepath.Base(f), n})
		total += n
	}
	if len(counted) < 10 {
		t.Fatalf("only %d Go files in agent/: is repoRoot right?", len(counted))
	}
	t.Logf("agent/: %d non-blank lines in %d files (bound %d)", total, len(counted), maxEngineLines)
	if total > maxEngineLines {
		sort.Slice(counted, func(i, j int) bool { return counted[i].lines > counted[j].lines })
		var top []string
		for _, f := range counted[:min(8, len(counted))] {
			top = append(top, f.name+" "+strconv.Itoa(f.lines))
		}
		t.Errorf("the engine package agent holds %d non-blank lines outside tests, over issue #30's bound of %d: "+
			"move what decides without the engine's state into a package below it (largest files: %s)",
			total, maxEngineLines, strings.Join(top, ", "))
	}
}

// nonBlankLines counts the lines of src holding anything but white space.
func nonBlankLines(src []byte) int {
	n := 0
	for _, l := range bytes.Split(src, []byte("\n")) {
		if len(bytes.TrimSpace(l)) > 0 {
			n++
		}
	}
	return n
}

func TestNonBlankLines(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want int
	}{
		{"", 0},
		{"\n\n \t\n", 0},
		{"package a\n", 1},
		{"package a\n\n// why\nfunc f() {}\n\t\n", 3},
		{"no trailing newline", 1},
	} {
		if got := nonBlankLines([]byte(tc.src)); got != tc.want {
			t.Errorf("nonBlankLines(%q) = %d, want %d", tc.src, got, tc.want)
		}
	}
}
