package podspec

// The container's environment, as the kubelet's makeEnvironmentVariables
// builds it. Order matters: envFrom sources are read first, in order, then
// env entries one by one. A plain env value may reference a variable
// defined before it (by envFrom or an earlier env entry) or a service link
// variable; valueFrom values and envFrom values are never expanded. The
// service link variables the container does not define come last. Command
// and args may reference any variable of the final environment.

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/manifest"
)

// EnvInputs are what a container's environment needs beside the pod and
// the container: the node's facts and the engine's lookups.
type EnvInputs struct {
	// PodIP is the pod's IP ("" before the sandbox has one).
	PodIP string
	// NodeName is spec.nodeName when the pod has none.
	NodeName string
	// HostIPs returns the node's addresses; called only when a fieldRef
	// asks for them.
	HostIPs func() []string
	// Allocatable is the node's allocatable resources: the value of a
	// resourceFieldRef to a limit that is not set.
	Allocatable v1.ResourceList
	// ServiceEnv are the service link variables (ServiceLinkEnv); nil
	// without Services.
	ServiceEnv map[string]string
	// ConfigMap and Secret look up an object of the pod's namespace by
	// name, as the pod may see it; a missing one's error matches NotFound
	// (errors.Is), which optional references skip.
	ConfigMap func(name string) (*v1.ConfigMap, error)
	Secret    func(name string) (*v1.Secret, error)
	NotFound  error
	// EnvFile reads the file rel (EnvFileRel) of the pod's emptyDir
	// volume, at most MaxEnvFileBytes, and names it by its host path for
	// messages (fileKeyRef, envfile.go).
	EnvFile func(volume, rel string) (data []byte, hostPath string, err error)
}

// notFound reports whether err is NotFound's.
func (in EnvInputs) notFound(err error) bool { return errors.Is(err, in.NotFound) }

// orderedEnv is an environment that keeps the order in which names were
// first defined, so the container sees a stable environment (the kubelet
// hands over a map's order).
type orderedEnv struct {
	names  []string
	values map[string]string
}

func newOrderedEnv() *orderedEnv { return &orderedEnv{values: map[string]string{}} }

// set defines or redefines name; a redefinition keeps its first position.
func (e *orderedEnv) set(name, value string) {
	if _, ok := e.values[name]; !ok {
		e.names = append(e.names, name)
	}
	e.values[name] = value
}

func (e *orderedEnv) lookup(name string) (string, bool) {
	v, ok := e.values[name]
	return v, ok
}

