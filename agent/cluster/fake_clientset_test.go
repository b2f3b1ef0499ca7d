package cluster

import "k8s.io/client-go/kubernetes"

// fromClientset is clustertest.FromClientset for this package's own tests,
// which cannot import clustertest (it imports this package).
func fromClientset(cs kubernetes.Interface) API { return clientsetAPI{cs} }

type clientsetAPI struct{ cs kubernetes.Interface }

func (c clientsetAPI) Pods(ns string) PodClient             { return c.cs.CoreV1().Pods(ns) }
func (c clientsetAPI) Nodes() NodeClient                    { return c.cs.CoreV1().Nodes() }
func (c clientsetAPI) Leases(ns string) LeaseClient         { return c.cs.CoordinationV1().Leases(ns) }
func (c clientsetAPI) ConfigMaps(ns string) ConfigMapClient { return c.cs.CoreV1().ConfigMaps(ns) }
func (c clientsetAPI) Secrets(ns string) SecretClient       { return c.cs.CoreV1().Secrets(ns) }
func (c clientsetAPI) Services(ns string) ServiceClient     { return c.cs.CoreV1().Services(ns) }
func (c clientsetAPI) Events(ns string) EventClient         { return c.cs.CoreV1().Events(ns) }

func (c clientsetAPI) IsWatchListSemanticsUnSupported() bool {
	u, ok := c.cs.(interface{ IsWatchListSemanticsUnSupported() bool })
	return ok && u.IsWatchListSemanticsUnSupported()
}
