package manifest

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// basePod is a minimal pod as a manifest would give it: nothing defaulted.
func basePod() *v1.Pod {
	return &v1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: v1.PodSpec{
			Containers: []v1.Container{{Name: "web", Image: "nginx:1.27"}},
		},
	}
}

func TestSetPodDefaults(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*v1.Pod)
		check  func(*testing.T, *v1.Pod)
	}{
		{
			name: "namespace default",
			check: func(t *testing.T, p *v1.Pod) {
				assert.Equal(t, "default", p.Namespace)
			},
		},
		{
			name:   "namespace kept",
			mutate: func(p *v1.Pod) { p.Namespace = "demo" },
			check:  func(t *testing.T, p *v1.Pod) { assert.Equal(t, "demo", p.Namespace) },
		},
		{
			name: "pod-level defaults",
			check: func(t *testing.T, p *v1.Pod) {
				assert.Equal(t, v1.RestartPolicyAlways, p.Spec.RestartPolicy)
				assert.Equal(t, ptr.To[int64](30), p.Spec.TerminationGracePeriodSeconds)
				assert.Equal(t, v1.DNSClusterFirst, p.Spec.DNSPolicy)
				assert.Equal(t, ptr.To(true), p.Spec.EnableServiceLinks)
				assert.Equal(t, "default-scheduler", p.Spec.SchedulerName)
				assert.Equal(t, "node1", p.Spec.NodeName)
				assert.Nil(t, p.Spec.SecurityContext, "refused fields are never defaulted")
			},
		},
		{
			name: "pod-level values kept",
			mutate: func(p *v1.Pod) {
				p.Spec.RestartPolicy = v1.RestartPolicyNever
				p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
				p.Spec.DNSPolicy = v1.DNSDefault
				p.Spec.EnableServiceLinks = ptr.To(false)
				p.Spec.NodeName = "elsewhere"
			},
			check: func(t *testing.T, p *v1.Pod) {
				assert.Equal(t, v1.RestartPolicyNever, p.Spec.RestartPolicy)
				assert.Equal(t, ptr.To[int64](0), p.Spec.TerminationGracePeriodSeconds)
				assert.Equal(t, v1.DNSDefault, p.Spec.DNSPolicy)
				assert.Equal(t, ptr.To(false), p.Spec.EnableServiceLinks)
				assert.Equal(t, "elsewhere", p.Spec.NodeName)
			},
		},
		{
			name: "container defaults, init containers too",
			mutate: func(p *v1.Pod) {
				p.Spec.InitContainers = []v1.Container{{Name: "init", Image: "busybox"}}
			},
			check: func(t *testing.T, p *v1.Pod) {
				for _, c := range []v1.Container{p.Spec.InitContainers[0], p.Spec.Containers[0]} {
					assert.Equal(t, "/dev/termination-log", c.TerminationMessagePath, c.Name)
					assert.Equal(t, v1.TerminationMessageReadFile, c.TerminationMessagePolicy, c.Name)
				}
				assert.Equal(t, v1.PullAlways, p.Spec.InitContainers[0].ImagePullPolicy)
				assert.Equal(t, v1.PullIfNotPresent, p.Spec.Containers[0].ImagePullPolicy)
			},
		},
		{
			name: "container values kept",
			mutate: func(p *v1.Pod) {
				c := &p.Spec.Containers[0]
				c.ImagePullPolicy = v1.PullNever
				c.TerminationMessagePath = "/tmp/msg"
				c.TerminationMessagePolicy = v1.TerminationMessageFallbackToLogsOnError
			},
			check: func(t *testing.T, p *v1.Pod) {
				c := p.Spec.Containers[0]
				assert.Equal(t, v1.PullNever, c.ImagePullPolicy)
				assert.Equal(t, "/tmp/msg", c.TerminationMessagePath)
				assert.Equal(t, v1.TerminationMessageFallbackToLogsOnError, c.TerminationMessagePolicy)
			},
		},
		{
			name: "port protocol TCP; hostPort stays 0 without hostNetwork",
			mutate: func(p *v1.Pod) {
				p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 80}, {ContainerPort: 53, Protocol: v1.ProtocolUDP}}
			},
			check: func(t *testing.T, p *v1.Pod) {
				ports := p.Spec.Containers[0].Ports
				assert.Equal(t, v1.ProtocolTCP, ports[0].Protocol)
				assert.Equal(t, v1.ProtocolUDP, ports[1].Protocol)
				assert.Zero(t, ports[0].HostPort)
			},
		},
		{
			name: "hostNetwork: hostPort defaults to containerPort",
			mutate: func(p *v1.Pod) {
				p.Spec.HostNetwork = true
				p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 80}}
			},
			check: func(t *testing.T, p *v1.Pod) {
				assert.Equal(t, int32(80), p.Spec.Containers[0].Ports[0].HostPort)
			},
		},
		{
			name: "env fieldRef apiVersion v1",
			mutate: func(p *v1.Pod) {
				p.Spec.Containers[0].Env = []v1.EnvVar{
					{Name: "A", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
					{Name: "B", Value: "b"},
				}
			},
			check: func(t *testing.T, p *v1.Pod) {
				assert.Equal(t, "v1", p.Spec.Containers[0].Env[0].ValueFrom.FieldRef.APIVersion)
				assert.Nil(t, p.Spec.Containers[0].Env[1].ValueFrom)
			},
		},
		{
			name: "requests default to limits per resource",
			mutate: func(p *v1.Pod) {
				p.Spec.Containers[0].Resources = v1.ResourceRequirements{
					Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m"), v1.ResourceMemory: resource.MustParse("128Mi")},
					Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")},
				}
			},
			check: func(t *testing.T, p *v1.Pod) {
				req := p.Spec.Containers[0].Resources.Requests
				assert.Equal(t, "100m", req.Cpu().String(), "an explicit request is kept")
				assert.Equal(t, "128Mi", req.Memory().String(), "a missing request takes the limit")
			},
		},
		{
			name: "no limits: requests stay unset",
			check: func(t *testing.T, p *v1.Pod) {
				assert.Nil(t, p.Spec.Containers[0].Resources.Requests)
			},
		},
		{
			name: "probe defaults",
			mutate: func(p *v1.Pod) {
				c := &p.Spec.Containers[0]
				c.LivenessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromInt32(80)}}}
				c.ReadinessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(80)}},
					PeriodSeconds: 3, FailureThreshold: 5}
			},
			check: func(t *testing.T, p *v1.Pod) {
				l := p.Spec.Containers[0].LivenessProbe
				assert.Equal(t, int32(0), l.InitialDelaySeconds)
				assert.Equal(t, int32(1), l.TimeoutSeconds)
				assert.Equal(t, int32(10), l.PeriodSeconds)
				assert.Equal(t, int32(1), l.SuccessThreshold)
				assert.Equal(t, int32(3), l.FailureThreshold)
				assert.Equal(t, "/", l.HTTPGet.Path)
				assert.Equal(t, v1.URISchemeHTTP, l.HTTPGet.Scheme)
				r := p.Spec.Containers[0].ReadinessProbe
				assert.Equal(t, int32(3), r.PeriodSeconds)
				assert.Equal(t, int32(5), r.FailureThreshold)
				assert.Nil(t, p.Spec.Containers[0].StartupProbe)
			},
		},
		{
			name: "volumes: hostPath type empty, no source means emptyDir",
			mutate: func(p *v1.Pod) {
				p.Spec.Volumes = []v1.Volume{
					{Name: "h", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/srv"}}},
					{Name: "e"},
				}
			},
			check: func(t *testing.T, p *v1.Pod) {
				assert.Equal(t, ptr.To(v1.HostPathUnset), p.Spec.Volumes[0].HostPath.Type)
				assert.Nil(t, p.Spec.Volumes[0].EmptyDir)
				assert.Equal(t, &v1.EmptyDirVolumeSource{}, p.Spec.Volumes[1].EmptyDir)
			},
		},
		{
			name:   "UID kept when given",
			mutate: func(p *v1.Pod) { p.UID = "given" },
			check:  func(t *testing.T, p *v1.Pod) { assert.Equal(t, "given", string(p.UID)) },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := basePod()
			if tc.mutate != nil {
				tc.mutate(pod)
			}
			SetPodDefaults(pod, "/etc/minikubelet/web.yaml", "node1")
			tc.check(t, pod)

			again := pod.DeepCopy()
			SetPodDefaults(again, "/etc/minikubelet/web.yaml", "node1")
			assert.Equal(t, pod, again, "SetPodDefaults is idempotent")
		})
	}
}

