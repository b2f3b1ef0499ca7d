package podspec

import (
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// TestParseEnvFile checks each rule of the env file syntax, one case per
// rule (the kubelet's behaviour, not its test table).
func TestParseEnvFile(t *testing.T) {
	type testCase struct {
		name        string
		envContent  string
		key         string
		wantValue   string
		wantErr     bool
		errContains string
	}
	tests := []testCase{
		// One case per rule of ParseEnvFile's comment, written from the
		// kubelet's documented behaviour (KEP-3721 and its ParseEnv rules).
		{name: "leading blanks are ignored", envContent: "  \tKEY1='one'\n\tKEY2='two'\n", key: "KEY2", wantValue: "two"},
		{name: "blank and comment lines are skipped", envContent: "\n# a comment\n   # another\n\nKEY1='one'\n", key: "KEY1", wantValue: "one"},
		{name: "a line without '='", envContent: "KEY1\n", key: "KEY1", wantErr: true, errContains: "line 1: missing '='"},
		{name: "an empty name", envContent: "KEY1='one'\n='x'\n", key: "KEY2", wantErr: true, errContains: "line 2: empty variable name"},
		{name: "a blank before '='", envContent: "KEY1 ='one'\n", key: "KEY1", wantErr: true, errContains: "whitespace before '=' is not allowed"},
		{name: "a blank after '=' assigns the empty string", envContent: "KEY1= 'one'\n", key: "KEY1", wantValue: ""},
		{name: "a blank after '=' on another key is not checked", envContent: "KEY0= anything at all\nKEY1='one'\n", key: "KEY1", wantValue: "one"},
		{name: "an unquoted value", envContent: "KEY1=one\n", key: "KEY1", wantErr: true, errContains: "value must be enclosed in single quotes"},
		{name: "a double-quoted value", envContent: "KEY1=\"one\"\n", key: "KEY1", wantErr: true, errContains: "single quotes"},
		{name: "the value is literal: no escapes, no expansion", envContent: "KEY1='$HOME \\n \"x\" ${A}'\n", key: "KEY1", wantValue: "$HOME \\n \"x\" ${A}"},
		{name: "an empty quoted value", envContent: "KEY1=''\n", key: "KEY1", wantValue: ""},
		{name: "a value over several lines", envContent: "KEY1='one\n  two\n\nthree'\nKEY2='x'\n", key: "KEY1", wantValue: "one\n  two\n\nthree"},
		{name: "an unclosed quote", envContent: "KEY0='x'\nKEY1='one\ntwo\n", key: "KEY1", wantErr: true, errContains: "starting at line 2: unclosed single quote"},
		{name: "a comment after the closing quote", envContent: "KEY1='one'   # why\n", key: "KEY1", wantValue: "one"},
		{name: "content after the closing quote", envContent: "KEY1='one' two\n", key: "KEY1", wantErr: true, errContains: "line 1: unexpected content after closing quote"},
		{name: "an error before the key fails the read", envContent: "oops\nKEY1='one'\n", key: "KEY1", wantErr: true, errContains: "line 1"},
		{name: "a key that is not assigned", envContent: "KEY1='one'\n", key: "KEY2", wantValue: ""},
		{name: "line numbers count the lines of a multi-line value", envContent: "KEY1='a\nb'\nbad\n", key: "KEY2", wantErr: true, errContains: "line 3"},
		{name: "a private key as a value", envContent: "KEY1='-----BEGIN KEY-----\nMIIabc+/=\n-----END KEY-----'\n", key: "KEY1", wantValue: "-----BEGIN KEY-----\nMIIabc+/=\n-----END KEY-----"},
		// minikubelet's own cases.
		{
			name:       "the first assignment wins",
			envContent: "KEY1='one'\nKEY1='two'\n",
			key:        "KEY1",
			wantValue:  "one",
		},
		{
			name:       "an error after the key is not read",
			envContent: "KEY1='one'\nthis is not an assignment\n",
			key:        "KEY1",
			wantValue:  "one",
		},
		{
			name:       "CRLF line ends",
			envContent: "KEY1='one'\r\nKEY2='two'\r\n",
			key:        "KEY2",
			wantValue:  "two",
		},
		{
			name:       "no final newline",
			envContent: "KEY1='one'",
			key:        "KEY1",
			wantValue:  "one",
		},
		{
			name:        "a line of more than 64 KiB",
			envContent:  "KEY1='" + strings.Repeat("x", 64<<10) + "'\nKEY2='two'\n",
			key:         "KEY2",
			wantErr:     true,
			errContains: "token too long",
		},
		{
			name:        "a line of more than 64 KiB inside a quoted value",
			envContent:  "KEY1='a\n" + strings.Repeat("x", 64<<10) + "'\n",
			key:         "KEY1",
			wantErr:     true,
			errContains: "token too long",
		},
		{
			name:       "empty file",
			envContent: "",
			key:        "KEY1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseEnvFile([]byte(tt.envContent), tt.key)
			if tt.wantErr {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.errContains)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantValue, got)
		})
	}
}

