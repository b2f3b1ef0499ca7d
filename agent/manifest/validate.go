package manifest

// Over 600 lines: the API server's validation rules for every supported field,
// one function per part of the spec, kept in the API server's order so
// that each can be checked against its original.

// Validation: the API server's rules (k8s pkg/apis/core/validation) for the
// fields minikubelet supports, with the same field.Error messages, plus the
// few rules a node needs because it builds paths and cgroup names from what
// the manifest says. Which fields are refused outright is support.go's job;
// ValidatePod runs both.

import (
	"fmt"
	"maps"
	"math"
	"net/netip"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	pathvalidation "k8s.io/apimachinery/pkg/api/validation/path"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minikubelet/minikubelet/agent/manifest/decodeerr"
)

// ValidatePod returns every problem of pod as field errors, before anything
// is created: the API server's validation of the supported fields, then the
// refusal of every field minikubelet does not support (support.go). It
// expects a defaulted pod (SetPodDefaults) but does not panic on one that
// is not.
func ValidatePod(pod *v1.Pod) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validatePodMeta(pod)...)
	errs = append(errs, validatePodSpec(&pod.Spec, field.NewPath("spec"))...)
	errs = append(errs, validatePriority(&pod.Spec, field.NewPath("spec"))...)
	errs = append(errs, checkSupport(pod)...)
	// A refusal quotes the bad value: keep a hostile one from making the
	// message (returned by the API, logged, shown in the pod list) huge.
	for _, e := range errs {
		if s, ok := e.BadValue.(string); ok {
			e.BadValue = decodeerr.TruncateValue(s)
		}
	}
	return errs
}

// Limits Kubernetes does not have, chosen because a lone node runs what it
// accepts and has nobody upstream to refuse the absurd.
const (
	// maxContainersPerList bounds spec.containers and spec.initContainers.
	// The pod worker creates and starts a pod's containers one after the
	// other through the CRI (about 0.1–0.2 s each here), each with its own
	// process, cgroup, log file and probes: a pod of 100 containers already
	// takes 10–20 s to start; 1 000 would hold the node for minutes, which
	// is a mistake or an attack, never a pod.
	maxContainersPerList = 100
	// maxEnvEntryBytes is the kernel's limit on one environment string
	// "NAME=value" (MAX_ARG_STRLEN, 32 pages, with its NUL): execve fails
	// with E2BIG on a longer one, after the sandbox exists.
	maxEnvEntryBytes = 128 << 10
	// maxExecBytes bounds a container's literal command, args and env
	// together (each string with its NUL, env as "NAME=value"). The kernel
	// refuses an execve whose arguments and environment exceed a quarter of
	// the stack limit (2 MiB with the usual 8 MiB), and the image's own
	// environment and the values of references come on top: half of it.
	maxExecBytes = 1 << 20
)

