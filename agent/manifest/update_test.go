package manifest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestValidatePodUpdate checks the API server's pod update rule: each
// change an update may make, and each it may not, with the exact error.
func TestValidatePodUpdate(t *testing.T) {
	const forbidden = "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`," +
		"`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations)," +
		"`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
	old := func() *v1.Pod {
		p := basePod()
		p.Labels = map[string]string{"app": "web"}
		p.Annotations = map[string]string{"note": "a"}
		p.Spec.Containers[0].Command = []string{"nginx", "-g", "daemon off;"}
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "side", Image: "busybox:1.36"})
		p.Spec.InitContainers = []v1.Container{{Name: "init", Image: "busybox:1.36"}}
		p.Spec.Tolerations = []v1.Toleration{{Key: "k", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](30)}}
		p.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "g1"}, {Name: "g2"}}
		SetPodDefaults(p, "api:default/web", "node1")
		return p
	}
	tests := []struct {
		name   string
		old    func(*v1.Pod)
		mutate func(*v1.Pod)
		want   []string
	}{
		{name: "unchanged"},
		{name: "labels added, changed and removed", mutate: func(p *v1.Pod) { p.Labels = map[string]string{"x": "y"} }},
		{name: "annotations changed", mutate: func(p *v1.Pod) {
			p.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{}"}
		}},
		{name: "image of a container", mutate: func(p *v1.Pod) { p.Spec.Containers[1].Image = "busybox:1.37" }},
		{name: "image of an init container", mutate: func(p *v1.Pod) { p.Spec.InitContainers[0].Image = "busybox:1.37" }},
		{name: "activeDeadlineSeconds set", mutate: func(p *v1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](60) }},
		{
			name:   "activeDeadlineSeconds lowered",
			old:    func(p *v1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](60) },
			mutate: func(p *v1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](0) },
		},
		{
			name:   "activeDeadlineSeconds raised",
			old:    func(p *v1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](60) },
			mutate: func(p *v1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](61) },
			want:   []string{"spec.activeDeadlineSeconds: Invalid value: 61: must be less than or equal to previous value"},
		},
		{
			name:   "activeDeadlineSeconds removed",
			old:    func(p *v1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](60) },
			mutate: func(p *v1.Pod) { p.Spec.ActiveDeadlineSeconds = nil },
			want:   []string{"spec.activeDeadlineSeconds: Invalid value: null: must not update from a positive integer to nil value"},
		},
		{
			name:   "activeDeadlineSeconds negative",
			mutate: func(p *v1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](-1) },
			want:   []string{"spec.activeDeadlineSeconds: Invalid value: -1: must be between 0 and 2147483647, inclusive"},
		},
		{name: "toleration added", mutate: func(p *v1.Pod) {
			p.Spec.Tolerations = append(p.Spec.Tolerations, v1.Toleration{Key: "other", Operator: v1.TolerationOpExists})
		}},
		{name: "tolerationSeconds changed", mutate: func(p *v1.Pod) { p.Spec.Tolerations[0].TolerationSeconds = ptr.To[int64](5) }},
		{
			name:   "toleration removed",
			mutate: func(p *v1.Pod) { p.Spec.Tolerations = nil },
			want:   []string{"spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds"},
		},
		{name: "scheduling gate removed", mutate: func(p *v1.Pod) { p.Spec.SchedulingGates = p.Spec.SchedulingGates[1:] }},
		{
			name: "scheduling gate added",
			mutate: func(p *v1.Pod) {
				p.Spec.SchedulingGates = append(p.Spec.SchedulingGates, v1.PodSchedulingGate{Name: "g3"})
			},
			want: []string{"spec.schedulingGates[2].name: Forbidden: only deletion is allowed, but found new scheduling gate 'g3'"},
		},
		{
			name:   "negative grace period set to 1",
			old:    func(p *v1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](-1) },
			mutate: func(p *v1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](1) },
		},
		{
			name:   "grace period changed",
			mutate: func(p *v1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](5) },
			want:   []string{forbidden + "\nchanged: spec.terminationGracePeriodSeconds"},
		},
		{
			name:   "command changed",
			mutate: func(p *v1.Pod) { p.Spec.Containers[0].Command = []string{"sleep", "1"} },
			want:   []string{forbidden + "\nchanged: spec.containers[0].command"},
		},
		{
			name: "image and resources changed: only the resources are named",
			mutate: func(p *v1.Pod) {
				p.Spec.Containers[0].Image = "nginx:1.28"
				p.Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")}
			},
			want: []string{forbidden + "\nchanged: spec.containers[0].resources.limits"},
		},
		{
			name:   "env added",
			mutate: func(p *v1.Pod) { p.Spec.Containers[1].Env = []v1.EnvVar{{Name: "A", Value: "1"}} },
			want:   []string{forbidden + "\nchanged: spec.containers[1].env"},
		},
		{
			name:   "restartPolicy changed",
			mutate: func(p *v1.Pod) { p.Spec.RestartPolicy = v1.RestartPolicyNever },
			want:   []string{forbidden + "\nchanged: spec.restartPolicy"},
		},
		{
			name: "container added",
			mutate: func(p *v1.Pod) {
				p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "third", Image: "x"})
			},
			want: []string{"spec.containers: Forbidden: pod updates may not add or remove containers"},
		},
		{
			name:   "init container removed",
			mutate: func(p *v1.Pod) { p.Spec.InitContainers = nil },
			want:   []string{"spec.initContainers: Forbidden: pod updates may not add or remove containers"},
		},
		{
			name:   "image emptied",
			mutate: func(p *v1.Pod) { p.Spec.Containers[0].Image = "" },
			want:   []string{"spec.containers[0].image: Required value"},
		},
		{
			name:   "image with whitespace",
			mutate: func(p *v1.Pod) { p.Spec.InitContainers[0].Image = " busybox" },
			want:   []string{`spec.initContainers[0].image: Invalid value: " busybox": must not have leading or trailing whitespace`},
		},
		{
			name:   "name changed",
			mutate: func(p *v1.Pod) { p.Name = "other" },
			want:   []string{`metadata.name: Invalid value: "other": field is immutable`},
		},
		{
			name:   "uid changed",
			mutate: func(p *v1.Pod) { p.UID = "other" },
			want:   []string{`metadata.uid: Invalid value: "other": field is immutable`},
		},
		{
			name:   "creationTimestamp changed",
			old:    func(p *v1.Pod) { p.CreationTimestamp = metav1.Unix(1000, 0) },
			mutate: func(p *v1.Pod) { p.CreationTimestamp = metav1.Unix(2000, 0) },
			want:   []string{`metadata.creationTimestamp: Invalid value: "1970-01-01T00:33:20Z": field is immutable`},
		},
		{
			name:   "mirror annotation added",
			mutate: func(p *v1.Pod) { p.Annotations[v1.MirrorPodAnnotationKey] = "x" },
			want:   []string{"metadata.annotations[kubernetes.io/config.mirror]: Forbidden: may not add mirror pod annotation"},
		},
		{
			name: "AppArmor annotation changed",
			old: func(p *v1.Pod) {
				p.Annotations[v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix+"web"] = "runtime/default"
			},
			mutate: func(p *v1.Pod) {
				p.Annotations[v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix+"web"] = "unconfined"
			},
			want: []string{"metadata.annotations[container.apparmor.security.beta.kubernetes.io/web]: Forbidden: may not remove or update AppArmor annotations"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := old()
			if tt.old != nil {
				tt.old(o)
			}
			n := o.DeepCopy()
			if tt.mutate != nil {
				tt.mutate(n)
			}
			var got []string
			for _, e := range ValidatePodUpdate(n, o) {
				got = append(got, e.Error())
			}
			assert.Equal(t, tt.want, got)
		})
	}
}
