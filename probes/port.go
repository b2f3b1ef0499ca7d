package probes

import (
	"fmt"
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// ResolvePort turns a probe port into a number: an int as is, a string as
// the name of one of the container's ports, or failing that as a number
// written as a string. The result must be in 1–65535.
func ResolvePort(port intstr.IntOrString, container *v1.Container) (int, error) {
	var n int
	switch port.Type {
	case intstr.Int:
		n = port.IntValue()
	case intstr.String:
		found := false
		for _, p := range container.Ports {
			if p.Name == port.StrVal {
				n, found = int(p.ContainerPort), true
				break
			}
		}
		if !found {
			v, err := strconv.Atoi(port.StrVal)
			if err != nil {
				return 0, fmt.Errorf("container %q has no port named %q", container.Name, port.StrVal)
			}
			n = v
		}
	default:
		return 0, fmt.Errorf("invalid port %v", port)
	}
	if n <= 0 || n > 65535 {
		return 0, fmt.Errorf("invalid port number %d", n)
	}
	return n, nil
}
