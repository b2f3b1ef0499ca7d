package cni

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"
	types100 "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/containernetworking/plugins/pkg/testutils"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// requiresPrivileged skips unless the test runs as root and is opted in with
// MINIKUBELET_PRIVILEGED=1: it creates a netns and a bridge on the host.
func requiresPrivileged(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 || os.Getenv("MINIKUBELET_PRIVILEGED") != "1" {
		t.Skip("privileged test: run as root with MINIKUBELET_PRIVILEGED=1")
	}
}

// realPlugins returns a dir with the real bridge, host-local, portmap and
// loopback plugins: /opt/cni/bin when it has working ones, else a temp dir
// they are built into from the plugins version pinned in go.mod.
func realPlugins(t *testing.T) []string {
	t.Helper()
	if err := Validate(context.Background(), Config{BinDirs: []string{DefaultBinDir}}); err == nil {
		return []string{DefaultBinDir}
	}
	return []string{buildPlugins(t)}
}

// buildPlugins builds the four plugins into a temp dir and returns it.
func buildPlugins(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	pkgs := map[string]string{
		"bridge":     "plugins/main/bridge",
		"host-local": "plugins/ipam/host-local",
		"portmap":    "plugins/meta/portmap",
		"loopback":   "plugins/main/loopback",
	}
	for name, pkg := range pkgs {
		out, err := exec.Command("go", "build", "-o", filepath.Join(dir, name),
			"github.com/containernetworking/plugins/"+pkg).CombinedOutput()
		require.NoError(t, err, "build CNI plugin %s: %s", name, out)
	}
	return dir
}

// TestConflist_RealPlugins runs ADD, CHECK and DEL of the installed conflist
// with the real plugins against a fresh netns, the way containerd does for a
// sandbox, and checks the IP, the veth on the bridge, the host-local
// reservation, reachability (pod IP and a 127.0.0.1 hostPort) and cleanup.
func TestConflist_RealPlugins(t *testing.T) {
	requiresPrivileged(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	root := t.TempDir()
	c := Config{
		Name:       "mkl-cnitest",
		PodCIDR:    "10.89.200.0/24",
		Bridge:     "mkltest9",
		ConfDir:    filepath.Join(root, "net.d"),
		BinDirs:    realPlugins(t),
		DataDir:    filepath.Join(root, "networks"),
		Masquerade: false,
	}.WithDefaults()
	_, subnet, err := net.ParseCIDR(c.PodCIDR)
	require.NoError(t, err)

	// Remove a bridge a crashed earlier run left behind, and ours at the end.
	_ = exec.Command("ip", "link", "del", c.Bridge).Run()
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "link", "del", c.Bridge).CombinedOutput(); err != nil {
			t.Logf("Delete bridge %s: %v: %s", c.Bridge, err, out)
		}
	})

	changed, notices, err := Install(ctx, c)
	require.NoError(t, err)
	require.True(t, changed)
	require.Empty(t, notices)
	list, err := libcni.ConfListFromFile(ConfPath(c)) // what containerd reads
	require.NoError(t, err)

	netns, err := testutils.NewNS()
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = netns.Close()
		_ = testutils.UnmountNS(netns)
	})

	hostPort := freePort(t)
	cniConf := libcni.NewCNIConfigWithCacheDir(c.BinDirs, filepath.Join(root, "cache"), nil)
	rt := &libcni.RuntimeConf{
		ContainerID: "mkl-cnitest-" + randHex(t),
		NetNS:       netns.Path(),
		IfName:      "eth0",
		CapabilityArgs: map[string]any{
			"portMappings": []map[string]any{
				{"hostPort": hostPort, "containerPort": 8080, "protocol": "tcp", "hostIP": "127.0.0.1"},
			},
		},
	}

	// Step 1: ADD, as RunPodSandbox does.
	res, err := cniConf.AddNetworkList(ctx, list, rt)
	require.NoError(t, err)
	deleted := false
	t.Cleanup(func() {
		if !deleted {
			_ = cniConf.DelNetworkList(context.Background(), list, rt)
		}
	})
	result, err := types100.NewResultFromResult(res)
	require.NoError(t, err)
	require.NotEmpty(t, result.IPs)
	podIP := result.IPs[0].Address.IP
	assert.True(t, subnet.Contains(podIP), "pod IP %s in %s", podIP, c.PodCIDR)

	// Step 2: CHECK.
	require.NoError(t, cniConf.CheckNetworkList(ctx, list, rt))

	// Step 3: the netns has the IP, the bridge a veth, host-local a reservation.
	assert.Equal(t, []string{podIP.String()}, netnsIPv4s(t, netns, "eth0"))
	var hostVeth string
	for _, iface := range result.Interfaces {
		if iface.Sandbox == "" && iface.Name != c.Bridge {
			hostVeth = iface.Name
		}
	}
	require.NotEmpty(t, hostVeth, "result names the host-side veth: %+v", result.Interfaces)
	assert.Equal(t, []string{hostVeth}, bridgePorts(t, c.Bridge))
	reservations, err := HostLocalReservations(c)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{podIP.String(): rt.ContainerID}, reservations)

	// Step 4: a server in the netns answers on the pod IP and, through
	// portmap, on the 127.0.0.1 hostPort.
	var ln net.Listener
	require.NoError(t, netns.Do(func(ns.NetNS) error {
		var err error
		ln, err = net.Listen("tcp", ":8080")
		return err
	}))
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = io.WriteString(conn, "hello from the pod")
			_ = conn.Close()
		}
	}()
	assert.Equal(t, "hello from the pod", dialRead(t, net.JoinHostPort(podIP.String(), "8080")))
	assert.Equal(t, "hello from the pod", dialRead(t, fmt.Sprintf("127.0.0.1:%d", hostPort)))

	// Step 5: DEL, as StopPodSandbox does, releases everything.
	require.NoError(t, cniConf.DelNetworkList(ctx, list, rt))
	deleted = true
	reservations, err = HostLocalReservations(c)
	require.NoError(t, err)
	assert.Empty(t, reservations)
	assert.Empty(t, bridgePorts(t, c.Bridge))
	_, err = os.Stat(filepath.Join("/sys/class/net", hostVeth))
	assert.True(t, os.IsNotExist(err), "veth %s is gone", hostVeth)
	assert.Empty(t, netnsIPv4s(t, netns, "eth0"))
}

// netnsIPv4s returns the IPv4 addresses of ifName inside netns, or nil if
// there is no such interface.
func netnsIPv4s(t *testing.T, netns ns.NetNS, ifName string) []string {
	t.Helper()
	var ips []string
	require.NoError(t, netns.Do(func(ns.NetNS) error {
		iface, err := net.InterfaceByName(ifName)
		if err != nil {
			return nil // gone
		}
		addrs, err := iface.Addrs()
		if err != nil {
			return err
		}
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil {
				ips = append(ips, ipn.IP.String())
			}
		}
		return nil
	}))
	return ips
}

// bridgePorts lists the interfaces attached to bridge, from sysfs.
func bridgePorts(t *testing.T, bridge string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join("/sys/class/net", bridge, "brif"))
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// dialRead connects to addr (a pod IP or loopback only) and returns what the
// server sends before closing.
func dialRead(t *testing.T, addr string) string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err, "dial %s", addr)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(5*time.Second)))
	b, err := io.ReadAll(conn)
	require.NoError(t, err, "read from %s", addr)
	return strings.TrimSpace(string(b))
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// randHex returns 8 random hex characters.
func randHex(t *testing.T) string {
	t.Helper()
	b := make([]byte, 4)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}
