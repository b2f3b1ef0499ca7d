// Package clustertest adapts client-go's clientsets to cluster.API for
// tests (unit tests with the fake clientset, end-to-end tests with a real
// one). Only tests import it: it links the full clientset, which the
// minikubelet binary must not (issue #8).
package clustertest

import (
	"k8s.io/client-go/kubernetes"

	"github.com/minikubelet/minikubelet/agent/cluster"
)

// FromClientset returns cs as a cluster.API. Like cs it tells client-go's
// informers whether it serves streaming lists (the fake clientset does
// not).
func FromClientset(cs kubernetes.Interface) cluster.API { return clientset{cs} }

type clientset struct{ cs kubernetes.Interface }

func (c clientset) Pods(ns string) cluster.PodClient { return c.cs.CoreV1().Pods(ns) }
func (c clientset) Nodes() cluster.NodeClient        { return c.cs.CoreV1().Nodes() }
func (c clientset) Leases(ns string) cluster.LeaseClient {
	return c.cs.CoordinationV1().Leases(ns)
}
func (c clientset) ConfigMaps(ns string) cluster.ConfigMapClient {
	return c.cs.CoreV1().ConfigMaps(ns)
}
func (c clientset) Secrets(ns string) cluster.SecretClient { return c.cs.CoreV1().Secrets(ns) }
func (c clientset) Services(ns string) cluster.ServiceClient {
	return c.cs.CoreV1().Services(ns)
}
func (c clientset) Events(ns string) cluster.EventClient { return c.cs.CoreV1().Events(ns) }

// IsWatchListSemanticsUnSupported is client-go's question to a client
// (util/watchlist), passed on to the clientset.
func (c clientset) IsWatchListSemanticsUnSupported() bool {
	u, ok := c.cs.(interface{ IsWatchListSemanticsUnSupported() bool })
	return ok && u.IsWatchListSemanticsUnSupported()
}