// uidRE is what minikubelet accepts as a pod UID: it becomes part of
// directory and cgroup names.
var uidRE = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?$`)

// uidMaxLength bounds a pod UID (a UUID has 36 characters).
const uidMaxLength = 128

// validatePodMeta checks name, namespace, uid, labels and annotations.
func validatePodMeta(pod *v1.Pod) field.ErrorList {
	var errs field.ErrorList
	meta := field.NewPath("metadata")

	namePath := meta.Child("name")
	if pod.Name == "" {
		errs = append(errs, field.Required(namePath, ""))
	} else if msgs := pathvalidation.ValidatePathSegmentName(pod.Name, false); len(msgs) > 0 {
		// The name is part of directory names: refuse what could escape.
		for _, msg := range msgs {
			errs = append(errs, field.Invalid(namePath, pod.Name, msg))
		}
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(pod.Name) {
			errs = append(errs, field.Invalid(namePath, pod.Name, msg))
		}
	}

	nsPath := meta.Child("namespace")
	if pod.Namespace == "" {
		errs = append(errs, field.Required(nsPath, ""))
	} else {
		for _, msg := range validation.IsDNS1123Label(pod.Namespace) {
			errs = append(errs, field.Invalid(nsPath, pod.Namespace, msg))
		}
	}

	if uid := string(pod.UID); uid != "" {
		uidPath := meta.Child("uid")
		if len(uid) > uidMaxLength {
			errs = append(errs, field.TooLong(uidPath, uid, uidMaxLength))
		} else if !uidRE.MatchString(uid) {
			errs = append(errs, field.Invalid(uidPath, uid,
				"must consist of alphanumeric characters or '-', and start and end with an alphanumeric character (it is used in file and cgroup names)"))
		}
	}

	// The apimachinery helpers range over the map; one key at a time in
	// sorted order keeps the messages in a stable order.
	for _, k := range slices.Sorted(maps.Keys(pod.Labels)) {
		errs = append(errs, metavalidation.ValidateLabels(map[string]string{k: pod.Labels[k]}, meta.Child("labels"))...)
	}
	for _, k := range slices.Sorted(maps.Keys(pod.Annotations)) {
		errs = append(errs, apivalidation.ValidateAnnotations(map[string]string{k: pod.Annotations[k]}, meta.Child("annotations"))...)
	}
	if apivalidation.ValidateAnnotationsSize(pod.Annotations) != nil {
		errs = append(errs, field.TooLong(meta.Child("annotations"), "", apivalidation.TotalAnnotationSizeLimitB))
	}
	return errs
}

// Enumerations of the supported values, sorted as the API server lists them.
var (
	supportedRestartPolicies = []string{string(v1.RestartPolicyAlways), string(v1.RestartPolicyNever), string(v1.RestartPolicyOnFailure)}
	supportedDNSPolicies     = []string{string(v1.DNSClusterFirst), string(v1.DNSClusterFirstWithHostNet), string(v1.DNSDefault), string(v1.DNSNone)}
	supportedPullPolicies    = []string{string(v1.PullAlways), string(v1.PullIfNotPresent), string(v1.PullNever)}
	supportedPortProtocols   = []string{string(v1.ProtocolSCTP), string(v1.ProtocolTCP), string(v1.ProtocolUDP)}
	supportedTermMsgPolicies = []string{string(v1.TerminationMessageFallbackToLogsOnError), string(v1.TerminationMessageReadFile)}
	supportedHostPathTypes   = []string{"", string(v1.HostPathBlockDev), string(v1.HostPathCharDev), string(v1.HostPathDirectory),
		string(v1.HostPathDirectoryOrCreate), string(v1.HostPathFile), string(v1.HostPathFileOrCreate), string(v1.HostPathSocket)}
	supportedURISchemes = []string{string(v1.URISchemeHTTP), string(v1.URISchemeHTTPS)}
)

// validatePodSpec checks the supported fields of spec.
func validatePodSpec(spec *v1.PodSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList

	volumes, volErrs := validateVolumes(spec.Volumes, fldPath.Child("volumes"))
	errs = append(errs, volErrs...)

	if len(spec.Containers) == 0 {
		errs = append(errs, field.Required(fldPath.Child("containers"), ""))
	}
	for _, l := range []struct {
		name string
		n    int
	}{{"initContainers", len(spec.InitContainers)}, {"containers", len(spec.Containers)}} {
		if l.n > maxContainersPerList {
			// Validating each of them would only repeat the one problem.
			errs = append(errs, field.TooMany(fldPath.Child(l.name), l.n, maxContainersPerList))
		}
	}
	if len(errs) > 0 && (len(spec.InitContainers) > maxContainersPerList || len(spec.Containers) > maxContainersPerList) {
		return errs
	}
	// Container names are unique across init and app containers.
	names := map[string]bool{}
	for i := range spec.InitContainers {
		ic := &spec.InitContainers[i]
		errs = append(errs, validateContainer(ic, spec, volumes, names, fldPath.Child("initContainers").Index(i))...)
		// The API's rule: an init container's restartPolicy, when set, can
		// only be Always (which makes it a native sidecar).
		if ic.RestartPolicy != nil && *ic.RestartPolicy != v1.ContainerRestartPolicyAlways {
			errs = append(errs, field.NotSupported(fldPath.Child("initContainers").Index(i).Child("restartPolicy"), *ic.RestartPolicy, []string{string(v1.ContainerRestartPolicyAlways)}))
		}
	}
	for i := range spec.Containers {
		errs = append(errs, validateContainer(&spec.Containers[i], spec, volumes, names, fldPath.Child("containers").Index(i))...)
		errs = append(errs, validateRestartRules(&spec.Containers[i], fldPath.Child("containers").Index(i))...)
	}
	for i := range spec.EphemeralContainers {
		errs = append(errs, validateContainer(EphemeralContainer(&spec.EphemeralContainers[i]), spec, volumes, names, fldPath.Child("ephemeralContainers").Index(i))...)
	}
	errs = append(errs, validateHostPorts(spec, fldPath)...)
	if d := spec.ActiveDeadlineSeconds; d != nil && (*d < 1 || *d > math.MaxInt32) {
		errs = append(errs, field.Invalid(fldPath.Child("activeDeadlineSeconds"), *d, fmt.Sprintf("must be between 1 and %d, inclusive", math.MaxInt32)))
	}
	// os.name is the API's to validate (linux or windows); a pod for
	// another OS than this node's is refused at admission, as by the
	// kubelet (PodOSNotSupported, admitPodOS).
	if spec.OS != nil && spec.OS.Name != v1.Linux && spec.OS.Name != v1.Windows {
		errs = append(errs, field.NotSupported(fldPath.Child("os", "name"), spec.OS.Name, []string{string(v1.Linux), string(v1.Windows)}))
	}
	errs = append(errs, validateNodeSelector(spec.NodeSelector, fldPath.Child("nodeSelector"))...)
	errs = append(errs, validateNodeAffinity(spec.Affinity, fldPath.Child("affinity"))...)
	errs = append(errs, validatePodSecurity(spec, fldPath)...) // security.go
	errs = append(errs, validateHostUsers(spec, fldPath)...)   // security.go

	if p := spec.RestartPolicy; p == "" {
		errs = append(errs, field.Required(fldPath.Child("restartPolicy"), ""))
	} else if !slices.Contains(supportedRestartPolicies, string(p)) {
		errs = append(errs, field.NotSupported(fldPath.Child("restartPolicy"), p, supportedRestartPolicies))
	}

	switch p := spec.DNSPolicy; {
	case p == "":
		errs = append(errs, field.Required(fldPath.Child("dnsPolicy"), ""))
	case !slices.Contains(supportedDNSPolicies, string(p)):
		errs = append(errs, field.NotSupported(fldPath.Child("dnsPolicy"), p, supportedDNSPolicies))
	}
	errs = append(errs, validateDNS(spec, fldPath)...) // dnsConfig, hostAliases: dns.go

	if g := spec.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		errs = append(errs, field.Invalid(fldPath.Child("terminationGracePeriodSeconds"), *g, "must be greater than or equal to 0"))
	}

	for _, f := range []struct {
		name, value string
	}{{"hostname", spec.Hostname}, {"subdomain", spec.Subdomain}} {
		if f.value == "" {
			continue
		}
		for _, msg := range validation.IsDNS1123Label(f.value) {
			errs = append(errs, field.Invalid(fldPath.Child(f.name), f.value, msg))
		}
	}
	if spec.NodeName != "" {
		for _, msg := range validation.IsDNS1123Subdomain(spec.NodeName) {
			errs = append(errs, field.Invalid(fldPath.Child("nodeName"), spec.NodeName, msg))
		}
	}
	return errs
}

// validateVolumes checks spec.volumes and returns the set of volume names.
func validateVolumes(volumes []v1.Volume, fldPath *field.Path) (map[string]bool, field.ErrorList) {
	var errs field.ErrorList
	names := map[string]bool{}
	for i := range volumes {
		vol := &volumes[i]
		idxPath := fldPath.Index(i)
		namePath := idxPath.Child("name")
		switch {
		case vol.Name == "":
			errs = append(errs, field.Required(namePath, ""))
		case names[vol.Name]:
			errs = append(errs, field.Duplicate(namePath, vol.Name))
		default:
			for _, msg := range validation.IsDNS1123Label(vol.Name) {
				errs = append(errs, field.Invalid(namePath, vol.Name, msg))
			}
		}
		names[vol.Name] = true

		// Exactly one source. The sources minikubelet does not support are
		// refused by name in support.go; here only the count matters.
		var sources []string
		forEachJSONField(reflect.ValueOf(&vol.VolumeSource).Elem(), func(name string, fv reflect.Value) {
			if !fv.IsNil() {
				sources = append(sources, name)
			}
		})
		switch len(sources) {
		case 0:
			errs = append(errs, field.Required(idxPath, "must specify a volume type"))
		case 1:
		default:
			for _, s := range sources[1:] {
				errs = append(errs, field.Forbidden(idxPath.Child(s), "may not specify more than 1 volume type"))
			}
		}

		errs = append(errs, validateDataVolume(vol, idxPath)...) // datasupport.go
		if ed := vol.EmptyDir; ed != nil && ed.Medium != v1.StorageMediumDefault && ed.Medium != v1.StorageMediumMemory {
			errs = append(errs, field.Forbidden(idxPath.Child("emptyDir", "medium"),
				fmt.Sprintf("%s: medium %q", reasonNotYet, ed.Medium)))
		}
		if iv := vol.Image; iv != nil {
			// The API server's validateImageVolumeSource.
			rp := idxPath.Child("image", "reference")
			if iv.Reference == "" {
				errs = append(errs, field.Required(rp, ""))
			} else if strings.ContainsFunc(iv.Reference, unicode.IsSpace) {
				errs = append(errs, field.Invalid(rp, iv.Reference, "must not contain whitespace"))
			}
			if p := iv.PullPolicy; p == "" {
				errs = append(errs, field.Required(idxPath.Child("image", "pullPolicy"), ""))
			} else if !slices.Contains(supportedPullPolicies, string(p)) {
				errs = append(errs, field.NotSupported(idxPath.Child("image", "pullPolicy"), p, supportedPullPolicies))
			}
		}
		if hp := vol.HostPath; hp != nil {
			p := idxPath.Child("hostPath", "path")
			switch {
			case hp.Path == "":
				errs = append(errs, field.Required(p, ""))
			case !path.IsAbs(hp.Path):
				errs = append(errs, field.Invalid(p, hp.Path, "must be an absolute path"))
			case HasBacksteps(hp.Path):
				errs = append(errs, field.Invalid(p, hp.Path, "must not contain '..'"))
			}
			if hp.Type != nil && !slices.Contains(supportedHostPathTypes, string(*hp.Type)) {
				errs = append(errs, field.NotSupported(idxPath.Child("hostPath", "type"), *hp.Type, supportedHostPathTypes))
			}
		}
	}
	return names, errs
}

// HasBacksteps reports whether a path has a ".." element.
func HasBacksteps(p string) bool {
	return slices.Contains(strings.Split(p, "/"), "..")
}

// validateContainer checks one init or app container. names collects the
// container names seen so far (init containers first).
func validateContainer(c *v1.Container, spec *v1.PodSpec, volumes map[string]bool, names map[string]bool, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList

	namePath := fldPath.Child("name")
	switch {
	case c.Name == "":
		errs = append(errs, field.Required(namePath, ""))
	case names[c.Name]:
		errs = append(errs, field.Duplicate(namePath, c.Name))
	default:
		for _, msg := range validation.IsDNS1123Label(c.Name) {
			errs = append(errs, field.Invalid(namePath, c.Name, msg))
		}
	}
	names[c.Name] = true

	imagePath := fldPath.Child("image")
	if c.Image == "" {
		errs = append(errs, field.Required(imagePath, ""))
	} else if strings.ContainsFunc(c.Image, unicode.IsSpace) {
		errs = append(errs, field.Invalid(imagePath, c.Image, "must not contain whitespace"))
	}

	if p := c.ImagePullPolicy; p == "" {
		errs = append(errs, field.Required(fldPath.Child("imagePullPolicy"), ""))
	} else if !slices.Contains(supportedPullPolicies, string(p)) {
		errs = append(errs, field.NotSupported(fldPath.Child("imagePullPolicy"), p, supportedPullPolicies))
	}

	if p := c.TerminationMessagePath; p != "" && !path.IsAbs(p) {
		errs = append(errs, field.Invalid(fldPath.Child("terminationMessagePath"), p, "must be an absolute path"))
	}
	if p := c.TerminationMessagePolicy; p == "" {
		errs = append(errs, field.Required(fldPath.Child("terminationMessagePolicy"), ""))
	} else if !slices.Contains(supportedTermMsgPolicies, string(p)) {
		errs = append(errs, field.NotSupported(fldPath.Child("terminationMessagePolicy"), p, supportedTermMsgPolicies))
	}

	errs = append(errs, validatePorts(c.Ports, spec.HostNetwork, fldPath.Child("ports"))...)
	errs = append(errs, validateEnv(c.Env, fldPath.Child("env"))...)
	errs = append(errs, validateFileKeyRefVolumes(c.Env, spec, fldPath.Child("env"))...) // envfile.go
	errs = append(errs, validateExecSize(c, fldPath)...)
	errs = append(errs, validateEnvFrom(c.EnvFrom, fldPath.Child("envFrom"))...) // datasupport.go
	errs = append(errs, validateResources(&c.Resources, fldPath.Child("resources"))...)
	errs = append(errs, validateResizePolicy(c.ResizePolicy, spec.RestartPolicy, fldPath.Child("resizePolicy"))...)
	errs = append(errs, validateVolumeMounts(c.VolumeMounts, volumes, fldPath.Child("volumeMounts"))...)
	errs = append(errs, validateBidirectionalMounts(c, fldPath.Child("volumeMounts"))...)
	errs = append(errs, validateContainerSecurity(c.SecurityContext, spec, fldPath.Child("securityContext"))...) // security.go

	errs = append(errs, validateProbe(c.LivenessProbe, c, true, fldPath.Child("livenessProbe"))...)
	errs = append(errs, validateProbe(c.ReadinessProbe, c, false, fldPath.Child("readinessProbe"))...)
	errs = append(errs, validateProbe(c.StartupProbe, c, true, fldPath.Child("startupProbe"))...)
	if lc := c.Lifecycle; lc != nil {
		errs = append(errs, validateLifecycleHandler(lc.PostStart, c, fldPath.Child("lifecycle", "postStart"))...)
		errs = append(errs, validateLifecycleHandler(lc.PreStop, c, fldPath.Child("lifecycle", "preStop"))...)
	}
	return errs
}

// validatePorts checks the ports of one container.
func validatePorts(ports []v1.ContainerPort, hostNetwork bool, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := map[string]bool{}
	for i, port := range ports {
		idxPath := fldPath.Index(i)
		if port.Name != "" {
			namePath := idxPath.Child("name")
			if msgs := validation.IsValidPortName(port.Name); len(msgs) > 0 {
				for _, msg := range msgs {
					errs = append(errs, field.Invalid(namePath, port.Name, msg))
				}
			} else if names[port.Name] {
				errs = append(errs, field.Duplicate(namePath, port.Name))
			}
			names[port.Name] = true
		}
		if port.ContainerPort == 0 {
			errs = append(errs, field.Required(idxPath.Child("containerPort"), ""))
		} else {
			for _, msg := range validation.IsValidPortNum(int(port.ContainerPort)) {
				errs = append(errs, field.Invalid(idxPath.Child("containerPort"), port.ContainerPort, msg))
			}
		}
		if port.HostPort != 0 {
			for _, msg := range validation.IsValidPortNum(int(port.HostPort)) {
				errs = append(errs, field.Invalid(idxPath.Child("hostPort"), port.HostPort, msg))
			}
			if hostNetwork && port.HostPort != port.ContainerPort {
				errs = append(errs, field.Invalid(idxPath.Child("hostPort"), port.HostPort,
					"must match `containerPort` when `hostNetwork` is true"))
			}
		}
		if port.Protocol == "" {
			errs = append(errs, field.Required(idxPath.Child("protocol"), ""))
		} else if !slices.Contains(supportedPortProtocols, string(port.Protocol)) {
			errs = append(errs, field.NotSupported(idxPath.Child("protocol"), port.Protocol, supportedPortProtocols))
		}
		if port.HostIP != "" {
			if _, err := netip.ParseAddr(port.HostIP); err != nil {
				errs = append(errs, field.Invalid(idxPath.Child("hostIP"), port.HostIP, "must be a valid IP address"))
			}
		}
	}
	return errs
}

// validateHostPorts refuses two ports of the pod (init or app containers)
// that would take the same host port, protocol and host IP. An empty host
// IP (all addresses) clashes with every host IP.
func validateHostPorts(spec *v1.PodSpec, fldPath *field.Path) field.ErrorList {
	type key struct {
		port  int32
		proto v1.Protocol
	}
	var errs field.ErrorList
	taken := map[key][]string{} // host IPs per (port, protocol); "" = all
	check := func(containers []v1.Container, listPath *field.Path) {
		for ci := range containers {
			for pi, port := range containers[ci].Ports {
				if port.HostPort <= 0 {
					continue
				}
				k := key{port.HostPort, port.Protocol}
				ip := port.HostIP
				if ip == "0.0.0.0" || ip == "::" {
					ip = ""
				}
				clash := slices.ContainsFunc(taken[k], func(other string) bool {
					return other == "" || ip == "" || other == ip
				})
				if clash {
					v := strconv.Itoa(int(port.HostPort)) + "/" + string(port.Protocol)
					if port.HostIP != "" {
						v = port.HostIP + ":" + v
					}
					errs = append(errs, field.Duplicate(listPath.Index(ci).Child("ports").Index(pi).Child("hostPort"), v))
					continue
				}
				taken[k] = append(taken[k], ip)
			}
		}
	}
	check(spec.InitContainers, fldPath.Child("initContainers"))
	check(spec.Containers, fldPath.Child("containers"))
	return errs
}

// validateEnv checks the env of one container.
func validateEnv(env []v1.EnvVar, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, ev := range env {
		idxPath := fldPath.Index(i)
		if ev.Name == "" {
			errs = append(errs, field.Required(idxPath.Child("name"), ""))
		} else {
			for _, msg := range validation.IsRelaxedEnvVarName(ev.Name) {
				errs = append(errs, field.Invalid(idxPath.Child("name"), ev.Name, msg))
			}
		}
		if ev.ValueFrom == nil {
			continue
		}
		vfPath := idxPath.Child("valueFrom")
		if ev.Value != "" {
			errs = append(errs, field.Invalid(vfPath, "", "may not be specified when `value` is not empty"))
		}
		n := 0
		forEachJSONField(reflect.ValueOf(ev.ValueFrom).Elem(), func(_ string, fv reflect.Value) {
			if !fv.IsNil() {
				n++
			}
		})
		switch {
		case n == 0:
			errs = append(errs, field.Invalid(vfPath, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`"))
		case n > 1:
			errs = append(errs, field.Invalid(vfPath, "", "may not have more than one field specified at a time"))
		}
		// datasupport.go; fileKeyRef's in envfile.go.
		errs = append(errs, validateEnvValueFrom(ev.ValueFrom, vfPath)...)
	}
	return errs
}

