package lifecycle

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestResolvePort(t *testing.T) {
	c := &v1.Container{Name: "web", Ports: []v1.ContainerPort{{Name: "http", ContainerPort: 8080}}}
	tests := []struct {
		name    string
		port    intstr.IntOrString
		want    int
		wantErr bool
	}{
		{name: "number", port: intstr.FromInt32(81), want: 81},
		{name: "numeric string", port: intstr.FromString("82"), want: 82},
		{name: "named", port: intstr.FromString("http"), want: 8080},
		{name: "unknown name", port: intstr.FromString("grpc"), wantErr: true},
		{name: "zero", port: intstr.FromInt32(0), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := resolvePort(tt.port, c)
			if tt.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}
