package manifest

// What minikubelet honours. Every field of the Pod API that minikubelet reads
// is listed here as supported; every other field is refused, by its path,
// with the reason below, when a manifest sets it. Nothing is silently
// ignored: a field accepted without effect says so in its note ("inert").
//
// The tables are checked against the k8s.io/api types by reflection in
// support_test.go, so a new API field fails the tests until it is listed.

import (
	"reflect"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Reasons given for refused fields.
const (
	// reasonNotYet is for what a lone node can do and minikubelet will do later.
	reasonNotYet = "not supported by minikubelet yet"
	// reasonNever is for what needs a cluster (controllers, storage, an API server).
	reasonNever = "not supported by minikubelet"
)

// probesSupported gates the three probe fields (package probes runs them).
const probesSupported = true

// probeNote describes how probes run.
const probeNote = "run by the agent (exec through CRI ExecSync; httpGet, tcpSocket and grpc from the agent to the pod IP) with the kubelet's semantics"

// FieldSupport is one row of the supported-fields table (README): a Pod
// field by its JSON path, whether minikubelet accepts it, and a note.
type FieldSupport struct {
	// Path is the JSON path, "[*]" standing for any list index, e.g.
	// "spec.containers[*].image".
	Path string
	// Supported is true when a manifest may set the field.
	Supported bool
	// Note says, for a refused field, why (the text of the error); for a
	// supported one, any limit on it or that it is accepted without effect.
	Note string
}

// fieldRule is how minikubelet treats one field.
type fieldRule struct {
	// supported fields may be set; the others are refused when set.
	supported bool
	// note: see FieldSupport.Note.
	note string
	// unset, for a pointer field, is a value that counts as not set because
	// it means the same as leaving the field out (hostUsers: true).
	unset any
}

// ruleOK is a supported field without remark.
var ruleOK = fieldRule{supported: true}

// ruleInert is a field accepted although it has no effect on a lone node.
func ruleInert(why string) fieldRule {
	return fieldRule{supported: true, note: "accepted, no effect: " + why}
}

// ruleRefused is a field refused with the given reason.
func ruleRefused(why string) fieldRule { return fieldRule{note: why} }

// ruleLimited is a supported field with a limit stated in the note.
func ruleLimited(note string) fieldRule { return fieldRule{supported: true, note: note} }

// ruleTable is the rules for the JSON fields of one API struct type.
type ruleTable struct {
	// typ is the struct type; inline (embedded) structs are flattened.
	typ reflect.Type
	// path is the table's place in a Pod, for SupportedFields.
	path string
	// rules by JSON field name.
	rules map[string]fieldRule
}

// Fields of the pod object itself.
var podRules = ruleTable{typ: reflect.TypeFor[v1.Pod](), path: "", rules: map[string]fieldRule{
	"apiVersion": ruleLimited(`"v1" only`),
	"kind":       ruleLimited(`"Pod" (or a v1 "List" of Pods) only`),
	"metadata":   ruleOK,
	"spec":       ruleOK,
	"status":     ruleRefused("status is reported by minikubelet, not read from a manifest: remove it"),
}}

// Fields of metadata.
var metaRules = ruleTable{typ: reflect.TypeFor[metav1.ObjectMeta](), path: "metadata", rules: map[string]fieldRule{
	"name":                       ruleOK,
	"generateName":               ruleRefused(reasonNever + ": there is no API server to generate names"),
	"namespace":                  ruleLimited(`defaults to "default"`),
	"selfLink":                   ruleRefused(reasonNever + ": set by the API server"),
	"uid":                        ruleLimited("derived from node, file and content when empty"),
	"resourceVersion":            ruleRefused(reasonNever + ": set by the API server"),
	"generation":                 ruleRefused(reasonNever + ": set by the API server (the local API sets it: 1 on create, +1 on each spec change and on a graceful deletion; status.observedGeneration says which one a status reflects)"),
	"creationTimestamp":          ruleRefused(reasonNever + ": set by the API server"),
	"deletionTimestamp":          ruleRefused(reasonNever + ": set by the API server"),
	"deletionGracePeriodSeconds": ruleRefused(reasonNever + ": set by the API server"),
	"labels":                     ruleOK,
	"annotations":                ruleOK,
	"ownerReferences":            ruleInert("there is no garbage collector on a lone node"),
	"finalizers":                 ruleRefused(reasonNever + ": nothing would ever remove them"),
	"managedFields":              ruleRefused(reasonNever + ": set by the API server"),
}}

// Fields of spec.
var specRules = ruleTable{typ: reflect.TypeFor[v1.PodSpec](), path: "spec", rules: map[string]fieldRule{
	"volumes":                       ruleLimited("emptyDir, hostPath, configMap, secret, downwardAPI, projected and image (containerd 2.1 or later)"),
	"initContainers":                ruleLimited("same fields as spec.containers[*], plus restartPolicy: Always for native sidecars"),
	"containers":                    ruleOK,
	"ephemeralContainers":           ruleLimited("added to a running pod through the API (kubectl debug): started once in the pod's sandbox (in the PID namespace of targetContainerName when set), never restarted, reported in status.ephemeralContainerStatuses; held to the node's --pod-security level (a local pod's)"),
	"restartPolicy":                 ruleOK,
	"terminationGracePeriodSeconds": ruleOK,
	"activeDeadlineSeconds":         ruleLimited("counted from when the agent accepted the pod; once past it the pod is Failed with reason DeadlineExceeded and its containers are killed with its grace period; it may be changed while the pod runs"),
	"dnsPolicy":                     ruleLimited("as the kubelet: ClusterFirst and ClusterFirstWithHostNet use --cluster-dns (search <ns>.svc.<domain> svc.<domain> <domain> and the node's, ndots:5); without it they fall back to Default (the node's resolv.conf) with a MissingClusterDNS warning event"),
	"nodeSelector":                  ruleLimited("matched against the node's labels (kubernetes.io/hostname, kubernetes.io/os, kubernetes.io/arch, --node-labels); a pod that does not match ends Failed with reason NodeAffinity"),
	"serviceAccountName":            ruleLimited("cluster pods: the service account their projected tokens are requested for; local pods get no token"),
	"serviceAccount":                ruleLimited("deprecated alias of serviceAccountName"),
	"automountServiceAccountToken":  ruleInert("the API server's ServiceAccount admission reads it and adds the kube-api-access token volume to cluster pods; the node mounts only the volumes the pod lists"),
	"nodeName":                      ruleLimited("defaults to this node's name"),
	"hostNetwork":                   ruleOK,
	"hostPID":                       ruleOK,
	"hostIPC":                       ruleOK,
	"shareProcessNamespace":         ruleLimited("the containers share the sandbox's PID namespace (PID 1 is the pause process)"),
	"securityContext":               ruleOK,
	"imagePullSecrets":              ruleLimited("Secrets of type kubernetes.io/dockerconfigjson or kubernetes.io/dockercfg from the same manifest input or the API, tried before the node's --pull-secret-file, as CRI AuthConfig"),
	"hostname":                      ruleOK,
	"subdomain":                     ruleLimited("names the pod <hostname>.<subdomain>.<namespace>.svc.<--cluster-domain> in its /etc/hosts"),
	"affinity":                      ruleLimited("nodeAffinity only: requiredDuringSchedulingIgnoredDuringExecution is checked at admission (reason NodeAffinity); preferredDuringSchedulingIgnoredDuringExecution has no effect without a scheduler; podAffinity and podAntiAffinity are refused on local pods (a cluster pod comes placed by the scheduler, which evaluated them)"),
	"schedulerName":                 ruleInert("there is no scheduler on a lone node"),
	"tolerations":                   ruleInert("there is no scheduler or taint manager on a lone node"),
	"hostAliases":                   ruleLimited("appended to the pod's managed /etc/hosts"),
	"priorityClassName":             ruleLimited("system-node-critical and system-cluster-critical resolve to their values; another class needs spec.priority (a cluster pod's API server resolves it). Critical pods (priority at least system-cluster-critical's) are never evicted; system-node-critical ones get oom_score_adj -997"),
	"priority":                      ruleLimited("ranks pods for eviction, as the kubelet; must match a built-in priorityClassName's value"),
	"dnsConfig":                     ruleLimited("nameservers, searches and options, merged into the policy's config as the kubelet does (at most 3 nameservers, 32 search domains)"),
	"readinessGates":                ruleLimited("cluster pods: Ready is True only once every gate's condition, set on the API server by another controller, is True (reason ReadinessGatesNotReady until then); a local pod has no such conditions and never becomes Ready"),
	"runtimeClassName":              ruleRefused(reasonNotYet),
	"enableServiceLinks":            ruleLimited("in cluster mode the Services of the pod's namespace become variables as the kubelet makes them (<SVC>_SERVICE_HOST, <SVC>_SERVICE_PORT[_<NAME>], <SVC>_PORT…; headless Services give none); KUBERNETES_* are set for every cluster pod whatever this says; a standalone node has no Services"),
	"preemptionPolicy":              ruleInert("there is no scheduler on a lone node"),
	"overhead":                      ruleRefused(reasonNever + ": set by the RuntimeClass admission controller"),
	"topologySpreadConstraints":     ruleInert("there is no scheduler on a lone node"),
	"setHostnameAsFQDN":             ruleLimited("with a subdomain, the hostname is <hostname>.<subdomain>.<namespace>.svc.<--cluster-domain> (at most 64 characters)"),
	"os":                            ruleLimited("name: linux runs; a windows pod is rejected at admission (Failed, reason PodOSNotSupported), as by the kubelet"),
	"hostUsers":                     ruleLimited("false runs the pod in a user namespace of its own: IDs 0-65535 in the pod are a range of host IDs from 65536 up, its own while it exists (the kubelet's defaults, kept in the pod's directory); needs a runtime that reports user namespace support (containerd 2.0 or later with runc 1.2 or later), else the pod is Failed with reason UserNamespacesNotSupported; not with hostNetwork, hostPID or hostIPC"),
	"schedulingGates":               ruleRefused(reasonNever + ": there is no scheduler to lift the gates"),
	"resourceClaims":                ruleRefused(reasonNotYet),
	"resources":                     ruleRefused(reasonNotYet),
	"hostnameOverride":              ruleLimited("the pod's hostname (and its /etc/hosts entry), without a domain; not with hostNetwork or setHostnameAsFQDN"),
	"schedulingGroup":               ruleRefused(reasonNotYet),
	"evictionResponders":            ruleRefused(reasonNotYet),
}}

// Fields of spec.containers[*] (and of spec.initContainers[*], with the
// overrides in initContainerOverrides).
var containerRules = ruleTable{typ: reflect.TypeFor[v1.Container](), path: "spec.containers[*]", rules: map[string]fieldRule{
	"name":                     ruleOK,
	"image":                    ruleOK,
	"command":                  ruleOK,
	"args":                     ruleOK,
	"workingDir":               ruleOK,
	"ports":                    ruleOK,
	"envFrom":                  ruleLimited("configMapRef and secretRef with prefix; keys that are not valid variable names are skipped with an InvalidEnvironmentVariableNames event"),
	"env":                      ruleLimited("value with $(VAR) expansion (the kubelet's rules), and valueFrom"),
	"resources":                ruleLimited("cpu, memory and ephemeral-storage requests and limits; ephemeral-storage requests are admitted against the node's allocatable (the root dir's filesystem), and under serve a pod whose container (writable layer and logs) or whole pod (containers and disk emptyDirs) uses more than the limits is evicted, as by the kubelet (run does not evict)"),
	"resizePolicy":             ruleLimited("cpu and memory, NotRequired or RestartContainer: how an in-place resize (a change of this container's cpu or memory requests or limits) is applied; NotRequired updates the running container's cgroup, RestartContainer restarts it (docs/pod-spec.md, In-place resize)"),
	"restartPolicy":            ruleLimited("Always, OnFailure or Never: this container's restart policy instead of spec.restartPolicy (ContainerRestartRules)"),
	"restartPolicyRules":       ruleLimited("action Restart on exitCodes In or NotIn, tried in order before the container's restartPolicy (ContainerRestartRules)"),
	"volumeMounts":             ruleOK,
	"volumeDevices":            ruleRefused(reasonNever + ": there are no block volumes"),
	"livenessProbe":            fieldRule{supported: probesSupported, note: probeNote},
	"readinessProbe":           fieldRule{supported: probesSupported, note: probeNote},
	"startupProbe":             fieldRule{supported: probesSupported, note: probeNote},
	"lifecycle":                ruleOK,
	"terminationMessagePath":   ruleOK,
	"terminationMessagePolicy": ruleOK,
	"imagePullPolicy":          ruleOK,
	"securityContext":          ruleOK,
	"stdin":                    ruleLimited("the container gets an open stdin (CRI stdin); attach to it with `minikubelet attach -i` or `kubectl attach -i`"),
	"stdinOnce":                ruleLimited("passed to the runtime (CRI stdin_once)"),
	"tty":                      ruleLimited("the container gets a terminal (CRI tty); its output is logged"),
}}

// initContainerOverrides are the rules of spec.initContainers[*] that differ
// from containerRules.
var initContainerOverrides = map[string]fieldRule{
	"restartPolicy":      ruleLimited("only Always: a native sidecar, started in order, kept running and restarted, stopped after the app containers"),
	"restartPolicyRules": ruleRefused(reasonNotYet),
	// The API's own rule for regular init containers; probes of sidecars
	// are refused with the other probes until the prober lands.
	"livenessProbe":  ruleRefused("may not be set for init containers without restartPolicy=Always"),
	"readinessProbe": ruleRefused("may not be set for init containers without restartPolicy=Always"),
	"startupProbe":   ruleRefused("may not be set for init containers without restartPolicy=Always"),
}

// sidecarOverrides are the rules of native sidecars (init containers with
// restartPolicy: Always), which may have probes like app containers.
var sidecarOverrides = map[string]fieldRule{
	"restartPolicy":      initContainerOverrides["restartPolicy"],
	"restartPolicyRules": initContainerOverrides["restartPolicyRules"],
}

// Fields of spec.volumes[*], including the inline volume sources.
var volumeRules = ruleTable{typ: reflect.TypeFor[v1.Volume](), path: "spec.volumes[*]", rules: map[string]fieldRule{
	"name":                  ruleOK,
	"hostPath":              ruleOK,
	"emptyDir":              ruleLimited(`default medium only ("" = node disk)`),
	"gcePersistentDisk":     ruleRefused(reasonNever),
	"awsElasticBlockStore":  ruleRefused(reasonNever),
	"gitRepo":               ruleRefused(reasonNever),
	"secret":                ruleLimited("written atomically (..data symlink swap) on a tmpfs, read-only"),
	"nfs":                   ruleRefused(reasonNever),
	"iscsi":                 ruleRefused(reasonNever),
	"glusterfs":             ruleRefused(reasonNever),
	"persistentVolumeClaim": ruleRefused(reasonNever),
	"rbd":                   ruleRefused(reasonNever),
	"flexVolume":            ruleRefused(reasonNever),
	"cinder":                ruleRefused(reasonNever),
	"cephfs":                ruleRefused(reasonNever),
	"flocker":               ruleRefused(reasonNever),
	"downwardAPI":           ruleLimited("written atomically (..data symlink swap) and updated when labels or annotations change, read-only"),
	"fc":                    ruleRefused(reasonNever),
	"azureFile":             ruleRefused(reasonNever),
	"configMap":             ruleLimited("written atomically (..data symlink swap), updated when the ConfigMap changes, read-only"),
	"vsphereVolume":         ruleRefused(reasonNever),
	"quobyte":               ruleRefused(reasonNever),
	"azureDisk":             ruleRefused(reasonNever),
	"photonPersistentDisk":  ruleRefused(reasonNever),
	"projected":             ruleLimited("configMap, secret and downwardAPI sources"),
	"portworxVolume":        ruleRefused(reasonNever),
	"scaleIO":               ruleRefused(reasonNever),
	"storageos":             ruleRefused(reasonNever),
	"csi":                   ruleRefused(reasonNever),
	"ephemeral":             ruleRefused(reasonNever),
	"image":                 ruleLimited("an OCI image mounted read-only by the runtime (containerd 2.1 or later: a pod with one is failed, reason ImageVolumeNotSupported, on an older runtime); pulled before the containers start, with the pod's pull secrets"),
}}

// Fields of spec.volumes[*].image (the kubelet's ImageVolume, GA in v1.36).
var imageVolumeRules = ruleTable{typ: reflect.TypeFor[v1.ImageVolumeSource](), path: "spec.volumes[*].image", rules: map[string]fieldRule{
	"reference":  ruleLimited("required; pulled as a container image is, ImagePullBackOff on the containers that mount it"),
	"pullPolicy": ruleLimited("Always, IfNotPresent or Never; defaults as the API server's: Always for :latest or no tag, else IfNotPresent"),
}}

// Fields of spec.volumes[*].emptyDir.
var emptyDirRules = ruleTable{typ: reflect.TypeFor[v1.EmptyDirVolumeSource](), path: "spec.volumes[*].emptyDir", rules: map[string]fieldRule{
	"medium":    ruleLimited(`"" (node disk) or Memory (a tmpfs)`),
	"sizeLimit": ruleLimited("medium Memory: the tmpfs size (the kubelet's rule: at most the pod's memory limit, else the node's allocatable memory); default medium: under serve a pod whose emptyDir grows past it is evicted at the next eviction check (every 10 s), as by the kubelet (run does not evict)"),
	"mode":      ruleRefused(reasonNotYet + ": alpha in Kubernetes (EmptyDirVolumeMode)"),
}}

// Fields of spec.volumes[*].hostPath.
var hostPathRules = ruleTable{typ: reflect.TypeFor[v1.HostPathVolumeSource](), path: "spec.volumes[*].hostPath", rules: map[string]fieldRule{
	"path": ruleLimited("absolute"),
	"type": ruleOK,
}}

// Fields of spec.containers[*].volumeMounts[*].
var volumeMountRules = ruleTable{typ: reflect.TypeFor[v1.VolumeMount](), path: "spec.containers[*].volumeMounts[*]", rules: map[string]fieldRule{
	"name":              ruleOK,
	"readOnly":          ruleLimited("an image volume is mounted read-only whatever it says, as by the kubelet"),
	"recursiveReadOnly": ruleLimited("Disabled, IfPossible (recursive when the runtime can), Enabled (recursive, or the container is not created: CreateContainerConfigError); only with readOnly, without propagation"),
	"mountPath":         ruleLimited("absolute, unique per container"),
	"subPath":           ruleLimited("a relative path inside the volume, created as a directory when missing; it may not leave the volume, even through symlinks; in an image volume it must be an existing directory of the image (the runtime checks it)"),
	"mountPropagation":  ruleLimited("None, HostToContainer; Bidirectional only in privileged containers"),
	"subPathExpr":       ruleLimited("expanded with the container's environment, $(VAR) style"),
	"bindMountOptions":  ruleRefused(reasonNotYet),
}}

// Fields of spec.containers[*].ports[*].
var portRules = ruleTable{typ: reflect.TypeFor[v1.ContainerPort](), path: "spec.containers[*].ports[*]", rules: map[string]fieldRule{
	"name":          ruleOK,
	"hostPort":      ruleOK,
	"containerPort": ruleOK,
	"protocol":      ruleOK,
	"hostIP":        ruleOK,
}}

// Fields of spec.containers[*].env[*].
var envVarRules = ruleTable{typ: reflect.TypeFor[v1.EnvVar](), path: "spec.containers[*].env[*]", rules: map[string]fieldRule{
	"name":      ruleOK,
	"value":     ruleOK,
	"valueFrom": ruleOK,
}}

// Fields of spec.containers[*].env[*].valueFrom.
var envVarSourceRules = ruleTable{typ: reflect.TypeFor[v1.EnvVarSource](), path: "spec.containers[*].env[*].valueFrom", rules: map[string]fieldRule{
	"fieldRef":         ruleLimited("every path the kubelet resolves; status.hostIP(s) is the node's default-route address"),
	"resourceFieldRef": ruleLimited("cpu and memory limits and requests, with divisor; an unset limit is the node's allocatable amount"),
	"configMapKeyRef":  ruleLimited("a ConfigMap of the pod's namespace from the same manifest input (or the API)"),
	"secretKeyRef":     ruleLimited("a Secret of the pod's namespace from the same manifest input (or the API)"),
	"fileKeyRef":       ruleLimited("a file of an emptyDir volume of the pod, read at the container's start; no symlink in its path, at most 1 MiB"),
}}

// Fields of spec.containers[*].resources.
var resourcesRules = ruleTable{typ: reflect.TypeFor[v1.ResourceRequirements](), path: "spec.containers[*].resources", rules: map[string]fieldRule{
	"limits":   ruleLimited("cpu, memory, ephemeral-storage, and extended resources (`example.com/dev`, whole numbers; a device plugin's are admitted against its healthy devices: [cluster.md](cluster.md#device-plugins)); hugepages and other `kubernetes.io/` names refused"),
	"requests": ruleLimited("as the limits; default to the limits; an extended resource's request equals its limit"),
	"claims":   ruleRefused(reasonNotYet),
}}

// ruleTables lists every table, in the order of SupportedFields.
var ruleTables = []*ruleTable{
	&podRules, &metaRules, &specRules, &containerRules, &lifecycleRules, &lifecycleHandlerRules,
	&portRules, &envVarRules, &envVarSourceRules,
	&resourcesRules, &volumeMountRules, &volumeRules, &emptyDirRules, &hostPathRules, &imageVolumeRules,
	&envFromRules, &configMapVolumeRules, &secretVolumeRules, &downwardAPIVolumeRules, &projectedVolumeRules, &volumeProjectionRules, // datasupport.go
	&keyToPathRules, &downwardAPIFileRules, &serviceAccountTokenRules, &clusterTrustBundleRules, &podCertificateRules, // datasupport.go
	&podSecurityContextRules, &securityContextRules, &capabilitiesRules, &seccompProfileRules, // security.go
}

// Fields of spec.containers[*].lifecycle.
var lifecycleRules = ruleTable{typ: reflect.TypeFor[v1.Lifecycle](), path: "spec.containers[*].lifecycle", rules: map[string]fieldRule{
	"postStart":  ruleLimited("run right after the container starts; a failure kills the container (PostStartHookError)"),
	"preStop":    ruleLimited("run before the stop signal, within the grace period"),
	"stopSignal": ruleRefused(reasonNotYet),
}}

// Fields of spec.containers[*].lifecycle.{postStart,preStop}.
var lifecycleHandlerRules = ruleTable{typ: reflect.TypeFor[v1.LifecycleHandler](), path: "spec.containers[*].lifecycle.*", rules: map[string]fieldRule{
	"exec":      ruleLimited("through CRI ExecSync, without a timeout (as the kubelet)"),
	"httpGet":   ruleLimited("from the agent to the pod IP; status codes are ignored, as the kubelet does"),
	"sleep":     ruleOK,
	"tcpSocket": ruleRefused("deprecated for lifecycle hooks: the kubelet fails such a hook when it runs"),
}}

// SupportedFields returns every Pod field minikubelet knows about, supported
// or refused, table by table in API field order, for the README.
// spec.initContainers[*] rows are listed only where they differ from
// spec.containers[*].
func SupportedFields() []FieldSupport {
	var rows []FieldSupport
	row := func(prefix, name string, r fieldRule) {
		p := name
		if prefix != "" {
			p = prefix + "." + name
		}
		rows = append(rows, FieldSupport{Path: p, Supported: r.supported, Note: r.note})
	}
	for _, t := range ruleTables {
		for _, name := range jsonFieldNames(t.typ) {
			row(t.path, name, t.rules[name])
		}
		if t == &containerRules {
			for _, name := range jsonFieldNames(t.typ) {
				if r, ok := initContainerOverrides[name]; ok {
					row("spec.initContainers[*]", name, r)
				}
			}
		}
	}
	return rows
}

// jsonFieldNames returns the JSON names of the fields of struct type t in
// declaration order, flattening inline structs and skipping "-".
func jsonFieldNames(t reflect.Type) []string {
	var names []string
	forEachJSONField(reflect.New(t).Elem(), func(name string, _ reflect.Value) {
		names = append(names, name)
	})
	return names
}

// forEachJSONField calls fn for every JSON field of the struct value v, in
// declaration order, flattening inline (embedded) structs.
func forEachJSONField(v reflect.Value, fn func(name string, fv reflect.Value)) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && (name == "" || strings.Contains(opts, "inline")) && f.Type.Kind() == reflect.Struct {
			forEachJSONField(v.Field(i), fn)
			continue
		}
		if name == "" {
			name = f.Name
		}
		fn(name, v.Field(i))
	}
}