// validateExecSize refuses what the kernel would refuse at the container's
// start (maxEnvEntryBytes, maxExecBytes), before anything is created.
func validateExecSize(c *v1.Container, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	total := 0
	for i, ev := range c.Env {
		n := len(ev.Name) + 1 + len(ev.Value) + 1
		total += n
		if n > maxEnvEntryBytes {
			errs = append(errs, &field.Error{Type: field.ErrorTypeTooLong, Field: fldPath.Child("env").Index(i).Child("value").String(),
				BadValue: field.OmitValueType{}, Detail: fmt.Sprintf(
					"NAME=value may not be more than %d bytes (the kernel's limit on one environment string), got %d: pass large data in a volume (configMap, secret or emptyDir)",
					maxEnvEntryBytes-1, n-1)})
		}
	}
	for _, list := range [][]string{c.Command, c.Args} {
		for _, a := range list {
			total += len(a) + 1
		}
	}
	if total > maxExecBytes {
		errs = append(errs, &field.Error{Type: field.ErrorTypeTooLong, Field: fldPath.Child("env").String(),
			BadValue: field.OmitValueType{}, Detail: fmt.Sprintf(
				"command, args and env together may not be more than %d bytes (the kernel refuses to start a process with much more), got %d: pass large data in a volume (configMap, secret or emptyDir)",
				maxExecBytes, total)})
	}
	return errs
}

