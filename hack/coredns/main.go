// Command coredns is CoreDNS (github.com/coredns/coredns, the version this
// module's go.mod pins) with only the plugins a cluster's DNS uses: the ones
// in the Corefile kubeadm installs (errors, health, ready, kubernetes,
// prometheus, forward, cache, loop, reload, loadbalance) and log. It is the
// program of the registry.k8s.io/coredns/coredns image that hack/images
// --system builds for the cluster add-ons (hack/cluster/addons).
//
// As in CoreDNS's own main (coredns.go), the plugins register themselves by
// being imported; dnsserver.Directives is the order they run in, taken from
// CoreDNS's plugin.cfg with every plugin left out here removed.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
)

// directives is plugin.cfg's order (CoreDNS v1.15.0) of the plugins above.
var directives = []string{
	"reload",
	"ready",
	"health",
	"prometheus",
	"errors",
	"log",
	"loadbalance",
	"cache",
	"kubernetes",
	"loop",
	"forward",
}

func init() { dnsserver.Directives = directives }

func main() { coremain.Run() }
