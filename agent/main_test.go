package agent

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestMain makes every agent the package's tests build keep off this
// machine's state (issue #17: a test agent read the conflist `make demo`
// installs in /etc/cni/net.d, others removed pod log directories under
// /var/log/pods and globbed libcni's cache in /var/lib/cni): New refuses a
// Config that leaves a host path or the host's addresses to their defaults,
// and the node's hosts file points nowhere unless a test sets its own.
func TestMain(m *testing.M) {
	checkTestConfig = refuseHostDefaults
	nodeHostsFile = "/dev/null/hosts: a unit test sets nodeHostsFile to its own file"
	os.Exit(m.Run())
}

// refuseHostDefaults panics (New has no error to return; the panic names the
// test through its stack) when cfg leaves a field to a default that is host
// state. testNetwork and newHarness set them all.
func refuseHostDefaults(cfg Config) {
	var unset []string
	for name, v := range map[string]string{
		"RootDir": cfg.RootDir, "PodLogDir": cfg.PodLogDir, "ResolvConf": cfg.ResolvConf,
		"Network.ConfDir": cfg.Network.ConfDir, "Network.DataDir": cfg.Network.DataDir, "Network.CacheDir": cfg.Network.CacheDir,
	} {
		if v == "" {
			unset = append(unset, name)
		}
	}
	if len(cfg.Network.BinDirs) == 0 {
		unset = append(unset, "Network.BinDirs")
	}
	if len(cfg.HostIPs) == 0 {
		unset = append(unset, "HostIPs")
	}
	if len(unset) > 0 {
		panic(fmt.Sprintf("a test agent leaves %s to their defaults, which are this machine's state: set them (t.TempDir(), testNetwork, a 192.0.2.x address; issue #17)", strings.Join(unset, ", ")))
	}
}
