package manifest

// Defaulting: what the API server would fill in (k8s pkg/apis/core/v1/defaults.go)
// before a kubelet ever sees a pod. minikubelet reads manifests straight from
// disk, so it applies the same defaults itself, for exactly the fields it
// supports (support.go); Kubernetes' defaulting code is not importable.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// SetPodDefaults applies, in place, the defaults the API server would set for
// every field minikubelet supports:
//
//   - metadata.namespace "default"; metadata.uid derived from the manifest
//     when empty (see below); spec.nodeName = nodeName when empty;
//   - spec: restartPolicy Always, terminationGracePeriodSeconds 30, dnsPolicy
//     ClusterFirst, schedulerName default-scheduler, enableServiceLinks true;
//     a volume without a source becomes an emptyDir; hostPath type "";
//     an image volume's pullPolicy as a container's imagePullPolicy;
//   - every (init) container: imagePullPolicy Always for an untagged or
//     :latest image, else IfNotPresent; terminationMessagePath
//     /dev/termination-log and policy File; port protocol TCP, and with
//     hostNetwork hostPort = containerPort; env fieldRef apiVersion v1;
//     requests copied from limits for each resource that has no request;
//   - probes: timeoutSeconds 1, periodSeconds 10, successThreshold 1,
//     failureThreshold 3; httpGet path "/" and scheme HTTP.
//
// The UID, like the kubelet file source's, is a hash of the node name, the
// source and the pod as written (before any other default), so the same file
// on the same node always yields the same UID and any edit yields a new one.
// It is shaped like a UUID (8-4-4-4-12 hex, version 8) because it ends up in
// paths and cgroup names where tools expect one.
//
// SetPodDefaults is idempotent.
func SetPodDefaults(pod *v1.Pod, source, nodeName string) {
	// Step 1: the UID first, from the pod exactly as written.
	if pod.UID == "" {
		pod.UID = derivePodUID(pod, source, nodeName)
	}

	if pod.Namespace == "" {
		pod.Namespace = v1.NamespaceDefault
	}

	spec := &pod.Spec
	// A lone node is the node of every pod it runs; the spec.nodeName fieldRef
	// reads this.
	if spec.NodeName == "" {
		spec.NodeName = nodeName
	}
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = v1.RestartPolicyAlways
	}
	if spec.TerminationGracePeriodSeconds == nil {
		grace := int64(v1.DefaultTerminationGracePeriodSeconds)
		spec.TerminationGracePeriodSeconds = &grace
	}
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = v1.DNSClusterFirst
	}
	// Inert without a scheduler, but a defaulted pod then reads like one from
	// an API server.
	if spec.SchedulerName == "" {
		spec.SchedulerName = v1.DefaultSchedulerName
	}
	// The ServiceAccount admission plugin's default (no token is mounted:
	// there is no API server to issue one).
	if spec.ServiceAccountName == "" {
		spec.ServiceAccountName = spec.DeprecatedServiceAccount
	}
	if spec.ServiceAccountName == "" {
		spec.ServiceAccountName = "default"
	}
	spec.DeprecatedServiceAccount = spec.ServiceAccountName
	setPriorityDefault(spec)
	if spec.EnableServiceLinks == nil {
		enable := v1.DefaultEnableServiceLinks
		spec.EnableServiceLinks = &enable
	}

	for i := range spec.Volumes {
		setVolumeDefaults(&spec.Volumes[i])
	}
	for i := range spec.InitContainers {
		setContainerDefaults(&spec.InitContainers[i], spec.HostNetwork)
	}
	for i := range spec.Containers {
		setContainerDefaults(&spec.Containers[i], spec.HostNetwork)
	}
	for i := range spec.EphemeralContainers {
		// The same defaults, through the Container the API keeps
		// EphemeralContainerCommon identical to.
		c := (*v1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon)
		setContainerDefaults(c, spec.HostNetwork)
	}
}

// setVolumeDefaults defaults one volume: no source means emptyDir, a
// hostPath without type means no check (""), and an image volume's
// pullPolicy follows its reference's tag (the API server's
// SetDefaults_Volume; an empty reference, which validation refuses, gets
// IfNotPresent there as here).
func setVolumeDefaults(vol *v1.Volume) {
	if vol.VolumeSource == (v1.VolumeSource{}) {
		vol.EmptyDir = &v1.EmptyDirVolumeSource{}
	}
	if iv := vol.Image; iv != nil && iv.PullPolicy == "" {
		iv.PullPolicy = v1.PullIfNotPresent
		if iv.Reference != "" {
			iv.PullPolicy = defaultPullPolicy(iv.Reference)
		}
	}
	if vol.HostPath != nil && vol.HostPath.Type == nil {
		t := v1.HostPathUnset
		vol.HostPath.Type = &t
	}
}

