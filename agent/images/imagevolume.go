package images

// Image volumes (spec.volumes[*].image, the kubelet's ImageVolume, GA in
// v1.36) need the runtime to implement CRI Mount.Image: containerd has it
// from 2.1 on; older ones ignore the field and would bind an empty host
// path. The engine refuses a pod whose image volumes its runtime cannot
// mount (agent/imagevolume.go, refuseImageVolumes) with VolumeRefusal's
// message.

import (
	"fmt"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// runtimeMountsImages reports whether a runtime of this name and version
// implements CRI Mount.Image: containerd from 2.1 on. Other runtimes (CRI-O
// has it since 1.31) and versions that do not parse are given the benefit
// of the doubt: their own error then says what went wrong.
func runtimeMountsImages(name, version string) bool {
	if name != "containerd" {
		return true
	}
	major, minor, ok := majorMinor(version)
	if !ok {
		return true
	}
	return major > 2 || (major == 2 && minor >= 1)
}

// majorMinor parses the start of "v2.4.2", "1.6.38-rc.1" or "2.1".
func majorMinor(version string) (int, int, bool) {
	parts := strings.SplitN(strings.TrimPrefix(version, "v"), ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(strings.TrimRightFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }))
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return major, minor, true
}

// VolumePaths are the field paths of the pod's image volumes.
func VolumePaths(pod *v1.Pod) []string {
	var out []string
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Image != nil {
			out = append(out, field.NewPath("spec", "volumes").Index(i).Child("image").String())
		}
	}
	return out
}

// VolumeRefusal is the message refusing a pod whose image volumes
// (paths) a runtime of this name and version cannot mount; "" when it can.
func VolumeRefusal(paths []string, name, version string) string {
	if len(paths) == 0 || runtimeMountsImages(name, version) {
		return ""
	}
	return fmt.Sprintf("%s: this node's runtime, %s %s, cannot mount image volumes (CRI Mount.image needs containerd 2.1 or later): upgrade the node's containerd to 2.1 or later, or run the pod on a node that has it",
		strings.Join(paths, ", "), name, version)
}
