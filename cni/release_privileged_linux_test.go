package cni

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"
	types100 "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/plugins/pkg/testutils"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReleaseHostLocal_RealPlugins leaks a reservation the way a containerd
// crash does (ADD done, the sandbox and its netns gone, no DEL), releases
// it with ReleaseHostLocal, and checks that the live sandbox's reservation
// and host-local's own DEL of it are unaffected and that a late DEL of the
// leaked container (containerd coming back) is harmless.
func TestReleaseHostLocal_RealPlugins(t *testing.T) {
	requiresPrivileged(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	root := t.TempDir()
	c := Config{
		Name:    "mkl-leaktest",
		PodCIDR: "10.89.201.0/24",
		Bridge:  "mklleak9",
		ConfDir: filepath.Join(root, "net.d"),
		BinDirs: realPlugins(t),
		DataDir: filepath.Join(root, "networks"),
	}.WithDefaults()
	_ = exec.Command("ip", "link", "del", c.Bridge).Run()
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", c.Bridge).Run() })
	_, _, err := Install(ctx, c)
	require.NoError(t, err)
	list, err := libcni.ConfListFromFile(ConfPath(c))
	require.NoError(t, err)
	cache := filepath.Join(root, "cache")
	cniConf := libcni.NewCNIConfigWithCacheDir(c.BinDirs, cache, nil)

	add := func(id string) (*libcni.RuntimeConf, string, func()) {
		netns, err := testutils.NewNS()
		require.NoError(t, err)
		rt := &libcni.RuntimeConf{ContainerID: id, NetNS: netns.Path(), IfName: "eth0"}
		res, err := cniConf.AddNetworkList(ctx, list, rt)
		require.NoError(t, err)
		r, err := types100.NewResultFromResult(res)
		require.NoError(t, err)
		require.NotEmpty(t, r.IPs)
		return rt, r.IPs[0].Address.IP.String(), func() {
			_ = netns.Close()
			_ = testutils.UnmountNS(netns)
		}
	}
	liveRT, liveIP, closeLive := add("live-" + randHex(t))
	t.Cleanup(closeLive)
	leakedRT, leakedIP, closeLeaked := add("leaked-" + randHex(t))
	closeLeaked() // the sandbox is gone without a DEL
	matches, _ := filepath.Glob(filepath.Join(cache, "results", c.Name+"-"+leakedRT.ContainerID+"-*"))
	require.NotEmpty(t, matches, "libcni cached the leaked ADD")

	list1, err := ListHostLocal(c)
	require.NoError(t, err)
	owners := map[string]string{}
	for _, r := range list1 {
		owners[r.IP] = r.ID
		if r.IP == leakedIP {
			assert.Equal(t, "eth0", r.IfName)
			ok, err := ReleaseHostLocal(c, cache, r)
			require.NoError(t, err)
			assert.True(t, ok)
		}
	}
	require.Equal(t, map[string]string{liveIP: liveRT.ContainerID, leakedIP: leakedRT.ContainerID}, owners)

	got, err := HostLocalReservations(c)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{liveIP: liveRT.ContainerID}, got, "the leak is released, the live reservation kept")
	matches, _ = filepath.Glob(filepath.Join(cache, "results", c.Name+"-"+leakedRT.ContainerID+"-*"))
	assert.Empty(t, matches, "the leaked attachment's result cache is gone")

	// A late DEL of the leaked container (its netns is gone) is harmless,
	// and host-local's own DEL of the live one still works.
	leakedRT.NetNS = ""
	require.NoError(t, cniConf.DelNetworkList(ctx, list, leakedRT))
	require.NoError(t, cniConf.DelNetworkList(ctx, list, liveRT))
	got, err = HostLocalReservations(c)
	require.NoError(t, err)
	assert.Empty(t, got)
}