// Env is the container's environment as CRI key/values and as a map (for
// the expansion of command and args). warnings are the kubelet's
// InvalidEnvironmentVariableNames event messages for envFrom keys that were
// skipped. A missing required ConfigMap, Secret or key is an error carrying
// the kubelet's message (CreateContainerConfigError).
func Env(pod *v1.Pod, c *v1.Container, in EnvInputs) ([]*runtimeapi.KeyValue, map[string]string, []string, error) {
	env := newOrderedEnv()
	var warnings []string

	// Step 0: the service links (cluster mode only).
	svcEnv := in.ServiceEnv
	lookup := func(name string) (string, bool) {
		if v, ok := env.lookup(name); ok {
			return v, ok
		}
		v, ok := svcEnv[name]
		return v, ok
	}

	// Step 1: envFrom, in order; later sources win.
	for _, ef := range c.EnvFrom {
		var (
			data     map[string]string
			kind     string
			name     string
			optional bool
		)
		switch {
		case ef.ConfigMapRef != nil:
			kind, name, optional = "configMap", ef.ConfigMapRef.Name, isTrue(ef.ConfigMapRef.Optional)
			cm, err := in.ConfigMap(name)
			if err != nil {
				if in.notFound(err) && optional {
					continue
				}
				return nil, nil, nil, err
			}
			data = cm.Data
		case ef.SecretRef != nil:
			kind, name, optional = "secret", ef.SecretRef.Name, isTrue(ef.SecretRef.Optional)
			s, err := in.Secret(name)
			if err != nil {
				if in.notFound(err) && optional {
					continue
				}
				return nil, nil, nil, err
			}
			data = make(map[string]string, len(s.Data))
			for k, v := range s.Data {
				data[k] = string(v)
			}
		default:
			continue
		}
		var invalid []string
		for _, k := range sortedKeys(data) {
			key := ef.Prefix + k
			if len(validation.IsRelaxedEnvVarName(key)) > 0 {
				invalid = append(invalid, key)
				continue
			}
			env.set(key, data[k])
		}
		if len(invalid) > 0 {
			sort.Strings(invalid)
			warnings = append(warnings, fmt.Sprintf("Keys [%s] from the EnvFrom %s %s/%s were skipped since they are considered invalid environment variable names.",
				strings.Join(invalid, ", "), kind, pod.Namespace, name))
		}
	}

	// Step 2: env, in order; a plain value sees what was defined before
	// and the service links.
	for _, ev := range c.Env {
		if ev.ValueFrom == nil {
			env.set(ev.Name, ExpandVars(ev.Value, lookup))
			continue
		}
		val, ok, err := envValueFrom(pod, c, in, ev.ValueFrom)
		if err != nil {
			return nil, nil, nil, err
		}
		if ok {
			env.set(ev.Name, val)
		}
	}

	// Step 3: the service links the container does not define itself.
	for _, name := range sortedKeys(svcEnv) {
		if _, ok := env.lookup(name); !ok {
			env.set(name, svcEnv[name])
		}
	}

	out := make([]*runtimeapi.KeyValue, 0, len(env.names))
	for _, n := range env.names {
		out = append(out, &runtimeapi.KeyValue{Key: n, Value: []byte(env.values[n])})
	}
	return out, env.values, warnings, nil
}

// envValueFrom resolves one valueFrom. ok is false when an optional
// reference is missing: the variable is then not set at all.
func envValueFrom(pod *v1.Pod, c *v1.Container, in EnvInputs, vf *v1.EnvVarSource) (string, bool, error) {
	switch {
	case vf.FieldRef != nil:
		v, err := fieldValue(pod, vf.FieldRef.FieldPath, in)
		return v, err == nil, err
	case vf.ResourceFieldRef != nil:
		v, err := ResourceFieldValue(pod, c, vf.ResourceFieldRef, in.Allocatable)
		return v, err == nil, err
	case vf.ConfigMapKeyRef != nil:
		ref := vf.ConfigMapKeyRef
		optional := isTrue(ref.Optional)
		cm, err := in.ConfigMap(ref.Name)
		if err != nil {
			if in.notFound(err) && optional {
				return "", false, nil
			}
			return "", false, err
		}
		v, found := cm.Data[ref.Key]
		if !found {
			if optional {
				return "", false, nil
			}
			return "", false, fmt.Errorf("couldn't find key %s in ConfigMap %s/%s", ref.Key, pod.Namespace, ref.Name)
		}
		return v, true, nil
	case vf.SecretKeyRef != nil:
		ref := vf.SecretKeyRef
		optional := isTrue(ref.Optional)
		s, err := in.Secret(ref.Name)
		if err != nil {
			if in.notFound(err) && optional {
				return "", false, nil
			}
			return "", false, err
		}
		v, found := s.Data[ref.Key]
		if !found {
			if optional {
				return "", false, nil
			}
			return "", false, fmt.Errorf("couldn't find key %s in Secret %s/%s", ref.Key, pod.Namespace, ref.Name)
		}
		return string(v), true, nil
	case vf.FileKeyRef != nil:
		return fileKeyValue(pod, in, vf.FileKeyRef) // envfile.go
	}
	// Validation refuses empty sources.
	return "", false, fmt.Errorf("unsupported valueFrom source")
}

