package agent

import (
	"strconv"

	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/agent/podspec"
)

// CRI label and annotation keys: agent/podspec's, under the engine's names.
const (
	labelPodName       = podspec.LabelPodName
	labelPodNamespace  = podspec.LabelPodNamespace
	labelPodUID        = podspec.LabelPodUID
	labelContainerName = podspec.LabelContainerName
	labelManagedBy     = podspec.LabelManagedBy
	managedByValue     = podspec.ManagedByValue
	labelAgent         = podspec.LabelAgent

	annotationContainerHash          = podspec.AnnotationContainerHash
	annotationRestartCount           = podspec.AnnotationRestartCount
	annotationTerminationMessagePath = podspec.AnnotationTerminationMessagePath
	annotationTerminationMsgPolicy   = podspec.AnnotationTerminationMsgPolicy
	annotationPodTerminationGrace    = podspec.AnnotationPodTerminationGrace
	annotationContainerPorts         = podspec.AnnotationContainerPorts
	annotationContainerType          = podspec.AnnotationContainerType
	annotationPreStopHandler         = podspec.AnnotationPreStopHandler
	annotationQOSClass               = podspec.AnnotationQOSClass
	annotationCPURequest             = podspec.AnnotationCPURequest

	containerTypeInit    = podspec.ContainerTypeInit
	containerTypeRegular = podspec.ContainerTypeRegular
)

// containerHashString is the container hash as stored in the annotation
// (podspec.ContainerHash).
func containerHashString(c *v1.Container) string { return podspec.ContainerHash(c) }

// definitionChanged reports whether the running instance cur was created
// from another definition of c than the current one (resources aside: a
// change of them is a resize, resize.go). An instance a version before
// in-place resize created carries the hash over the whole spec
// (podspec.LegacyContainerHash): it matches that one too.
func definitionChanged(cur *containerInfo, c *v1.Container) bool {
	return cur.hash != containerHashString(c) && cur.hash != podspec.LegacyContainerHash(c)
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
