package node

// The node's addresses, for status.hostIP(s) and the env vars that ask for
// them.

import (
	"net"
	"sync"
)

// HostIPs are the node's addresses: the configured ones (Config.HostIPs), else
// the host's own (defaultHostIPs).
func HostIPs(configured []string) []string {
	if len(configured) > 0 {
		return configured
	}
	return defaultHostIPs()
}

// defaultHostIPs are the node's addresses for status.hostIP(s): the address the
// host would use for its default route, else its first global unicast
// addresses (IPv4 first). Read once: the kubelet reads the node's
// addresses from the Node object, which minikubelet does not have.
var defaultHostIPs = sync.OnceValue(func() []string {
	var out []string
	// A UDP "connection" sends nothing; it only picks a source address.
	if conn, err := net.Dial("udp4", "192.0.2.1:9"); err == nil {
		if ua, ok := conn.LocalAddr().(*net.UDPAddr); ok && !ua.IP.IsLoopback() {
			out = append(out, ua.IP.String())
		}
		_ = conn.Close()
	}
	if len(out) > 0 {
		return out
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var v4, v6 []string
	for _, ad := range addrs {
		ipn, ok := ad.(*net.IPNet)
		if !ok || !ipn.IP.IsGlobalUnicast() {
			continue
		}
		if ipn.IP.To4() != nil {
			v4 = append(v4, ipn.IP.String())
		} else {
			v6 = append(v6, ipn.IP.String())
		}
	}
	if len(v4) > 0 {
		out = append(out, v4[0])
	}
	if len(v6) > 0 {
		out = append(out, v6[0])
	}
	return out
})
