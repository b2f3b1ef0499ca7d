package api

// This file is discovery as the API server serves it, listing only what
// this node serves, so that kubectl and client-go tools find their way:
//
//   - /api: the legacy group's versions (v1);
//   - /api/v1: the resources served, with their truthful verbs, short names
//     and subresources;
//   - /apis: no named groups. kubectl asks /api and /apis for the aggregated
//     discovery format first (Accept lists
//     application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList
//     then plain application/json); the answer here is always the legacy
//     format with Content-Type application/json, on which client-go falls
//     back to the legacy documents, as against an API server before 1.26;
//   - /version: version.Info (gitVersion is the Kubernetes API the node
//     implements, from the k8s.io/api module it is built with) plus the
//     node's own fields.
//
// Namespaces (those in use) and the node itself are served read-only.

import (
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/agent/node"
)

// coreResources is /api/v1's list. Verbs are those the routes serve.
var coreResources = []metav1.APIResource{
	{Name: "configmaps", SingularName: "configmap", Namespaced: true, Kind: "ConfigMap",
		Verbs: metav1.Verbs{"create", "delete", "get", "list", "patch"}, ShortNames: []string{"cm"}},
	{Name: "events", SingularName: "event", Namespaced: true, Kind: "Event",
		Verbs: metav1.Verbs{"list", "watch"}, ShortNames: []string{"ev"}},
	{Name: "namespaces", SingularName: "namespace", Namespaced: false, Kind: "Namespace",
		Verbs: metav1.Verbs{"get", "list"}, ShortNames: []string{"ns"}},
	{Name: "nodes", SingularName: "node", Namespaced: false, Kind: "Node",
		Verbs: metav1.Verbs{"get", "list"}, ShortNames: []string{"no"}},
	{Name: "pods", SingularName: "pod", Namespaced: true, Kind: "Pod",
		Verbs:      metav1.Verbs{"create", "delete", "get", "list", "patch", "watch"},
		ShortNames: []string{"po"}, Categories: []string{"all"}},
	{Name: "pods/attach", SingularName: "", Namespaced: true, Kind: "PodAttachOptions",
		Verbs: metav1.Verbs{"create", "get"}},
	{Name: "pods/exec", SingularName: "", Namespaced: true, Kind: "PodExecOptions",
		Verbs: metav1.Verbs{"create", "get"}},
	{Name: "pods/log", SingularName: "", Namespaced: true, Kind: "Pod",
		Verbs: metav1.Verbs{"get"}},
	{Name: "pods/portforward", SingularName: "", Namespaced: true, Kind: "PodPortForwardOptions",
		Verbs: metav1.Verbs{"create", "get"}},
	{Name: "pods/status", SingularName: "", Namespaced: true, Kind: "Pod",
		Verbs: metav1.Verbs{"get"}},
	{Name: "secrets", SingularName: "secret", Namespaced: true, Kind: "Secret",
		Verbs: metav1.Verbs{"create", "delete", "get", "list", "patch"}},
}

func (s *Server) apiVersions(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, metav1.APIVersions{
		TypeMeta: metav1.TypeMeta{Kind: "APIVersions"},
		Versions: []string{"v1"},
		ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{
			{ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host},
		},
	})
	return nil
}

func (s *Server) apiV1Resources(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, metav1.APIResourceList{
		TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
		GroupVersion: "v1",
		APIResources: coreResources,
	})
	return nil
}

func (s *Server) apiGroups(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, metav1.APIGroupList{
		TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"},
		Groups:   []metav1.APIGroup{},
	})
	return nil
}

// serverVersion is /version: version.Info's fields (what kubectl version
// and client-go's ServerVersion read) and the node's VersionInfo.
type serverVersion struct {
	Major        string `json:"major"`
	Minor        string `json:"minor"`
	GitVersion   string `json:"gitVersion"`
	GitCommit    string `json:"gitCommit"`
	GitTreeState string `json:"gitTreeState"`
	BuildDate    string `json:"buildDate"`
	GoVersion    string `json:"goVersion"`
	Compiler     string `json:"compiler"`
	Platform     string `json:"platform"`
	VersionInfo
}

