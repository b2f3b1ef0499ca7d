package cgroups

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestName_Paths(t *testing.T) {
	const uid = "5f1c2a9e-0d1b-4c3e-8f00-1234567890ab"
	tests := []struct {
		name      string
		in        Name
		cgroupfs  string
		systemd   string
		unit      string
		podUID    string
		hasPodUID bool
	}{
		{name: "root", in: Name{}, cgroupfs: "/", systemd: "/"},
		{name: "kubepods", in: Kubepods, cgroupfs: "/kubepods", systemd: "/kubepods.slice", unit: "kubepods.slice"},
		{name: "burstable tier", in: KubepodsBurstable, cgroupfs: "/kubepods/burstable",
			systemd: "/kubepods.slice/kubepods-burstable.slice", unit: "kubepods-burstable.slice"},
		{name: "guaranteed pod", in: PodName(Kubepods, uid),
			cgroupfs: "/kubepods/pod" + uid,
			systemd:  "/kubepods.slice/kubepods-pod5f1c2a9e_0d1b_4c3e_8f00_1234567890ab.slice",
			unit:     "kubepods-pod5f1c2a9e_0d1b_4c3e_8f00_1234567890ab.slice",
			podUID:   uid, hasPodUID: true},
		{name: "burstable pod", in: PodName(KubepodsBurstable, uid),
			cgroupfs: "/kubepods/burstable/pod" + uid,
			systemd:  "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod5f1c2a9e_0d1b_4c3e_8f00_1234567890ab.slice",
			unit:     "kubepods-burstable-pod5f1c2a9e_0d1b_4c3e_8f00_1234567890ab.slice",
			podUID:   uid, hasPodUID: true},
		{name: "besteffort pod", in: PodName(KubepodsBestEffort, "abc"),
			cgroupfs: "/kubepods/besteffort/podabc",
			systemd:  "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podabc.slice",
			unit:     "kubepods-besteffort-podabc.slice", podUID: "abc", hasPodUID: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, tt.in.Validate())
			assert.Equal(t, tt.cgroupfs, tt.in.ToCgroupfs())
			assert.Equal(t, tt.systemd, tt.in.ToSystemd())
			assert.Equal(t, tt.unit, tt.in.SystemdUnit())
			uid, ok := tt.in.PodUID()
			assert.Equal(t, tt.hasPodUID, ok)
			assert.Equal(t, tt.podUID, uid)

			back, err := ParseCgroupfs(tt.cgroupfs)
			require.NoError(t, err)
			assert.True(t, back.Equal(tt.in), "cgroupfs round trip: %v", back)
			back, err = ParseSystemd(tt.systemd)
			require.NoError(t, err)
			assert.True(t, back.Equal(tt.in), "systemd round trip: %v", back)
			if tt.unit != "" {
				back, err = ParseSystemd(tt.unit)
				require.NoError(t, err)
				assert.True(t, back.Equal(tt.in), "unit round trip: %v", back)
			}
		})
	}
}

func TestName_Validate(t *testing.T) {
	for _, bad := range []Name{{"kubepods", "pod_1"}, {"kubepods", "a/b"}, {""}, {"kubepods", ".."}} {
		assert.ErrorIs(t, bad.Validate(), ErrInvalidName, "%q", []string(bad))
	}
	for _, bad := range []string{"/kubepods.slice/other-pod1.slice", "/kubepods", "kubepods--x.slice"} {
		_, err := ParseSystemd(bad)
		assert.ErrorIs(t, err, ErrInvalidName, bad)
	}
	_, err := ParseCgroupfs("/kubepods/pod_x")
	assert.ErrorIs(t, err, ErrInvalidName)
}

func TestName_ChildDoesNotAlias(t *testing.T) {
	base := make(Name, 1, 4)
	base[0] = "kubepods"
	a, b := base.Child("a"), base.Child("b")
	assert.Equal(t, "/kubepods/a", a.ToCgroupfs())
	assert.Equal(t, "/kubepods/b", b.ToCgroupfs())
	assert.Equal(t, "/kubepods/burstable/podx", PodName(KubepodsBurstable, "x").ToCgroupfs())
	assert.Equal(t, Name{"kubepods", "burstable"}, KubepodsBurstable)
}

func TestParseDriver(t *testing.T) {
	d, err := ParseDriver("SYSTEMD")
	require.NoError(t, err)
	assert.Equal(t, DriverSystemd, d)
	d, err = ParseDriver("cgroupfs")
	require.NoError(t, err)
	assert.Equal(t, DriverCgroupfs, d)
	_, err = ParseDriver("docker")
	assert.Error(t, err)
}

func TestChooseDriver(t *testing.T) {
	tests := []struct {
		name          string
		runtime, flag Driver
		flagSet       bool
		want          Driver
		wantErr       string
	}{
		{name: "runtime silent, default flag", flag: DriverCgroupfs, want: DriverCgroupfs},
		{name: "runtime silent, flag systemd", flag: DriverSystemd, flagSet: true, want: DriverSystemd},
		{name: "runtime wins over default", runtime: DriverSystemd, flag: DriverCgroupfs, want: DriverSystemd},
		{name: "agree", runtime: DriverSystemd, flag: DriverSystemd, flagSet: true, want: DriverSystemd},
		{name: "mismatch", runtime: DriverCgroupfs, flag: DriverSystemd, flagSet: true,
			wantErr: `the container runtime uses "cgroupfs" but --cgroup-driver=systemd; change --cgroup-driver to cgroupfs, or change the runtime (containerd: SystemdCgroup = true`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ChooseDriver(tt.runtime, tt.flag, tt.flagSet)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}
