package manifesttest

import (
	"errors"
	"regexp"
	"strings"

	"github.com/minikubelet/minikubelet/agent/manifest"
)

// A problem of a refused manifest is "located" when it says where in the
// input the problem is. FuzzPrepareObjects requires every problem to be one
// of these, after an optional "document N: " prefix:
//
//   - a field error: a field path (as field.Path prints it, List items
//     included) followed by ": " and one of the field.ErrorType texts or
//     the strict decoder's "unknown field" / "duplicate field";
//   - a YAML syntax error with its line: "yaml: line N: …", or, when the
//     parser does not say where, "yaml: in the document starting at line
//     N: …";
//   - a problem of the whole input or document, which has no better place:
//     the exact phrases in wholeDocumentRE.
var (
	docPrefixRE = regexp.MustCompile(`^document [1-9][0-9]*: `)
	// fieldPathRE is a field path: field.Path's rendering (steps .name,
	// [index], [key]) or the strict decoder's, where a map key or an
	// unknown field's name may hold any character but a newline, quoted
	// (displayPath) when it holds spaces, colons or quotes. It must be
	// followed by ": " and an error type.
	fieldPathRE    = `("(\\.|[^"\\])*"|[^\s:"][^\n]*?)`
	FieldProblemRE = regexp.MustCompile(`^` + fieldPathRE + `: (` + strings.Join([]string{
		"Required value", "Invalid value: ", "Unsupported value: ", "Duplicate value: ",
		"Not found: ", "Forbidden: ", "Too long: ", "Too many: ", "Internal error: ",
		"unknown field", "duplicate field", "Invalid type: ",
	}, "|") + `)`)
	yamlLinePrefixRE = regexp.MustCompile(`^yaml: (in the document starting at )?line [1-9][0-9]*: `)
	// APILocatedRE is what else the API's decoding may say: a syntax
	// error's offset, or that the body is no object.
	APILocatedRE    = regexp.MustCompile(`( \(at byte [0-9]+\)$|^Invalid type: got [a-z]+( \S+)?, expected object$)`)
	wholeDocumentRE = regexp.MustCompile(`^(no Pod found: |expected an object \(a Pod\), got |items\[[0-9]+\]: expected an object \(a Pod\), got |the input has [0-9]+ (bytes|YAML documents), more than )`)
)

// Unlocated returns the problems of err that are not located (see above).
func Unlocated(err error) []string {
	var me *manifest.ManifestError
	if !errors.As(err, &me) {
		return []string{"not a *manifest.ManifestError: " + err.Error()}
	}
	if len(me.Problems) == 0 {
		return []string{"a *manifest.ManifestError without problems"}
	}
	var bad []string
	for _, p := range me.Problems {
		q := docPrefixRE.ReplaceAllString(p, "")
		if !FieldProblemRE.MatchString(q) && !yamlLinePrefixRE.MatchString(q) && !wholeDocumentRE.MatchString(q) {
			bad = append(bad, p)
		}
	}
	return bad
}

// TestNode is the node name the manifest and source tests use.
const TestNode = "node1"
