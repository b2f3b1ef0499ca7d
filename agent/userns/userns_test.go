package userns

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestConfigDefaultsAndValidate(t *testing.T) {
	def := Config{}.WithDefaults()
	assert.Equal(t, Config{IDsPerPod: 65536, FirstID: 65536, Length: 1<<32 - 65536}, def)
	require.NoError(t, def.Validate())
	assert.Equal(t, uint64(65535), def.slots())

	tests := map[string]struct {
		cfg  Config
		want string
	}{
		"kubelet default, 110 pods":  {Config{MaxPods: 110}, ""},
		"idsPerPod 131072":           {Config{IDsPerPod: 131072}, ""},
		"idsPerPod not a multiple":   {Config{IDsPerPod: 1000}, "user namespaces: IDs per pod 1000 is not a multiple of 65536"},
		"first ID not a multiple":    {Config{IDsPerPod: 131072, FirstID: 65536}, "user namespaces: first ID 65536 is not a multiple of the IDs per pod (131072)"},
		"length not a multiple":      {Config{FirstID: 65536, Length: 100000}, "user namespaces: pool length 100000 is not a multiple of the IDs per pod (65536)"},
		"pool past 2^32":             {Config{FirstID: 1 << 31, Length: 1 << 32}, "user namespaces: pool 2147483648+4294967296 goes past the last ID (2^32-1)"},
		"too small for the node":     {Config{Length: 10 * 65536, MaxPods: 110}, "user namespaces: a pool of 655360 IDs has ranges of 65536 for 10 pods, fewer than the node's 110 pods"},
		"exactly enough for 2 pods":  {Config{Length: 2 * 65536, MaxPods: 2}, ""},
		"first ID below IDs per pod": {Config{IDsPerPod: 131072, FirstID: 131072 * 0}, ""}, // 0 defaults to IDsPerPod
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := tc.cfg.WithDefaults().Validate()
			if tc.want == "" {
				assert.NoError(t, err)
			} else {
				assert.EqualError(t, err, tc.want)
			}
		})
	}
	// Host ID 0 may never be handed out, whatever the defaults make of 0.
	assert.EqualError(t, Config{IDsPerPod: 65536, FirstID: 0, Length: 65536}.Validate(),
		"user namespaces: first ID 0 must be at least the IDs per pod (65536)")
}

func TestPick(t *testing.T) {
	c := Config{Length: 4 * 65536}.WithDefaults() // ranges at 65536, 131072, 196608, 262144
	r := func(host uint32) Mapping { return Mapping{HostID: host, Length: 65536} }
	tests := map[string]struct {
		used []Mapping
		want uint32 // 0: the pool is full
	}{
		"empty pool: the first range, above the host's 0-65535": {nil, 65536},
		"first taken":                  {[]Mapping{r(65536)}, 131072},
		"a hole is reused":             {[]Mapping{r(65536), r(196608)}, 131072},
		"all but the last":             {[]Mapping{r(65536), r(131072), r(196608)}, 262144},
		"full":                         {[]Mapping{r(65536), r(131072), r(196608), r(262144)}, 0},
		"outside the pool counts not":  {[]Mapping{{HostID: 0, Length: 65536}, {HostID: 1 << 30, Length: 65536}}, 65536},
		"a wider range blocks two":     {[]Mapping{{HostID: 65536, Length: 131072}}, 196608},
		"an unaligned one blocks both": {[]Mapping{{HostID: 100000, Length: 65536}}, 196608},
		"the last ID of a range":       {[]Mapping{{HostID: 131071, Length: 1}}, 131072},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			m, ok := pick(c, tc.used)
			if tc.want == 0 {
				assert.False(t, ok, "got %+v", m)
				return
			}
			require.True(t, ok)
			assert.Equal(t, r(tc.want), m)
		})
	}
}

func TestParse(t *testing.T) {
	tests := map[string]struct {
		in   string
		want Mapping
		err  string
	}{
		"the kubelet's file": {
			in:   `{"uidMappings":[{"hostId":131072,"containerId":0,"length":65536}],"gidMappings":[{"hostId":131072,"containerId":0,"length":65536}]}`,
			want: Mapping{HostID: 131072, Length: 65536},
		},
		"not JSON":       {in: `{`, err: "invalid user namespace mappings file: unexpected end of JSON input"},
		"two uid ranges": {in: `{"uidMappings":[{"hostId":1,"length":1},{"hostId":2,"length":1}],"gidMappings":[{"hostId":1,"length":1}]}`, err: "invalid user namespace mappings file: exactly one uid mapping is allowed"},
		"gid differs":    {in: `{"uidMappings":[{"hostId":65536,"length":65536}],"gidMappings":[{"hostId":131072,"length":65536}]}`, err: "invalid user namespace mappings file: the gid mapping must be the uid mapping"},
		"root unmapped":  {in: `{"uidMappings":[{"hostId":65536,"containerId":1,"length":65536}],"gidMappings":[{"hostId":65536,"containerId":1,"length":65536}]}`, err: "invalid user namespace mappings file: ID 0 must be mapped"},
		"empty":          {in: `{"uidMappings":[{"hostId":65536}],"gidMappings":[{"hostId":65536}]}`, err: "invalid user namespace mappings file: empty mapping"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			m, err := parse([]byte(tc.in))
			if tc.err != "" {
				assert.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, m)
			assert.Equal(t, tc.want, must(parse(encode(m))), "encode and parse round trip")
		})
	}
}

