package cluster

// What the Node object says about the machine beyond node.Info (agent/node): its
// addresses, its system info (kernel, OS image, machine and boot IDs) and
// the readings behind the pressure conditions. Everything is read through a
// host value so that tests can give their own files.

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	v1 "k8s.io/api/core/v1"

	agentnode "github.com/minikubelet/minikubelet/agent/node"
)

// host reads the machine. realHost reads this one.
type host struct {
	// readFile reads a file (/proc, /sys, /etc).
	readFile func(name string) ([]byte, error)
	// interfaceAddrs lists the addresses of the named network interface.
	interfaceAddrs func(name string) ([]netip.Prefix, error)
	// allAddrs lists the addresses of every interface that is up, in
	// interface order, with the interface names.
	allAddrs func() ([]ifaceAddr, error)
	// statfs reports the free and total bytes and inodes of the file
	// system holding path.
	statfs func(path string) (fsStats, error)
}

// ifaceAddr is one address of one interface.
type ifaceAddr struct {
	iface string
	addr  netip.Prefix
}

// fsStats are the space and inode counts of a file system.
type fsStats struct {
	availBytes, totalBytes  uint64
	freeInodes, totalInodes uint64
}

// realHost is the machine the agent runs on.
var realHost = host{
	readFile: os.ReadFile,
	interfaceAddrs: func(name string) ([]netip.Prefix, error) {
		ifc, err := net.InterfaceByName(name)
		if err != nil {
			return nil, err
		}
		return prefixesOf(ifc)
	},
	allAddrs: func() ([]ifaceAddr, error) {
		ifcs, err := net.Interfaces()
		if err != nil {
			return nil, err
		}
		var out []ifaceAddr
		for _, ifc := range ifcs {
			if ifc.Flags&net.FlagUp == 0 {
				continue
			}
			ps, err := prefixesOf(&ifc)
			if err != nil {
				continue
			}
			for _, p := range ps {
				out = append(out, ifaceAddr{iface: ifc.Name, addr: p})
			}
		}
		return out, nil
	},
	statfs: func(path string) (fsStats, error) {
		var st syscall.Statfs_t
		if err := syscall.Statfs(path, &st); err != nil {
			return fsStats{}, err
		}
		bs := uint64(st.Bsize) //nolint:gosec // block sizes are positive
		return fsStats{
			availBytes: st.Bavail * bs, totalBytes: st.Blocks * bs,
			freeInodes: st.Ffree, totalInodes: st.Files,
		}, nil
	},
}

// prefixesOf lists an interface's IP addresses.
func prefixesOf(ifc *net.Interface) ([]netip.Prefix, error) {
	addrs, err := ifc.Addrs()
	if err != nil {
		return nil, err
	}
	var out []netip.Prefix
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(ipn.IP); ok {
				ones, _ := ipn.Mask.Size()
				out = append(out, netip.PrefixFrom(ip.Unmap(), ones))
			}
		}
	}
	return out, nil
}

// systemInfo fills the Node's status.nodeInfo from the host: machine ID,
// system UUID, boot ID, kernel and OS image, the runtime (as
// "<name>://<version>", the kubelet's form) and the agent's version. A file
// that cannot be read leaves its field empty, as the kubelet does on
// machines without DMI.
func (h host) systemInfo(runtimeName, runtimeVersion, agentVersion string) v1.NodeSystemInfo {
	read := func(names ...string) string {
		for _, n := range names {
			if b, err := h.readFile(n); err == nil {
				if s := strings.TrimSpace(string(b)); s != "" {
					return s
				}
			}
		}
		return ""
	}
	osImage := "Linux"
	if b, err := h.readFile("/etc/os-release"); err == nil {
		if v := osReleaseField(b, "PRETTY_NAME"); v != "" {
			osImage = v
		}
	}
	rt := ""
	if runtimeName != "" {
		rt = runtimeName + "://" + runtimeVersion
	}
	return v1.NodeSystemInfo{
		MachineID:               read("/etc/machine-id", "/var/lib/dbus/machine-id"),
		SystemUUID:              strings.ToLower(read("/sys/class/dmi/id/product_uuid")),
		BootID:                  read("/proc/sys/kernel/random/boot_id"),
		KernelVersion:           read("/proc/sys/kernel/osrelease"),
		OSImage:                 osImage,
		ContainerRuntimeVersion: rt,
		KubeletVersion:          agentVersion,
		OperatingSystem:         runtime.GOOS,
		Architecture:            runtime.GOARCH,
	}
}

// osReleaseField returns the value of key in os-release content (shell
// syntax: KEY=value or KEY="quoted value").
func osReleaseField(data []byte, key string) string {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if !ok || k != key {
			continue
		}
		if uq, err := strconv.Unquote(v); err == nil {
			return uq
		}
		return strings.Trim(v, `'"`)
	}
	return ""
}

