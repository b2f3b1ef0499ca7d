package logrotate

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRestartCountFromLogs(t *testing.T) {
	dir := t.TempDir()
	if got := RestartCountFromLogs(filepath.Join(dir, "missing")); got != 0 {
		t.Errorf("missing dir: %d, want 0", got)
	}
	for _, f := range []string{"0.log", "3.log", "2.log.20260101-000000", "notes.txt", "x.log"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := RestartCountFromLogs(dir); got != 4 {
		t.Errorf("got %d, want 4 (1 + the highest N of N.log)", got)
	}
}
