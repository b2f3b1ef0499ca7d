package manifest

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

// The supported-fields table lives in docs/pod-spec.md (it moved there from
// the README); the test keeps its old name so `-run Readme` still finds it.
const podSpecDoc = "../../docs/pod-spec.md"

var updateDocs = flag.Bool("update-docs", false, "rewrite the supported-fields table in "+podSpecDoc)

const (
	fieldsBegin = "<!-- BEGIN SUPPORTED FIELDS -->"
	fieldsEnd   = "<!-- END SUPPORTED FIELDS -->"
)

// supportedFieldsMarkdown renders SupportedFields as the docs' table.
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

// The docs' table is generated from the support table, so a field can never
// be documented differently from how it is handled. Regenerate with
// `go test ./agent/manifest -run TestReadmeSupportedFields -update-docs`.
func TestReadmeSupportedFields(t *testing.T) {
	b, err := os.ReadFile(podSpecDoc)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i, j := strings.Index(s, fieldsBegin), strings.Index(s, fieldsEnd)
	if i < 0 || j < i || strings.Count(s, fieldsBegin) != 1 || strings.Count(s, fieldsEnd) != 1 {
		t.Fatalf("%s needs one %s … %s pair of markers, in that order", podSpecDoc, fieldsBegin, fieldsEnd)
	}
	want := fieldsBegin + "\n" + supportedFieldsMarkdown() + fieldsEnd
	if got := s[i : j+len(fieldsEnd)]; got != want {
		if *updateDocs {
			if err := os.WriteFile(podSpecDoc, []byte(s[:i]+want+s[j+len(fieldsEnd):]), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Fatalf("%s's supported-fields table is stale; run: go test ./agent/manifest -run TestReadmeSupportedFields -update-docs", podSpecDoc)
	}
}