func must(m Mapping, err error) Mapping {
	if err != nil {
		panic(err)
	}
	return m
}

func TestMappingCRI(t *testing.T) {
	got := Mapping{HostID: 196608, Length: 65536}.CRI()
	want := &runtimeapi.IDMapping{HostId: 196608, ContainerId: 0, Length: 65536}
	assert.Equal(t, runtimeapi.NamespaceMode_POD, got.Mode)
	require.Len(t, got.Uids, 1)
	require.Len(t, got.Gids, 1)
	assert.Equal(t, want.String(), got.Uids[0].String())
	assert.Equal(t, want.String(), got.Gids[0].String())
}

// TestAllocator runs the allocator on a pods directory of its own: ranges
// are recorded in each pod's directory, kept across a new allocator (a
// restarted agent), and free again once the pod's directory is gone.
func TestAllocator(t *testing.T) {
	pods := t.TempDir()
	a, err := New(Config{Length: 3 * 65536}, pods)
	require.NoError(t, err)

	got := map[types.UID]uint32{}
	for _, uid := range []types.UID{"a", "b", "c"} {
		m, err := a.Get(uid)
		require.NoError(t, err)
		assert.Equal(t, uint32(65536), m.Length)
		got[uid] = m.HostID
	}
	assert.Equal(t, map[types.UID]uint32{"a": 65536, "b": 131072, "c": 196608}, got)
	b, err := os.ReadFile(filepath.Join(pods, "b", MappingsFile))
	require.NoError(t, err)
	assert.JSONEq(t, `{"uidMappings":[{"hostId":131072,"containerId":0,"length":65536}],"gidMappings":[{"hostId":131072,"containerId":0,"length":65536}]}`, string(b))
	entries, err := os.ReadDir(filepath.Join(pods, "b"))
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file is left behind")

	_, err = a.Get("d")
	assert.EqualError(t, err, "no free user namespace range: all 3 ranges of 65536 IDs from 65536 are held by pods")

	// A restarted agent: the same pods keep their ranges.
	a2, err := New(Config{Length: 3 * 65536}, pods)
	require.NoError(t, err)
	for uid, host := range got {
		m, err := a2.Get(uid)
		require.NoError(t, err)
		assert.Equal(t, host, m.HostID, "pod %s", uid)
	}

	// Pod b is gone with its directory: its range is the next one given.
	require.NoError(t, os.RemoveAll(filepath.Join(pods, "b")))
	m, err := a2.Get("d")
	require.NoError(t, err)
	assert.Equal(t, uint32(131072), m.HostID)

	// Release frees a range before the directory goes.
	require.NoError(t, a2.Release("a"))
	m, err = a2.Get("e")
	require.NoError(t, err)
	assert.Equal(t, uint32(65536), m.HostID)
	require.NoError(t, a2.Release("never-allocated"))
}

// TestAllocatorRecordedMapping: a pod's recorded mapping is returned as is
// when it is a range of the pool, refused with what to do when the pool
// changed under it, and a broken file of another pod holds nothing.
func TestAllocatorRecordedMapping(t *testing.T) {
	pods := t.TempDir()
	write := func(uid, content string) {
		require.NoError(t, os.MkdirAll(filepath.Join(pods, uid), 0o750))
		require.NoError(t, os.WriteFile(filepath.Join(pods, uid, MappingsFile), []byte(content), 0o600))
	}
	write("old", string(encode(Mapping{HostID: 131072, Length: 65536})))
	write("wide", string(encode(Mapping{HostID: 262144, Length: 131072})))
	write("broken", `{"uidMappings":`)
	a, err := New(Config{}, pods)
	require.NoError(t, err)

	m, err := a.Get("old")
	require.NoError(t, err)
	assert.Equal(t, Mapping{HostID: 131072, Length: 65536}, m)

	_, err = a.Get("wide")
	assert.EqualError(t, err, filepath.Join(pods, "wide", MappingsFile)+": host IDs 262144+131072 are not a range of this node's pool (65535 ranges of 65536 from 65536): delete the pod and create it again")

	_, err = a.Get("broken")
	assert.ErrorContains(t, err, "invalid user namespace mappings file")

	// New pods go around both recorded ranges, the wider one included.
	var hosts []uint32
	for _, uid := range []types.UID{"n1", "n2", "n3"} {
		m, err := a.Get(uid)
		require.NoError(t, err)
		hosts = append(hosts, m.HostID)
	}
	assert.Equal(t, []uint32{65536, 196608, 393216}, hosts)
}

// TestAllocatorSymlinkedFile: a mappings file that is a symlink is not
// followed (the pod directory is the agent's, but safepath reads it).
func TestAllocatorSymlinkedFile(t *testing.T) {
	pods := t.TempDir()
	outside := filepath.Join(t.TempDir(), "elsewhere")
	require.NoError(t, os.WriteFile(outside, encode(Mapping{HostID: 65536, Length: 65536}), 0o600))
	require.NoError(t, os.MkdirAll(filepath.Join(pods, "p"), 0o750))
	require.NoError(t, os.Symlink(outside, filepath.Join(pods, "p", MappingsFile)))
	a, err := New(Config{}, pods)
	require.NoError(t, err)
	_, err = a.Get("p")
	assert.Error(t, err)
	// Nor does it hold the range it points at for another pod.
	m, err := a.Get("q")
	require.NoError(t, err)
	assert.Equal(t, uint32(65536), m.HostID)
}
