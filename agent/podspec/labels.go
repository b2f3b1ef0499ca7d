package podspec

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"

	v1 "k8s.io/api/core/v1"
)

// CRI label and annotation keys. The io.kubernetes.* keys are the kubelet's
// (pkg/kubelet/kuberuntime/labels.go), so tools that know the kubelet's
// objects show minikubelet's sensibly. Identity lives in labels (they can be
// filtered on); everything else in annotations (kubelet-facts §6.2).
const (
	LabelPodName       = "io.kubernetes.pod.name"
	LabelPodNamespace  = "io.kubernetes.pod.namespace"
	LabelPodUID        = "io.kubernetes.pod.uid"
	LabelContainerName = "io.kubernetes.container.name"

	// LabelManagedBy marks every sandbox and container minikubelet created.
	// Objects without it are never touched (house style rule 5).
	LabelManagedBy = "io.minikubelet.managed-by"
	// ManagedByValue is LabelManagedBy's value.
	ManagedByValue = "minikubelet"
	// LabelAgent says which minikubelet on the runtime created the object
	// (the engine's Config.AgentID): a daemon and a foreground run may
	// share one runtime, and each touches only its own.
	LabelAgent = "io.minikubelet.agent"

	AnnotationContainerHash          = "io.kubernetes.container.hash"
	AnnotationRestartCount           = "io.kubernetes.container.restartCount"
	AnnotationTerminationMessagePath = "io.kubernetes.container.terminationMessagePath"
	AnnotationTerminationMsgPolicy   = "io.kubernetes.container.terminationMessagePolicy"
	AnnotationPodTerminationGrace    = "io.kubernetes.pod.terminationGracePeriod"
	AnnotationContainerPorts         = "io.kubernetes.container.ports"
	AnnotationContainerType          = "io.kubernetes.container.type"
	// AnnotationPreStopHandler holds the JSON of the container's preStop
	// handler, so that a container whose spec is gone can still be stopped
	// properly (kubelet-facts §6.2, §6.7).
	AnnotationPreStopHandler = "io.kubernetes.container.preStopHandler"

	// AnnotationQOSClass and AnnotationCPURequest on a sandbox are what the
	// engine computes the QoS tiers' cgroups from without the pod's spec.
	AnnotationQOSClass   = "io.minikubelet.qos-class"
	AnnotationCPURequest = "io.minikubelet.cpu-request-milli"

	// The container types of AnnotationContainerType (the engine adds
	// "ephemeral").
	ContainerTypeInit    = "init"
	ContainerTypeRegular = "container"
)

// SandboxLabels returns the pod's own labels plus the identity labels.
func SandboxLabels(pod *v1.Pod, agentID string) map[string]string {
	l := make(map[string]string, len(pod.Labels)+5)
	for k, v := range pod.Labels {
		l[k] = v
	}
	l[LabelPodName] = pod.Name
	l[LabelPodNamespace] = pod.Namespace
	l[LabelPodUID] = string(pod.UID)
	l[LabelManagedBy] = ManagedByValue
	l[LabelAgent] = agentID
	return l
}

// SandboxAnnotations are the pod's annotations verbatim, as the kubelet
// does, plus minikubelet's QoS annotations.
func SandboxAnnotations(pod *v1.Pod) map[string]string {
	a := make(map[string]string, len(pod.Annotations)+2)
	for k, v := range pod.Annotations {
		a[k] = v
	}
	// Plus what the QoS tiers are computed from (agent/cgroups.go).
	for k, v := range QOSAnnotations(pod) {
		a[k] = v
	}
	return a
}

// QOSAnnotations are the sandbox annotations the QoS tiers are computed
// from.
func QOSAnnotations(pod *v1.Pod) map[string]string {
	reqs, _ := PodRequestsAndLimits(pod)
	return map[string]string{
		AnnotationQOSClass:   string(QOSClass(pod)),
		AnnotationCPURequest: strconv.FormatInt(reqs.Cpu().MilliValue(), 10),
	}
}

// ContainerLabels are only the identity labels: the kubelet does not copy
// pod labels onto containers.
func ContainerLabels(pod *v1.Pod, c *v1.Container, agentID string) map[string]string {
	return map[string]string{
		LabelPodName:       pod.Name,
		LabelPodNamespace:  pod.Namespace,
		LabelPodUID:        string(pod.UID),
		LabelContainerName: c.Name,
		LabelManagedBy:     ManagedByValue,
		LabelAgent:         agentID,
	}
}