func TestDefaultPullPolicy(t *testing.T) {
	tests := []struct {
		image string
		want  v1.PullPolicy
	}{
		{"busybox", v1.PullAlways},
		{"busybox:latest", v1.PullAlways},
		{"busybox:1.36", v1.PullIfNotPresent},
		{"reg:5000/x", v1.PullAlways},
		{"reg:5000/x:1", v1.PullIfNotPresent},
		{"reg:5000/team/x:latest", v1.PullAlways},
		{"x@sha256:4bcff63911fcb4448bd4fdacec207030997caf25e9bea4045fa6c8c44de311d1", v1.PullIfNotPresent},
		{"x:1.0@sha256:4bcff63911fcb4448bd4fdacec207030997caf25e9bea4045fa6c8c44de311d1", v1.PullIfNotPresent},
		{"x:latest@sha256:4bcff63911fcb4448bd4fdacec207030997caf25e9bea4045fa6c8c44de311d1", v1.PullAlways},
	}
	for _, tc := range tests {
		t.Run(tc.image, func(t *testing.T) {
			assert.Equal(t, tc.want, defaultPullPolicy(tc.image))
		})
	}
}

// TestSetPodDefaults_ImageVolume: an image volume's pullPolicy defaults as
// the API server's SetDefaults_Volume does; a set one stays.
func TestSetPodDefaults_ImageVolume(t *testing.T) {
	for _, tc := range []struct {
		ref  string
		set  v1.PullPolicy
		want v1.PullPolicy
	}{
		{"reg:5000/data", "", v1.PullAlways},
		{"reg:5000/data:latest", "", v1.PullAlways},
		{"reg:5000/data:1", "", v1.PullIfNotPresent},
		{"data@sha256:4bcff63911fcb4448bd4fdacec207030997caf25e9bea4045fa6c8c44de311d1", "", v1.PullIfNotPresent},
		{"", "", v1.PullIfNotPresent}, // the API server's parse error gives no tag
		{"reg:5000/data", v1.PullNever, v1.PullNever},
	} {
		t.Run(tc.ref+"/"+string(tc.set), func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{Volumes: []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: tc.ref, PullPolicy: tc.set}}}}}}
			SetPodDefaults(pod, "test.yaml", "node1")
			assert.Equal(t, tc.want, pod.Spec.Volumes[0].Image.PullPolicy)
			assert.Nil(t, pod.Spec.Volumes[0].EmptyDir, "an image volume has a source")
		})
	}
}

