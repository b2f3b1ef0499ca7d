package cluster

import (
	"errors"
	"io/fs"
	"net/netip"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
)

// fakeHost is a host whose files, interfaces and file system are given.
type fakeHost struct {
	files  map[string]string
	ifaces map[string][]netip.Prefix
	order  []string // interface order for allAddrs
	fs     fsStats
	fsErr  error
}

func (f *fakeHost) host() host {
	return host{
		readFile: func(name string) ([]byte, error) {
			s, ok := f.files[name]
			if !ok {
				return nil, fs.ErrNotExist
			}
			return []byte(s), nil
		},
		interfaceAddrs: func(name string) ([]netip.Prefix, error) {
			ps, ok := f.ifaces[name]
			if !ok {
				return nil, errors.New("no such interface")
			}
			return ps, nil
		},
		allAddrs: func() ([]ifaceAddr, error) {
			var out []ifaceAddr
			for _, n := range f.order {
				for _, p := range f.ifaces[n] {
					out = append(out, ifaceAddr{iface: n, addr: p})
				}
			}
			return out, nil
		},
		statfs: func(string) (fsStats, error) { return f.fs, f.fsErr },
	}
}

// routeTable is a /proc/net/route with a default route via eth1 (metric
// 100), another via eth0 with a worse metric, and a link route.
const routeTable = `Iface	Destination	Gateway 	Flags	RefCnt	Use	Metric	Mask		MTU	Window	IRTT
eth0	00000000	0100000A	0003	0	0	200	00000000	0	0	0
eth1	00000000	010011AC	0003	0	0	100	00000000	0	0	0
eth1	000011AC	00000000	0001	0	0	100	0000FFFF	0	0	0
`

// newFakeHost is a machine with loopback, eth0 (10.0.0.5) and eth1
// (172.17.0.9, IPv6 too), default route via eth1.
func newFakeHost() *fakeHost {
	return &fakeHost{
		files: map[string]string{
			"/proc/net/route":                 routeTable,
			"/etc/machine-id":                 "0123456789abcdef\n",
			"/sys/class/dmi/id/product_uuid":  "ABCDEF01-2345\n",
			"/proc/sys/kernel/random/boot_id": "b00t-1d\n",
			"/proc/sys/kernel/osrelease":      "6.1.0-test-amd64\n",
			"/etc/os-release":                 "NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\n",
			"/proc/meminfo":                   "MemTotal:  4194304 kB\nMemAvailable:    2000000 kB\n",
			"/proc/loadavg":                   "0.10 0.20 0.30 2/345 999\n",
			"/proc/sys/kernel/pid_max":        "4194304\n",
		},
		ifaces: map[string][]netip.Prefix{
			"lo":   {netip.MustParsePrefix("127.0.0.1/8")},
			"eth0": {netip.MustParsePrefix("10.0.0.5/24")},
			"eth1": {netip.MustParsePrefix("fe80::1/64"), netip.MustParsePrefix("172.17.0.9/16")},
		},
		order: []string{"lo", "eth0", "eth1"},
		fs:    fsStats{availBytes: 50 << 30, totalBytes: 100 << 30, freeInodes: 900, totalInodes: 1000},
	}
}

func TestDefaultRouteInterface(t *testing.T) {
	tests := []struct {
		name, table, want string
	}{
		{name: "lowest metric wins", table: routeTable, want: "eth1"},
		{name: "no default route", table: "Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\n" +
			"eth1\t000011AC\t00000000\t0001\t0\t0\t100\t0000FFFF\n", want: ""},
		{name: "a default route that is down is skipped", table: "Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\n" +
			"eth9\t00000000\t0100000A\t0002\t0\t0\t0\t00000000\n" +
			"eth0\t00000000\t0100000A\t0003\t0\t0\t500\t00000000\n", want: "eth0"},
		{name: "garbage", table: "not a table\nx y z\n", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, defaultRouteInterface([]byte(tt.table)))
		})
	}
}

