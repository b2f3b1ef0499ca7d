package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/agent/api"
)

func TestNodeArg(t *testing.T) {
	for _, tc := range []struct {
		pos  []string
		name string
		ok   bool
	}{
		{[]string{"node"}, "", true},
		{[]string{"nodes", "n1"}, "n1", true},
		{[]string{"node/n2"}, "n2", true},
		{[]string{"pod", "web"}, "", false},
		{[]string{"web"}, "", false},
		{nil, "", false},
	} {
		name, ok := nodeArg(tc.pos)
		assert.Equal(t, tc.name, name, "%v", tc.pos)
		assert.Equal(t, tc.ok, ok, "%v", tc.pos)
	}
}

func TestDescribeNode(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	nd := &api.NodeDetails{
		Capacity:    v1.ResourceList{v1.ResourceMemory: resource.MustParse("4Gi"), v1.ResourceCPU: resource.MustParse("2")},
		Allocatable: v1.ResourceList{v1.ResourceMemory: resource.MustParse("3Gi")},
		Conditions: []v1.NodeCondition{
			{Type: v1.NodeDiskPressure, Status: v1.ConditionTrue, Reason: "KubeletHasDiskPressure", Message: "kubelet has disk pressure", LastTransitionTime: metav1.NewTime(now.Add(-time.Minute))},
		},
		Filesystems: []api.Filesystem{{Name: "nodefs", Path: "/var/lib/minikubelet", CapacityBytes: 100 << 20, AvailableBytes: 5 << 20, InodesTotal: 1000, InodesFree: 900}},
		Signals:     []api.Signal{{Name: "nodefs.available", Available: 5 << 20, Capacity: 100 << 20}, {Name: "pid.available", Available: 4000, Capacity: 4096}},
		ObservedAt:  now.Add(-2 * time.Second),
		Thresholds:  []string{"nodefs.available<10%"},
		Evictions: []api.Eviction{
			{Pod: "default/old", Signal: "memory.available", Time: now.Add(-time.Hour), Message: "m1"},
			{Pod: "default/filler", Signal: "nodefs.available", Time: now.Add(-30 * time.Second), Message: "The node was low on resource: ephemeral-storage."},
		},
	}
	var b strings.Builder
	require.NoError(t, describeNode(&b, "node-1", nd, now))
	// Columns compared with single spaces: the tabwriter aligns them.
	out := strings.Join(strings.Fields(b.String()), " ")
	for _, want := range []string{
		"Name: node-1",
		"DiskPressure True Fri, 02 Jan 2026 03:03:05 +0000 (60s ago) KubeletHasDiskPressure kubelet has disk pressure",
		"Capacity: cpu: 2 memory: 4Gi", "Allocatable: memory: 3Gi",
		"nodefs /var/lib/minikubelet 95Mi 100Mi 95% 100 1000",
		"nodefs.available: 5Mi of 100Mi", "pid.available: 4000 of 4096",
		"Eviction Thresholds: nodefs.available<10%",
		"default/filler nodefs.available 30s The node was low on resource: ephemeral-storage.",
	} {
		assert.Contains(t, out, want)
	}
	assert.Less(t, strings.Index(out, "default/filler"), strings.Index(out, "default/old"), "newest eviction first")
}