// fieldIsSet reports whether a field holds a value a manifest wrote: a non-empty
// slice or map, a non-nil pointer (to a non-empty struct, and other than
// unset), or a non-zero scalar. `securityContext: {}` and `tolerations: []`
// thus count as not set.
func fieldIsSet(v reflect.Value, unset any) bool {
	switch v.Kind() {
	case reflect.Slice, reflect.Map:
		return v.Len() > 0
	case reflect.Pointer:
		if v.IsNil() {
			return false
		}
		e := v.Elem()
		if unset != nil && e.Interface() == unset {
			return false
		}
		if e.Kind() == reflect.Struct {
			return !e.IsZero()
		}
		return true
	default:
		return !v.IsZero()
	}
}

// refuseSet returns a Forbidden error for every field of the struct value v
// that its table refuses and that is set. A field missing from the table (a
// newer API field) is refused as not supported yet. overrides may replace
// rules of the table.
func refuseSet(v reflect.Value, t *ruleTable, overrides map[string]fieldRule, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	forEachJSONField(v, func(name string, fv reflect.Value) {
		r, known := overrides[name]
		if !known {
			r, known = t.rules[name]
		}
		if !known {
			r = ruleRefused(reasonNotYet)
		}
		if !r.supported && fieldIsSet(fv, r.unset) {
			errs = append(errs, field.Forbidden(path.Child(name), r.note))
		}
	})
	return errs
}

