package agent

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	v1 "k8s.io/api/core/v1"
	strictjson "sigs.k8s.io/json"

	"github.com/minikubelet/minikubelet/agent/decodeerr"
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
	fieldProblemRE = regexp.MustCompile(`^` + fieldPathRE + `: (` + strings.Join([]string{
		"Required value", "Invalid value: ", "Unsupported value: ", "Duplicate value: ",
		"Not found: ", "Forbidden: ", "Too long: ", "Too many: ", "Internal error: ",
		"unknown field", "duplicate field", "Invalid type: ",
	}, "|") + `)`)
	yamlLinePrefixRE = regexp.MustCompile(`^yaml: (in the document starting at )?line [1-9][0-9]*: `)
	// apiLocatedRE is what else the API's decoding may say: a syntax
	// error's offset, or that the body is no object.
	apiLocatedRE    = regexp.MustCompile(`( \(at byte [0-9]+\)$|^Invalid type: got [a-z]+( \S+)?, expected object$)`)
	wholeDocumentRE = regexp.MustCompile(`^(no Pod found: |expected an object \(a Pod\), got |items\[[0-9]+\]: expected an object \(a Pod\), got |the input has [0-9]+ (bytes|YAML documents), more than )`)
)

// unlocated returns the problems of err that are not located (see above).
func unlocated(err error) []string {
	var me *ManifestError
	if !errors.As(err, &me) {
		return []string{"not a *ManifestError: " + err.Error()}
	}
	if len(me.Problems) == 0 {
		return []string{"a *ManifestError without problems"}
	}
	var bad []string
	for _, p := range me.Problems {
		q := docPrefixRE.ReplaceAllString(p, "")
		if !fieldProblemRE.MatchString(q) && !yamlLinePrefixRE.MatchString(q) && !wholeDocumentRE.MatchString(q) {
			bad = append(bad, p)
		}
	}
	return bad
}

// TestUnlocated keeps the fuzz target's check honest: it must refuse
// problems that say nothing of where they are.
func TestUnlocated(t *testing.T) {
	for _, tc := range []struct {
		problem string
		located bool
	}{
		{`spec.containers[0].image: Required value`, true},
		{`document 2: metadata.labels[a/b]: Invalid value: "x": bad`, true},
		{`items[3].spec.volumes[0].name: Duplicate value: "v"`, true},
		{`spec.foo: unknown field`, true},
		{`0: duplicate field (line 2)`, true},
		{`"a: b": unknown field`, true},
		{`:: unknown field`, false},
		{`spec.containers[0].image: must be set`, false},
		{`yaml: line 4: did not find expected key`, true},
		{`no Pod found: the manifest is empty`, true},
		{`quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`, false},
		{`yaml: control characters are not allowed`, false},
		{`invalid character 'x' looking for beginning of value`, false},
		{`document 1: unexpected end of JSON input`, false},
	} {
		t.Run(tc.problem, func(t *testing.T) {
			bad := unlocated(&ManifestError{Problems: []string{tc.problem}})
			if tc.located && len(bad) > 0 {
				t.Fatalf("%q should count as located", tc.problem)
			}
			if !tc.located && len(bad) == 0 {
				t.Fatalf("%q should not count as located", tc.problem)
			}
		})
	}
}

// FuzzPrepareObjects feeds arbitrary bytes through the chain every source
// uses (decode, defaults, validation: PrepareObjects for the manifest
// directory and `minikubelet run`; DecodeManifest then SetPodDefaults and
// ValidatePod for the API's store) and checks that it never panics, that
// a refusal is a *ManifestError whose every problem is located (see
// unlocated), and that an accepted pod is accepted again after a round
// trip through its own defaulted form. The seed corpus is every fixture of
// testdata/manifests plus testdata/fuzz/FuzzPrepareObjects.
func FuzzPrepareObjects(f *testing.F) {
	for _, dir := range []string{"valid", "invalid"} {
		for _, ext := range []string{"*.yaml", "*.json"} {
			files, err := filepath.Glob(filepath.Join("testdata", "manifests", dir, ext))
			if err != nil {
				f.Fatal(err)
			}
			for _, file := range files {
				data, err := os.ReadFile(file)
				if err != nil {
					f.Fatal(err)
				}
				f.Add(data)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		pods, cms, secrets, err := PrepareObjects(data, "fuzz.yaml", testNode)
		if err != nil {
			if pods != nil || cms != nil || secrets != nil {
				t.Fatalf("objects returned with an error: %v", err)
			}
			if !errors.Is(err, ErrInvalidManifest) {
				t.Fatalf("refusal is not ErrInvalidManifest: %v", err)
			}
			if bad := unlocated(err); len(bad) > 0 {
				t.Fatalf("problems that name no field path, line or document:\n%s", strings.Join(bad, "\n"))
			}
			for _, p := range err.(*ManifestError).Problems {
				if !utf8.ValidString(p) {
					t.Fatalf("problem is not valid UTF-8: %q", p)
				}
			}
		} else if len(pods)+len(cms)+len(secrets) == 0 {
			t.Fatal("no objects and no error")
		}
		// What was accepted stays accepted in its stored (defaulted) form.
		for _, p := range pods {
			stored, err := encodeStoredPod(p)
			if err != nil {
				t.Fatalf("encode accepted pod: %v", err)
			}
			if _, err := PrepareManifest(stored, "fuzz.yaml", testNode); err != nil {
				t.Fatalf("accepted pod refused after a round trip: %v\n%s", err, stored)
			}
		}

		// The API's decoding of a JSON body (api.Server.createPod): its
		// refusal names a field, a byte offset, or that it is no object.
		var apiPod v1.Pod
		if _, err := strictjson.UnmarshalStrict(data, &apiPod); err != nil {
			msg := decodeerr.Problem(data, reflect.TypeFor[v1.Pod](), nil, err)
			if !fieldProblemRE.MatchString(msg) && !apiLocatedRE.MatchString(msg) {
				t.Fatalf("API decode error names no field or offset: %s", msg)
			}
		}

		// The API's store: decode, then default and validate each pod.
		raw, err := DecodeManifest(data, "api")
		if err != nil {
			if bad := unlocated(err); len(bad) > 0 {
				t.Fatalf("DecodeManifest: problems that name no field path, line or document:\n%s", strings.Join(bad, "\n"))
			}
			return
		}
		for _, p := range raw {
			SetPodDefaults(p, "api", testNode)
			_ = ValidatePod(p)
		}
	})
}
