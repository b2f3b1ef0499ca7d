package kubeletserver

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// Summary is the node's stats summary (agent/stats.Provider): with
// onlyCPUAndMemory only the CPU and memory fields. Its pods are those the
// cluster sees, as Pods lists them (cmd's clusterSummary).
type Summary interface {
	Summary(ctx context.Context, onlyCPUAndMemory bool) (*statsapi.Summary, error)
}

// statsSummary serves /stats/summary, the Summary API (stats/v1alpha1):
// the node's and its pods' CPU, memory, network and filesystem usage.
// ?only_cpu_and_memory=true (metrics-server's query) leaves out all but CPU
// and memory. GET only, as the kubelet's current handler (its POST form
// with a request body was removed).
func (s *Server) statsSummary(w http.ResponseWriter, r *http.Request) {
	only := false
	if v := r.URL.Query().Get("only_cpu_and_memory"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			http.Error(w, fmt.Sprintf("invalid only_cpu_and_memory %q: want true or false", v), http.StatusBadRequest)
			return
		}
		only = b
	}
	ctx, cancel := context.WithTimeout(r.Context(), criTimeout)
	defer cancel()
	sum, err := s.deps.Summary.Summary(ctx, only)
	if err != nil {
		s.logger.Warn("Building the stats summary failed", "err", err)
		http.Error(w, fmt.Sprintf("failed to get the node's stats summary: %v", err), http.StatusInternalServerError)
		return
	}
	writeJSON(w, sum)
}

// probeMetrics serves /metrics/probes: the prober_probe_total family of
// the daemon's metrics (the kubelet serves its prober metrics registry
// there).
func (s *Server) probeMetrics(w http.ResponseWriter, _ *http.Request) {
	var all bytes.Buffer
	if err := s.deps.Metrics.WriteMetrics(&all); err != nil {
		s.logger.Warn("Writing metrics failed", "err", err)
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, _ = w.Write(filterFamily(s.clusterSeries(all.Bytes()), "prober_probe_total"))
}

// A sample's pod and pod_uid labels in the text exposition (pod names and
// UIDs never hold a quote or a backslash, so the value ends at the next
// quote).
var (
	podLabel    = regexp.MustCompile(`([{,])pod="[^"]*"`)
	podUIDLabel = regexp.MustCompile(`[{,]pod_uid="([^"]*)"`)
)

// clusterSeries keeps the samples of the daemon's metrics a cluster caller
// may see: a sample with a pod label only when its pod_uid is of a pod
// Pods lists (daemon.ClusterView), under Pods' name (a static pod's mirror
// name, as the kubelet's prober_probe_total names it); a sample naming a
// pod without its UID is dropped, as whose it is cannot be told. The
// node's own pods (the local API's) are thus left out. Samples without a
// pod label (the node's counters) are kept whole.
func (s *Server) clusterSeries(text []byte) []byte {
	names := map[string]string{}
	for _, p := range s.deps.Pods.ListPods("") {
		if p.UID != "" {
			names[string(p.UID)] = p.Name
		}
	}
	var out bytes.Buffer
	for line := range strings.Lines(string(text)) {
		if strings.HasPrefix(line, "#") || !podLabel.MatchString(line) {
			out.WriteString(line)
			continue
		}
		uid := podUIDLabel.FindStringSubmatch(line)
		if uid == nil {
			continue
		}
		name, ok := names[uid[1]]
		if !ok {
			continue
		}
		out.WriteString(podLabel.ReplaceAllStringFunc(line, func(m string) string { return m[:1] + `pod="` + name + `"` }))
	}
	return out.Bytes()
}

// filterFamily keeps the lines of one metric family of a Prometheus text
// exposition: its HELP and TYPE comments and its samples.
func filterFamily(text []byte, family string) []byte {
	var out bytes.Buffer
	for line := range strings.Lines(string(text)) {
		name := line
		if rest, ok := strings.CutPrefix(line, "# HELP "); ok {
			name = rest
		} else if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name = rest
		}
		if n, _, _ := strings.Cut(strings.TrimRight(name, "\n"), " "); n == family || strings.HasPrefix(n, family+"{") {
			out.WriteString(line)
		}
	}
	return out.Bytes()
}
