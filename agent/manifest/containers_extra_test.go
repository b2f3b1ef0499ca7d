package manifest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

func TestValidateRestartRules(t *testing.T) {
	p := field.NewPath("spec", "containers").Index(0)
	c := &v1.Container{RestartPolicyRules: []v1.ContainerRestartRule{{Action: "Kill"}}}
	errs := validateRestartRules(c, p)
	assert.Len(t, errs, 3)
	assert.Equal(t, "spec.containers[0].restartPolicy: Required value: must be set when restartPolicyRules are", errs[0].Error())
	c = &v1.Container{RestartPolicy: ptr.To(v1.ContainerRestartPolicyOnFailure)}
	assert.Empty(t, validateRestartRules(c, p))
}