// checkSupport refuses every field of pod that minikubelet does not honour,
// by its path. It assumes nothing about defaulting or validity.
func checkSupport(pod *v1.Pod) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, refuseSet(reflect.ValueOf(*pod), &podRules, nil, nil)...)
	errs = append(errs, refuseSet(reflect.ValueOf(pod.ObjectMeta), &metaRules, nil, field.NewPath("metadata"))...)

	spec := field.NewPath("spec")
	errs = append(errs, refuseSet(reflect.ValueOf(pod.Spec), &specRules, nil, spec)...)
	errs = append(errs, checkPodSecuritySupport(pod.Spec.SecurityContext, spec.Child("securityContext"))...)
	for i := range pod.Spec.InitContainers {
		overrides := initContainerOverrides
		if IsSidecar(&pod.Spec.InitContainers[i]) {
			overrides = sidecarOverrides
		}
		errs = append(errs, checkContainerSupport(&pod.Spec.InitContainers[i], overrides, spec.Child("initContainers").Index(i))...)
	}
	for i := range pod.Spec.Containers {
		errs = append(errs, checkContainerSupport(&pod.Spec.Containers[i], nil, spec.Child("containers").Index(i))...)
	}
	errs = append(errs, checkEphemeralSupport(&pod.Spec, spec)...)
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		p := spec.Child("volumes").Index(i)
		errs = append(errs, refuseSet(reflect.ValueOf(*vol), &volumeRules, nil, p)...)
		if vol.EmptyDir != nil {
			errs = append(errs, refuseSet(reflect.ValueOf(*vol.EmptyDir), &emptyDirRules, nil, p.Child("emptyDir"))...)
		}
		if vol.HostPath != nil {
			errs = append(errs, refuseSet(reflect.ValueOf(*vol.HostPath), &hostPathRules, nil, p.Child("hostPath"))...)
		}
		if vol.Image != nil {
			errs = append(errs, refuseSet(reflect.ValueOf(*vol.Image), &imageVolumeRules, nil, p.Child("image"))...)
		}
		errs = append(errs, checkDataVolumeSupport(vol, p)...) // datasupport.go
	}
	return errs
}

