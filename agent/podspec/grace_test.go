package podspec

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestGracePeriod(t *testing.T) {
	i := func(v int64) *int64 { return &v }
	probe := &v1.Probe{TerminationGracePeriodSeconds: i(5)}
	for _, tc := range []struct {
		name             string
		spec, deletion   *int64
		probe            *v1.Probe
		wantPod, wantKil int64
	}{
		{name: "default 30", wantPod: 30, wantKil: 30},
		{name: "spec", spec: i(12), wantPod: 12, wantKil: 12},
		{name: "zero is 1 s", spec: i(0), wantPod: 1, wantKil: 1},
		{name: "deletion wins over spec", spec: i(12), deletion: i(3), wantPod: 3, wantKil: 3},
		{name: "probe's own for its kill", spec: i(12), probe: probe, wantPod: 12, wantKil: 5},
		{name: "a deletion wins over the probe's", spec: i(12), deletion: i(7), probe: probe, wantPod: 7, wantKil: 7},
		{name: "probe's zero is 1 s", probe: &v1.Probe{TerminationGracePeriodSeconds: i(0)}, wantPod: 30, wantKil: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &v1.Pod{Spec: v1.PodSpec{TerminationGracePeriodSeconds: tc.spec}}
			p.DeletionGracePeriodSeconds = tc.deletion
			if got := GracePeriod(p); got != tc.wantPod {
				t.Errorf("GracePeriod = %d, want %d", got, tc.wantPod)
			}
			if got := KillGracePeriod(p, tc.probe); got != tc.wantKil {
				t.Errorf("KillGracePeriod = %d, want %d", got, tc.wantKil)
			}
		})
	}
}