// uuidRE is the 8-4-4-4-12 shape, version 8, RFC variant.
var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestSetPodDefaults_UID(t *testing.T) {
	uid := func(mutate func(*v1.Pod), source, node string) string {
		p := basePod()
		if mutate != nil {
			mutate(p)
		}
		SetPodDefaults(p, source, node)
		return string(p.UID)
	}
	base := uid(nil, "/m/web.yaml", "node1")
	require.Regexp(t, uuidRE, base)
	assert.Equal(t, base, uid(nil, "/m/web.yaml", "node1"), "same input, same UID")

	tests := []struct {
		name         string
		mutate       func(*v1.Pod)
		source, node string
	}{
		{name: "other source", source: "/m/other.yaml", node: "node1"},
		{name: "other node", source: "/m/web.yaml", node: "node2"},
		{name: "other content", mutate: func(p *v1.Pod) { p.Spec.Containers[0].Image = "nginx:1.28" }, source: "/m/web.yaml", node: "node1"},
		{name: "other name", mutate: func(p *v1.Pod) { p.Name = "web2" }, source: "/m/web.yaml", node: "node1"},
		{name: "source and node do not run together", source: "/m/web.yamlnode1", node: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := uid(tc.mutate, tc.source, tc.node)
			assert.Regexp(t, uuidRE, got)
			assert.NotEqual(t, base, got)
		})
	}
}

// A pod without a service account gets "default", as the API server's
// ServiceAccount admission sets it (the dapi-envars-pod example reads it).
func TestSetPodDefaults_ServiceAccount(t *testing.T) {
	pods, err := PrepareManifest([]byte("apiVersion: v1\nkind: Pod\nmetadata: {name: sa}\nspec:\n  containers: [{name: c, image: reg/c:1}]\n"), "x.yaml", "node")
	require.NoError(t, err)
	assert.Equal(t, "default", pods[0].Spec.ServiceAccountName)
	assert.Equal(t, "default", pods[0].Spec.DeprecatedServiceAccount)
}
