package manifest

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestValidateNodeAffinity(t *testing.T) {
	path := field.NewPath("spec", "affinity")
	req := func(terms ...v1.NodeSelectorTerm) *v1.Affinity {
		return &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: terms},
		}}
	}
	expr := func(key string, op v1.NodeSelectorOperator, values ...string) v1.NodeSelectorTerm {
		return v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}}}
	}
	tests := []struct {
		name string
		aff  *v1.Affinity
		want []string // substrings of the errors, in order
	}{
		{"nil", nil, nil},
		{"good", req(expr("disk", v1.NodeSelectorOpIn, "ssd"), expr("gen", v1.NodeSelectorOpGt, "3"), expr("gpu", v1.NodeSelectorOpDoesNotExist)), nil},
		{"preferred only", &v1.Affinity{NodeAffinity: &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{{Weight: 1}}}}, nil},
		{"no terms", req(), []string{"nodeSelectorTerms: Required"}},
		{"In without values", req(expr("disk", v1.NodeSelectorOpIn)), []string{"matchExpressions[0].values: Required"}},
		{"Exists with values", req(expr("disk", v1.NodeSelectorOpExists, "x")), []string{"matchExpressions[0].values: Forbidden"}},
		{"Gt not an integer", req(expr("gen", v1.NodeSelectorOpGt, "five")), []string{"values[0]: Invalid value"}},
		{"bad operator", req(expr("disk", "Near", "x")), []string{"operator: Unsupported value"}},
		{"bad key", req(expr("-disk", v1.NodeSelectorOpExists)), []string{"key: Invalid value"}},
		{"matchFields other key", req(v1.NodeSelectorTerm{MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.uid", Operator: v1.NodeSelectorOpIn, Values: []string{"x"}}}}), []string{"matchFields[0].key: Unsupported value"}},
		{"pod affinity", &v1.Affinity{PodAffinity: &v1.PodAffinity{}}, []string{"spec.affinity.podAffinity: Forbidden"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			errs := validateNodeAffinity(tc.aff, path)
			require.Len(t, errs, len(tc.want), "%v", errs)
			for i, w := range tc.want {
				assert.True(t, strings.Contains(errs[i].Error(), w), "%q does not contain %q", errs[i].Error(), w)
			}
		})
	}
}

func TestValidateNodeSelector(t *testing.T) {
	path := field.NewPath("spec", "nodeSelector")
	assert.Empty(t, validateNodeSelector(map[string]string{"disk": "ssd", "example.com/x": ""}, path))
	errs := validateNodeSelector(map[string]string{"-bad": "x", "ok": "not ok"}, path)
	require.Len(t, errs, 2)
	assert.Contains(t, errs[0].Error(), `spec.nodeSelector: Invalid value: "-bad"`)
	assert.Contains(t, errs[1].Error(), `spec.nodeSelector[ok]: Invalid value: "not ok"`)
}