// fieldValue resolves a fieldRef path: every path the kubelet resolves for
// env (the downward API volume's paths are MetadataFieldValue's).
func fieldValue(pod *v1.Pod, path string, in EnvInputs) (string, error) {
	podIP := in.PodIP
	podIPs := []string{}
	if podIP != "" {
		podIPs = append(podIPs, podIP)
	}
	if pod.Spec.HostNetwork && podIP == "" {
		// A host-network pod has the node's addresses.
		podIPs = in.HostIPs()
	}
	switch path {
	case "spec.nodeName":
		if pod.Spec.NodeName != "" {
			return pod.Spec.NodeName, nil
		}
		return in.NodeName, nil
	case "spec.serviceAccountName":
		if pod.Spec.ServiceAccountName == "" {
			// What the API server's ServiceAccount admission sets.
			return "default", nil
		}
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP":
		if ips := in.HostIPs(); len(ips) > 0 {
			return ips[0], nil
		}
		return "", nil
	case "status.hostIPs":
		return strings.Join(in.HostIPs(), ","), nil
	case "status.podIP":
		if len(podIPs) > 0 {
			return podIPs[0], nil
		}
		return "", nil
	case "status.podIPs":
		return strings.Join(podIPs, ","), nil
	}
	return MetadataFieldValue(pod, path)
}

// MetadataFieldValue resolves the metadata paths of the downward API:
// name, namespace, uid, labels and annotations (whole, in the kubelet's
// k="v" format, or one key with ['key']).
func MetadataFieldValue(pod *v1.Pod, path string) (string, error) {
	if base, key, ok := manifest.Subscript(path); ok {
		switch base {
		case "metadata.labels":
			return pod.Labels[key], nil
		case "metadata.annotations":
			return pod.Annotations[key], nil
		}
		return "", fmt.Errorf("unsupported fieldPath: %s", path)
	}
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return FormatMap(pod.Labels), nil
	case "metadata.annotations":
		return FormatMap(pod.Annotations), nil
	}
	return "", fmt.Errorf("unsupported fieldPath: %s", path)
}

// FormatMap renders labels or annotations as the kubelet does: one
// key="value" line per key, sorted, the value Go-quoted, no final newline.
func FormatMap(m map[string]string) string {
	var b strings.Builder
	for i, k := range sortedKeys(m) {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s=%q", k, m[k])
	}
	return b.String()
}

// ResourceFieldValue resolves a resourceFieldRef for the container named by
// the reference (c when it names none). A limit that is not set is the
// node's allocatable amount, as in the kubelet.
func ResourceFieldValue(pod *v1.Pod, c *v1.Container, ref *v1.ResourceFieldSelector, allocatable v1.ResourceList) (string, error) {
	target := c
	if ref.ContainerName != "" && (c == nil || ref.ContainerName != c.Name) {
		target = FindContainer(pod, ref.ContainerName)
		if target == nil {
			return "", fmt.Errorf("container %q not found in pod %s/%s", ref.ContainerName, pod.Namespace, pod.Name)
		}
	}
	if target == nil {
		return "", fmt.Errorf("resourceFieldRef %s: containerName is required", ref.Resource)
	}
	return resourceValue(target, ref, allocatable)
}

// resourceValue is ResourceFieldValue for a known container.
func resourceValue(c *v1.Container, ref *v1.ResourceFieldSelector, allocatable v1.ResourceList) (string, error) {
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	kind, name, _ := strings.Cut(ref.Resource, ".")
	rname := v1.ResourceName(name)
	var q resource.Quantity
	switch kind {
	case "limits":
		var ok bool
		if q, ok = c.Resources.Limits[rname]; !ok {
			q = allocatable[rname]
		}
	case "requests":
		q = c.Resources.Requests[rname]
	default:
		return "", fmt.Errorf("unsupported container resource: %s", ref.Resource)
	}
	switch rname {
	case v1.ResourceCPU:
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(divisor.MilliValue()))), 10), nil
	case v1.ResourceMemory:
		return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(divisor.Value()))), 10), nil
	}
	return "", fmt.Errorf("unsupported container resource: %s", ref.Resource)
}

// FindContainer returns the app or init container called name, or nil.
func FindContainer(pod *v1.Pod, name string) *v1.Container {
	for _, list := range [][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// isTrue reads an optional *bool.
func isTrue(b *bool) bool { return b != nil && *b }

// sortedKeys returns the keys of m, sorted.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
