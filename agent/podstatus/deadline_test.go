package podstatus

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestActiveDeadlineLeft(t *testing.T) {
	start := time.Unix(1000, 0)
	pod := &v1.Pod{}
	_, ok := ActiveDeadlineLeft(pod, start, start.Add(time.Hour))
	assert.False(t, ok, "no deadline")
	pod.Spec.ActiveDeadlineSeconds = ptr.To[int64](5)
	left, ok := ActiveDeadlineLeft(pod, start, start.Add(2*time.Second))
	assert.True(t, ok)
	assert.Equal(t, 3*time.Second, left)
	left, _ = ActiveDeadlineLeft(pod, start, start.Add(5*time.Second))
	assert.LessOrEqual(t, left, time.Duration(0), "due at the deadline itself, as the kubelet's >=")
}
