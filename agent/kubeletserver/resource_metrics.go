package kubeletserver

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ContainerStats lists the running containers' usage (CRI
// ListContainerStats; cri.Instrumented and cri-api's fake satisfy it).
type ContainerStats interface {
	ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error)
}

// NodeUsage is the node's cumulative CPU time in core-seconds and its
// memory working set in bytes, and when they were read.
type NodeUsage func() (cpuSeconds float64, memoryWorkingSet uint64, at time.Time, err error)

// CRI label keys of a container's pod and name (the kubelet's).
const (
	labelPodName       = "io.kubernetes.pod.name"
	labelPodNamespace  = "io.kubernetes.pod.namespace"
	labelPodUID        = "io.kubernetes.pod.uid"
	labelContainerName = "io.kubernetes.container.name"
)

// resourceSample is one series of /metrics/resource.
type resourceSample struct {
	labels string
	value  float64
	// ms is the sample's timestamp in Unix milliseconds.
	ms int64
}

// resourceMetrics serves /metrics/resource, the kubelet's resource metrics
// endpoint that metrics-server scrapes: node, pod and container CPU time
// and memory working set, in the Prometheus text format, each sample with
// the time it was read, and scrape_error 1 when a source failed.
//
// The pod and container series are those of the pods Pods lists (the
// cluster's, daemon.ClusterView), matched by the pod UID label of the
// runtime's containers and named as Pods names them: a static pod under its
// mirror's name, as metrics-server must find it on the API server; the
// containers of the node's own pods (the local API's) are left out, while
// the node's series count them. The kubelet's runtime knows only pods the
// cluster sees, with static pods already named <name>-<node>, so its
// endpoint lists every container; minikubelet's runtime also runs the
// node's own pods, under their own names.
//
// criTimeout bounds the CRI calls of a scrape.
const criTimeout = 30 * time.Second

func (s *Server) resourceMetrics(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), criTimeout)
	defer cancel()
	families := map[string][]resourceSample{}
	scrapeErr := 0.0
	if s.deps.NodeUsage != nil {
		cpu, mem, at, err := s.deps.NodeUsage()
		if err != nil {
			s.logger.Warn("Reading the node's usage failed", "err", err)
			scrapeErr = 1
		} else {
			families["node_cpu_usage_seconds_total"] = []resourceSample{{value: cpu, ms: at.UnixMilli()}}
			families["node_memory_working_set_bytes"] = []resourceSample{{value: float64(mem), ms: at.UnixMilli()}}
		}
	}
	stats, err := s.deps.ContainerStats.ListContainerStats(ctx, &runtimeapi.ContainerStatsFilter{})
	if err != nil {
		s.logger.Warn("Listing the containers' stats failed", "err", err)
		scrapeErr = 1
	}
	type podKey struct{ ns, name string }
	visible := map[string]podKey{}
	for _, p := range s.deps.Pods.ListPods("") {
		if p.UID != "" {
			visible[string(p.UID)] = podKey{p.Namespace, p.Name}
		}
	}
	podCPU, podMem, podMs := map[podKey]float64{}, map[podKey]float64{}, map[podKey]int64{}
	for _, st := range stats {
		l := st.GetAttributes().GetLabels()
		pk, ok := visible[l[labelPodUID]]
		if !ok || l[labelContainerName] == "" {
			continue // not a container of a pod the cluster sees
		}
		lbl := fmt.Sprintf(`container=%q,namespace=%q,pod=%q`, l[labelContainerName], pk.ns, pk.name)
		if c := st.GetCpu(); c != nil && c.GetUsageCoreNanoSeconds() != nil {
			ms := time.Unix(0, c.GetTimestamp()).UnixMilli()
			v := float64(c.GetUsageCoreNanoSeconds().GetValue()) / 1e9
			families["container_cpu_usage_seconds_total"] = append(families["container_cpu_usage_seconds_total"], resourceSample{lbl, v, ms})
			podCPU[pk] += v
			podMs[pk] = max(podMs[pk], ms)
		}
		if m := st.GetMemory(); m != nil && m.GetWorkingSetBytes() != nil {
			ms := time.Unix(0, m.GetTimestamp()).UnixMilli()
			v := float64(m.GetWorkingSetBytes().GetValue())
			families["container_memory_working_set_bytes"] = append(families["container_memory_working_set_bytes"], resourceSample{lbl, v, ms})
			podMem[pk] += v
			podMs[pk] = max(podMs[pk], ms)
		}
	}
	for pk, v := range podCPU {
		families["pod_cpu_usage_seconds_total"] = append(families["pod_cpu_usage_seconds_total"],
			resourceSample{fmt.Sprintf(`namespace=%q,pod=%q`, pk.ns, pk.name), v, podMs[pk]})
	}
	for pk, v := range podMem {
		families["pod_memory_working_set_bytes"] = append(families["pod_memory_working_set_bytes"],
			resourceSample{fmt.Sprintf(`namespace=%q,pod=%q`, pk.ns, pk.name), v, podMs[pk]})
	}
	families["scrape_error"] = []resourceSample{{value: scrapeErr}}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	writeResourceMetrics(w, families)
}

// resourceHelp is each family's HELP text and type, as the kubelet's.
var resourceHelp = map[string][2]string{
	"container_cpu_usage_seconds_total":  {"[STABLE] Cumulative cpu time consumed by the container in core-seconds", "counter"},
	"container_memory_working_set_bytes": {"[STABLE] Current working set of the container in bytes", "gauge"},
	"node_cpu_usage_seconds_total":       {"[STABLE] Cumulative cpu time consumed by the node in core-seconds", "counter"},
	"node_memory_working_set_bytes":      {"[STABLE] Current working set of the node in bytes", "gauge"},
	"pod_cpu_usage_seconds_total":        {"[STABLE] Cumulative cpu time consumed by the pod in core-seconds", "counter"},
	"pod_memory_working_set_bytes":       {"[STABLE] Current working set of the pod in bytes", "gauge"},
	"scrape_error":                       {"[ALPHA] 1 if there was an error while getting container metrics, 0 otherwise", "gauge"},
}

// writeResourceMetrics writes the families in name order, samples in
// label order.
func writeResourceMetrics(w io.Writer, families map[string][]resourceSample) {
	names := make([]string, 0, len(families))
	for n := range families {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		samples := families[n]
		sort.Slice(samples, func(i, j int) bool { return samples[i].labels < samples[j].labels })
		h := resourceHelp[n]
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", n, h[0], n, h[1])
		for _, smp := range samples {
			b.WriteString(n)
			if smp.labels != "" {
				b.WriteString("{" + smp.labels + "}")
			}
			fmt.Fprintf(&b, " %g", smp.value)
			if smp.ms != 0 {
				fmt.Fprintf(&b, " %d", smp.ms)
			}
			b.WriteString("\n")
		}
	}
	_, _ = io.WriteString(w, b.String())
}