// checkContainerSupport is checkSupport for one (init) container.
func checkContainerSupport(c *v1.Container, overrides map[string]fieldRule, path *field.Path) field.ErrorList {
	errs := refuseSet(reflect.ValueOf(*c), &containerRules, overrides, path)
	errs = append(errs, checkContainerSecuritySupport(c.SecurityContext, path.Child("securityContext"))...)
	for i := range c.Ports {
		errs = append(errs, refuseSet(reflect.ValueOf(c.Ports[i]), &portRules, nil, path.Child("ports").Index(i))...)
	}
	errs = append(errs, checkEnvFromSupport(c, path)...) // datasupport.go
	for i := range c.Env {
		p := path.Child("env").Index(i)
		errs = append(errs, refuseSet(reflect.ValueOf(c.Env[i]), &envVarRules, nil, p)...)
		if vf := c.Env[i].ValueFrom; vf != nil {
			errs = append(errs, refuseSet(reflect.ValueOf(*vf), &envVarSourceRules, nil, p.Child("valueFrom"))...)
		}
	}
	errs = append(errs, refuseSet(reflect.ValueOf(c.Resources), &resourcesRules, nil, path.Child("resources"))...)
	for i := range c.VolumeMounts {
		errs = append(errs, refuseSet(reflect.ValueOf(c.VolumeMounts[i]), &volumeMountRules, nil, path.Child("volumeMounts").Index(i))...)
	}
	if lc := c.Lifecycle; lc != nil {
		lp := path.Child("lifecycle")
		errs = append(errs, refuseSet(reflect.ValueOf(*lc), &lifecycleRules, nil, lp)...)
		for _, h := range []struct {
			name string
			h    *v1.LifecycleHandler
		}{{"postStart", lc.PostStart}, {"preStop", lc.PreStop}} {
			if h.h != nil {
				errs = append(errs, refuseSet(reflect.ValueOf(*h.h), &lifecycleHandlerRules, nil, lp.Child(h.name))...)
			}
		}
	}
	return errs
}

// IsSidecar reports whether an init container is a native sidecar
// (restartPolicy: Always).
func IsSidecar(c *v1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}