// kubeVersion is the Kubernetes release whose API the node implements:
// that of the k8s.io/api module it is built with (v0.X.Y is Kubernetes
// v1.X.Y), or v1.0.0 when the build carries no module information.
var kubeVersion = sync.OnceValues(func() (major, minor string) {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path != "k8s.io/api" {
				continue
			}
			parts := strings.SplitN(strings.TrimPrefix(d.Version, "v0."), ".", 2)
			if len(parts) == 2 {
				patch, _, _ := strings.Cut(parts[1], "-")
				return "1", parts[0] + "." + patch
			}
		}
	}
	return "1", "0.0"
})

func (s *Server) version(w http.ResponseWriter, r *http.Request) error {
	major, minorPatch := kubeVersion()
	minor, _, _ := strings.Cut(minorPatch, ".")
	writeJSON(w, http.StatusOK, serverVersion{
		Major: major, Minor: minor, GitVersion: "v" + major + "." + minorPatch,
		GitTreeState: "clean", BuildDate: "1970-01-01T00:00:00Z",
		GoVersion: runtime.Version(), Compiler: runtime.Compiler,
		Platform:    runtime.GOOS + "/" + runtime.GOARCH,
		VersionInfo: s.backend.Version(),
	})
	return nil
}

// namespacesInUse are the namespaces that hold a pod, configmap or secret,
// and default, sorted.
func (s *Server) namespacesInUse() []string {
	names := make([]string, 0)
	for n := range s.namespaceTimes() {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// namespaceTimes maps each namespace in use to its creation time: that of
// its oldest object (a namespace here exists while something uses it), or
// the server's start for default when it is empty.
func (s *Server) namespaceTimes() map[string]metav1.Time {
	set := map[string]metav1.Time{}
	see := func(ns string, t metav1.Time) {
		if old, ok := set[ns]; !ok || old.IsZero() || (!t.IsZero() && t.Before(&old)) {
			set[ns] = t
		}
	}
	for _, p := range s.backend.ListPods("") {
		see(p.Namespace, p.CreationTimestamp)
	}
	for _, c := range s.backend.ListConfigMaps("") {
		see(c.Namespace, c.CreationTimestamp)
	}
	for _, c := range s.backend.ListSecrets("") {
		see(c.Namespace, c.CreationTimestamp)
	}
	see(metav1.NamespaceDefault, metav1.NewTime(s.started))
	for n, t := range set {
		if t.IsZero() {
			set[n] = metav1.NewTime(s.started)
		}
	}
	return set
}

func namespaceObject(name string, created metav1.Time) v1.Namespace {
	return v1.Namespace{
		TypeMeta: metav1.TypeMeta{Kind: "Namespace", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: created,
			Labels: map[string]string{"kubernetes.io/metadata.name": name}},
		Status: v1.NamespaceStatus{Phase: v1.NamespaceActive},
	}
}

func (s *Server) listNamespaces(w http.ResponseWriter, r *http.Request) error {
	list := v1.NamespaceList{TypeMeta: metav1.TypeMeta{Kind: "NamespaceList", APIVersion: "v1"}, Items: []v1.Namespace{}}
	times := s.namespaceTimes()
	for _, n := range s.namespacesInUse() {
		list.Items = append(list.Items, namespaceObject(n, times[n]))
	}
	if t, ok := wantTable(r); ok {
		writeJSON(w, http.StatusOK, namespaceTable(list.Items, t))
		return nil
	}
	writeJSON(w, http.StatusOK, list)
	return nil
}

func (s *Server) getNamespace(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("ns")
	created, ok := s.namespaceTimes()[name]
	if !ok {
		return notFound("namespaces", name)
	}
	ns := namespaceObject(name, created)
	if t, ok := wantTable(r); ok {
		writeJSON(w, http.StatusOK, namespaceTable([]v1.Namespace{ns}, t))
		return nil
	}
	writeJSON(w, http.StatusOK, ns)
	return nil
}

// node is this node as a v1.Node: its name, the runtime, the Kubernetes
// version it implements, and Ready from the backend's readiness.
func (s *Server) node() v1.Node {
	vi := s.backend.Version()
	major, minorPatch := kubeVersion()
	ready := v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady", Message: "minikubelet is posting ready status"}
	if err := s.backend.Readyz(); err != nil {
		ready.Status, ready.Reason, ready.Message = v1.ConditionFalse, "KubeletNotReady", err.Error()
	}
	kernel, _ := readHostFile("/proc/sys/kernel/osrelease")
	capacity := v1.ResourceList{
		v1.ResourceCPU: *resource.NewQuantity(int64(runtime.NumCPU()), resource.DecimalSI),
	}
	if kb := memTotalKiB(); kb > 0 {
		capacity[v1.ResourceMemory] = *resource.NewQuantity(kb*1024, resource.BinarySI)
	}
	conditions := []v1.NodeCondition{ready}
	if nd, ok := s.backend.(NodeDescriber); ok {
		// The pressure conditions first, as on the kubelet's Node.
		if d, err := nd.DescribeNode(); err == nil {
			conditions = append(d.Conditions, ready)
		}
	}
	return v1.Node{
		TypeMeta: metav1.TypeMeta{Kind: "Node", APIVersion: "v1"},
		// Created: when this daemon started serving (the node has no
		// registration of its own without a cluster).
		ObjectMeta: metav1.ObjectMeta{Name: vi.NodeName, CreationTimestamp: metav1.NewTime(s.started), Labels: map[string]string{
			"kubernetes.io/hostname": vi.NodeName, "kubernetes.io/os": runtime.GOOS, "kubernetes.io/arch": runtime.GOARCH,
		}},
		Status: v1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity,
			Conditions:  conditions,
			NodeInfo: v1.NodeSystemInfo{
				KernelVersion:           strings.TrimSpace(string(kernel)),
				ContainerRuntimeVersion: vi.RuntimeName + "://" + vi.RuntimeVersion,
				KubeletVersion:          "v" + major + "." + minorPatch,
				OperatingSystem:         runtime.GOOS,
				Architecture:            runtime.GOARCH,
			},
		},
	}
}

func (s *Server) listNodes(w http.ResponseWriter, r *http.Request) error {
	n := s.node()
	if t, ok := wantTable(r); ok {
		writeJSON(w, http.StatusOK, nodeTable([]v1.Node{n}, t))
		return nil
	}
	writeJSON(w, http.StatusOK, v1.NodeList{TypeMeta: metav1.TypeMeta{Kind: "NodeList", APIVersion: "v1"}, Items: []v1.Node{n}})
	return nil
}

func (s *Server) getNode(w http.ResponseWriter, r *http.Request) error {
	n := s.node()
	if r.PathValue("name") != n.Name {
		return notFound("nodes", r.PathValue("name"))
	}
	if t, ok := wantTable(r); ok {
		writeJSON(w, http.StatusOK, nodeTable([]v1.Node{n}, t))
		return nil
	}
	writeJSON(w, http.StatusOK, n)
	return nil
}

// readHostFile reads a file of this machine's /proc for the Node; the
// package's tests replace it (export_test.go), so that no unit test reads
// the host's state (issue #17).
var readHostFile = os.ReadFile

// memTotalKiB is the machine's memory from /proc/meminfo (0 if unknown).
func memTotalKiB() int64 {
	b, err := readHostFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	return node.MeminfoField(b, "MemTotal") / 1024 // agent/node parses meminfo
}

// notFound is the API server's 404 for a named object of a core resource.
func notFound(resource, name string) error {
	return apierrors.NewNotFound(v1.Resource(resource), name)
}
