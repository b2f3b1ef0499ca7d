package decodeerr

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestProblem(t *testing.T) {
	tests := []struct {
		name, data string
		item       *field.Path
		want       string
	}{
		{
			name: "type error gets list indexes",
			data: `{"spec":{"containers":[{"name":"a"},{"name":"b","ports":[{"containerPort":1},{"containerPort":"80"}]}]}}`,
			want: `spec.containers[1].ports[1].containerPort: Invalid type: got string, expected int32`,
		},
		{
			name: "a type's own UnmarshalJSON error gets its path and value",
			data: `{"spec":{"containers":[{"resources":{"limits":{"cpu":"1","memory":"lots"}}}]}}`,
			want: `spec.containers[0].resources.limits[memory]: Invalid value: "lots": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`,
		},
		{
			name: "a List item prefixes the path",
			data: `{"metadata":{"creationTimestamp":"yesterday"}}`,
			item: field.NewPath("items").Index(2),
			want: `items[2].metadata.creationTimestamp: Invalid value: "yesterday": parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006"`,
		},
		{
			name: "an object expected",
			data: `{"spec":{"containers":{"a":1}}}`,
			want: `spec.containers: Invalid type: got object, expected array`,
		},
		{
			name: "a syntax error has its offset",
			data: `{"spec":}`,
			want: `invalid character '}' looking for beginning of value (at byte 9)`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := UnmarshalStrict([]byte(tc.data), &v1.Pod{})
			require.Error(t, err)
			assert.Equal(t, tc.want, Problem([]byte(tc.data), reflect.TypeFor[v1.Pod](), tc.item, err))
		})
	}
}

func TestProblem_TruncatesTheValue(t *testing.T) {
	data, err := json.Marshal(map[string]any{"metadata": map[string]any{"creationTimestamp": strings.Repeat("é", 1000)}})
	require.NoError(t, err)
	err = UnmarshalStrict(data, &v1.Pod{})
	require.Error(t, err)
	got := Problem(data, reflect.TypeFor[v1.Pod](), nil, err)
	assert.Contains(t, got, `é... (2000 bytes)"`)
	assert.Less(t, len(got), 1024, "value and message are both truncated")
}

func TestTruncateValue(t *testing.T) {
	assert.Equal(t, "short", TruncateValue("short"))
	long := strings.Repeat("a", MaxBadValueBytes-1) + "€€" // the cut falls inside a rune
	got := TruncateValue(long)
	assert.Equal(t, strings.Repeat("a", MaxBadValueBytes-1)+"... (261 bytes)", got)
}

func TestLocateYAML(t *testing.T) {
	chunk := []byte("# comment\n\napiVersion: v1\nkind: Pod\nmetadata:\n  name: a\x07b\n  labels: *nowhere\n")
	tests := []struct{ msg, want string }{
		{"yaml: line 3: did not find expected key", "yaml: line 3: did not find expected key"},
		{"yaml: control characters are not allowed", "yaml: line 16: control characters are not allowed"},
		{"yaml: unknown anchor 'nowhere' referenced", "yaml: line 17: unknown anchor 'nowhere' referenced"},
		{"yaml: found unexpected end of stream", "yaml: line 17: found unexpected end of stream"},
		{"yaml: document contains excessive aliasing", "yaml: in the document starting at line 13: document contains excessive aliasing"},
	}
	for _, tc := range tests {
		t.Run(tc.msg, func(t *testing.T) {
			// The chunk is the second document: it starts at line 11 (0-based 10).
			assert.Equal(t, tc.want, LocateYAML(tc.msg, chunk, 10))
		})
	}
	bad := []byte("a: b\nc: \xff\n")
	assert.Equal(t, "yaml: line 2: invalid leading UTF-8 octet", LocateYAML("yaml: invalid leading UTF-8 octet", bad, 0))
}