// TestEnvFileKeyRef resolves fileKeyRef through Env with the engine's read
// faked: found, optional and required keys, the kubelet's empty value as
// missing, a file that cannot be read (optional or not), a volume that is
// not an emptyDir of the pod, and the path handed to the engine.
func TestEnvFileKeyRef(t *testing.T) {
	const hostDir = "/var/lib/minikubelet/pods/uid/volumes/kubernetes.io~empty-dir/config"
	files := map[string]string{"config.env": "FOO='bar'\nEMPTY=''\n# comment\nMULTI='a\nb'\n"}
	ref := func(volume, path, key string, optional bool) *v1.EnvVarSource {
		return &v1.EnvVarSource{FileKeyRef: &v1.FileKeySelector{VolumeName: volume, Path: path, Key: key, Optional: ptr.To(optional)}}
	}
	for _, tc := range []struct {
		name    string
		env     []v1.EnvVar
		want    []string
		wantErr string
	}{{
		name: "keys found, optional missing keys skipped",
		env: []v1.EnvVar{
			{Name: "A", ValueFrom: ref("config", "config.env", "FOO", false)},
			{Name: "B", ValueFrom: ref("config", "/config.env", "MULTI", false)},
			{Name: "C", ValueFrom: ref("config", "config.env", "NOPE", true)},
			{Name: "D", ValueFrom: ref("config", "config.env", "EMPTY", true)},
			{Name: "E", Value: "$(A)-$(C)"},
		},
		want: []string{"A=bar", "B=a\nb", "E=bar-$(C)"},
	}, {
		name:    "a required key that is missing",
		env:     []v1.EnvVar{{Name: "A", ValueFrom: ref("config", "config.env", "NOPE", false)}},
		wantErr: `environment variable key "NOPE" not found in file "` + hostDir + `/config.env"`,
	}, {
		name:    "a required key with an empty value is missing, as on the kubelet",
		env:     []v1.EnvVar{{Name: "A", ValueFrom: ref("config", "config.env", "EMPTY", false)}},
		wantErr: `environment variable key "EMPTY" not found in file "` + hostDir + `/config.env"`,
	}, {
		name:    "a missing file fails the start even when optional",
		env:     []v1.EnvVar{{Name: "A", ValueFrom: ref("config", "sub/other.env", "FOO", true)}},
		wantErr: "couldn't parse env file: open " + hostDir + "/sub/other.env: file does not exist",
	}, {
		name:    "a volume that is not an emptyDir of the pod",
		env:     []v1.EnvVar{{Name: "A", ValueFrom: ref("host", "config.env", "FOO", true)}},
		wantErr: `cannot find the volume "host" referenced by FileKeyRef`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{}
			pod.Name, pod.Namespace = "web", "shop"
			pod.Spec.Volumes = []v1.Volume{
				{Name: "config", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
				{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/srv"}}},
			}
			pod.Spec.Containers = []v1.Container{{Name: "app", Env: tc.env}}
			in := envInputs(nil)
			in.EnvFile = func(volume, rel string) ([]byte, string, error) {
				require.Equal(t, "config", volume)
				name := hostDir + "/" + rel
				data, ok := files[rel]
				if !ok {
					return nil, name, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
				}
				return []byte(data), name, nil
			}
			kvs, _, _, err := Env(pod, &pod.Spec.Containers[0], in)
			if tc.wantErr != "" {
				require.EqualError(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			var got []string
			for _, kv := range kvs {
				got = append(got, kv.Key+"="+string(kv.Value))
			}
			assert.Equal(t, tc.want, got)
		})
	}
	// The read's error stays inspectable.
	pod := &v1.Pod{Spec: v1.PodSpec{Volumes: []v1.Volume{{Name: "config", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}}}
	in := envInputs(nil)
	in.EnvFile = func(string, string) ([]byte, string, error) { return nil, "", fs.ErrPermission }
	_, _, err := fileKeyValue(pod, in, &v1.FileKeySelector{VolumeName: "config", Path: "x", Key: "K"})
	assert.True(t, errors.Is(err, fs.ErrPermission), "%v", err)
}

// TestEnvFileRel maps the API's path to one relative to the volume.
func TestEnvFileRel(t *testing.T) {
	for in, want := range map[string]string{
		"config.env":     "config.env",
		"/config.env":    "config.env",
		"//a//b/./c.env": "a/b/c.env",
		"a/":             "a",
		".":              "",
	} {
		assert.Equal(t, want, EnvFileRel(&v1.FileKeySelector{Path: in}), in)
	}
}