func TestHostAddresses(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*fakeHost)
		nodeIP  string
		want    string
		wantErr string
	}{
		{name: "the default route's interface", want: "172.17.0.9"},
		{name: "--node-ip wins", nodeIP: "192.0.2.7", want: "192.0.2.7"},
		{name: "--node-ip must be an IP", nodeIP: "node.example", wantErr: `node IP "node.example": not an IP address`},
		{name: "no routing table: first usable interface", mutate: func(f *fakeHost) { delete(f.files, "/proc/net/route") }, want: "10.0.0.5"},
		{name: "the default interface has no IPv4", mutate: func(f *fakeHost) {
			f.ifaces["eth1"] = []netip.Prefix{netip.MustParsePrefix("fe80::1/64")}
		}, want: "10.0.0.5"},
		{name: "only loopback", mutate: func(f *fakeHost) {
			delete(f.files, "/proc/net/route")
			f.order = []string{"lo"}
		}, wantErr: "--node-ip"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeHost()
			if tt.mutate != nil {
				tt.mutate(f)
			}
			got, err := f.host().addresses(tt.nodeIP, "node-a")
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, []v1.NodeAddress{
				{Type: v1.NodeInternalIP, Address: tt.want},
				{Type: v1.NodeHostName, Address: "node-a"},
			}, got)
		})
	}
}

func TestHostSystemInfo(t *testing.T) {
	got := newFakeHost().host().systemInfo("containerd", "1.6.20~ds1", "v0.1.0-dev")
	require.Equal(t, v1.NodeSystemInfo{
		MachineID:               "0123456789abcdef",
		SystemUUID:              "abcdef01-2345",
		BootID:                  "b00t-1d",
		KernelVersion:           "6.1.0-test-amd64",
		OSImage:                 "Debian GNU/Linux 12 (bookworm)",
		ContainerRuntimeVersion: "containerd://1.6.20~ds1",
		KubeletVersion:          "v0.1.0-dev",
		OperatingSystem:         runtime.GOOS,
		Architecture:            runtime.GOARCH,
	}, got)

	// A machine without DMI or os-release: those fields stay empty, the
	// OS image is the kernel's name, and the machine ID has a fallback.
	f := newFakeHost()
	delete(f.files, "/sys/class/dmi/id/product_uuid")
	delete(f.files, "/etc/os-release")
	delete(f.files, "/etc/machine-id")
	f.files["/var/lib/dbus/machine-id"] = "dbus-id\n"
	got = f.host().systemInfo("", "", "v1")
	require.Empty(t, got.SystemUUID)
	require.Equal(t, "Linux", got.OSImage)
	require.Equal(t, "dbus-id", got.MachineID)
	require.Empty(t, got.ContainerRuntimeVersion)
}

func TestOSReleaseField(t *testing.T) {
	data := []byte("NAME=Debian\nPRETTY_NAME='Alpine Linux v3.20'\nVERSION=\"12 (bookworm)\"\n")
	require.Equal(t, "Debian", osReleaseField(data, "NAME"))
	require.Equal(t, "Alpine Linux v3.20", osReleaseField(data, "PRETTY_NAME"))
	require.Equal(t, "12 (bookworm)", osReleaseField(data, "VERSION"))
	require.Empty(t, osReleaseField(data, "ID"))
}

func TestHostRead(t *testing.T) {
	f := newFakeHost()
	r := f.host().read("/var/lib/minikubelet")
	require.Equal(t, readings{
		memAvailable: 2000000 * 1024, memKnown: true,
		fs: f.fs, fsKnown: true,
		pidsUsed: 345, pidMax: 4194304, pidKnown: true,
	}, r)

	// Failed readings are unknown, not zero (zero would be pressure).
	f.files["/proc/meminfo"] = "MemTotal: 1 kB\n"
	f.files["/proc/loadavg"] = "0.1 0.2\n"
	f.fsErr = errors.New("statfs: no such file")
	r = f.host().read("/nope")
	require.False(t, r.memKnown)
	require.False(t, r.fsKnown)
	require.False(t, r.pidKnown)
}
