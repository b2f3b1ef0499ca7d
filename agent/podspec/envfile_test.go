// Over 600 lines: the kubelet's ParseEnv table is held whole (about 500
// lines of file contents), so that the parser is checked case for case.

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

// TestParseEnvFile holds the kubelet's ParseEnv cases
// (pkg/kubelet/util/env/env_util_test.go, v1.37), then minikubelet's own.
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
		{
			name: "ignore leading whitespace",
			envContent: `   KEY1='val1'
		KEY2='val2'
KEY3='val3'
`,
			key:       "KEY2",
			wantValue: `val2`,
		},
		{
			name: "ignore blank and comment lines",
			envContent: `# comment

KEY1='foo'
   # another comment

KEY2='bar'
`,
			key:       "KEY2",
			wantValue: `bar`,
		},
		{
			name: "whitespace around = and not allowed",
			envContent: `KEY1 = 'val1'
KEY2=   'val2'
KEY3='val3'
`,
			key:         "KEY2",
			wantErr:     true,
			errContains: `whitespace before '=' is not allowed`,
		},
		{
			name: "key not found returns empty",
			envContent: `KEY1='foo'
KEY2='bar'
`,
			key:       "KEY3",
			wantValue: ``,
		},
		{
			name: "value with embedded #",
			envContent: `KEY1='foo#notcomment'
KEY2='bar'
`,
			key:       "KEY1",
			wantValue: `foo#notcomment`,
		},
		{
			name: "key with whitespace (should error)",
			envContent: `KEY1 ='foo'
KEY2='bar'
`,
			key:         "KEY1",
			wantErr:     true,
			errContains: "whitespace before '=' is not allowed",
		},
		{
			name: "value with leading and trailing whitespace",
			envContent: `KEY1='   foo bar   '
KEY2='bar'
`,
			key:       "KEY1",
			wantValue: `   foo bar   `,
		},
		{
			name: "multiple comments and blank lines",
			envContent: `# first comment

# second comment
KEY1='foo'

# third comment
KEY2='bar'
`,
			key:       "KEY2",
			wantValue: `bar`,
		},
		{
			name: "empty value",
			envContent: `KEY1='foo'
KEY2=''
KEY3='bar'
`,
			key:       "KEY2",
			wantValue: ``,
		},
		{
			name: "key is empty (should error)",
			envContent: `='foo'
KEY2='bar'
`,
			key:         "KEY2",
			wantErr:     true,
			errContains: "invalid environment variable format",
		},
		{
			name: "multiple = in value",
			envContent: `KEY1='foo=bar=baz'
KEY2='bar'
`,
			key:       "KEY1",
			wantValue: `foo=bar=baz`,
		},
		{
			name: "comment after key value pair",
			envContent: `KEY1='foo'
KEY2='bar' # comment
`,
			key:       "KEY2",
			wantValue: `bar`,
		},
		{
			name: "missing key triggers error with line number",
			envContent: `='foo'
KEY2='bar'`,
			key:         "KEY2",
			wantErr:     true,
			errContains: "at line 1",
		},
		{
			name: "value contains $VAR, should not expand",
			envContent: `KEY1='$VAR'
KEY2='bar'`,
			key:       "KEY1",
			wantValue: `$VAR`,
		},
		{
			name: "value contains ${VAR}, should not expand",
			envContent: `KEY1='${VAR}'
KEY2='bar'`,
			key:       "KEY1",
			wantValue: `${VAR}`,
		},
		{
			name: "value contains $HOME, should not expand",
			envContent: `KEY1='$HOME'
KEY2='bar'`,
			key:       "KEY1",
			wantValue: `$HOME`,
		},
		{
			name: "value contains mixed shell variable syntax, should not expand",
			envContent: `KEY1='foo$BAR-${HOME}_$'
KEY2='bar'`,
			key:       "KEY1",
			wantValue: `foo$BAR-${HOME}_$`,
		},
		{
			name: "invalid line triggers error with line number",
			envContent: `KEY1='foo'
INVALID_LINE
KEY2='bar'
`,
			key:         "KEY2",
			wantErr:     true,
			errContains: "at line 2",
		},
		{
			name: "unquoted value triggers error",
			envContent: `KEY1='foo'
KEY2=bar
KEY3='baz'
`,
			key:         "KEY2",
			wantErr:     true,
			errContains: "value must be enclosed in single quotes",
		},
		{
			name: "double quoted value triggers error",
			envContent: `KEY1='foo'
KEY2="bar"
KEY3='baz'
`,
			key:         "KEY2",
			wantErr:     true,
			errContains: "value must be enclosed in single quotes",
		},
		{
			name:        "value with multiple adjacent quoted strings",
			envContent:  `KEY1='foo''bar'`,
			key:         "KEY1",
			wantErr:     true,
			errContains: `unexpected content after closing quote`,
		},
		{
			name: "unclosed single quote triggers error",
			envContent: `KEY1='foo'
KEY2='bar
KEY3='baz'
`,
			key:         "KEY2",
			wantErr:     true,
			errContains: "unexpected content after closing quote",
		},
		{
			name: "content after closing quote triggers error",
			envContent: `KEY1='foo'
KEY2='bar'baz
KEY3='baz'
`,
			key:         "KEY2",
			wantErr:     true,
			errContains: "unexpected content after closing quote",
		},
		{
			name: "empty quotes preserve literal content",
			envContent: `KEY1=''
KEY2='   '
KEY3='bar'
`,
			key:       "KEY1",
			wantValue: ``,
		},
		{
			name: "quotes preserve all literal content including spaces",
			envContent: `KEY1='  foo  bar  '
KEY2='bar'
`,
			key:       "KEY1",
			wantValue: `  foo  bar  `,
		},
		{
			name: "special characters in value",
			envContent: `KEY1='!@#$%^&*()_+-=[]{}|;:,.<>?/'
KEY2='bar'
`,
			key:       "KEY1",
			wantValue: `!@#$%^&*()_+-=[]{}|;:,.<>?/`,
		},
		{
			name: "newlines and tabs in value",
			envContent: `KEY1='line1\nline2\tline3'
KEY2='bar'
`,
			key:       "KEY1",
			wantValue: `line1\nline2\tline3`,
		},
		{
			name: "unicode characters in value",
			envContent: `KEY1='中文 Español Français 🌍'
KEY2='bar'
`,
			key:       "KEY1",
			wantValue: `中文 Español Français 🌍`,
		},
		{
			name: "backslashes in value",
			envContent: `KEY1='path\\to\\file'
KEY2='bar'
`,
			key:       "KEY1",
			wantValue: `path\\to\\file`,
		},
		{
			name: "single quotes within value quotes",
			envContent: `KEY1='value with \'nested\' quotes'
KEY2='bar'
`,
			key:         "KEY1",
			wantErr:     true,
			errContains: "unexpected content after closing quote",
		},
		{
			name: "double quotes within value quotes",
			envContent: `KEY1='value with "nested" quotes'
KEY2='bar'
`,
			key:       "KEY1",
			wantErr:   false,
			wantValue: `value with "nested" quotes`,
		},
		{
			name: "empty single quotes",
			envContent: `KEY1=''
KEY2=''
KEY3='bar'
`,
			key:       "KEY2",
			wantValue: ``,
		},
		{
			name: "only whitespace in quotes",
			envContent: `KEY1='   '
KEY2='\t\n'
KEY3='bar'
`,
			key:       "KEY1",
			wantValue: "   ",
		},
		{
			name: "complex JSON-like value",
			envContent: `KEY1='{"name": "test", "value": 123, "nested": {"key": "val"}}'
KEY2='bar'
`,
			key:       "KEY1",
			wantValue: `{"name": "test", "value": 123, "nested": {"key": "val"}}`,
		},
		{
			name: "URL with special characters",
			envContent: `KEY1='https://example.com/path?query=value&another=param'
KEY2='bar'
`,
			key:       "KEY1",
			wantValue: `https://example.com/path?query=value&another=param`,
		},
		{
			name: "XML-like content",
			envContent: `KEY1='<root><element attr="value">content</element></root>'
KEY2='bar'
`,
			key:       "KEY1",
			wantValue: `<root><element attr="value">content</element></root>`,
		},
		{
			name: "base64 encoded data",
			envContent: `KEY1='SGVsbG8gV29ybGQh'
KEY2='bar'
`,
			key:       "KEY1",
			wantValue: `SGVsbG8gV29ybGQh`,
		},
		{
			name: "regex pattern",
			envContent: `KEY1='^[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\\.[a-zA-Z]{2,}$'
KEY2='bar'
`,
			key:       "KEY1",
			wantValue: `^[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\\.[a-zA-Z]{2,}$`,
		},
		{
			name: "multi-line value with spaces",
			envContent: `KEY1='line one
  line two with spaces
    line three with more spaces'
KEY2='bar'
`,
			key: "KEY1",
			wantValue: `line one
  line two with spaces
    line three with more spaces`,
		},
		{
			name: "multi-line value with special characters",
			envContent: `KEY1='line1: !@#$%^&*()
line2: []{}|;:,.<>?/
line3: \\\\tabs\\nnewlines'
KEY2='bar'
`,
			key: "KEY1",
			wantValue: `line1: !@#$%^&*()
line2: []{}|;:,.<>?/
line3: \\\\tabs\\nnewlines`,
		},
		{
			name: "multi-line value with mixed content",
			envContent: `KEY1='First line
Second line with $VAR and ${HOME}
Third line with spaces    and    tabs\\t
Fourth line with special chars: !@#$%^&*()_+'
KEY2='bar'
`,
			key: "KEY1",
			wantValue: `First line
Second line with $VAR and ${HOME}
Third line with spaces    and    tabs\\t
Fourth line with special chars: !@#$%^&*()_+`,
		},
		{
			name: "multi-line value with empty lines",
			envContent: `KEY1='line1

line3 after empty line

line5 after another empty'
KEY2='bar'
`,
			key: "KEY1",
			wantValue: `line1

line3 after empty line

line5 after another empty`,
		},
		{
			name: "multi-line value with trailing spaces",
			envContent: `KEY1='line1
line2 with trailing spaces
line3   '
KEY2='bar'
`,
			key: "KEY1",
			wantValue: `line1
line2 with trailing spaces
line3   `,
		},
		{
			name: "multi-line value with unicode characters",
			envContent: `KEY1='中文 第一行
English second line
Français troisième ligne 🌍
Русский четвертая строка'
KEY2='bar'
`,
			key: "KEY1",
			wantValue: `中文 第一行
English second line
Français troisième ligne 🌍
Русский четвертая строка`,
		},
		{
			name: "multi-line value with code-like content",
			envContent: `KEY1='func main() {
    fmt.Println(\"Hello, World!\")
    for i := 0; i < 10; i++ {
        fmt.Printf(\"i=%d\\n\", i)
    }
}'
KEY2='bar'
`,
			key: "KEY1",
			wantValue: `func main() {
    fmt.Println(\"Hello, World!\")
    for i := 0; i < 10; i++ {
        fmt.Printf(\"i=%d\\n\", i)
    }
}`,
		},
		{
			name: "multi-line value with JSON content",
			envContent: `KEY1='{
  "name": "test",
  "value": 123,
  "nested": {
    "key": "val",
    "array": [1, 2, 3]
  }
}'
KEY2='bar'
`,
			key: "KEY1",
			wantValue: `{
  "name": "test",
  "value": 123,
  "nested": {
    "key": "val",
    "array": [1, 2, 3]
  }
}`,
		},
		{
			name: "multi-line value with YAML content",
			envContent: `KEY1='name: test
value: 123
nested:
  key: val
  array:
    - 1
    - 2
    - 3'
KEY2='bar'
`,
			key: "KEY1",
			wantValue: `name: test
value: 123
nested:
  key: val
  array:
    - 1
    - 2
    - 3`,
		},
		{
			name: "multi-line value with Cert",
			envContent: `KEY1='-----BEGIN OPENSSH PRIVATE KEY-----
b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQSSSSSSSSSSSSSBlwAAAAdzc2gtcn
NhAAAAAwEAAQAAAYEAyUgx65kBQf/Nl+EcOFkP8q7n7FDetNrH7WYAnpYnaWG8w4rA9ht9
upttTNyRbCVpb32f5m8DFvVug0vAa/ksX8iSKzD53bWTuTQiN/i9Q/iG0eCNPR0KoW/gLV
SS9pIWWVYNav6dBjknR85202+YryJkn8THAf8Kg5Lwl0dom41dZvN1DirbcqWOU1BKG2sl
pFIq8BdXedRjwoNYngMvLBOb4CAfvQyKr1+ARQecqzPn4pTovYtIZRasIgrBOpSpHGZa70
pTAVP5+KGXN5DigjQUWaje1AiEx5zk8J3T5AA0abSaNn0uE53tjgalTzcY9kxHdo2rgHJC
huHhWsWslkcntkKp0V1Jc8oGv86Dp5mPhpfpMOK+vCe2TrS/saes9fNVxjorSpLl4xTU/V
-----END OPENSSH PRIVATE KEY-----'
KEY2='bar'
`,
			key: "KEY1",
			wantValue: `-----BEGIN OPENSSH PRIVATE KEY-----
b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQSSSSSSSSSSSSSBlwAAAAdzc2gtcn
NhAAAAAwEAAQAAAYEAyUgx65kBQf/Nl+EcOFkP8q7n7FDetNrH7WYAnpYnaWG8w4rA9ht9
upttTNyRbCVpb32f5m8DFvVug0vAa/ksX8iSKzD53bWTuTQiN/i9Q/iG0eCNPR0KoW/gLV
SS9pIWWVYNav6dBjknR85202+YryJkn8THAf8Kg5Lwl0dom41dZvN1DirbcqWOU1BKG2sl
pFIq8BdXedRjwoNYngMvLBOb4CAfvQyKr1+ARQecqzPn4pTovYtIZRasIgrBOpSpHGZa70
pTAVP5+KGXN5DigjQUWaje1AiEx5zk8J3T5AA0abSaNn0uE53tjgalTzcY9kxHdo2rgHJC
huHhWsWslkcntkKp0V1Jc8oGv86Dp5mPhpfpMOK+vCe2TrS/saes9fNVxjorSpLl4xTU/V
-----END OPENSSH PRIVATE KEY-----`,
		},
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
