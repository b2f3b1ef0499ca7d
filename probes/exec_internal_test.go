package probes

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
)

func TestExpandCommand(t *testing.T) {
	env := []v1.EnvVar{
		{Name: "PORT", Value: "8080"},
		{Name: "EMPTY", Value: ""},
		{Name: "FROM", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
	}
	tests := []struct {
		name string
		in   string
		want string
	}{
		{name: "plain", in: "cat /ready", want: "cat /ready"},
		{name: "reference", in: "localhost:$(PORT)/x", want: "localhost:8080/x"},
		{name: "empty value", in: "a$(EMPTY)b", want: "ab"},
		{name: "escaped", in: "$$(PORT)", want: "$(PORT)"},
		{name: "unknown kept", in: "$(NOPE)", want: "$(NOPE)"},
		{name: "valueFrom not expanded", in: "$(FROM)", want: "$(FROM)"},
		{name: "unterminated", in: "x$(PORT", want: "x$(PORT"},
		{name: "lone dollar", in: "$HOME $", want: "$HOME $"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := expandCommand([]string{"sh", tt.in}, env)
			assert.Equal(t, []string{"sh", tt.want}, got)
		})
	}
}

func TestTimingOf(t *testing.T) {
	got := timingOf(&v1.Probe{})
	assert.Equal(t, timing{period: defaultPeriod, timeout: defaultTimeout, successThreshold: 1, failureThreshold: 3}, got)
}