// Largest quantities: what the node accounts in an int64 (bytes of memory
// and ephemeral-storage, millicores of cpu). A larger one would wrap or saturate in the cgroup
// settings and the admission's sums; the parser already saturates memory
// given with a binary suffix, so the largest int64 itself is refused.
var (
	maxMemoryQuantity = resource.NewQuantity(math.MaxInt64, resource.BinarySI)
	maxCPUQuantity    = resource.NewMilliQuantity(math.MaxInt64, resource.DecimalSI)
)

// validateResources checks the requests and limits of one container.
func validateResources(r *v1.ResourceRequirements, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	// Defaulting copies limits into requests: report a refused resource
	// name once, where the manifest wrote it first (limits).
	refusedNames := map[v1.ResourceName]bool{}
	check := func(list v1.ResourceList, listPath *field.Path) {
		for _, name := range SortedResourceNames(list) {
			q := list[name]
			p := listPath.Key(string(name))
			switch {
			case name == v1.ResourceCPU || name == v1.ResourceMemory || name == v1.ResourceEphemeralStorage:
			case refusedNames[name]:
				continue
			case IsExtendedResource(name):
				// A device plugin's (agent/deviceplugin), or the
				// cluster's: whole numbers, as the API server wants.
				if len(validation.IsQualifiedName(v1.DefaultResourceRequestsPrefix+string(name))) > 0 {
					errs = append(errs, field.Invalid(p, name, "must be a qualified extended resource name, such as example.com/device"))
					refusedNames[name] = true
				} else if q.Sign() < 0 || q.MilliValue()%1000 != 0 {
					errs = append(errs, field.Invalid(p, q.String(), "must be a whole number of devices"))
					refusedNames[name] = true
				}
				continue
			case strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix) ||
				strings.Contains(string(name), "/"):
				// Standard resources other than cpu, memory and storage.
				errs = append(errs, field.Forbidden(p, reasonNotYet))
				refusedNames[name] = true
				continue
			default:
				errs = append(errs, field.NotSupported(p, name,
					[]string{string(v1.ResourceCPU), string(v1.ResourceEphemeralStorage), string(v1.ResourceMemory)}))
				refusedNames[name] = true
				continue
			}
			if q.Sign() < 0 {
				errs = append(errs, field.Invalid(p, q.String(), "must be greater than or equal to 0"))
			}
			switch {
			case (name == v1.ResourceMemory || name == v1.ResourceEphemeralStorage) && q.Cmp(*maxMemoryQuantity) >= 0:
				// The parser saturates a larger value (99999Ei) to the
				// largest int64: that value means an overflow. The API
				// takes any ephemeral-storage quantity; here it is bytes
				// in an int64 like memory (admission sums requests,
				// eviction sums limits), so the same bound applies.
				errs = append(errs, field.Invalid(p, q.String(), "must be less than 8Ei (9223372036854775808 bytes): larger values overflow"))
			case name == v1.ResourceCPU && q.Cmp(*maxCPUQuantity) > 0:
				errs = append(errs, field.Invalid(p, q.String(), fmt.Sprintf("must be less than or equal to %dm", int64(math.MaxInt64))))
			}
		}
	}
	check(r.Limits, fldPath.Child("limits"))
	check(r.Requests, fldPath.Child("requests"))

	for _, name := range SortedResourceNames(r.Requests) {
		req := r.Requests[name]
		limit, ok := r.Limits[name]
		if IsExtendedResource(name) && !refusedNames[name] {
			// Extended resources are not overcommitted (the API server's
			// rule): the request is the limit.
			if !ok {
				errs = append(errs, field.Required(fldPath.Child("limits").Key(string(name)), "Limit must be set for non overcommitable resources"))
			} else if req.Cmp(limit) != 0 {
				errs = append(errs, field.Invalid(fldPath.Child("requests").Key(string(name)), req.String(),
					fmt.Sprintf("must be equal to %s limit of %s", name, limit.String())))
			}
			continue
		}
		if ok && req.Cmp(limit) > 0 && !IsExtendedResource(name) {
			errs = append(errs, field.Invalid(fldPath.Child("requests").Key(string(name)), req.String(),
				fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit.String())))
		}
	}
	return errs
}

