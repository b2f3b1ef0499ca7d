package manifest

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// TestValidatePod covers rules the manifest fixtures do not; each case
// mutates a defaulted valid pod and lists the exact errors.
func TestValidatePod(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*v1.Pod)
		want   []string
	}{
		{
			name: "valid",
		},
		{
			name: "extended resources: a device plugin's count, request equal to the limit",
			mutate: func(p *v1.Pod) {
				p.Spec.Containers[0].Resources = v1.ResourceRequirements{
					Limits:   v1.ResourceList{"example.com/dev": resource.MustParse("2"), "example.com/other": resource.MustParse("1")},
					Requests: v1.ResourceList{"example.com/dev": resource.MustParse("2"), "example.com/other": resource.MustParse("2"), "example.com/nolimit": resource.MustParse("1")},
				}
			},
			want: []string{
				`spec.containers[0].resources.limits[example.com/nolimit]: Required value: Limit must be set for non overcommitable resources`,
				`spec.containers[0].resources.requests[example.com/other]: Invalid value: "2": must be equal to example.com/other limit of 1`,
			},
		},
		{
			name:   "uid with a slash",
			mutate: func(p *v1.Pod) { p.UID = "a/b" },
			want:   []string{`metadata.uid: Invalid value: "a/b": must consist of alphanumeric characters or '-', and start and end with an alphanumeric character (it is used in file and cgroup names)`},
		},
		{
			name:   "uid too long",
			mutate: func(p *v1.Pod) { p.UID = types.UID("a" + strings.Repeat("0", 128)) },
			want:   []string{`metadata.uid: Too long: may not be more than 128 bytes`},
		},
		{
			name:   "bad annotation key",
			mutate: func(p *v1.Pod) { p.Annotations = map[string]string{"-bad": "x", "example.com/ok": "y"} },
			want:   []string{`metadata.annotations: Invalid value: "-bad": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`},
		},
		{
			name: "hostname and subdomain are DNS labels",
			mutate: func(p *v1.Pod) {
				p.Spec.Hostname = "my.host"
				p.Spec.Subdomain = "ok"
			},
			want: []string{`spec.hostname: Invalid value: "my.host": must not contain dots`},
		},
		{
			name: "resizePolicy for cpu and memory",
			mutate: func(p *v1.Pod) {
				p.Spec.Containers[0].ResizePolicy = []v1.ContainerResizePolicy{
					{ResourceName: v1.ResourceCPU, RestartPolicy: v1.NotRequired},
					{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer},
				}
			},
		},
		{
			name: "resizePolicy: bad resource, duplicate, bad and missing policy",
			mutate: func(p *v1.Pod) {
				p.Spec.Containers[0].ResizePolicy = []v1.ContainerResizePolicy{
					{ResourceName: "ephemeral-storage", RestartPolicy: v1.NotRequired},
					{ResourceName: v1.ResourceCPU, RestartPolicy: "Sometimes"},
					{ResourceName: v1.ResourceCPU},
				}
			},
			want: []string{
				`spec.containers[0].resizePolicy[0].resourceName: Unsupported value: "ephemeral-storage": supported values: "cpu", "memory"`,
				`spec.containers[0].resizePolicy[1].restartPolicy: Unsupported value: "Sometimes": supported values: "NotRequired", "RestartContainer"`,
				`spec.containers[0].resizePolicy[2].resourceName: Duplicate value: "cpu"`,
				`spec.containers[0].resizePolicy[2].restartPolicy: Required value`,
			},
		},
		{
			name: "resizePolicy RestartContainer in a Never pod",
			mutate: func(p *v1.Pod) {
				p.Spec.RestartPolicy = v1.RestartPolicyNever
				p.Spec.Containers[0].ResizePolicy = []v1.ContainerResizePolicy{{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer}}
			},
			want: []string{"spec.containers[0].resizePolicy[0].restartPolicy: Invalid value: \"RestartContainer\": must be 'NotRequired' when pod `restartPolicy` is 'Never'"},
		},
		{
			name:   "unknown dnsPolicy",
			mutate: func(p *v1.Pod) { p.Spec.DNSPolicy = "Cluster" },
			want:   []string{`spec.dnsPolicy: Unsupported value: "Cluster": supported values: "ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"`},
		},
		{
			name: "hostNetwork with hostPort equal to containerPort is fine",
			mutate: func(p *v1.Pod) {
				p.Spec.HostNetwork = true
				p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 80, HostPort: 80, Protocol: v1.ProtocolTCP}}
			},
		},
		{
			name: "same hostPort, other protocol or host IP is fine",
			mutate: func(p *v1.Pod) {
				p.Spec.Containers[0].Ports = []v1.ContainerPort{
					{ContainerPort: 80, HostPort: 8080, Protocol: v1.ProtocolTCP, HostIP: "127.0.0.1"},
					{ContainerPort: 81, HostPort: 8080, Protocol: v1.ProtocolTCP, HostIP: "127.0.0.2"},
					{ContainerPort: 82, HostPort: 8080, Protocol: v1.ProtocolUDP},
				}
			},
		},
		{
			name: "hostPort clash between init and app containers",
			mutate: func(p *v1.Pod) {
				p.Spec.InitContainers = []v1.Container{{Name: "init", Image: "busybox", ImagePullPolicy: v1.PullAlways,
					TerminationMessagePolicy: v1.TerminationMessageReadFile,
					Ports:                    []v1.ContainerPort{{ContainerPort: 1, HostPort: 8080, Protocol: v1.ProtocolTCP}}}}
				p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 80, HostPort: 8080, Protocol: v1.ProtocolTCP, HostIP: "0.0.0.0"}}
			},
			want: []string{`spec.containers[0].ports[0].hostPort: Duplicate value: "0.0.0.0:8080/TCP"`},
		},
		{
			name: "bad hostIP",
			mutate: func(p *v1.Pod) {
				p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 80, HostPort: 80, Protocol: v1.ProtocolTCP, HostIP: "localhost"}}
			},
			want: []string{`spec.containers[0].ports[0].hostIP: Invalid value: "localhost": must be a valid IP address`},
		},
		{
			name: "valueFrom without a source",
			mutate: func(p *v1.Pod) {
				p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "X", ValueFrom: &v1.EnvVarSource{}}}
			},
			want: []string{"spec.containers[0].env[0].valueFrom: Invalid value: \"\": must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`"},
		},
		{
			name: "fieldRef with another apiVersion",
			mutate: func(p *v1.Pod) {
				p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "X", ValueFrom: &v1.EnvVarSource{
					FieldRef: &v1.ObjectFieldSelector{APIVersion: "v2", FieldPath: "metadata.name"}}}}
			},
			want: []string{`spec.containers[0].env[0].valueFrom.fieldRef.apiVersion: Unsupported value: "v2": supported values: "v1"`},
		},
		{
			name: "fieldRef to one label with an invalid key",
			mutate: func(p *v1.Pod) {
				p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "X", ValueFrom: &v1.EnvVarSource{
					FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.labels['-app']"}}}}
			},
			want: []string{`spec.containers[0].env[0].valueFrom.fieldRef.fieldPath: Invalid value: "metadata.labels['-app']": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`},
		},
		{
			name: "volume without a source (not defaulted)",
			mutate: func(p *v1.Pod) {
				p.Spec.Volumes = []v1.Volume{{Name: "v"}}
			},
			want: []string{`spec.volumes[0]: Required value: must specify a volume type`},
		},
		{
			name: "bad volume name",
			mutate: func(p *v1.Pod) {
				p.Spec.Volumes = []v1.Volume{{Name: "My_Vol", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
			},
			want: []string{`spec.volumes[0].name: Invalid value: "My_Vol": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`},
		},
		{
			name: "probe handler problems are reported by field",
			mutate: func(p *v1.Pod) {
				c := &p.Spec.Containers[0]
				c.StartupProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromString("metrics")}},
					TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: -1}
				c.ReadinessProbe = &v1.Probe{TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 3, FailureThreshold: 3}
				c.LivenessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{
					HTTPGet: &v1.HTTPGetAction{Port: intstr.FromInt32(0), Scheme: "FTP", Path: "/"},
				}, TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3, TerminationGracePeriodSeconds: ptr.To[int64](0)}
			},
			want: []string{
				`spec.containers[0].livenessProbe.httpGet.port: Invalid value: 0: must be between 1 and 65535, inclusive`,
				`spec.containers[0].livenessProbe.httpGet.scheme: Unsupported value: "FTP": supported values: "HTTP", "HTTPS"`,
				`spec.containers[0].livenessProbe.terminationGracePeriodSeconds: Invalid value: 0: must be greater than 0`,
				`spec.containers[0].readinessProbe: Required value: must specify a handler type`,
				`spec.containers[0].startupProbe.tcpSocket.port: Not found: "metrics"`,
				`spec.containers[0].startupProbe.failureThreshold: Invalid value: -1: must be greater than or equal to 0`,
			},
		},
		{
			name: "probes on init containers: the API's rule",
			mutate: func(p *v1.Pod) {
				p.Spec.InitContainers = []v1.Container{{Name: "init", Image: "busybox", ImagePullPolicy: v1.PullAlways,
					TerminationMessagePolicy: v1.TerminationMessageReadFile,
					ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}},
						TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3}}}
			},
			want: []string{`spec.initContainers[0].readinessProbe: Forbidden: may not be set for init containers without restartPolicy=Always`},
		},
		{
			name: "image volume: the API server's rules, errors at the field",
			mutate: func(p *v1.Pod) {
				p.Spec.Volumes = []v1.Volume{
					{Name: "ok", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: "reg/data:1", PullPolicy: v1.PullNever}}},
					{Name: "noref", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{PullPolicy: v1.PullAlways}}},
					{Name: "badpolicy", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: "reg/data:1", PullPolicy: "Sometimes"}}},
					{Name: "nopolicy", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: "reg/data :1"}}},
					{Name: "two", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: "reg/data:1", PullPolicy: v1.PullAlways}, EmptyDir: &v1.EmptyDirVolumeSource{}}},
				}
				// readOnly false is accepted (the mount is read-only
				// anyway, as the kubelet's), subPath and subPathExpr too.
				p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{
					{Name: "ok", MountPath: "/a"},
					{Name: "ok", MountPath: "/b", ReadOnly: true, SubPath: "etc"},
					{Name: "ok", MountPath: "/c", SubPathExpr: "$(POD)"},
					{Name: "ok", MountPath: "/d", SubPath: "../x"},
				}
			},
			want: []string{
				`spec.volumes[1].image.reference: Required value`,
				`spec.volumes[2].image.pullPolicy: Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never"`,
				`spec.volumes[3].image.reference: Invalid value: "reg/data :1": must not contain whitespace`,
				`spec.volumes[3].image.pullPolicy: Required value`,
				`spec.volumes[4].image: Forbidden: may not specify more than 1 volume type`,
				`spec.containers[0].volumeMounts[3].subPath: Invalid value: "../x": must not contain '..'`,
			},
		},
		{
			name: "recursiveReadOnly: the API server's rules, errors at the field",
			mutate: func(p *v1.Pod) {
				mode := func(m v1.RecursiveReadOnlyMode) *v1.RecursiveReadOnlyMode { return &m }
				h2c := v1.MountPropagationHostToContainer
				p.Spec.Volumes = []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
				p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{
					{Name: "v", MountPath: "/ok", ReadOnly: true, RecursiveReadOnly: mode(v1.RecursiveReadOnlyEnabled)},
					{Name: "v", MountPath: "/rw-disabled", RecursiveReadOnly: mode(v1.RecursiveReadOnlyDisabled)},
					{Name: "v", MountPath: "/rw", RecursiveReadOnly: mode(v1.RecursiveReadOnlyEnabled)},
					{Name: "v", MountPath: "/prop", ReadOnly: true, MountPropagation: &h2c, RecursiveReadOnly: mode(v1.RecursiveReadOnlyIfPossible)},
					{Name: "v", MountPath: "/odd", ReadOnly: true, RecursiveReadOnly: mode("Sometimes")},
				}
			},
			want: []string{
				`spec.containers[0].volumeMounts[2].recursiveReadOnly: Forbidden: may only be specified when readOnly is true`,
				`spec.containers[0].volumeMounts[3].recursiveReadOnly: Forbidden: may only be specified when mountPropagation is None or not specified`,
				`spec.containers[0].volumeMounts[4].recursiveReadOnly: Unsupported value: "Sometimes": supported values: "Disabled", "IfPossible", "Enabled"`,
			},
		},
		{
			name: "not defaulted: no panic, required values",
			mutate: func(p *v1.Pod) {
				*p = v1.Pod{}
				p.Name = "x"
			},
			want: []string{
				`metadata.namespace: Required value`,
				`spec.containers: Required value`,
				`spec.restartPolicy: Required value`,
				`spec.dnsPolicy: Required value`,
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := basePod()
			SetPodDefaults(pod, "test.yaml", "node1")
			if tc.mutate != nil {
				tc.mutate(pod)
			}
			var got []string
			for _, e := range ValidatePod(pod) {
				got = append(got, e.Error())
			}
			assert.Equal(t, tc.want, got)
		})
	}
}