// addresses returns the Node's status.addresses: the InternalIP, then the
// Hostname (the node name, as with the kubelet's --hostname-override).
// nodeIP, when set, is the InternalIP (--node-ip); otherwise it is the
// first global IPv4 address of the interface holding the default route
// (/proc/net/route), else of any interface that is up — the kubelet's
// choice when it has no cloud provider and no --node-ip.
func (h host) addresses(nodeIP, hostname string) ([]v1.NodeAddress, error) {
	ip := nodeIP
	if ip == "" {
		a, err := h.defaultIPv4()
		if err != nil {
			return nil, err
		}
		ip = a.String()
	} else if _, err := netip.ParseAddr(ip); err != nil {
		return nil, fmt.Errorf("node IP %q: not an IP address", nodeIP)
	}
	return []v1.NodeAddress{
		{Type: v1.NodeInternalIP, Address: ip},
		{Type: v1.NodeHostName, Address: hostname},
	}, nil
}

// NodeAddresses are the addresses the Node is registered with (see
// addresses): the kubelet server's serving certificate names them.
func NodeAddresses(nodeIP, hostname string) ([]v1.NodeAddress, error) {
	return realHost.addresses(nodeIP, hostname)
}

// errNoAddress says that no usable address was found.
var errNoAddress = errors.New("no global unicast IPv4 address on any interface that is up: give the node's address with --node-ip")

// defaultIPv4 finds the host's primary IPv4 address (see addresses).
func (h host) defaultIPv4() (netip.Addr, error) {
	usable := func(a netip.Addr) bool { return a.Is4() && a.IsGlobalUnicast() && !a.IsLoopback() }
	if b, err := h.readFile("/proc/net/route"); err == nil {
		if ifc := defaultRouteInterface(b); ifc != "" {
			if ps, err := h.interfaceAddrs(ifc); err == nil {
				for _, p := range ps {
					if usable(p.Addr()) {
						return p.Addr(), nil
					}
				}
			}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return netip.Addr{}, fmt.Errorf("read the routing table: %w", err)
	}
	all, err := h.allAddrs()
	if err != nil {
		return netip.Addr{}, fmt.Errorf("list interface addresses: %w", err)
	}
	for _, ia := range all {
		if usable(ia.addr.Addr()) {
			return ia.addr.Addr(), nil
		}
	}
	return netip.Addr{}, errNoAddress
}

// defaultRouteInterface returns the interface of the IPv4 default route
// with the lowest metric in /proc/net/route content ("" when there is
// none). Columns: Iface Destination Gateway Flags RefCnt Use Metric Mask…,
// addresses in little-endian hex.
func defaultRouteInterface(data []byte) string {
	best, bestMetric := "", -1
	sc := bufio.NewScanner(bytes.NewReader(data))
	for first := true; sc.Scan(); first = false {
		f := strings.Fields(sc.Text())
		if first || len(f) < 8 {
			continue
		}
		dst, err1 := hex.DecodeString(f[1])
		mask, err2 := hex.DecodeString(f[7])
		flags, err3 := strconv.ParseUint(f[3], 16, 32)
		metric, err4 := strconv.Atoi(f[6])
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
			continue
		}
		const rtfUp = 0x1
		if flags&rtfUp == 0 || !allZero(dst) || !allZero(mask) {
			continue
		}
		if bestMetric < 0 || metric < bestMetric {
			best, bestMetric = f[0], metric
		}
	}
	return best
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// memAvailable returns MemAvailable of /proc/meminfo in bytes: the memory
// the kernel could hand out without swapping. The kubelet's
// memory.available is capacity minus the root cgroup's working set; the
// two agree closely on a machine without swap.
func (h host) memAvailable() (int64, error) {
	b, err := h.readFile("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	if n, ok := agentnode.MeminfoValue(b, "MemAvailable"); ok {
		return n, nil
	}
	return 0, errors.New("no MemAvailable in /proc/meminfo")
}

// pids returns the number of threads on the machine (each takes a PID:
// the total of /proc/loadavg's fourth field) and kernel.pid_max.
func (h host) pids() (used, limit int64, err error) {
	b, err := h.readFile("/proc/loadavg")
	if err != nil {
		return 0, 0, err
	}
	f := strings.Fields(string(b))
	if len(f) < 4 {
		return 0, 0, fmt.Errorf("malformed /proc/loadavg %q", b)
	}
	_, total, ok := strings.Cut(f[3], "/")
	if !ok {
		return 0, 0, fmt.Errorf("malformed /proc/loadavg %q", b)
	}
	if used, err = strconv.ParseInt(total, 10, 64); err != nil {
		return 0, 0, fmt.Errorf("malformed /proc/loadavg %q", b)
	}
	b, err = h.readFile("/proc/sys/kernel/pid_max")
	if err != nil {
		return 0, 0, err
	}
	if limit, err = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err != nil {
		return 0, 0, fmt.Errorf("malformed kernel.pid_max %q", b)
	}
	return used, limit, nil
}

// read takes the readings behind the pressure conditions; rootDir is the
// file system of nodefs (the agent's root dir, where pod volumes live).
func (h host) read(rootDir string) readings {
	var r readings
	if n, err := h.memAvailable(); err == nil {
		r.memAvailable, r.memKnown = n, true
	}
	if st, err := h.statfs(rootDir); err == nil {
		r.fs, r.fsKnown = st, true
	}
	if used, limit, err := h.pids(); err == nil {
		r.pidsUsed, r.pidMax, r.pidKnown = used, limit, true
	}
	return r
}
