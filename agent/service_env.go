package agent

// Service links: the environment variables the kubelet gives every
// container for the cluster's Services (its getServiceEnvVarMap and
// pkg/kubelet/envvars; the code here is written afresh from their rules).
//
//   - Only a node in a cluster has Services (Deps.Services); a standalone
//     node's containers get none.
//   - The `kubernetes` Service of the `default` namespace (the API server)
//     is always linked, whatever enableServiceLinks says: in-cluster
//     clients read KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT.
//   - With enableServiceLinks (true unless the pod says false) every
//     Service of the pod's own namespace is linked too; one named like a
//     master service replaces it.
//   - Services without a cluster IP (headless: None, or "") get nothing.
//   - The variables come first for $(VAR) expansion and last in the
//     environment: a variable the container defines wins.

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/agent/source"
)

// ServiceLister gives the agent the cluster's Services; in cluster mode an
// informer on the API server (cluster.ServiceLister).
type ServiceLister interface {
	// ListServices returns the Services read so far, of every namespace.
	// The agent does not modify them.
	ListServices() []*v1.Service
	// HasSynced reports whether the Services were listed completely at
	// least once. An implementation may wait a little for that first list.
	HasSynced() bool
}

// errServicesNotSynced is the kubelet's refusal to build the environment
// of a pod from the API server before the Services were read once: its
// KUBERNETES_SERVICE_HOST would be missing for good.
var errServicesNotSynced = errors.New("services have not yet been read at least once, cannot construct envvars")

// masterNamespace and masterService name the API server's Service, linked
// into every pod.
const (
	masterNamespace = "default"
	masterService   = "kubernetes"
)

// serviceEnv returns the service link variables of pod: nil without a
// ServiceLister (standalone). Pods from the API server wait for the first
// list (errServicesNotSynced); static and local pods take what is there,
// as the kubelet's static pods do (they may be the API server itself).
func (a *Agent) serviceEnv(pod *v1.Pod) (map[string]string, error) {
	if a.services == nil {
		return nil, nil
	}
	if pod.Annotations[source.AnnotationConfigSource] == sourceCluster && !a.services.HasSynced() {
		return nil, errServicesNotSynced
	}
	links := pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks
	return serviceLinkEnv(a.services.ListServices(), pod.Namespace, links), nil
}

// serviceLinkEnv picks the Services a pod of namespace ns sees and returns
// their variables.
func serviceLinkEnv(services []*v1.Service, ns string, links bool) map[string]string {
	byName := map[string]*v1.Service{}
	for _, svc := range services {
		if !hasClusterIP(svc) {
			continue
		}
		switch {
		case svc.Namespace == masterNamespace && svc.Name == masterService:
			// A same-named Service of the pod's namespace wins, whichever
			// comes first.
			if _, ok := byName[svc.Name]; !ok {
				byName[svc.Name] = svc
			}
		case svc.Namespace == ns && links:
			byName[svc.Name] = svc
		}
	}
	env := map[string]string{}
	for _, svc := range byName {
		addServiceVars(env, svc)
	}
	return env
}

// hasClusterIP is the kubelet's IsServiceIPSet: headless Services (None)
// and those without an address are not linked.
func hasClusterIP(svc *v1.Service) bool {
	return svc.Spec.ClusterIP != v1.ClusterIPNone && svc.Spec.ClusterIP != ""
}

// addServiceVars adds one Service's variables, for a Service `my-svc` at
// 10.0.0.11 with port 443 named https over TCP:
//
//	MY_SVC_SERVICE_HOST=10.0.0.11
//	MY_SVC_SERVICE_PORT=443            (the first port)
//	MY_SVC_SERVICE_PORT_HTTPS=443      (each named port)
//	MY_SVC_PORT=tcp://10.0.0.11:443    (the first port, Docker links style)
//	MY_SVC_PORT_443_TCP=tcp://10.0.0.11:443
//	MY_SVC_PORT_443_TCP_PROTO=tcp
//	MY_SVC_PORT_443_TCP_PORT=443
//	MY_SVC_PORT_443_TCP_ADDR=10.0.0.11
func addServiceVars(env map[string]string, svc *v1.Service) {
	if len(svc.Spec.Ports) == 0 {
		// Validation requires a port of every Service with a cluster IP.
		return
	}
	prefix := serviceVarName(svc.Name)
	ip := svc.Spec.ClusterIP
	env[prefix+"_SERVICE_HOST"] = ip
	env[prefix+"_SERVICE_PORT"] = strconv.Itoa(int(svc.Spec.Ports[0].Port))
	for _, p := range svc.Spec.Ports {
		if p.Name != "" {
			env[prefix+"_SERVICE_PORT_"+serviceVarName(p.Name)] = strconv.Itoa(int(p.Port))
		}
	}
	for i, p := range svc.Spec.Ports {
		proto := string(p.Protocol)
		if proto == "" {
			proto = string(v1.ProtocolTCP)
		}
		lower, port := strings.ToLower(proto), strconv.Itoa(int(p.Port))
		url := lower + "://" + net.JoinHostPort(ip, port)
		if i == 0 {
			env[prefix+"_PORT"] = url
		}
		pp := fmt.Sprintf("%s_PORT_%d_%s", prefix, p.Port, strings.ToUpper(proto))
		env[pp] = url
		env[pp+"_PROTO"] = lower
		env[pp+"_PORT"] = port
		env[pp+"_ADDR"] = ip
	}
}

// serviceVarName is a Service or port name as a variable name: upper case,
// '-' as '_' (both are DNS labels: no other character needs mapping).
func serviceVarName(name string) string {
	return strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}