// ContainerAnnotations carry what a restarted agent needs to adopt or kill
// the container without its spec: hash, restart count, grace period, ports,
// preStop handler.
func ContainerAnnotations(pod *v1.Pod, c *v1.Container, restartCount int, ctype string) map[string]string {
	a := map[string]string{
		AnnotationContainerHash:          ContainerHash(c),
		AnnotationRestartCount:           strconv.Itoa(restartCount),
		AnnotationTerminationMessagePath: c.TerminationMessagePath,
		AnnotationTerminationMsgPolicy:   string(c.TerminationMessagePolicy),
		AnnotationContainerType:          ctype,
	}
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		a[AnnotationPodTerminationGrace] = strconv.FormatInt(*pod.Spec.TerminationGracePeriodSeconds, 10)
	}
	if len(c.Ports) > 0 {
		if b, err := json.Marshal(c.Ports); err == nil {
			a[AnnotationContainerPorts] = string(b)
		}
	}
	if h := PreStopAnnotation(c); h != "" {
		a[AnnotationPreStopHandler] = h
	}
	return a
}

// PreStopAnnotation is the JSON of c's preStop handler, "" without one.
func PreStopAnnotation(c *v1.Container) string {
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil {
		return ""
	}
	b, err := json.Marshal(c.Lifecycle.PreStop)
	if err != nil {
		return "" // a LifecycleHandler always marshals
	}
	return string(b)
}

// hashContainer hashes the container spec (FNV-32a over its JSON) without
// its resources. The current kubelet hashes only name and image;
// minikubelet hashes every other field because its pods are edited in
// place on disk, and an edit of any field must recreate the container
// (issue #6). Resources are left out, as by the kubelet: a change of them
// is an in-place resize, applied to the running container (or a restart
// its resizePolicy asks for), never a change of definition (agent/resize.go).
func hashContainer(c *v1.Container) uint32 {
	cc := *c
	cc.Resources = v1.ResourceRequirements{}
	return hashJSON(&cc)
}

// hashJSON is FNV-32a over c's JSON.
func hashJSON(c *v1.Container) uint32 {
	b, err := json.Marshal(c)
	if err != nil {
		panic(fmt.Sprintf("marshal container %q: %v", c.Name, err)) // v1.Container always marshals
	}
	h := fnv.New32a()
	h.Write(b)
	return h.Sum32()
}

// ContainerHash is the container hash as stored in the
// AnnotationContainerHash annotation.
func ContainerHash(c *v1.Container) string {
	return strconv.FormatUint(uint64(hashContainer(c)), 16)
}

// LegacyContainerHash is the hash minikubelet stored before in-place
// resize, over the whole spec resources included. A container created by
// such a version whose spec is unchanged matches it and is kept across an
// upgrade of the agent rather than restarted; the hash of a container
// without resources is the same either way.
func LegacyContainerHash(c *v1.Container) string {
	return strconv.FormatUint(uint64(hashJSON(c)), 16)
}

// ContainerFromAnnotations rebuilds the parts of a container spec that
// killing it needs (name, ports, preStop handler) from its CRI annotations,
// for a container the current spec does not describe. Malformed
// annotations read as absent, as the kubelet does.
func ContainerFromAnnotations(name string, annotations map[string]string) *v1.Container {
	c := &v1.Container{Name: name}
	if s := annotations[AnnotationContainerPorts]; s != "" {
		// Into a fresh slice: a failed decode can leave part of one.
		var ports []v1.ContainerPort
		if err := json.Unmarshal([]byte(s), &ports); err == nil {
			c.Ports = ports
		}
	}
	if s := annotations[AnnotationPreStopHandler]; s != "" {
		h := &v1.LifecycleHandler{}
		if err := json.Unmarshal([]byte(s), h); err == nil {
			c.Lifecycle = &v1.Lifecycle{PreStop: h}
		}
	}
	return c
}

// SpecContainer finds the named container (init or app) in the pod's spec.
func SpecContainer(pod *v1.Pod, name string) *v1.Container {
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// AnnotationInt reads an integer annotation; missing or malformed reads as
// 0, as the kubelet does for objects created by older versions.
func AnnotationInt(a map[string]string, key string) int {
	n, err := strconv.Atoi(a[key])
	if err != nil {
		return 0
	}
	return n
}

// CrashBackoffKey is the kubelet's stable restart back-off key of a
// container: a spec change (its hash) gets a fresh back-off.
func CrashBackoffKey(pod *v1.Pod, c *v1.Container) string {
	return fmt.Sprintf("%s_%s_%s_%s_%s", pod.Name, pod.Namespace, pod.UID, c.Name, ContainerHash(c))
}

// ImageBackoffKey is the kubelet's image pull back-off key, the pod and
// the image: a container's and an image volume's pulls of the same image
// share it.
func ImageBackoffKey(pod *v1.Pod, image string) string {
	return fmt.Sprintf("%s_%s", pod.UID, image)
}

// BackoffKeys are the restart and pull back-off keys of every container
// and init container of the pod (forgotten when it is torn down).
func BackoffKeys(pod *v1.Pod) (crash, image []string) {
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			crash = append(crash, CrashBackoffKey(pod, &cs[i]))
			image = append(image, ImageBackoffKey(pod, cs[i].Image))
		}
	}
	return crash, image
}
