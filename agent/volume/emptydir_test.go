package volume

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestEmptyDirMemorySize(t *testing.T) {
	alloc := v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi")}
	q := func(s string) *resource.Quantity { v := resource.MustParse(s); return &v }
	withLimits := func(limits ...string) *v1.Pod {
		p := &v1.Pod{}
		for _, l := range limits {
			c := v1.Container{}
			if l != "" {
				c.Resources.Limits = v1.ResourceList{v1.ResourceMemory: resource.MustParse(l)}
			}
			p.Spec.Containers = append(p.Spec.Containers, c)
		}
		return p
	}
	for _, tc := range []struct {
		name      string
		pod       *v1.Pod
		sizeLimit *resource.Quantity
		want      int64
	}{
		{"no limits: allocatable", withLimits(""), nil, 1 << 30},
		{"sizeLimit below allocatable", withLimits(""), q("16Mi"), 16 << 20},
		{"pod limit sums containers", withLimits("64Mi", "32Mi", ""), nil, 96 << 20},
		{"sizeLimit above pod limit", withLimits("64Mi"), q("128Mi"), 64 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, EmptyDirMemorySize(tc.pod, tc.sizeLimit, alloc))
		})
	}
}
