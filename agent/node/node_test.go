package node

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/minikubelet/minikubelet/agent/eviction"
)

// fakeHost is a host with cpus CPUs and the given /proc/meminfo content.
func fakeHost(cpus int, meminfo string) Host {
	return Host{
		NumCPU:  func() int { return cpus },
		Meminfo: func() ([]byte, error) { return []byte(meminfo), nil },
	}
}

// meminfo4G is the head of a /proc/meminfo of a 4 GiB machine.
const meminfo4G = "MemTotal:        4194304 kB\nMemFree:         1000000 kB\nMemAvailable:    2000000 kB\n"

func TestDetectNode(t *testing.T) {
	rl := func(s string) v1.ResourceList {
		l, err := ParseResourceList(s)
		require.NoError(t, err)
		return l
	}
	tests := []struct {
		name           string
		kube, system   v1.ResourceList
		wantCPU        string // allocatable
		wantMemory     string
		wantErrContain string
	}{
		{name: "no reservation", wantCPU: "2", wantMemory: "4Gi"},
		{name: "kube and system reserved add up", kube: rl("cpu=100m,memory=256Mi"), system: rl("cpu=400m,memory=768Mi"), wantCPU: "1500m", wantMemory: "3Gi"},
		{name: "reserving everything leaves zero", kube: rl("cpu=1"), system: rl("cpu=1,memory=4Gi"), wantCPU: "0", wantMemory: "0"},
		{name: "reserving more than the capacity is refused", kube: rl("memory=3Gi"), system: rl("memory=2Gi"),
			wantErrContain: `resource "memory" has a reservation of 5Gi but a capacity of 4Gi`},
		{name: "only cpu and memory", kube: v1.ResourceList{v1.ResourcePods: resource.MustParse("1")}, wantErrContain: `cannot reserve "pods"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, err := DetectOn(fakeHost(2, meminfo4G), "node1", map[string]string{"disk": "ssd"}, tc.kube, tc.system, nil)
			if tc.wantErrContain != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErrContain)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, "node1", n.Name)
			assert.Equal(t, int64(2000), n.Capacity.Cpu().MilliValue())
			assert.Equal(t, int64(4<<30), n.Capacity.Memory().Value())
			assert.Equal(t, int64(110), n.Capacity.Pods().Value())
			assert.Equal(t, int64(110), n.Allocatable.Pods().Value())
			wantCPU, wantMem := resource.MustParse(tc.wantCPU), resource.MustParse(tc.wantMemory)
			assert.Equal(t, wantCPU.MilliValue(), n.Allocatable.Cpu().MilliValue())
			assert.Equal(t, wantMem.Value(), n.Allocatable.Memory().Value())
			for _, q := range n.Allocatable {
				assert.GreaterOrEqual(t, q.Sign(), 0)
			}
		})
	}
}

func TestDetectNode_Labels(t *testing.T) {
	n, err := DetectOn(fakeHost(1, meminfo4G), "node1", map[string]string{"disk": "ssd", v1.LabelHostname: "other"}, nil, nil, nil)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{
		// --node-labels win over the defaults, as in the kubelet.
		v1.LabelHostname:   "other",
		v1.LabelOSStable:   runtime.GOOS,
		v1.LabelArchStable: runtime.GOARCH,
		"disk":             "ssd",
	}, n.Labels)

	n, err = DetectOn(fakeHost(1, meminfo4G), "node1", nil, nil, nil, nil)
	require.NoError(t, err)
	assert.Equal(t, "node1", n.Labels[v1.LabelHostname])
}

func TestDetectNode_Errors(t *testing.T) {
	_, err := DetectOn(fakeHost(1, meminfo4G), "Bad_Name", nil, nil, nil, nil)
	assert.ErrorContains(t, err, `node name "Bad_Name"`)

	_, err = DetectOn(fakeHost(1, meminfo4G), strings.Repeat("a", 64), nil, nil, nil, nil)
	assert.ErrorContains(t, err, "as label kubernetes.io/hostname")

	_, err = DetectOn(fakeHost(0, meminfo4G), "node1", nil, nil, nil, nil)
	assert.ErrorContains(t, err, "cpus")

	_, err = DetectOn(fakeHost(1, "MemFree: 1 kB\n"), "node1", nil, nil, nil, nil)
	assert.ErrorContains(t, err, "no MemTotal")

	broken := fakeHost(1, "")
	broken.Meminfo = func() ([]byte, error) { return nil, errors.New("no proc") }
	_, err = DetectOn(broken, "node1", nil, nil, nil, nil)
	assert.ErrorContains(t, err, "detect node memory: no proc")
}

func TestParseMemTotal(t *testing.T) {
	tests := []struct {
		name, in string
		want     int64
		wantErr  bool
	}{
		{"kB", "MemTotal:       24592492 kB\n", 24592492 * 1024, false},
		{"not first", "Foo: 1 kB\nMemTotal: 2 kB\n", 2048, false},
		{"no unit", "MemTotal: 1000\n", 1000, false},
		{"missing", "MemFree: 1 kB\n", 0, true},
		{"garbage", "MemTotal: lots kB\n", 0, true},
		{"unknown unit", "MemTotal: 1 MB\n", 0, true},
		{"empty value", "MemTotal:\n", 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseMemTotal(strings.NewReader(tc.in))
			if tc.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestDetectNode_EphemeralStorage: with a Storage the node's
// ephemeral-storage capacity is the size of the root dir's filesystem, and
// allocatable takes off the reservations and the hard nodefs.available
// threshold (the kubelet's hardEvictionReservation); soft thresholds and
// other signals take nothing.
func TestDetectNode_EphemeralStorage(t *testing.T) {
	const size = int64(100 << 30)
	thresholds := func(hard, soft, grace string) []eviction.Threshold {
		ths, err := eviction.ParseThresholds(hard, soft, grace)
		require.NoError(t, err)
		return ths
	}
	tests := []struct {
		name           string
		kube, system   string
		thresholds     []eviction.Threshold
		want           int64
		wantErrContain string
	}{
		{name: "no threshold, no reservation", want: size},
		{name: "default hard thresholds: 10% of nodefs", thresholds: thresholds(eviction.DefaultEvictionHard, "", ""), want: size - size/10},
		{name: "a quantity", thresholds: thresholds("nodefs.available<1Gi,imagefs.available<50%", "", ""), want: size - 1<<30},
		{name: "soft threshold reserves nothing", thresholds: thresholds("", "nodefs.available<50%", "nodefs.available=1m"), want: size},
		{name: "reservations and threshold add up", kube: "ephemeral-storage=10Gi", system: "ephemeral-storage=5Gi",
			thresholds: thresholds("nodefs.available<10Gi", "", ""), want: size - 25<<30},
		{name: "more than the disk is refused", kube: "ephemeral-storage=95Gi", thresholds: thresholds("nodefs.available<10Gi", "", ""),
			wantErrContain: `resource "ephemeral-storage" has a reservation of 105Gi but a capacity of 100Gi`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kube, err := ParseResourceList(tc.kube)
			require.NoError(t, err)
			system, err := ParseResourceList(tc.system)
			require.NoError(t, err)
			host := fakeHost(2, meminfo4G)
			var asked string
			host.FsSize = func(path string) (int64, error) { asked = path; return size, nil }
			n, err := DetectOn(host, "node1", nil, kube, system, &Storage{RootDir: "/var/lib/mk", Thresholds: tc.thresholds})
			if tc.wantErrContain != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErrContain)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, "/var/lib/mk", asked)
			assert.Equal(t, size, n.Capacity.StorageEphemeral().Value())
			assert.Equal(t, tc.want, n.Allocatable.StorageEphemeral().Value())
			assert.Equal(t, int64(4<<30), n.Allocatable.Memory().Value(), "memory keeps no eviction reserve")
		})
	}

	// Without a Storage: no ephemeral-storage, and reserving it is
	// refused rather than dropped.
	n, err := DetectOn(fakeHost(2, meminfo4G), "node1", nil, nil, nil, nil)
	require.NoError(t, err)
	_, ok := n.Capacity[v1.ResourceEphemeralStorage]
	assert.False(t, ok)
	_, err = DetectOn(fakeHost(2, meminfo4G), "node1", nil, v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("1Gi")}, nil, nil)
	require.ErrorContains(t, err, `cannot reserve "ephemeral-storage": the node's capacity of it is unknown`)

	// A root dir that cannot be measured is an error naming it.
	host := fakeHost(2, meminfo4G)
	host.FsSize = func(string) (int64, error) { return 0, errors.New("permission denied") }
	_, err = DetectOn(host, "node1", nil, nil, nil, &Storage{RootDir: "/var/lib/mk"})
	require.ErrorContains(t, err, "detect node ephemeral-storage of root dir /var/lib/mk: permission denied")
}

// TestFsSize_MissingRootDir: a root dir that does not exist yet is
// measured on its nearest existing parent (the filesystem it will be
// created on). t.TempDir is the test's own, not host state.
func TestFsSize_MissingRootDir(t *testing.T) {
	dir := t.TempDir()
	want, err := fsSize(dir)
	require.NoError(t, err)
	require.Positive(t, want)
	got, err := fsSize(filepath.Join(dir, "not", "yet"))
	require.NoError(t, err)
	assert.Equal(t, want, got)
}

func TestParseResourceList(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    map[v1.ResourceName]string
		wantErr string
	}{
		{name: "empty", in: "", want: map[v1.ResourceName]string{}},
		{name: "cpu and memory", in: "cpu=100m,memory=256Mi", want: map[v1.ResourceName]string{"cpu": "100m", "memory": "256Mi"}},
		{name: "spaces and trailing comma", in: " cpu = 1 , memory=1G,", want: map[v1.ResourceName]string{"cpu": "1", "memory": "1G"}},
		{name: "no equals", in: "cpu=1,memory", wantErr: `"memory": want key=value`},
		{name: "empty key", in: "=1", wantErr: `"=1": want key=value`},
		{name: "bad quantity", in: "cpu=1,memory=lots", wantErr: `"memory=lots": quantities must match`},
		{name: "negative", in: "cpu=-1", wantErr: `"cpu=-1": quantity must not be negative`},
		{name: "duplicate", in: "cpu=1,cpu=2", wantErr: `"cpu=2": cpu given twice`},
		{name: "ephemeral-storage", in: "ephemeral-storage=1Gi", want: map[v1.ResourceName]string{"ephemeral-storage": "1Gi"}},
		{name: "unsupported resource", in: "hugepages-2Mi=2Mi", wantErr: `"hugepages-2Mi=2Mi": cannot reserve "hugepages-2Mi"`},
		{name: "pid", in: "pid=100", wantErr: `"pid=100": cannot reserve "pid"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseResourceList(tc.in)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Len(t, got, len(tc.want))
			for name, q := range tc.want {
				want, have := resource.MustParse(q), got[name]
				assert.Equal(t, 0, want.Cmp(have), "%s: got %s want %s", name, have.String(), q)
			}
		})
	}
}

func TestParseLabels(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    map[string]string
		wantErr string
	}{
		{name: "empty", in: "", want: map[string]string{}},
		{name: "two", in: "disk=ssd,zone=a", want: map[string]string{"disk": "ssd", "zone": "a"}},
		{name: "prefixed key and empty value", in: "example.com/tier=,b=c", want: map[string]string{"example.com/tier": "", "b": "c"}},
		{name: "allowed kubernetes.io labels", in: "topology.kubernetes.io/zone=z1,node.kubernetes.io/pool=p,x.kubelet.kubernetes.io/y=1",
			want: map[string]string{"topology.kubernetes.io/zone": "z1", "node.kubernetes.io/pool": "p", "x.kubelet.kubernetes.io/y": "1"}},
		{name: "no equals", in: "disk", wantErr: `"disk": want key=value`},
		{name: "bad key", in: "disk=ssd,-bad=x", wantErr: `"-bad=x": invalid label key`},
		{name: "bad value", in: "disk=not ok", wantErr: `"disk=not ok": invalid label value`},
		{name: "value too long", in: "disk=" + strings.Repeat("x", 64), wantErr: "invalid label value"},
		{name: "duplicate", in: "a=1,a=2", wantErr: `"a=2": a given twice`},
		{name: "node-role is not the kubelet's to set", in: "node-role.kubernetes.io/master=", wantErr: `"node-role.kubernetes.io/master=": a node label in the kubernetes.io or k8s.io namespaces`},
		{name: "k8s.io", in: "foo.k8s.io/bar=1", wantErr: "a node label in the kubernetes.io or k8s.io namespaces"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseLabels(tc.in)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// MeminfoField and MeminfoFile: the one reader of meminfo, from a path
// the caller gives (never the host's in a test).
func TestMeminfo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meminfo")
	require.NoError(t, os.WriteFile(path, []byte(meminfo4G+"Bogus:\nHugePages_Total:       3\n"), 0o644))
	b, err := MeminfoFile(path)()
	require.NoError(t, err)
	assert.Equal(t, int64(4194304*1024), MeminfoField(b, "MemTotal"))
	assert.Equal(t, int64(1000000*1024), MeminfoField(b, "MemFree"))
	assert.Equal(t, int64(3), MeminfoField(b, "HugePages_Total"), "no unit: a count")
	assert.Zero(t, MeminfoField(b, "Bogus"), "malformed")
	assert.Zero(t, MeminfoField(b, "SwapTotal"), "absent")
	n, ok := MeminfoValue(b, "MemFree")
	assert.Equal(t, []any{int64(1000000 * 1024), true}, []any{n, ok})
	_, ok = MeminfoValue(b, "Bogus")
	assert.False(t, ok, "malformed")
	_, ok = MeminfoValue(b, "SwapTotal")
	assert.False(t, ok, "absent")
	_, err = MeminfoFile(filepath.Join(t.TempDir(), "none"))()
	require.Error(t, err)
}
