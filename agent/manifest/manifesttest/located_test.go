package manifesttest

import (
	"testing"

	"github.com/minikubelet/minikubelet/agent/manifest"
)

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
			bad := Unlocated(&manifest.ManifestError{Problems: []string{tc.problem}})
			if tc.located && len(bad) > 0 {
				t.Fatalf("%q should count as located", tc.problem)
			}
			if !tc.located && len(bad) == 0 {
				t.Fatalf("%q should not count as located", tc.problem)
			}
		})
	}
}
