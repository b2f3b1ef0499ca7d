package agent

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
	labelPodName       = "io.kubernetes.pod.name"
	labelPodNamespace  = "io.kubernetes.pod.namespace"
	labelPodUID        = "io.kubernetes.pod.uid"
	labelContainerName = "io.kubernetes.container.name"

	// labelManagedBy marks every sandbox and container minikubelet created.
	// Objects without it are never touched (house style rule 5).
	labelManagedBy = "io.minikubelet.managed-by"
	managedByValue = "minikubelet"
	// labelAgent says which minikubelet on the runtime created the object
	// (Config.AgentID, agent_identity.go): a daemon and a foreground run
	// may share one runtime, and each touches only its own.
	labelAgent = "io.minikubelet.agent"

	annotationContainerHash          = "io.kubernetes.container.hash"
	annotationRestartCount           = "io.kubernetes.container.restartCount"
	annotationTerminationMessagePath = "io.kubernetes.container.terminationMessagePath"
	annotationTerminationMsgPolicy   = "io.kubernetes.container.terminationMessagePolicy"
	annotationPodTerminationGrace    = "io.kubernetes.pod.terminationGracePeriod"
	annotationContainerPorts         = "io.kubernetes.container.ports"
	annotationContainerType          = "io.kubernetes.container.type"

	containerTypeInit    = "init"
	containerTypeRegular = "container"
)

// sandboxLabels returns the pod's own labels plus the identity labels.
func sandboxLabels(pod *v1.Pod, agentID string) map[string]string {
	l := make(map[string]string, len(pod.Labels)+5)
	for k, v := range pod.Labels {
		l[k] = v
	}
	l[labelPodName] = pod.Name
	l[labelPodNamespace] = pod.Namespace
	l[labelPodUID] = string(pod.UID)
	l[labelManagedBy] = managedByValue
	l[labelAgent] = agentID
	return l
}

// sandboxAnnotations are the pod's annotations verbatim, as the kubelet
// does, plus minikubelet's QoS annotations.
func sandboxAnnotations(pod *v1.Pod) map[string]string {
	a := make(map[string]string, len(pod.Annotations)+2)
	for k, v := range pod.Annotations {
		a[k] = v
	}
	// Plus what the QoS tiers are computed from (agent/cgroups.go).
	for k, v := range qosAnnotations(pod) {
		a[k] = v
	}
	return a
}

// containerLabels are only the identity labels: the kubelet does not copy pod
// labels onto containers.
func containerLabels(pod *v1.Pod, c *v1.Container, agentID string) map[string]string {
	return map[string]string{
		labelPodName:       pod.Name,
		labelPodNamespace:  pod.Namespace,
		labelPodUID:        string(pod.UID),
		labelContainerName: c.Name,
		labelManagedBy:     managedByValue,
		labelAgent:         agentID,
	}
}

// containerAnnotations carry what a restarted agent needs to adopt or kill
// the container without its spec: hash, restart count, grace period, ports.
func containerAnnotations(pod *v1.Pod, c *v1.Container, restartCount int, ctype string) map[string]string {
	a := map[string]string{
		annotationContainerHash:          containerHashString(c),
		annotationRestartCount:           strconv.Itoa(restartCount),
		annotationTerminationMessagePath: c.TerminationMessagePath,
		annotationTerminationMsgPolicy:   string(c.TerminationMessagePolicy),
		annotationContainerType:          ctype,
	}
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		a[annotationPodTerminationGrace] = strconv.FormatInt(*pod.Spec.TerminationGracePeriodSeconds, 10)
	}
	if len(c.Ports) > 0 {
		if b, err := json.Marshal(c.Ports); err == nil {
			a[annotationContainerPorts] = string(b)
		}
	}
	return a
}

// hashContainer hashes the whole container spec (FNV-32a over its JSON).
// The current kubelet hashes only name and image; minikubelet hashes
// everything because its pods are edited in place on disk, and an edit of
// any field must recreate the container (issue #6).
func hashContainer(c *v1.Container) uint32 {
	b, err := json.Marshal(c)
	if err != nil {
		panic(fmt.Sprintf("marshal container %q: %v", c.Name, err)) // v1.Container always marshals
	}
	h := fnv.New32a()
	h.Write(b)
	return h.Sum32()
}

// containerHashString is the container hash as stored in the annotation.
func containerHashString(c *v1.Container) string {
	return strconv.FormatUint(uint64(hashContainer(c)), 16)
}

// annotationInt reads an integer annotation; missing or malformed reads as 0,
// as the kubelet does for objects created by older versions.
func annotationInt(a map[string]string, key string) int {
	n, err := strconv.Atoi(a[key])
	if err != nil {
		return 0
	}
	return n
}
