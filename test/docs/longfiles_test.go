package docs

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxLines is the house bound on a Go file's length (issue #30): a longer
// file says why at its top, in a comment starting "// Over 600 lines:"
// within its first 30 lines.
const maxLines = 600

func TestLongGoFilesSayWhy(t *testing.T) {
	long := 0
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "bin", "testdata", "node_modules":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Count(b, []byte("\n")) <= maxLines {
			return nil
		}
		long++
		if why := longFileReason(b); why == "" {
			rel, _ := filepath.Rel(repoRoot, path)
			t.Errorf("%s: %d lines and no \"// Over 600 lines: <why>\" comment in its first 30 lines", rel, bytes.Count(b, []byte("\n")))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if long == 0 {
		t.Fatal("no Go file over 600 lines found: is repoRoot right?")
	}
}

// longFileReason is the text after "// Over 600 lines:" in the first 30
// lines of src, "" without one.
func longFileReason(src []byte) string {
	lines := strings.SplitN(string(src), "\n", 31)
	for _, l := range lines[:min(len(lines), 30)] {
		if why, ok := strings.CutPrefix(l, "// Over 600 lines:"); ok {
			return strings.TrimSpace(why)
		}
	}
	return ""
}

func TestLongFileReason(t *testing.T) {
	if got := longFileReason([]byte("package x\n\n// Over 600 lines: one unit.\n")); got != "one unit." {
		t.Errorf("got %q", got)
	}
	if got := longFileReason([]byte("package x\n// over 600 lines\n")); got != "" {
		t.Errorf("a comment without the marker counted: %q", got)
	}
	if got := longFileReason([]byte(strings.Repeat("\n", 40) + "// Over 600 lines: late\n")); got != "" {
		t.Errorf("a marker after line 30 counted: %q", got)
	}
}
