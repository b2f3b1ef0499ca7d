package agent

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

var updateReadme = flag.Bool("update-readme", false, "rewrite the supported-fields table in ../README.md")

const (
	readmeBegin = "<!-- BEGIN SUPPORTED FIELDS -->"
	readmeEnd   = "<!-- END SUPPORTED FIELDS -->"
)

// supportedFieldsMarkdown renders SupportedFields as the README's table.
func supportedFieldsMarkdown() string {
	var b strings.Builder
	b.WriteString("| field | status | note |\n|---|---|---|\n")
	for _, f := range SupportedFields() {
		status := "refused"
		switch {
		case f.Supported && strings.Contains(f.Note, "no effect"):
			status = "accepted (no effect)"
		case f.Supported:
			status = "supported"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", f.Path, status, strings.ReplaceAll(f.Note, "|", "\\|"))
	}
	return b.String()
}

// The README's table is generated from the support table, so a field can
// never be documented differently from how it is handled. Regenerate with
// `go test ./agent -run TestReadmeSupportedFields -update-readme`.
func TestReadmeSupportedFields(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i, j := strings.Index(s, readmeBegin), strings.Index(s, readmeEnd)
	if i < 0 || j < i {
		t.Fatalf("README.md lacks the %s … %s markers", readmeBegin, readmeEnd)
	}
	want := readmeBegin + "\n" + supportedFieldsMarkdown() + readmeEnd
	if got := s[i : j+len(readmeEnd)]; got != want {
		if *updateReadme {
			if err := os.WriteFile("../README.md", []byte(s[:i]+want+s[j+len(readmeEnd):]), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Fatalf("README.md's supported-fields table is stale; run: go test ./agent -run TestReadmeSupportedFields -update-readme")
	}
}