// setContainerDefaults defaults one init or app container.
func setContainerDefaults(c *v1.Container, hostNetwork bool) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = defaultPullPolicy(c.Image)
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = v1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = v1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		p := &c.Ports[i]
		if p.Protocol == "" {
			p.Protocol = v1.ProtocolTCP
		}
		// With hostNetwork the container port is the host port.
		if hostNetwork && p.HostPort == 0 {
			p.HostPort = p.ContainerPort
		}
	}
	for i := range c.Env {
		if vf := c.Env[i].ValueFrom; vf != nil && vf.FieldRef != nil && vf.FieldRef.APIVersion == "" {
			vf.FieldRef.APIVersion = "v1"
		}
	}
	// A limit without a request requests the limit (per resource).
	if len(c.Resources.Limits) > 0 {
		if c.Resources.Requests == nil {
			c.Resources.Requests = v1.ResourceList{}
		}
		for name, limit := range c.Resources.Limits {
			if _, ok := c.Resources.Requests[name]; !ok {
				c.Resources.Requests[name] = limit.DeepCopy()
			}
		}
	}
	for _, p := range []*v1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		setProbeDefaults(p)
	}
	// Lifecycle httpGet hooks get the same defaults as probes.
	if lc := c.Lifecycle; lc != nil {
		for _, h := range []*v1.LifecycleHandler{lc.PostStart, lc.PreStop} {
			if h != nil && h.HTTPGet != nil {
				if h.HTTPGet.Path == "" {
					h.HTTPGet.Path = "/"
				}
				if h.HTTPGet.Scheme == "" {
					h.HTTPGet.Scheme = v1.URISchemeHTTP
				}
			}
		}
	}
}

// setProbeDefaults defaults a probe; p may be nil.
func setProbeDefaults(p *v1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	if h := p.HTTPGet; h != nil {
		if h.Path == "" {
			h.Path = "/"
		}
		if h.Scheme == "" {
			h.Scheme = v1.URISchemeHTTP
		}
	}
}

// defaultPullPolicy is the API server's rule: Always for the tag "latest"
// (explicit, or implied by an image with neither tag nor digest), else
// IfNotPresent. A digest without a tag is IfNotPresent.
func defaultPullPolicy(image string) v1.PullPolicy {
	if imageTag(image) == "latest" {
		return v1.PullAlways
	}
	return v1.PullIfNotPresent
}

// imageTag returns the tag of an image reference: "latest" when it has
// neither tag nor digest, "" when it has only a digest.
func imageTag(image string) string {
	name, _, hasDigest := strings.Cut(image, "@")
	// The tag follows the last ':' of the last path component; a ':' before
	// a '/' separates a registry port ("reg:5000/x").
	last := name[strings.LastIndex(name, "/")+1:]
	if _, tag, ok := strings.Cut(last, ":"); ok {
		return tag
	}
	if hasDigest {
		return ""
	}
	return "latest"
}

// derivePodUID hashes the node name, the source and the pod as written into
// a UUID-shaped UID, like the kubelet's file source (which hashes host, file
// path and pod with MD5 into 32 bare hex digits).
func derivePodUID(pod *v1.Pod, source, nodeName string) types.UID {
	h := sha256.New()
	// Length-prefixed fields, so ("ab","c") and ("a","bc") differ.
	for _, s := range []string{"host:" + nodeName, "file:" + source} {
		h.Write([]byte{byte(len(s) >> 8), byte(len(s))})
		h.Write([]byte(s))
	}
	// encoding/json sorts map keys, so this is deterministic. A v1.Pod always
	// marshals.
	content, _ := json.Marshal(pod)
	h.Write(content)

	var u [16]byte
	copy(u[:], h.Sum(nil))
	u[6] = u[6]&0x0f | 0x80 // version 8: custom (RFC 9562)
	u[8] = u[8]&0x3f | 0x80 // RFC 4122/9562 variant
	s := hex.EncodeToString(u[:])
	return types.UID(s[0:8] + "-" + s[8:12] + "-" + s[12:16] + "-" + s[16:20] + "-" + s[20:32])
}
