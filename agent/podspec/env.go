package podspec

// $(VAR) expansion with the kubelet's rules (third_party/forked/golang/
// expansion in Kubernetes; the code here is written afresh), and the
// service link variables (the kubelet's pkg/kubelet/envvars). The engine
// builds the container's environment with them (agent/envvars.go); command
// and args are expanded here against the final environment.

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// ExpandVars expands $(VAR) references in s. lookup says whether a variable
// is defined (an empty value counts as defined). The rules are the
// kubelet's:
//
//   - $(NAME) becomes the value of NAME when defined, else stays literally;
//   - $$ becomes a single $, so $$(NAME) is the literal text $(NAME);
//   - a $ followed by anything else, a $ at the end, and a $( without a
//     closing ) stay as written.
func ExpandVars(s string, lookup func(string) (string, bool)) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			i++
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i += 2
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				// No closing paren: the "$(" is literal, the rest is scanned on.
				b.WriteString("$(")
				i += 2
				continue
			}
			name := s[i+2 : i+2+end]
			if v, ok := lookup(name); ok {
				b.WriteString(v)
			} else {
				b.WriteString("$(" + name + ")")
			}
			i += 2 + end + 1
		default:
			b.WriteByte('$')
			b.WriteByte(s[i+1])
			i += 2
		}
	}
	return b.String()
}

// ExpandAll expands every string of list (command or args) against env.
func ExpandAll(list []string, env map[string]string) []string {
	if list == nil {
		return nil
	}
	lookup := func(name string) (string, bool) {
		v, ok := env[name]
		return v, ok
	}
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = ExpandVars(s, lookup)
	}
	return out
}

// masterNamespace and masterService name the API server's Service, linked
// into every pod.
const (
	masterNamespace = "default"
	masterService   = "kubernetes"
)

// ServiceLinkEnv picks the Services a pod of namespace ns sees and returns
// their variables: the master Service always, those of ns too when links
// (enableServiceLinks).
func ServiceLinkEnv(services []*v1.Service, ns string, links bool) map[string]string {
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
