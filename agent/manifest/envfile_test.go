package manifest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
)

// TestValidateFileKeyRef holds the API's fileKeyRef rules with their field
// paths: each case mutates a defaulted valid pod that has an emptyDir
// "config" and a hostPath "host" volume.
func TestValidateFileKeyRef(t *testing.T) {
	ref := func(volume, path, key string) *v1.EnvVarSource {
		return &v1.EnvVarSource{FileKeyRef: &v1.FileKeySelector{VolumeName: volume, Path: path, Key: key}}
	}
	tests := []struct {
		name   string
		mutate func(*v1.Pod)
		want   []string
	}{
		{
			name: "valid in an app and an init container",
			mutate: func(p *v1.Pod) {
				p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "A", ValueFrom: ref("config", "config.env", "A")}}
				ic := p.Spec.Containers[0]
				ic.Name = "init"
				ic.Env = []v1.EnvVar{{Name: "B", ValueFrom: ref("config", "/sub/config.env", "B")}}
				p.Spec.InitContainers = []v1.Container{ic}
			},
		},
		{
			name: "every field missing",
			mutate: func(p *v1.Pod) {
				p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "A", ValueFrom: ref("", "", "")}}
			},
			want: []string{
				"spec.containers[0].env[0].valueFrom.fileKeyRef.key: Required value",
				"spec.containers[0].env[0].valueFrom.fileKeyRef.volumeName: Required value",
				"spec.containers[0].env[0].valueFrom.fileKeyRef.path: Required value",
			},
		},
		{
			name: "bad key, volume name and path",
			mutate: func(p *v1.Pod) {
				p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "A", ValueFrom: ref("Config", "a/../../etc/shadow", "A=B")}}
			},
			want: []string{
				`spec.containers[0].env[0].valueFrom.fileKeyRef.key: Invalid value: "A=B": a valid environment variable name must consist only of printable ASCII characters other than '='`,
				`spec.containers[0].env[0].valueFrom.fileKeyRef.volumeName: Invalid value: "Config": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
				`spec.containers[0].env[0].valueFrom.fileKeyRef.path: Invalid value: "a/../../etc/shadow": must not contain '..'`,
				`spec.containers[0].env[0].valueFrom.fileKeyRef.volumeName: Not found: "Config"`,
			},
		},
		{
			name: "volume missing or not an emptyDir",
			mutate: func(p *v1.Pod) {
				p.Spec.Containers[0].Env = []v1.EnvVar{
					{Name: "A", ValueFrom: ref("nope", "config.env", "A")},
					{Name: "B", ValueFrom: ref("host", "config.env", "B")},
				}
			},
			want: []string{
				`spec.containers[0].env[0].valueFrom.fileKeyRef.volumeName: Not found: "nope"`,
				`spec.containers[0].env[1].valueFrom.fileKeyRef.volumeName: Invalid value: "host": referenced volume must be of type emptyDir`,
			},
		},
		{
			name: "with a value or another source",
			mutate: func(p *v1.Pod) {
				vf := ref("config", "config.env", "A")
				vf.FieldRef = &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}
				p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "A", ValueFrom: vf}, {Name: "B", Value: "x", ValueFrom: ref("config", "config.env", "B")}}
			},
			want: []string{
				`spec.containers[0].env[0].valueFrom: Invalid value: "": may not have more than one field specified at a time`,
				"spec.containers[0].env[1].valueFrom: Invalid value: \"\": may not be specified when `value` is not empty",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := basePod()
			pod.Spec.Volumes = append(pod.Spec.Volumes,
				v1.Volume{Name: "config", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
				v1.Volume{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/srv"}}})
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