// SortedResourceNames returns the keys of list in a stable order, so errors
// come out the same way every time.
func SortedResourceNames(list v1.ResourceList) []v1.ResourceName {
	names := make([]v1.ResourceName, 0, len(list))
	for n := range list {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// validateVolumeMounts checks the mounts of one container against the pod's
// volumes.
func validateVolumeMounts(mounts []v1.VolumeMount, volumes map[string]bool, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	paths := map[string]bool{}
	for i, m := range mounts {
		idxPath := fldPath.Index(i)
		if m.Name == "" {
			errs = append(errs, field.Required(idxPath.Child("name"), ""))
		} else if !volumes[m.Name] {
			errs = append(errs, field.NotFound(idxPath.Child("name"), m.Name))
		}
		mp := idxPath.Child("mountPath")
		switch {
		case m.MountPath == "":
			errs = append(errs, field.Required(mp, ""))
		case !path.IsAbs(m.MountPath):
			errs = append(errs, field.Invalid(mp, m.MountPath, "must be an absolute path"))
		case paths[path.Clean(m.MountPath)]:
			errs = append(errs, field.Invalid(mp, m.MountPath, "must be unique"))
		}
		if m.MountPath != "" {
			paths[path.Clean(m.MountPath)] = true
		}
		// The API's rules for subPath and propagation.
		if m.SubPath != "" && m.SubPathExpr != "" {
			errs = append(errs, field.Invalid(idxPath.Child("subPathExpr"), m.SubPathExpr, "subPathExpr and subPath are mutually exclusive"))
		}
		for _, sp := range []struct{ name, v string }{{"subPath", m.SubPath}, {"subPathExpr", m.SubPathExpr}} {
			if sp.v == "" {
				continue
			}
			if path.IsAbs(sp.v) {
				errs = append(errs, field.Invalid(idxPath.Child(sp.name), sp.v, "must be a relative path"))
			}
			for _, part := range strings.Split(sp.v, "/") {
				if part == ".." {
					errs = append(errs, field.Invalid(idxPath.Child(sp.name), sp.v, "must not contain '..'"))
					break
				}
			}
		}
		if mp := m.MountPropagation; mp != nil {
			supported := []string{string(v1.MountPropagationNone), string(v1.MountPropagationHostToContainer), string(v1.MountPropagationBidirectional)}
			if !slices.Contains(supported, string(*mp)) {
				errs = append(errs, field.NotSupported(idxPath.Child("mountPropagation"), *mp, supported))
			}
		}
		errs = append(errs, validateRecursiveReadOnly(m, idxPath.Child("recursiveReadOnly"))...)
	}
	return errs
}

// validateRecursiveReadOnly applies the API's rules to recursiveReadOnly:
// Disabled, IfPossible or Enabled; the last two only on a readOnly mount
// without propagation. Whether the runtime can is decided when the
// container is created (podspec.ResolveRecursiveReadOnly).
func validateRecursiveReadOnly(m v1.VolumeMount, fldPath *field.Path) field.ErrorList {
	if m.RecursiveReadOnly == nil {
		return nil
	}
	var errs field.ErrorList
	switch rro := *m.RecursiveReadOnly; rro {
	case v1.RecursiveReadOnlyDisabled:
	case v1.RecursiveReadOnlyIfPossible, v1.RecursiveReadOnlyEnabled:
		if !m.ReadOnly {
			errs = append(errs, field.Forbidden(fldPath, "may only be specified when readOnly is true"))
		}
		if m.MountPropagation != nil && *m.MountPropagation != v1.MountPropagationNone {
			errs = append(errs, field.Forbidden(fldPath, "may only be specified when mountPropagation is None or not specified"))
		}
	default:
		errs = append(errs, field.NotSupported(fldPath, rro, []string{string(v1.RecursiveReadOnlyDisabled), string(v1.RecursiveReadOnlyIfPossible), string(v1.RecursiveReadOnlyEnabled)}))
	}
	return errs
}

// validateBidirectionalMounts applies the API's rule: Bidirectional mount
// propagation only in privileged containers.
func validateBidirectionalMounts(c *v1.Container, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	privileged := c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged
	for i, m := range c.VolumeMounts {
		if m.MountPropagation != nil && *m.MountPropagation == v1.MountPropagationBidirectional && !privileged {
			errs = append(errs, field.Forbidden(fldPath.Index(i).Child("mountPropagation"), "Bidirectional mount propagation is available only to privileged containers"))
		}
	}
	return errs
}

// validateProbe checks a probe, which may be nil: one handler, valid ports,
// sane thresholds. Whether probes are accepted at all is support.go's call.
func validateProbe(p *v1.Probe, c *v1.Container, successMustBeOne bool, fldPath *field.Path) field.ErrorList {
	if p == nil {
		return nil
	}
	errs := validateHandler(reflect.ValueOf(&p.ProbeHandler).Elem(), p.Exec, p.HTTPGet, c, fldPath)
	if t := p.TCPSocket; t != nil {
		errs = append(errs, validateProbePort(t.Port, c, fldPath.Child("tcpSocket", "port"))...)
	}
	if g := p.GRPC; g != nil {
		for _, msg := range validation.IsValidPortNum(int(g.Port)) {
			errs = append(errs, field.Invalid(fldPath.Child("grpc", "port"), g.Port, msg))
		}
	}

	for _, f := range []struct {
		name string
		v    int32
	}{
		{"initialDelaySeconds", p.InitialDelaySeconds},
		{"timeoutSeconds", p.TimeoutSeconds},
		{"periodSeconds", p.PeriodSeconds},
		{"successThreshold", p.SuccessThreshold},
		{"failureThreshold", p.FailureThreshold},
	} {
		if f.v < 0 {
			errs = append(errs, field.Invalid(fldPath.Child(f.name), f.v, "must be greater than or equal to 0"))
		}
	}
	if successMustBeOne && p.SuccessThreshold != 1 && p.SuccessThreshold >= 0 {
		errs = append(errs, field.Invalid(fldPath.Child("successThreshold"), p.SuccessThreshold, "must be 1"))
	}
	if g := p.TerminationGracePeriodSeconds; g != nil && *g <= 0 {
		errs = append(errs, field.Invalid(fldPath.Child("terminationGracePeriodSeconds"), *g, "must be greater than 0"))
	}
	return errs
}

// validateHandler checks what probes and lifecycle hooks share (the API's
// rules): exactly one handler set in hv (the handler struct), a command for
// exec, a valid port, scheme and header names for httpGet.
func validateHandler(hv reflect.Value, exec *v1.ExecAction, get *v1.HTTPGetAction, c *v1.Container, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	var handlers []string
	forEachJSONField(hv, func(name string, fv reflect.Value) {
		if !fv.IsNil() {
			handlers = append(handlers, name)
		}
	})
	switch len(handlers) {
	case 0:
		errs = append(errs, field.Required(fldPath, "must specify a handler type"))
	case 1:
	default:
		for _, n := range handlers[1:] {
			errs = append(errs, field.Forbidden(fldPath.Child(n), "may not specify more than 1 handler type"))
		}
	}
	if exec != nil && len(exec.Command) == 0 {
		errs = append(errs, field.Required(fldPath.Child("exec", "command"), ""))
	}
	if get != nil {
		errs = append(errs, validateProbePort(get.Port, c, fldPath.Child("httpGet", "port"))...)
		if get.Scheme != "" && !slices.Contains(supportedURISchemes, string(get.Scheme)) {
			errs = append(errs, field.NotSupported(fldPath.Child("httpGet", "scheme"), get.Scheme, supportedURISchemes))
		}
		for j, hdr := range get.HTTPHeaders {
			for _, msg := range validation.IsHTTPHeaderName(hdr.Name) {
				errs = append(errs, field.Invalid(fldPath.Child("httpGet", "httpHeaders").Index(j).Child("name"), hdr.Name, msg))
			}
		}
	}
	return errs
}

// validateLifecycleHandler checks a postStart/preStop hook, which may be
// nil: exactly one handler, a command, valid ports and headers, a sleep that
// is not negative (the API's rules).
func validateLifecycleHandler(h *v1.LifecycleHandler, c *v1.Container, fldPath *field.Path) field.ErrorList {
	if h == nil {
		return nil
	}
	errs := validateHandler(reflect.ValueOf(h).Elem(), h.Exec, h.HTTPGet, c, fldPath)
	if sl := h.Sleep; sl != nil && sl.Seconds < 0 {
		errs = append(errs, field.Invalid(fldPath.Child("sleep", "seconds"), sl.Seconds, "must be greater than or equal to 0"))
	}
	return errs
}

// validateProbePort checks a probe port: a number in range, or the name of
// one of the container's ports.
func validateProbePort(port intstr.IntOrString, c *v1.Container, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if port.Type == intstr.String {
		for _, msg := range validation.IsValidPortName(port.StrVal) {
			errs = append(errs, field.Invalid(fldPath, port.StrVal, msg))
		}
		if len(errs) == 0 && !slices.ContainsFunc(c.Ports, func(p v1.ContainerPort) bool { return p.Name == port.StrVal }) {
			errs = append(errs, field.NotFound(fldPath, port.StrVal))
		}
		return errs
	}
	for _, msg := range validation.IsValidPortNum(int(port.IntVal)) {
		errs = append(errs, field.Invalid(fldPath, port.IntVal, msg))
	}
	return errs
}

// validateResizePolicy is the API server's validateResizePolicy: each of
// cpu and memory at most once, with NotRequired or RestartContainer; only
// NotRequired in a pod whose restartPolicy is Never (it could not be
// restarted). Unlike the API server, the errors name the entry's field
// (resizePolicy[0].resourceName), not the list.
func validateResizePolicy(policies []v1.ContainerResizePolicy, podRestart v1.RestartPolicy, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[v1.ResourceName]bool{}
	for i, p := range policies {
		idx := fldPath.Index(i)
		switch p.ResourceName {
		case v1.ResourceCPU, v1.ResourceMemory:
			if seen[p.ResourceName] {
				errs = append(errs, field.Duplicate(idx.Child("resourceName"), p.ResourceName))
			}
			seen[p.ResourceName] = true
		case "":
			errs = append(errs, field.Required(idx.Child("resourceName"), ""))
		default:
			errs = append(errs, field.NotSupported(idx.Child("resourceName"), p.ResourceName, []string{string(v1.ResourceCPU), string(v1.ResourceMemory)}))
		}
		switch p.RestartPolicy {
		case v1.NotRequired, v1.RestartContainer:
		case "":
			errs = append(errs, field.Required(idx.Child("restartPolicy"), ""))
		default:
			errs = append(errs, field.NotSupported(idx.Child("restartPolicy"), p.RestartPolicy, []string{string(v1.NotRequired), string(v1.RestartContainer)}))
		}
		if podRestart == v1.RestartPolicyNever && p.RestartPolicy != v1.NotRequired {
			errs = append(errs, field.Invalid(idx.Child("restartPolicy"), p.RestartPolicy, "must be 'NotRequired' when pod `restartPolicy` is 'Never'"))
		}
	}
	return errs
}

// IsExtendedResource reports whether name is an extended resource: a
// domain-prefixed name outside kubernetes.io, not a quota's "requests."
// name (the API's IsExtendedResourceName without its name check).
func IsExtendedResource(name v1.ResourceName) bool {
	n := string(name)
	return strings.Contains(n, "/") && !strings.Contains(n, v1.ResourceDefaultNamespacePrefix) &&
		!strings.HasPrefix(n, v1.DefaultResourceRequestsPrefix)
}
